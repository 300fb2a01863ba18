"""Position ids built with torch.arange inside forward, no device=."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyEncoder(nn.Module):
    def __init__(self, vocab=30, dim=8, max_len=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, ids: torch.Tensor):
        T = ids.shape[1]
        positions = torch.arange(T, device=ids.device)
        h = self.tok(ids) + self.pos(positions)
        return self.head(h.mean(dim=1))


loader = DataLoader(TensorDataset(torch.randint(0, 30, (12, 6)), torch.randint(0, 2, (12,))), batch_size=4)
model = TinyEncoder().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for ids, y in loader:
        ids, y = ids.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(ids), y)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
