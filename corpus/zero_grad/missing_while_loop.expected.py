import torch
from torch.nn import Linear, MSELoss
from torch.optim import RMSprop

torch.manual_seed(4)
w_true = torch.randn(3, 1)
model = Linear(3, 1)
loss_fn = MSELoss()
opt = RMSprop(model.parameters(), lr=0.01)

step = 0
while step < 6:
    opt.zero_grad()
    x = torch.randn(8, 3)
    y = x @ w_true
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    step += 1
print("trained for", step, "steps")
