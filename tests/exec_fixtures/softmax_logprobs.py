"""log_softmax before F.cross_entropy, on a sequence batch (N, C, T) (TM502)."""
import torch
import torch.nn.functional as F

w = torch.randn(3, 7, requires_grad=True)
opt = torch.optim.Adam([w])
for i in range(3):
    x = torch.randn(2, 5, 3)  # N, T, features
    logits = (x @ w).transpose(1, 2)  # N, C=7, T
    target = torch.randint(0, 7, (2, 5))
    opt.zero_grad()
    loss = F.cross_entropy(F.log_softmax(logits, dim=1), target)
    loss.backward()
    opt.step()
