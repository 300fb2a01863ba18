"""The loss is a parameter of `train` (an `nn.CrossEntropyLoss` at the only call site): the
labels meet the output in it, so they must be moved with the inputs."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, criterion, loader, optimizer, device):
    model.train()
    for features, target in loader:
        features, target = features.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(features)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 4, (32,))), batch_size=8, shuffle=True)
    model = nn.Linear(8, 4).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        print(epoch, train(model, criterion, loader, optimizer, device))


if __name__ == "__main__":
    main()
