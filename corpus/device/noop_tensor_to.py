"""`inputs.to(device)` as a bare statement: Tensor.to is not in-place, the batch stays on the CPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

loader = DataLoader(TensorDataset(torch.randn(20, 4), torch.randn(20, 2)), batch_size=5)
model = nn.Linear(4, 2)
model.to(device)  # fine: Module.to is in-place
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.SmoothL1Loss()

for epoch in range(2):
    for inputs, targets in loader:
        inputs.to(device)
        targets.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
