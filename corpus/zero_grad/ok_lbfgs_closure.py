import torch
from torch import nn

torch.manual_seed(25)
x, y = torch.randn(32, 3), torch.randn(32, 1)
model = nn.Linear(3, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)

for epoch in range(3):

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(epoch, loss.item())
