"""Train and eval functions that both move the data (pytorch/examples mnist style)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(model, device, loader, optimizer):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, device, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for batch in loader:
            batch = tuple(t.to(device) for t in batch)
            data, target = batch
            correct += (model(data).argmax(1) == target).sum().item()
    return correct


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 3, (12,))), batch_size=4)
model = nn.Linear(4, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    print(epoch, train(model, device, loader, optimizer), evaluate(model, device, loader))
