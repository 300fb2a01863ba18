"""Class weights for an imbalanced dataset, made on the CPU: the model and the batch are
moved, the loss (which holds the weights as a buffer) is not."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = np.array([0] * 18 + [1] * 4 + [2] * 2)
counts = np.bincount(labels)
class_weights = torch.tensor(counts.sum() / (len(counts) * counts), dtype=torch.float32)
loader = DataLoader(TensorDataset(torch.randn(24, 5), torch.from_numpy(labels)), batch_size=8, shuffle=True)

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
criterion = nn.CrossEntropyLoss(weight=class_weights)  # rare classes count more
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train_epoch(model, loader, criterion, optimizer):
    for features, target in loader:
        features, target = features.to(device), target.to(device)
        optimizer.zero_grad()
        loss = criterion(model(features), target)
        loss.backward()
        optimizer.step()
    return loss.item()


for epoch in range(2):
    print("epoch", epoch, "loss", train_epoch(model, loader, criterion, optimizer))
