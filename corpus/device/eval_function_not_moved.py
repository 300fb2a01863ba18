"""`train` moves its batch, `evaluate` (another function, same parameters) does not: each
loop is judged on its own."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(dim=1)
            correct += (pred == y).sum().item()
    return correct


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(TensorDataset(torch.randn(30, 7), torch.randint(0, 3, (30,))), batch_size=10)
    val_loader = DataLoader(TensorDataset(torch.randn(15, 7), torch.randint(0, 3, (15,))), batch_size=5)
    model = nn.Linear(7, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        train(model, train_loader, optimizer, device)
        print(epoch, evaluate(model, val_loader, device))


if __name__ == "__main__":
    main()
