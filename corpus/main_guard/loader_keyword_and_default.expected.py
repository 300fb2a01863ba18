import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(12, 3), torch.randint(0, 2, (12,)))
val_loader = DataLoader(data, batch_size=4, num_workers=1)
test_loader = DataLoader(data, batch_size=6, num_workers=1)


def accuracy(net, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def report(net, loader=test_loader):
    print("test accuracy", accuracy(net, loader))


if __name__ == "__main__":
    model = nn.Linear(3, 2)

    print("val accuracy", accuracy(model, loader=val_loader))
    report(model)
