"""A Trainer class holding the model and the criterion as attributes; the model's forward
ends with a softmax layer applied through an nn.Sequential head."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(12, 24), nn.ReLU())
        self.head = nn.Sequential(
            nn.Linear(24, 4),
            nn.Softmax(dim=1),
        )

    def forward(self, x):
        return self.head(self.features(x))


class Trainer:
    def __init__(self, loader):
        self.model = Net()
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = loader

    def epoch(self):
        self.model.train()
        for x, y in self.loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def accuracy(self, x, y):
        self.model.eval()
        with torch.no_grad():
            return (self.model(x).argmax(dim=1) == y).float().mean().item()


torch.manual_seed(0)
X, Y = torch.randn(48, 12), torch.randint(0, 4, (48,))
trainer = Trainer(DataLoader(TensorDataset(X, Y), batch_size=16))
for e in range(3):
    print(e, trainer.epoch(), trainer.accuracy(X, Y))
