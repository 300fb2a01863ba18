"""`for data in loader: inputs, labels = data` -- the unpacked parts are never moved."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"

trainset = TensorDataset(torch.randn(30, 4), torch.randint(0, 2, (30,)))
trainloader = DataLoader(trainset, batch_size=10)

net = nn.Linear(4, 2)
net.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(2):
    for data in trainloader:
        inputs, labels = data
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
