"""Manual inner-loop updates with torch.autograd.grad (MAML-style): no .grad is written."""
import torch

torch.manual_seed(30)
w = torch.randn(3, 1, requires_grad=True)
meta_opt = torch.optim.SGD([w], lr=0.01)
for task in range(3):
    x, y = torch.randn(6, 3), torch.randn(6, 1)
    fast = w
    for inner in range(2):
        loss = (x @ fast - y).pow(2).mean()
        (g,) = torch.autograd.grad(loss, fast, create_graph=True)
        fast = fast - 0.1 * g
    meta_opt.zero_grad()
    meta_loss = (x @ fast - y).pow(2).mean()
    meta_loss.backward()
    meta_opt.step()
