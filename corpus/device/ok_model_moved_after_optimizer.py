"""The model is moved after the optimizer was built (`model.to(device)` as a statement,
in place), then trained on moved batches."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
loader = DataLoader(TensorDataset(torch.randn(12, 3), torch.randn(12, 1)), batch_size=6)
model = nn.Linear(3, 1)
optimizer = torch.optim.Adam(model.parameters())
model.to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
