"""A Softmax inside an nn.Sequential that add_module extends with a last layer: the
model's output is that layer's, logits for CrossEntropyLoss (nothing to remove)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 20)
y = torch.randint(0, 4, (64,))

model = nn.Sequential(nn.Linear(20, 8), nn.Softmax(dim=1))  # a soft gating of the features
model.add_module("head", nn.Linear(8, 4))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    optimizer.zero_grad()
    loss = criterion(model(X), y)
    loss.backward()
    optimizer.step()
    print("epoch", epoch, "loss", loss.item())
