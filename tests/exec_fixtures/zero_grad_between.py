"""zero_grad between backward() and step(): every step discards its gradients (TM202)."""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    x, y = torch.randn(5, 4), torch.randint(0, 2, (5,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
