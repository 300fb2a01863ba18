"""Regression on synthetic data; the batch loop never clears the gradients."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
loader = DataLoader(TensorDataset(X, Y), batch_size=8)

model = nn.Linear(4, 1)
criterion = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for inputs, targets in loader:
    loss = criterion(model(inputs), targets)
    loss.backward()
    opt.step()
    print(f"loss {loss.item():.4f}")
