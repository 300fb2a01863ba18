import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, lr=0.01):
        self.model = model
        self.criterion = nn.SmoothL1Loss()
        self.optimizer = torch.optim.Adagrad(self.model.parameters(), lr=lr)

    def fit(self, loader, epochs=2):
        for epoch in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                pred = self.model(x)
                loss = self.criterion(pred, y)
                loss.backward()
                self.optimizer.step()
            print("epoch", epoch, float(loss))


if __name__ == "__main__":
    torch.manual_seed(7)
    ds = TensorDataset(torch.randn(18, 3), torch.randn(18, 1))
    Trainer(nn.Linear(3, 1)).fit(DataLoader(ds, batch_size=6))
