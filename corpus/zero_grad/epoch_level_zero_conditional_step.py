"""Zeroed once per epoch while the batch loop steps every two batches: report only."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(13)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(2):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.mse_loss(model(x), y) / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            optimizer.step()
