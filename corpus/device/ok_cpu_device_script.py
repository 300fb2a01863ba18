"""A CPU-only script that still writes `.to(device)`: the device is the CPU on every
way, so the unmoved model is right."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cpu")
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
model = nn.Linear(4, 2)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    print(nn.functional.cross_entropy(model(x), y).item())
