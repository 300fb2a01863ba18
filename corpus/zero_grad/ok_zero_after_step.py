import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(22)
loader = DataLoader(TensorDataset(torch.randn(24, 3), torch.randn(24, 1)), batch_size=6)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for epoch in range(2):
    for x, y in loader:
        loss = (model(x) - y).abs().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
