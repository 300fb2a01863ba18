"""Gradient accumulation with AMP: model.zero_grad() right after the scaler's update(),
inside the window's `if`; the loss is divided by the window size."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(31)
loader = DataLoader(TensorDataset(torch.randn(24, 4), torch.randn(24, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", enabled=False)
accum_steps = 3

for i, (x, y) in enumerate(loader):
    loss = nn.functional.mse_loss(model(x), y) / accum_steps
    scaler.scale(loss).backward()
    if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
        scaler.step(optimizer)
        scaler.update()
        model.zero_grad(set_to_none=True)
print("done")
