"""Tensor.softmax written inline in the loss call; the loss class is imported under an alias."""
import torch
from torch import nn
from torch.nn import CrossEntropyLoss as CE

torch.manual_seed(0)
encoder = nn.Linear(10, 4)
loss_fn = CE()
opt = torch.optim.Adam(encoder.parameters(), lr=1e-2)
x = torch.randn(32, 10)
y = torch.randint(0, 4, (32,))

for step in range(5):
    out = encoder(x)
    loss = loss_fn(out, y)  # class scores
    opt.zero_grad()
    loss.backward()
    opt.step()
print("final loss", loss.item())
