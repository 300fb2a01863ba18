"""A char-RNN in the style of the classic tutorials: `init_hidden` makes the hidden state
with `torch.zeros` on the CPU, the loop gets it for every batch and hands it to the model,
which is on the GPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CharRNN(nn.Module):
    def __init__(self, vocab, hidden=32):
        super().__init__()
        self.hidden_size = hidden
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def init_hidden(self, batch_size):
        return torch.zeros(1, batch_size, self.hidden_size)

    def forward(self, x, hidden):
        out, hidden = self.gru(self.embed(x), hidden)
        return self.out(out), hidden


text = torch.randint(0, 20, (64, 9))
loader = DataLoader(TensorDataset(text[:, :-1], text[:, 1:]), batch_size=16, shuffle=True)
model = CharRNN(20).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(2):
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        hidden = model.init_hidden(inputs.size(0))
        optimizer.zero_grad()
        logits, hidden = model(inputs, hidden)
        loss = criterion(logits.reshape(-1, 20), targets.reshape(-1))
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
