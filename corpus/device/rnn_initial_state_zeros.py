"""A GRU classifier trained from a function: the model and the batch go to the device, the
initial hidden state made with torch.zeros in the loop stays on the CPU."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GRUClassifier(nn.Module):
    def __init__(self, n_in=6, n_hidden=16, n_classes=3):
        super().__init__()
        self.gru = nn.GRU(n_in, n_hidden, batch_first=True)
        self.fc = nn.Linear(n_hidden, n_classes)

    def forward(self, x, h):
        out, h = self.gru(x, h)
        return self.fc(out[:, -1]), h


model = GRUClassifier().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def train(batches, n_hidden=16):
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        hidden = torch.zeros(1, x.size(0), n_hidden)  # (layers, batch, hidden)
        optimizer.zero_grad()
        logits, hidden = model(x, hidden)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
    return loss.item()


torch.manual_seed(0)
data = [(torch.randn(4, 5, 6), torch.randint(0, 3, (4,))) for _ in range(3)]
print("loss", train(data))
