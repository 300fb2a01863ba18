"""`cuda = torch.cuda.is_available()` and `if cuda: model = model.cuda()`; batch never moved."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

cuda = torch.cuda.is_available()


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 12)
        self.out = nn.Linear(12, 1)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))


model = Regressor()
if cuda:
    model = model.cuda()

loader = DataLoader(TensorDataset(torch.randn(40, 6), torch.randn(40, 1)), batch_size=10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(3):
    for data, target in loader:
        if cuda:
            data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        output = model(data)
        loss = F.mse_loss(output, target)
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "mse", loss.item())
