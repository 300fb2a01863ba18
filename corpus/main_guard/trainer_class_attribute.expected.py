import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader, lr=0.1):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                self.opt.zero_grad()
                nn.functional.mse_loss(self.model(x), y).backward()
                self.opt.step()
            print("epoch", epoch)


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    trainer = Trainer(nn.Linear(4, 1), DataLoader(ds, batch_size=8, num_workers=1))
    trainer.fit(1)
