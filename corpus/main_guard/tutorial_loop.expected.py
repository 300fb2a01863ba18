"""Tutorial-style script: the loader is built and iterated at the top level."""
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    trainset = TensorDataset(torch.randn(16, 8), torch.randint(0, 3, (16,)))
    trainloader = DataLoader(trainset, batch_size=4, shuffle=True, num_workers=2)

    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01)

    for epoch in range(1):  # loop over the dataset
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        print(f"epoch {epoch}: loss {running_loss / (i + 1):.3f}")

    print("Finished Training")
