"""VAE-GAN: the generator's optimizer steps twice per iteration (a VAE loss, then a GAN
loss) and netG is zeroed before the second step only: the first step of each iteration
also applies the GAN gradients the previous iteration already applied."""
import torch
from torch import nn, optim

torch.manual_seed(23)
netG = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
netD = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizerD = optim.Adam(netD.parameters(), lr=1e-3)
optimizerG = optim.Adam(netG.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

for it in range(4):
    real = torch.randn(8, 4)
    # (1) discriminator
    netD.zero_grad()
    errD = bce(netD(real), torch.ones(8, 1)) + bce(netD(netG(real).detach()), torch.zeros(8, 1))
    errD.backward()
    optimizerD.step()
    # (2) generator as a VAE: reconstruction
    rec = netG(real)
    VAEerr = nn.functional.mse_loss(rec, real)
    optimizerG.zero_grad()
    VAEerr.backward()
    optimizerG.step()
    # (3) generator against the discriminator
    netG.zero_grad()
    errG = bce(netD(netG(real)), torch.ones(8, 1))
    errG.backward()
    optimizerG.step()
    print(it, round(errD.item(), 3), round(VAEerr.item(), 3), round(errG.item(), 3))
