"""The clearing happens two method calls away from the loop."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        self.steps = 0

    def _clear(self):
        self.optimizer.zero_grad(set_to_none=True)

    def on_step_end(self):
        self.steps += 1
        self._clear()

    def fit(self, loader):
        for x, y in loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.on_step_end()


if __name__ == "__main__":
    torch.manual_seed(33)
    trainer = Trainer(nn.Linear(3, 1))
    trainer.fit(DataLoader(TensorDataset(torch.randn(16, 3), torch.randn(16, 1)), batch_size=4))
    print(trainer.steps, "steps")
