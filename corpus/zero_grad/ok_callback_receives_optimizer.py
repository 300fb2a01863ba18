import torch
from torch import nn


class StepCallbacks:
    def __init__(self):
        self.steps = 0

    def on_step_end(self, optimizer):
        self.steps += 1
        optimizer.zero_grad()


torch.manual_seed(28)
model = nn.Linear(3, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
callbacks = StepCallbacks()
for it in range(4):
    loss = model(torch.randn(5, 3)).pow(2).mean()
    loss.backward()
    optimizer.step()
    callbacks.on_step_end(optimizer)
print(callbacks.steps, "steps")
