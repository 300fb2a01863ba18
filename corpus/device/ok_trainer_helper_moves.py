"""A trainer class whose loops hand each batch to a method that moves it."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _to_device(self, batch):
        return [t.to(self.device) for t in batch]

    def fit(self):
        for batch in self.loader:
            x, y = self._to_device(batch)
            self.optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def evaluate(self):
        correct = 0
        with torch.no_grad():
            for batch in self.loader:
                x, y = self._to_device(batch)
                correct += (self.model(x).argmax(1) == y).sum().item()
        return correct


loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,))), batch_size=4)
trainer = Trainer(nn.Linear(4, 2), loader)
for epoch in range(2):
    print(epoch, trainer.fit(), trainer.evaluate())
