import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def build_optimizer(model, cfg):
    return torch.optim.SGD(model.parameters(), lr=cfg["lr"])


torch.manual_seed(6)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 2)), batch_size=4)
model = nn.Linear(4, 2)
optimizer = build_optimizer(model, {"lr": 0.05})
for epoch in range(2):
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
