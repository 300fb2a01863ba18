"""Embedding + Conv1d model moved with .cuda(); the token batch stays on the CPU.
(On the meta device alone, F.embedding and convolutions accept CPU inputs.)"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.conv = nn.Conv1d(8, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, tokens):
        h = self.emb(tokens).transpose(1, 2)
        h = torch.relu(self.conv(h)).mean(dim=2)
        return self.head(h)


data = TensorDataset(torch.randint(0, 50, (12, 10)), torch.randint(0, 2, (12,)))
loader = DataLoader(data, batch_size=4)
model = Net()
if torch.cuda.is_available():
    model = model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(2):
    correct = 0
    for tokens, labels in loader:
        optimizer.zero_grad()
        out = model(tokens)
        loss = nn.functional.cross_entropy(out, labels)
        loss.backward()
        optimizer.step()
        correct += (out.argmax(1) == labels).sum().item()
    print("epoch", epoch, "acc", correct / len(data))
