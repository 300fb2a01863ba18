# the pytorch/examples dcgan/main.py shape: argparse options, module-level models whose
# classes read module constants, an init function applied to them, and the training loop
# (with checkpoints) as the script's last statement
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def weights_init(m):
    if isinstance(m, nn.Linear):
        torch.nn.init.normal_(m.weight, 0.0, 0.02)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, 6), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(6, 1), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1, help="number of data loading workers")
    parser.add_argument("--batchSize", type=int, default=4)
    parser.add_argument("--niter", type=int, default=1)
    parser.add_argument("--nz", type=int, default=3)
    opt, _ = parser.parse_known_args()
    outf = tempfile.mkdtemp()

    torch.manual_seed(0)
    dataset = TensorDataset(torch.rand(8, 6) * 2 - 1)
    dataloader = DataLoader(dataset, batch_size=opt.batchSize, shuffle=True, num_workers=int(opt.workers))
    nz = int(opt.nz)

    netG = Generator()
    netG.apply(weights_init)
    netD = Discriminator()
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4)
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4)

    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            netD.zero_grad()
            real = data[0]
            label = torch.full((real.size(0),), 1.0)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            fake = netG(torch.randn(real.size(0), nz))
            label.fill_(0.0)
            errD_fake = criterion(netD(fake.detach()), label)
            errD_fake.backward()
            optimizerD.step()

            netG.zero_grad()
            label.fill_(1.0)
            errG = criterion(netD(fake), label)
            errG.backward()
            optimizerG.step()
            print("[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f" % (epoch, opt.niter, i, len(dataloader), (errD_real + errD_fake).item(), errG.item()))
        # do checkpointing
        torch.save(netG.state_dict(), "%s/netG_epoch_%d.pth" % (outf, epoch))
        torch.save(netD.state_dict(), "%s/netD_epoch_%d.pth" % (outf, epoch))
