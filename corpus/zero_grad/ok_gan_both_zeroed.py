"""DCGAN-style updates: two optimizers, each zeroed through its own network."""
import torch
from torch import nn, optim

torch.manual_seed(26)
netG = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
netD = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
optimizerG = optim.Adam(netG.parameters(), lr=2e-4)
optimizerD = optim.Adam(netD.parameters(), lr=2e-4)
criterion = nn.BCEWithLogitsLoss()

for it in range(4):
    real = torch.randn(8, 2)
    netD.zero_grad()
    errD_real = criterion(netD(real), torch.ones(8, 1))
    errD_real.backward()
    fake = netG(torch.randn(8, 2))
    errD_fake = criterion(netD(fake.detach()), torch.zeros(8, 1))
    errD_fake.backward()
    optimizerD.step()

    netG.zero_grad()
    errG = criterion(netD(fake), torch.ones(8, 1))
    errG.backward()
    optimizerG.step()
