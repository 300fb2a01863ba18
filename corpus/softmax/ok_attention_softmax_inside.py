"""Softmax inside the network (attention weights); the classifier returns logits."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class AttnPool(nn.Module):
    def __init__(self, dim, n_classes):
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim))
        self.key = nn.Linear(dim, dim)
        self.cls = nn.Linear(dim, n_classes)

    def forward(self, tokens):
        scores = self.key(tokens) @ self.query / math.sqrt(tokens.shape[-1])
        weights = F.softmax(scores, dim=1)
        pooled = (weights.unsqueeze(-1) * tokens).sum(dim=1)
        return self.cls(pooled)


torch.manual_seed(0)
model = AttnPool(8, 4)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
tokens, labels = torch.randn(12, 5, 8), torch.randint(0, 4, (12,))
for step in range(3):
    loss = criterion(model(tokens), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
