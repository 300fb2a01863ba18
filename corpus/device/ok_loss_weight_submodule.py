"""The weighted loss is a submodule of the model: `model.to(device)` moves its weight
buffer too; a second weighted loss is only used on the CPU, for a report."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
        self.loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 4.0]))

    def forward(self, x, y):
        logits = self.net(x)
        return logits, self.loss(logits, y)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(24, 5), torch.randint(0, 3, (24,))), batch_size=8)
model = Classifier().to(device)
report_loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 4.0]))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for features, target in loader:
    features, target = features.to(device), target.to(device)
    optimizer.zero_grad()
    logits, loss = model(features, target)
    loss.backward()
    optimizer.step()
    print("cpu loss", report_loss(logits.detach().cpu(), target.cpu()).item())
