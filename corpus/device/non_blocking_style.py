"""The validation loop moves with non_blocking=True; the training loop forgot to move at all."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_dl = DataLoader(TensorDataset(torch.randn(16, 3), torch.randn(16, 1)), batch_size=4, pin_memory=False)
valid_dl = DataLoader(TensorDataset(torch.randn(8, 3), torch.randn(8, 1)), batch_size=4)

model = nn.Linear(3, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()


def run_epoch(epoch):
    model.train()
    for xb, yb in train_dl:
        loss = criterion(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        total = 0.0
        for xb, yb in valid_dl:
            xb = xb.to(device, non_blocking=True)
            yb = yb.to(device, non_blocking=True)
            total += criterion(model(xb), yb).item()
    print(epoch, total)


for epoch in range(2):
    run_epoch(epoch)
