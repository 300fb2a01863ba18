"""The canonical pair: forward returns log_softmax, the loss is F.nll_loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
data, target = torch.randn(24, 16), torch.randint(0, 10, (24,))
for epoch in range(3):
    optimizer.zero_grad()
    output = model(data)
    loss = F.nll_loss(output, target)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
