"""The training step lives in a function of its own, called for every batch: it runs
backward() and step() but never clears the gradients, so each step applies the sum of
all the gradients so far."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,))), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


def train_step(model, inputs, targets, optimizer):
    """One optimisation step on a batch; returns the loss."""
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


for epoch in range(3):
    total = 0.0
    for inputs, targets in loader:
        total += train_step(model, inputs, targets, optimizer)
    print(epoch, total / len(loader))
