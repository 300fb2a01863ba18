"""Inference on a dummy input: the network is moved with `.cuda()`, the input made with
`torch.randn` is not (the loop's own inputs are made inside it)."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


net = Net().cuda()
net.eval()
dummy = torch.randn(1, 3, 8, 8)
with torch.no_grad():
    print("logits", net(dummy))
for trial in range(3):
    probe = torch.rand(2, 3, 8, 8)
    with torch.no_grad():
        print(trial, net(probe).argmax(1).tolist())
