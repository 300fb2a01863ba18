"""VAE-GAN done right: the generator steps twice per iteration and netG is zeroed before
each of its backward() calls."""
import torch
from torch import nn, optim

torch.manual_seed(35)
netG = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
netD = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizerD = optim.Adam(netD.parameters(), lr=1e-3)
optimizerG = optim.Adam(netG.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

for it in range(4):
    real = torch.randn(8, 4)
    netD.zero_grad()
    errD = bce(netD(real), torch.ones(8, 1)) + bce(netD(netG(real).detach()), torch.zeros(8, 1))
    errD.backward()
    optimizerD.step()
    netG.zero_grad()
    VAEerr = nn.functional.mse_loss(netG(real), real)
    VAEerr.backward()
    optimizerG.step()
    netG.zero_grad()
    errG = bce(netD(netG(real)), torch.ones(8, 1))
    errG.backward()
    optimizerG.step()
print("done")
