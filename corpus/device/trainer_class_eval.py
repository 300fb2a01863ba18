"""A trainer class: the training loop moves its batch to `self.device`, the validation
loop forgets to; the loaders are attributes set from constructor arguments."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, train_loader, val_loader):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def train_epoch(self):
        self.model.train()
        for images, labels in self.train_loader:
            images, labels = images.to(self.device), labels.to(self.device)
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(images), labels)
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def validate(self):
        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for images, labels in self.val_loader:
                logits = self.model(images)
                total += self.criterion(logits, labels).item()
        return total


def make(n):
    return DataLoader(TensorDataset(torch.randn(n, 9), torch.randint(0, 2, (n,))), batch_size=4)


trainer = Trainer(nn.Sequential(nn.Linear(9, 8), nn.ReLU(), nn.Linear(8, 2)), make(16), make(8))
for epoch in range(2):
    print(epoch, trainer.train_epoch(), trainer.validate())
