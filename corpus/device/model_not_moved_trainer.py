"""A trainer class is given the model and the device: it moves every batch with
`.to(self.device)` but nothing moves the model it was given."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.body(x))


class Trainer:
    def __init__(self, model, device, lr=1e-2):
        self.model = model
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()

    def fit(self, loader, epochs):
        for _ in range(epochs):
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                self.optimizer.zero_grad()
                loss = self.loss_fn(self.model(x), y)
                loss.backward()
                self.optimizer.step()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(TensorDataset(torch.randn(24, 6), torch.randn(24, 1)), batch_size=8)
    net = Regressor(6, 32)
    trainer = Trainer(net, device)
    trainer.fit(loader, epochs=2)
