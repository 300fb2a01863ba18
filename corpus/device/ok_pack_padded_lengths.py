"""Lengths for pack_padded_sequence must stay on the CPU: no device= for them."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Packed(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 5, batch_first=True)
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        lengths = torch.full((x.size(0),), x.size(1), dtype=torch.long)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(packed)
        return self.fc(h[-1])


loader = DataLoader(TensorDataset(torch.randn(8, 4, 3), torch.randint(0, 2, (8,))), batch_size=4)
model = Packed().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
