"""The model is an nn.Sequential made by a builder function and returned, with its
optimizer, from a setup function as a tuple; the softmax line carries a comment."""
import torch
import torch.nn as nn


def build_model(n_in, n_classes):
    return nn.Sequential(
        nn.Linear(n_in, 24),
        nn.ReLU(),
        nn.Linear(24, n_classes),
        nn.Softmax(dim=1),  # probabilities for the loss
    )


def setup(lr):
    model = build_model(10, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return model, optimizer


torch.manual_seed(0)
model, optimizer = setup(1e-2)
loss_fn = nn.CrossEntropyLoss()
x, y = torch.randn(40, 10), torch.randint(0, 4, (40,))
for step in range(5):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
model.eval()
with torch.no_grad():
    top2 = model(x).topk(2, dim=1).indices
print("loss", loss.item(), "top-2 shape", tuple(top2.shape))
