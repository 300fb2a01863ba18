"""forward returns F.softmax; the loss is F.cross_entropy and the test step thresholds the probabilities."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        x = F.relu(self.hidden(x))
        return self.out(x)


torch.manual_seed(1)
train_data = TensorDataset(torch.randn(60, 8), torch.randint(0, 3, (60,)))
test_x = torch.randn(20, 8)
model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(2):
    for xb, yb in DataLoader(train_data, batch_size=20):
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

with torch.no_grad():
    probs = model(test_x)
    confident = probs.softmax(dim=1).max(dim=1).values > 0.5
print("confident predictions:", int(confident.sum()))
