"""CPU tensors that are legal next to device tensors: indices, 0-d values, Python numbers."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LayerDropNet(nn.Module):
    def __init__(self, dim=6, depth=3, layerdrop=0.2):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))
        self.layerdrop = layerdrop
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        for layer in self.layers:
            if self.training and torch.rand([]) < self.layerdrop:  # 0-d draw vs a Python float
                continue
            x = torch.relu(layer(x))
        keep = torch.arange(0, x.size(1), 2)  # a CPU index into a device tensor
        x = x[:, keep]
        x = torch.cat([x, x[:, torch.arange(x.size(1))]], dim=1)
        scale = torch.tensor(0.5)  # 0-d: mixes like a number
        jitter = torch.empty(1).uniform_(0.9, 1.1).item()
        return self.head(x * scale * jitter + torch.ones(3).sum())


loader = DataLoader(TensorDataset(torch.randn(12, 6), torch.randint(0, 2, (12,))), batch_size=4)
model = LayerDropNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
