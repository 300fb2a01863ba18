"""A sinusoidal table built on the CPU by a static builder, registered as a buffer (moves with the model)."""
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SinusoidalPositions(nn.Module):
    def __init__(self, max_len=16, dim=8):
        super().__init__()
        self.register_buffer("table", self.build(max_len, dim), persistent=False)

    @staticmethod
    def build(max_len, dim):
        pos = torch.arange(max_len).float()[:, None]
        div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        table = torch.zeros(max_len, dim)
        table[:, 0::2] = torch.sin(pos * div)
        table[:, 1::2] = torch.cos(pos * div)
        return table

    def forward(self, x):
        return x + self.table[: x.size(1)]


class Encoder(nn.Module):
    def __init__(self, vocab=20, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = SinusoidalPositions(dim=dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, ids):
        return self.head(self.pos(self.emb(ids)).mean(1))


loader = DataLoader(TensorDataset(torch.randint(0, 20, (8, 6)), torch.randint(0, 2, (8,))), batch_size=4)
model = Encoder().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
