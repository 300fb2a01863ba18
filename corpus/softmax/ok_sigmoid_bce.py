"""A binary discriminator ending with nn.Sigmoid trained with nn.BCELoss (correct pair)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
netD = nn.Sequential(nn.Linear(10, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
criterion = nn.BCELoss()
opt = torch.optim.Adam(netD.parameters(), lr=2e-4)
real, fake = torch.randn(8, 10) + 1, torch.randn(8, 10) - 1
for step in range(3):
    out = netD(torch.cat([real, fake])).view(-1)
    label = torch.cat([torch.ones(8), torch.zeros(8)])
    loss = criterion(out, label)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
