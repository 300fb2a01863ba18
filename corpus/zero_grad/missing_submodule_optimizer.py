"""Each network builds its own optimizer (`self.optimizer = Adam(self.parameters())`); the GAN
steps `self.discriminator.optimizer` and never clears the discriminator's gradients."""
import torch
from torch import nn, optim


class Discriminator(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.net = nn.Linear(4, 1)
        self.optimizer = optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.net(x)


class Generator(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.optimizer = optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.net(x)


class GAN:
    def __init__(self, lr):
        self.generator = Generator(lr)
        self.discriminator = Discriminator(lr)
        self.criterion = nn.BCEWithLogitsLoss()

    def train(self, loader):
        for real in loader:
            errD_real = self.criterion(self.discriminator(real), torch.ones(8, 1))
            errD_real.backward()
            fake = self.generator(torch.randn(8, 4))
            errD_fake = self.criterion(self.discriminator(fake.detach()), torch.zeros(8, 1))
            errD_fake.backward()
            self.discriminator.optimizer.step()

            self.generator.zero_grad()
            errG = self.criterion(self.discriminator(fake), torch.ones(8, 1))
            errG.backward()
            self.generator.optimizer.step()


torch.manual_seed(41)
GAN(1e-3).train([torch.randn(8, 4) for _ in range(3)])
