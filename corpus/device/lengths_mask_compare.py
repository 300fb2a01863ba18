"""A padding mask from sequence lengths: torch.arange in forward compared with device lengths."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MeanPool(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x, lengths: torch.Tensor):
        T = x.size(1)
        mask = torch.arange(T)[None, :] < lengths[:, None]
        h = self.proj(x) * mask[..., None]
        return self.head(h.sum(1) / lengths[:, None])


data = TensorDataset(torch.randn(12, 7, 6), torch.randint(1, 8, (12,)), torch.randint(0, 3, (12,)))
loader = DataLoader(data, batch_size=4)
model = MeanPool().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, lengths, y in loader:
        x, lengths, y = x.to(device), lengths.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x, lengths), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
