"""The loss gets the logits; softmax is only used for a confidence metric and predictions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(30, 8), torch.randint(0, 3, (30,))

for epoch in range(3):
    logits = model(x)
    loss = criterion(logits, y)
    probs = F.softmax(logits, dim=1)
    confidence = probs.max(dim=1).values.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(epoch, loss.item(), confidence.item())

with torch.no_grad():
    scores = torch.softmax(model(x), dim=1)
print("positive-class probability", scores[:, 1].mean().item())
