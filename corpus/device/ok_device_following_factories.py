"""forward() builds tensors with new_zeros / zeros_like / randn_like / device=x.device / .to(x)
and a 0-dim constant: all follow the input's device."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc(x)
        bias = h.new_zeros(h.size(1))
        noise = torch.randn_like(h) * 0.01
        gate = torch.ones_like(h)
        steps = torch.arange(h.size(1), device=x.device)
        scale = torch.tensor(0.5)
        mask = torch.ones(h.size(1)).to(x)
        h = (h + bias + noise) * gate * mask + steps.float() * 0.0
        return self.out(h * scale)


loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,))), batch_size=4)
model = Noisy().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
