"""A BatchNorm layer instantiated inside forward: its parameters stay on the CPU (report only)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Block(nn.Module):
    def __init__(self, features=6):
        super().__init__()
        self.features = features
        self.fc = nn.Linear(4, features)
        self.out = nn.Linear(features, 2)

    def forward(self, x):
        x = self.fc(x)
        x = nn.BatchNorm1d(num_features=self.features)(x)
        return self.out(torch.relu(x))


loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=4)
model = Block().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
