"""A tiny language model that computes its loss in forward, on a softmax of the scores."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, T = 12, 16, 5


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.proj = nn.Linear(DIM, VOCAB)

    def forward(self, idx, targets):
        a = self.proj(self.emb(idx))
        loss = F.cross_entropy(a.view(-1, VOCAB), targets.view(-1))
        return loss


torch.manual_seed(0)
lm = TinyLM()
opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
for step in range(6):
    idx = torch.randint(0, VOCAB, (4, T))
    targets = torch.roll(idx, -1, dims=1)
    loss = lm(idx, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
