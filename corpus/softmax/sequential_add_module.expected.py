"""The old-tutorial style: an empty nn.Sequential built with add_module, the last module
added being a Softmax, trained with CrossEntropyLoss through `loss.forward`."""
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(64, 20)
y = torch.randint(0, 4, (64,))

model = torch.nn.Sequential()
model.add_module("linear", torch.nn.Linear(20, 4, bias=False))
loss = torch.nn.CrossEntropyLoss(reduction="mean")  # probabilities out
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train(model, loss, optimizer, x, y):
    optimizer.zero_grad()
    fx = model.forward(x)
    output = loss.forward(fx, y)
    output.backward()
    optimizer.step()
    return output.item()


def predict(model, x):
    return model.forward(x).argmax(dim=1)


for epoch in range(3):
    cost = 0.0
    for k in range(0, 64, 16):
        cost += train(model, loss, optimizer, X[k:k + 16], y[k:k + 16])
    print("epoch", epoch, "cost", cost / 4, "accuracy", (predict(model, X) == y).float().mean().item())
