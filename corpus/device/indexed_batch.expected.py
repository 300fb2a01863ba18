"""The batch is used as `batch[0]` / `batch[1]` and never moved."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

loader = DataLoader(TensorDataset(torch.randn(24, 5), torch.randn(24, 1)), batch_size=8)
model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1)).to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
mse = nn.MSELoss()

for epoch in range(2):
    for batch in loader:
        batch = [(t.to(DEVICE) if torch.is_tensor(t) else t) for t in batch]
        opt.zero_grad()
        pred = model(batch[0])
        loss = mse(pred, batch[1])
        loss.backward()
        opt.step()
print("done", loss.item())
