"""A recurrent tagger whose forward ends with an nn.LogSoftmax layer, trained with
torch.nn.functional.cross_entropy (redundant: the fix switches to nll_loss)."""
import torch
import torch.nn as nn
from torch.nn import functional


class Tagger(nn.Module):
    def __init__(self, vocab=20, dim=8, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, tags)
        self.log_probs = nn.LogSoftmax(dim=-1)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.log_probs(self.out(h))


torch.manual_seed(0)
tagger = Tagger()
opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
tokens = torch.randint(0, 20, (6, 7))
tags = torch.randint(0, 5, (6, 7))
for step in range(4):
    scores = tagger(tokens)
    loss = functional.nll_loss(scores.view(-1, 5), tags.view(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
