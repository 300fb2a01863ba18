"""A causal mask built by a module-level helper on the CPU, used by masked_fill in forward."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def causal_mask(size):
    return torch.triu(torch.ones(size, size), diagonal=1).bool()


class TinyAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / 8**0.5
        scores = scores.masked_fill(causal_mask(x.size(1)), float("-inf"))
        h = scores.softmax(dim=-1) @ v
        return self.head(h[:, -1])


loader = DataLoader(TensorDataset(torch.randn(12, 5, 8), torch.randint(0, 2, (12,))), batch_size=4)
model = TinyAttention().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
