"""The model is moved by a same-file helper (in place: `Module.to` moves the parameters),
the batch by the training loop."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def place(module):
    module.to(device)
    print("model on", device)


loader = DataLoader(TensorDataset(torch.randn(12, 5), torch.randint(0, 2, (12,))), batch_size=4)
model = MLP()
place(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
