"""The loss function is a parameter whose callers pass a lambda: it cannot be read, but it
receives the output together with the labels, so the labels are moved too (unsafe fix)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def run_epoch(model, loader, loss_fn, optimizer, device):
    for batch_x, batch_y in loader:
        batch_x, batch_y = batch_x.to(device), (batch_y.to(device) if torch.is_tensor(batch_y) else batch_y)
        optimizer.zero_grad()
        out = model(batch_x)
        loss = loss_fn(out, batch_y)
        loss.backward()
        optimizer.step()
    return loss.item()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(12, 6), torch.randint(0, 3, (12,))), batch_size=4)
model = nn.Linear(6, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    print(epoch, run_epoch(model, loader, lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1), optimizer, device))
