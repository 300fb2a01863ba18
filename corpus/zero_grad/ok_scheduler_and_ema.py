"""A zeroed optimizer next to a plateau scheduler stepped with a metric and an EMA helper."""
import copy

import torch
from torch import nn


class EMA:
    def __init__(self, model, decay=0.9):
        self.shadow = copy.deepcopy(model)
        self.model = model
        self.decay = decay

    @torch.no_grad()
    def step(self):
        for s, p in zip(self.shadow.parameters(), self.model.parameters()):
            s.mul_(self.decay).add_(p, alpha=1 - self.decay)


torch.manual_seed(32)
model = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1)
ema = EMA(model)
for epoch in range(3):
    for it in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.step()
    scheduler.step(loss.item())
