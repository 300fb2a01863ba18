"""Two bugs: the batch is not moved, and nothing zeroes the gradients.  The device error
stops the original before the zero_grad detector can see a second step."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 5), torch.randn(16, 1)), batch_size=4)
model = nn.Linear(5, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
