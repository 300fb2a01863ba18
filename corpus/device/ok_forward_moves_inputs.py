"""The model's forward moves its inputs to its own device (a pattern of some libraries):
the loop may pass CPU batches."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SelfPlacing(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 2)

    def forward(self, x, y=None):
        x = x.to(self.fc.weight.device)
        logits = self.fc(x)
        if y is None:
            return logits
        return F.cross_entropy(logits, y.to(logits.device))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(10, 5), torch.randint(0, 2, (10,))), batch_size=5)
model = SelfPlacing().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
