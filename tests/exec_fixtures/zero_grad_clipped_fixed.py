"""Cleared every step, clipped in place between backward() and step(): clean."""
import torch
import torch.nn as nn
from torch.nn.utils import clip_grad_norm_
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(24, 6), torch.randn(24, 1))
loader = DataLoader(data, batch_size=8)
model = nn.Linear(6, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        grad_norm = clip_grad_norm_(model.parameters(), 0.5)
        if torch.isfinite(grad_norm):
            optimizer.step()
        for p in model.parameters():
            p.grad.mul_(0.0)  # cleared in place after the step too
    print("epoch", epoch, loss.item())
