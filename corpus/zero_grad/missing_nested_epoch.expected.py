import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(1)
    data = TensorDataset(torch.randn(24, 6), torch.randint(0, 3, (24,)))
    train_loader = DataLoader(data, batch_size=6, shuffle=True)
    net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(net.parameters(), lr=1e-3)

    for epoch in range(2):
        running = 0.0
        for i, (x, y) in enumerate(train_loader):
            optimizer.zero_grad()
            # forward pass
            logits = net(x)
            loss = criterion(logits, y)

            loss.backward()
            optimizer.step()
            running += loss.item()
        print(f"epoch {epoch}: {running / (i + 1):.4f}")


if __name__ == "__main__":
    main()
