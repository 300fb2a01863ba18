"""An nn.Sequential classifier that ends with nn.Softmax, trained with CrossEntropyLoss."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(96, 20)
y = torch.randint(0, 4, (96,))
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

net = nn.Sequential(
    nn.Linear(20, 32),
    nn.ReLU(),
    nn.Linear(32, 4),
    nn.Softmax(dim=1),
)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(net(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")

net.eval()
with torch.no_grad():
    pred = net(X).argmax(dim=1)
print("accuracy", (pred == y).float().mean().item())
