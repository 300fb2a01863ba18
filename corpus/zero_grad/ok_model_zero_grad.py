import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(torch.randn(18, 5), torch.randint(0, 3, (18,))), batch_size=6)

for epoch in range(2):
    for x, y in loader:
        net.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        optimizer.step()
