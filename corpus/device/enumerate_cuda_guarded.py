"""`.cuda()` style under `if torch.cuda.is_available():`; enumerate with a nested tuple."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8, 5)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x.flatten(1))


train_loader = DataLoader(
    TensorDataset(torch.randn(24, 1, 8, 8), torch.randint(0, 5, (24,))), batch_size=6
)
net = Net()
if torch.cuda.is_available():
    net.cuda()
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)

for epoch in range(2):
    running = 0.0
    for i, (images, targets) in enumerate(train_loader):
        # forward + backward
        opt.zero_grad()
        loss = loss_fn(net(images), targets)
        loss.backward()
        opt.step()
        running += loss.item()
    print("epoch", epoch, "loss", running / (i + 1))
