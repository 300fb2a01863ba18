"""Two losses, two backward calls, one step: intentional accumulation within an iteration."""
import torch
from torch import nn

torch.manual_seed(29)
encoder = nn.Linear(4, 4)
head_a, head_b = nn.Linear(4, 1), nn.Linear(4, 2)
params = list(encoder.parameters()) + list(head_a.parameters()) + list(head_b.parameters())
optimizer = torch.optim.SGD(params, lr=0.05)

for it in range(4):
    x = torch.randn(8, 4)
    optimizer.zero_grad()
    loss_a = head_a(encoder(x)).pow(2).mean()
    loss_a.backward()
    loss_b = head_b(encoder(x)).abs().mean()
    loss_b.backward()
    optimizer.step()
