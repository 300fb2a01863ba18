"""The training loop turns the outputs into probabilities before the criterion."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 24), nn.Tanh(), nn.Linear(24, 5))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loader = DataLoader(TensorDataset(torch.randn(48, 6), torch.randint(0, 5, (48,))), batch_size=16)

for epoch in range(3):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        probs = torch.softmax(model(x), 1)
        loss = criterion(probs, y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(epoch, total / len(loader))
