"""Training moves the batch, the evaluation loop does not: inputs and labels meet the model and its output."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_loader = DataLoader(TensorDataset(torch.randn(24, 6), torch.randint(0, 3, (24,))), batch_size=8)
val_loader = DataLoader(TensorDataset(torch.randn(12, 6), torch.randint(0, 3, (12,))), batch_size=6)

model = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 3))
model = model.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    model.train()
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()

    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            correct += (logits.argmax(1) == y).sum().item()
    print("epoch", epoch, "val correct", correct)
