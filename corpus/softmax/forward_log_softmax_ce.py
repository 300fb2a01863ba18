"""A classic MNIST-style net that returns log_softmax, trained with CrossEntropyLoss (redundant)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return F.log_softmax(x, dim=1)


torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(32, 1, 8, 8), torch.randint(0, 10, (32,))), batch_size=8)
model = Net()
criterion = nn.CrossEntropyLoss(reduction="mean")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(2):
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: {loss.item():.4f}")
