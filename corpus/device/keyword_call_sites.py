"""The functions are called with keyword arguments and a default device: the device and
the loaders are known through the call sites and the default."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def fit(model, loader, optimizer, device=DEVICE):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


net = nn.Linear(3, 2).to(DEVICE)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = DataLoader(TensorDataset(torch.randn(12, 3), torch.randint(0, 2, (12,))), batch_size=4)
for epoch in range(2):
    print(epoch, fit(model=net, loader=data, optimizer=opt))
