"""LSTM initial state created in forward with torch.zeros and no device=."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SeqClassifier(nn.Module):
    def __init__(self, n_in=5, hidden=8, n_out=3):
        super().__init__()
        self.hidden = hidden
        self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, n_out)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden)
        c0 = torch.zeros(1, x.size(0), self.hidden)
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1])


loader = DataLoader(TensorDataset(torch.randn(16, 7, 5), torch.randint(0, 3, (16,))), batch_size=4)
model = SeqClassifier().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(2):
    for seqs, labels in loader:
        seqs, labels = seqs.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(seqs), labels)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
