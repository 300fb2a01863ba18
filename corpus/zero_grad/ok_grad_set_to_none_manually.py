import torch
from torch import nn


def reset_grads(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None


torch.manual_seed(24)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    reset_grads(optimizer)

# plain SGD by hand, gradients cleared in place
w = torch.zeros(4, 1, requires_grad=True)
for step in range(4):
    x = torch.randn(8, 4)
    loss = (x @ w - 1.0).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
