"""A tiny GAN: the generator's optimizer is zeroed, the discriminator's is not."""
import torch
from torch import nn, optim

torch.manual_seed(5)
G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
opt_G = optim.Adam(G.parameters(), lr=1e-3)
opt_D = optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

for it in range(4):
    real = torch.randn(8, 2) + 2.0
    fake = G(torch.randn(8, 2))

    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
    d_loss.backward()
    opt_D.step()

    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(8, 1))
    g_loss.backward()
    opt_G.step()
    print(it, round(d_loss.item(), 3), round(g_loss.item(), 3))
