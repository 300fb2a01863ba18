"""Loaders kept in a dict literal; the evaluation loop reads `loaders["val"]` and never
moves its batch."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 2)), batch_size=4)
val_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
loaders = {"train": train_loader, "val": val_loader}

model = nn.Linear(4, 2).to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(2):
    for x, y in loaders["train"]:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        val = 0.0
        for x, y in loaders["val"]:
            val += criterion(model(x), y).item()
    print(epoch, val)
