"""Two optimizers: the critic's steps every batch and is zeroed every batch; the actor's
accumulates over 2 batches and is zeroed after its step.  The critic's zero_grad() does
not touch the actor's parameters."""
import torch
from torch import nn

torch.manual_seed(33)
actor = nn.Linear(4, 2)
critic = nn.Linear(4, 1)
opt_actor = torch.optim.Adam(actor.parameters(), lr=1e-3)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-3)

for i in range(6):
    s = torch.randn(8, 4)
    opt_critic.zero_grad()
    critic_loss = critic(s).pow(2).mean()
    critic_loss.backward()
    opt_critic.step()
    actor_loss = actor(s).pow(2).mean() / 2
    actor_loss.backward()
    if (i + 1) % 2 == 0:
        opt_actor.step()
        opt_actor.zero_grad()
print("done")
