"""`enc.to(device)` on a tokenizer-like BatchEncoding (a dict whose .to mutates and returns self)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Encoding(dict):
    """Like transformers.BatchEncoding: .to() moves the values in place."""

    def to(self, device):
        for k, v in self.items():
            self[k] = v.to(device)
        return self


def tokenize(n):
    return Encoding(input_ids=torch.randint(0, 20, (n, 5)))


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(20, 4)
        self.fc = nn.Linear(4, 2)

    def forward(self, input_ids):
        return self.fc(self.emb(input_ids))


model = Bag().to(device)
enc = tokenize(3)
enc.to(device)
with torch.no_grad():
    print(model(**enc).shape)

loader = DataLoader(TensorDataset(torch.randint(0, 20, (8, 5)), torch.randint(0, 2, (8,))), batch_size=4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for ids, y in loader:
        ids, y = ids.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(ids), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
