"""A causal mask created once in __init__ and registered as a buffer moves with the model."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MaskedMix(nn.Module):
    def __init__(self, T=6, dim=4):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(T, T)))
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        T = x.size(1)
        w = self.mask[:T, :T] / self.mask[:T, :T].sum(-1, keepdim=True)
        h = w @ self.proj(x)
        return self.head(h[:, -1])


loader = DataLoader(TensorDataset(torch.randn(8, 6, 4), torch.randint(0, 2, (8,))), batch_size=4)
model = MaskedMix().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for seq, label in loader:
        seq, label = seq.to(device), label.to(device)
        loss = nn.functional.cross_entropy(model(seq), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
