"""Loss and metric helpers that make tensors where their inputs are (`device=`,
`zeros_like`), and one called with CPU tensors only: nothing meets another device."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def padded_loss(logits, y):
    ones = torch.ones(y.shape[0], 1, device=y.device)
    extra = torch.zeros_like(logits[:, :1])
    return nn.functional.cross_entropy(torch.cat([logits, extra], 1), y) + ones.sum() * 0


def cpu_metric(pred, y):
    total = torch.tensor([float(len(y))])
    return (pred == y).sum() / total


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x, y = torch.randn(5, 4, device=device), torch.randint(0, 3, (5,), device=device)
print(padded_loss(model(x), y).item())
print(cpu_metric(torch.tensor([1, 2]), torch.tensor([1, 0])).item())
