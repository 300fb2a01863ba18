"""Gradient accumulation over 4 micro-batches, but the gradients are cleared before every
backward(): each step applies the last micro-batch's gradients only."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accum_steps = 4

for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y)
        (loss / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            # fresh gradients for this micro-batch
            optimizer.zero_grad(set_to_none=True)
    print("epoch", epoch, round(loss.item(), 4))
