"""Sequential ending with Softmax trained with CrossEntropyLoss, then the whole model is
exported: its consumers are elsewhere, so the tool only reports."""
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Softmax(dim=1))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
for epoch in range(3):
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.pt")
    torch.save(model, path)
    print("saved", os.path.getsize(path) > 0)
