"""AMP and gradient accumulation: the scaler steps every `grad_accum_steps` micro-batches
(counted by `global_step`), yet zero_grad() runs on every micro-batch."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(22)
loader = DataLoader(TensorDataset(torch.randn(24, 6), torch.randn(24, 1)), batch_size=3)
model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
scaler = torch.amp.GradScaler("cpu", enabled=False)
grad_accum_steps = 2
global_step = 0

for x, y in loader:
    optimizer.zero_grad()  # clear the previous micro-batch
    with torch.autocast("cpu", enabled=False):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss / grad_accum_steps).backward()
    if global_step % grad_accum_steps == 0:
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
    global_step += 1
print("done", round(loss.item(), 4))
