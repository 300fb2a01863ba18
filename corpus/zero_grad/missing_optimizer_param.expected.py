import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_one_epoch(model, loader, optimizer, loss_fn):
    model.train()
    total = 0.0
    for batch, labels in loader:
        optimizer.zero_grad()
        out = model(batch)
        loss = loss_fn(out, labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


if __name__ == "__main__":
    torch.manual_seed(2)
    ds = TensorDataset(torch.randn(20, 5), torch.randint(0, 2, (20,)))
    model = nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(3):
        print(epoch, train_one_epoch(model, DataLoader(ds, batch_size=5), opt, nn.CrossEntropyLoss()))
