import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self):
        for x, y in self.loader:
            self.opt.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            self.opt.step()


ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
trainer = Trainer(nn.Linear(4, 1), DataLoader(ds, batch_size=8, num_workers=1))

if __name__ == "__main__":
    trainer.fit()
    print("done")
