"""A model returning log_softmax passed to train(), whose criterion defaults to NLLLoss
(the canonical pair); a CrossEntropyLoss elsewhere in the file gets a logits model."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LogNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


def train(model, x, y, criterion=nn.NLLLoss()):
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    for _ in range(3):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


torch.manual_seed(0)
x, y = torch.randn(20, 5), torch.randint(0, 3, (20,))
print("nll", train(LogNet(), x, y))
print("ce", train(nn.Linear(5, 3), x, y, criterion=nn.CrossEntropyLoss()))
