"""Softmax before CrossEntropyLoss (TM501)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(5, 4), nn.Softmax(dim=1))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    x, y = torch.randn(6, 5), torch.randint(0, 4, (6,))
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
