"""A plain tensor attribute that forward moves to the input's device before using it."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)
        self.class_weights = torch.tensor([1.0, 2.0, 0.5])

    def forward(self, x):
        self.class_weights = self.class_weights.to(x.device)
        return self.fc(x) * self.class_weights


loader = DataLoader(TensorDataset(torch.randn(12, 5), torch.randint(0, 3, (12,))), batch_size=4)
model = Weighted().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
