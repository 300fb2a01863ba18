"""Overfit one batch taken with `next(iter(loader))`: the model is on the device, the batch
never moves (and a second batch is drawn from an iterator inside a step loop)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 6), torch.randint(0, 3, (16,))), batch_size=8, shuffle=True)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

inputs, targets = next(iter(loader))
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
print("overfit loss", loss.item())

batches = iter(loader)
for step in range(2):
    batch = next(batches)
    with torch.no_grad():
        print(step, nn.functional.cross_entropy(model(batch[0]), batch[1]).item())
