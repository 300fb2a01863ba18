"""zero_grad once per epoch, outside the batch loop (TM202)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
batches = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(3)]
for epoch in range(2):
    optimizer.zero_grad()
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
