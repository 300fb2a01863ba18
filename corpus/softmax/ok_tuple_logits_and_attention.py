"""`forward` returns the logits and the attention weights (a softmax) as a tuple; the
loss gets the logits, the weights are only inspected."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attend(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        weights = F.softmax(self.score(x).squeeze(-1), dim=1)
        pooled = (weights.unsqueeze(-1) * x).sum(1)
        return self.fc(pooled), weights


torch.manual_seed(0)
model = Attend()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 5, 8), torch.randint(0, 3, (4,))
for step in range(3):
    optimizer.zero_grad()
    logits, attn = model(x)
    loss = criterion(logits, y)
    loss.backward()
    optimizer.step()
print("loss", loss.item(), "attention rows sum to", attn.sum(1).tolist())
