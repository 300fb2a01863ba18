"""forward returns probabilities only when asked (return_probs=True, at inference); the
training loop's cross-entropy gets the logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, return_probs=False):
        logits = self.fc(x)
        if return_probs:
            return F.softmax(logits, dim=1)
        return logits


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(12, 4), torch.randint(0, 3, (12,))
for _ in range(3):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(net(x, return_probs=True).sum(dim=1))
