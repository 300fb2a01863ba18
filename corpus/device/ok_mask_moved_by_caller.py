"""A helper builds the square subsequent mask on the CPU; forward moves it to the input's device."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def square_subsequent_mask(size):
    mask = torch.triu(torch.ones(size, size), diagonal=1)
    return mask.masked_fill(mask == 1, float("-inf"))


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, 2, 16, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src):
        mask = square_subsequent_mask(src.size(1)).to(src.device)
        return self.out(self.encoder(self.emb(src), mask=mask))


loader = DataLoader(TensorDataset(torch.randint(0, 16, (8, 5)), torch.randint(0, 16, (8, 5))), batch_size=4)
model = TinyLM().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 16), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
