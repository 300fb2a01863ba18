"""A noise schedule kept as plain tensor attributes (derived in __init__), gathered with device timesteps."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Denoiser(nn.Module):
    def __init__(self, dim=4, steps=50):
        super().__init__()
        self.steps = steps
        self.net = nn.Sequential(nn.Linear(dim + 1, 16), nn.ReLU(), nn.Linear(16, dim))
        self.betas = torch.linspace(1e-4, 0.02, steps)
        self.alpha_bar = torch.cumprod(1.0 - self.betas, dim=0)

    def forward(self, x0):
        t = torch.randint(0, self.steps, (x0.size(0),), device=x0.device)
        a = self.alpha_bar.gather(0, t)[:, None]
        noise = torch.randn_like(x0)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        pred = self.net(torch.cat([xt, t[:, None].float() / self.steps], dim=1))
        return nn.functional.mse_loss(pred, noise)


loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
model = Denoiser().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for (x,) in loader:
        x = x.to(device)
        loss = model(x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
