"""A first loop runs while the model is still on the CPU; the model is moved afterwards and
the second loop moves its batch: correct."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,))), batch_size=4)
model = nn.Linear(4, 2)
criterion = nn.CrossEntropyLoss()

with torch.no_grad():
    for x, y in loader:  # sanity check on the CPU, before the move
        print("cpu loss", criterion(model(x), y).item())

model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
