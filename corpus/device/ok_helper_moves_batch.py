"""A helper defined in the file moves the batch: `inputs, labels = to_device(batch, device)`."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def to_device(batch, device):
    return [t.to(device) for t in batch]


def cuda_transfer(images, target):
    if torch.cuda.is_available():
        images, target = images.cuda(), target.cuda()
    return images, target


loader = DataLoader(TensorDataset(torch.randn(12, 3), torch.randint(0, 2, (12,))), batch_size=4)
model = nn.Linear(3, 2).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for batch in loader:
        inputs, labels = to_device(batch, device)
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
    for images, target in loader:
        images, target = cuda_transfer(images, target)
        loss = criterion(model(images), target)
    print(epoch, loss.item())
