"""Accumulation where the zero_grad() sits at the top of the loop under the window's own
condition: it clears once per window, at its start."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(32)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
k = 4

for i, (x, y) in enumerate(loader):
    if i % k == 0:
        optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y) / k
    loss.backward()
    if (i + 1) % k == 0:
        optimizer.step()
print("done")
