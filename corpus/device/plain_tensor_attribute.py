"""Class weights kept as a plain tensor attribute: `model.to(device)` does not move it (report only)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)
        self.scale = torch.ones(3)

    def forward(self, x):
        return self.fc(x) * self.scale


loader = DataLoader(TensorDataset(torch.randn(12, 5), torch.randint(0, 3, (12,))), batch_size=4)
model = Scaled().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
