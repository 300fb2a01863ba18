"""The dataset already holds device tensors (num_workers=0): batches come out on the device."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(16, 3).to(device)
labels = torch.randint(0, 2, (16,)).to(device)
loader = DataLoader(TensorDataset(features, labels), batch_size=4, num_workers=0)

model = nn.Linear(3, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
