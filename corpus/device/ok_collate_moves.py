"""The DataLoader's collate_fn (same file) puts every batch on the device."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
samples = [(torch.randn(3), torch.tensor(i % 2)) for i in range(8)]


def to_device_collate(items):
    xs = torch.stack([x for x, _ in items]).to(device)
    ys = torch.stack([y for _, y in items]).to(device)
    return xs, ys


loader = DataLoader(samples, batch_size=4, collate_fn=to_device_collate)
model = nn.Linear(3, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for xs, ys in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
