"""A global model returning logits used by train()/evaluate() functions; evaluate() takes
F.softmax of the output for a confidence figure; the loss always gets the logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
X, Y = torch.randn(30, 6), torch.randint(0, 3, (30,))


def train():
    output = model(X)
    loss = criterion(output, Y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def evaluate():
    with torch.no_grad():
        output = model(X)
        probs = F.softmax(output, dim=1)
        return probs.max(dim=1).values.mean().item()


for epoch in range(3):
    print(epoch, train(), evaluate())
