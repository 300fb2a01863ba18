"""A CPU-only script: nothing is moved anywhere, which is consistent."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 6, batch_first=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 6)
        out, _ = self.rnn(x, h0)
        return self.fc(out[:, -1])


loader = DataLoader(TensorDataset(torch.randn(12, 4, 3), torch.randint(0, 2, (12,))), batch_size=4)
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
