"""Accumulation wiped every micro-batch, with the scaler's unscale_() and clipping on every
micro-batch: moving the zero_grad() would call unscale_() twice before update(), so it is
reported only."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(24)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=2)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", enabled=False)
accum = 2

for step, (x, y) in enumerate(loader):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y) / accum
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (step + 1) % accum == 0:
        scaler.step(optimizer)
        scaler.update()
print("done")
