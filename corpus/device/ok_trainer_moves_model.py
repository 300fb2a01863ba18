"""A trainer class moves the model it is given (`self.model = model.to(self.device)`) and
every batch: nothing is left behind."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


class Trainer:
    def __init__(self, model, device):
        self.device = device
        self.model = model.to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, loader):
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 3, (12,))), batch_size=4)
    Trainer(Classifier(), device).fit(loader)
    model = Classifier()
    Trainer(model, device).fit(loader)
