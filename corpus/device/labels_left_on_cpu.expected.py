"""Inputs are moved, the labels are not: they meet the model's output in the loss on the CPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(24, 5), torch.randint(0, 3, (24,))), batch_size=8)

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for features, target in loader:
        target = target.to(device)
        features = features.to(device)
        optimizer.zero_grad()
        loss = criterion(model(features), target)
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "loss", loss.item())
