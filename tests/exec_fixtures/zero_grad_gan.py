"""Legitimate (pytorch/examples dcgan style): the generator's backward() passes through the
discriminator and accumulates into its stale gradients, which netD.zero_grad() clears
before the discriminator's next step."""
import torch
import torch.nn as nn

netG = nn.Sequential(nn.Linear(2, 4), nn.Tanh())
netD = nn.Sequential(nn.Linear(4, 1))
optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
for i in range(4):
    real = torch.randn(8, 4)
    netD.zero_grad()
    errD_real = bce(netD(real), torch.ones(8, 1))
    errD_real.backward()
    fake = netG(torch.randn(8, 2))
    errD_fake = bce(netD(fake.detach()), torch.zeros(8, 1))
    errD_fake.backward()
    optD.step()
    netG.zero_grad()
    errG = bce(netD(fake), torch.ones(8, 1))
    errG.backward()
    optG.step()
