"""A model wrapped in nn.DataParallel and handed to a same-file helper that only reads its
parameters: the forward ends with a softmax, every use of the model is visible and
harmless, so the softmax is removed."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def summarize(module):
    return sum(p.numel() for p in module.parameters())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.DataParallel(Net()).to(device)
print("parameters:", summarize(model))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
loader = DataLoader(TensorDataset(torch.randn(30, 6), torch.randint(0, 3, (30,))), batch_size=10)
for epoch in range(2):
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
print("loss", loss.item())
