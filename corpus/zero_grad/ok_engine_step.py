"""An engine (DeepSpeed-style) runs backward and step and clears the gradients itself."""
import torch
from torch import nn


class Engine:
    def __init__(self, module, lr):
        self.module = module
        self.optimizer = torch.optim.SGD(module.parameters(), lr=lr)

    def __call__(self, x):
        return self.module(x)

    def backward(self, loss):
        loss.backward()

    def step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()


torch.manual_seed(31)
engine = Engine(nn.Linear(4, 1), lr=0.05)
for it in range(4):
    loss = engine(torch.randn(8, 4)).pow(2).mean()
    engine.backward(loss)
    engine.step()
