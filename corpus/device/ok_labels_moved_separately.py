"""Inputs and labels are moved on separate lines (and the loss is a parameter): correct."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, criterion, loader, optimizer, device):
    for features, target in loader:
        features = features.to(device)
        target = target.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = criterion(model(features), target)
        loss.backward()
        optimizer.step()
    return loss.item()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 4, (16,))), batch_size=4)
model = nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    print(epoch, train(model, nn.CrossEntropyLoss(), loader, optimizer, device))
