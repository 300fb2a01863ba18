"""F.log_softmax written inline before F.cross_entropy (with label smoothing)."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(7, 4, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
x = torch.randn(25, 7)
y = torch.randint(0, 4, (25,))

for step in range(5):
    z = x @ w
    loss = F.cross_entropy(F.log_softmax(z, dim=1), y, label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
