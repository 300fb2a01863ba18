"""Nothing clears the gradients; an unknown helper that receives the optimizer runs between
backward() and step() (it clips the gradients), under the same `if` as both."""
import types

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def _clip(optimizer, limit):
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                p.grad.data.clamp_(-limit, limit)


utils = types.SimpleNamespace(clip_gradient=_clip)  # a helper module, as far as the tool can tell

torch.manual_seed(9)
loader = DataLoader(TensorDataset(torch.randn(30, 4), torch.randn(30, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for index, (x, y) in enumerate(loader):
    if len(x) == 4:  # skip the short last batch
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        utils.clip_gradient(optimizer, 0.5)
        optimizer.step()
        print(index, round(loss.item(), 4))
