"""No zero_grad anywhere: gradients pile up across steps (TM201)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(24, 6), torch.randn(24, 1))
loader = DataLoader(data, batch_size=8)
model = nn.Linear(6, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    print("epoch", epoch, loss.item())
