"""Legitimate: gradient accumulation (4 backward per step), model.zero_grad(), manual
p.grad = None, two backward calls before one step (GAN-style), LBFGS closure."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
optimizer.zero_grad()
for i in range(12):
    x, y = torch.randn(3, 4), torch.randn(3, 1)
    loss = nn.functional.mse_loss(model(x), y) / 4
    loss.backward()
    if (i + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()

for i in range(3):
    model.zero_grad()
    a = model(torch.randn(2, 4)).sum()
    b = model(torch.randn(2, 4)).mean()
    a.backward()
    b.backward()
    optimizer.step()

for i in range(3):
    for p in model.parameters():
        p.grad = None
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()

opt2 = torch.optim.SGD(model.parameters(), lr=0.01)
opt2.zero_grad()
for i in range(3):
    model(torch.randn(2, 4)).sum().backward()
    opt2.step()
    opt2.zero_grad(set_to_none=False)

lbfgs = torch.optim.LBFGS(model.parameters(), max_iter=3)
x, y = torch.randn(6, 4), torch.randn(6, 1)


def closure():
    lbfgs.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for i in range(2):
    lbfgs.step(closure)
# autograd.grad does not write .grad
for i in range(2):
    xi = torch.randn(2, 4, requires_grad=True)
    (g,) = torch.autograd.grad(model(xi).sum(), xi, create_graph=True)
    opt2.zero_grad()
    (model(xi).sum() + g.pow(2).sum()).backward()
    opt2.step()
