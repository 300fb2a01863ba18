import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    train_ds = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
    val_ds = TensorDataset(torch.randn(4, 4), torch.randint(0, 2, (4,)))
    train_loader = DataLoader(train_ds, batch_size=4, shuffle=True, num_workers=1)
    val_loader = DataLoader(val_ds, batch_size=4, num_workers=1)

    model = nn.Linear(4, 2)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(1):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        print(f"epoch {epoch}: val acc {correct / len(val_ds):.2f}")
