"""init_hidden() makes the GRU state with torch.zeros; forward passes it with the device batch."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CharRNN(nn.Module):
    def __init__(self, vocab=20, hidden=8, layers=2):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.emb = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def init_hidden(self, batch_size):
        return torch.zeros(self.layers, batch_size, self.hidden)

    def forward(self, tokens):
        h = self.init_hidden(tokens.size(0))
        out, h = self.gru(self.emb(tokens), h)
        return self.out(out)


loader = DataLoader(TensorDataset(torch.randint(0, 20, (12, 6)), torch.randint(0, 20, (12, 6))), batch_size=4)
model = CharRNN().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 20), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
