"""Tensors made from arrays go into a TensorDataset: the loader's batches are what reach
the model, and the loop moves them."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.from_numpy(np.random.default_rng(1).normal(size=(32, 4)).astype(np.float32))
y = torch.tensor(np.arange(32) % 2)
loader = DataLoader(TensorDataset(X, y), batch_size=8)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    xb, yb = xb.to(device), yb.to(device)
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
print("loss", loss.item())
