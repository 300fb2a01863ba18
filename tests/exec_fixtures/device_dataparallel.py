"""Legitimate: nn.DataParallel scatters the CPU batch onto the GPU itself."""
import torch
import torch.nn as nn

model = nn.Linear(6, 2)
if torch.cuda.is_available():
    model = nn.DataParallel(model).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    x, y = torch.randn(4, 6), torch.randint(0, 2, (4,))
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.cross_entropy(out, y.to(out.device))
    loss.backward()
    opt.step()
