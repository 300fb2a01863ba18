"""The loader comes from a builder function; the training function reads the model,
the loader and the device as globals."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_loader(n, batch_size):
    dataset = TensorDataset(torch.randn(n, 6), torch.randn(n, 1))
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)


train_loader = make_loader(40, 10)
model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)).to(DEVICE)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


def train_epoch():
    total = 0.0
    for x, y in train_loader:
        x, y = x.to(DEVICE), y.to(DEVICE)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


for epoch in range(2):
    print(epoch, train_epoch())
