"""A speaker-verification style "Softmax loss" head: the class is only *named* Softmax and
applies CrossEntropyLoss to logits."""
import torch
import torch.nn as nn


class Softmax(nn.Module):
    def __init__(self, n_out, n_classes):
        super().__init__()
        self.fc = nn.Linear(n_out, n_classes)
        self.criterion = torch.nn.CrossEntropyLoss()

    def forward(self, x, label):
        x = self.fc(x)
        loss = self.criterion(x, label)
        return loss


torch.manual_seed(0)
embed = nn.Linear(20, 16)
head = Softmax(16, 6)
opt = torch.optim.SGD(list(embed.parameters()) + list(head.parameters()), lr=0.1)
x, label = torch.randn(24, 20), torch.randint(0, 6, (24,))
for step in range(3):
    loss = head(embed(x), label)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
