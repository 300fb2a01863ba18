"""Accelerate-style: after `accelerator.prepare(...)` the loader places batches itself.
A tiny stand-in for `accelerate.Accelerator` keeps the script self-contained."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MiniAccelerator:
    """Stand-in: moves the model and yields batches already on the device."""

    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def prepare(self, model, optimizer, loader):
        device = self.device

        class _Loader:
            def __iter__(self):
                for xb, yb in loader:
                    yield xb.to(device), yb.to(device)

        return model.to(device), optimizer, _Loader()

    def backward(self, loss):
        loss.backward()


accelerator = MiniAccelerator()
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=4)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
    print(epoch, loss.item())
