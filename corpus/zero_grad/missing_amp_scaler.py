import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)
loader = DataLoader(TensorDataset(torch.randn(24, 8), torch.randn(24, 1)), batch_size=6)
model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
scaler = torch.amp.GradScaler("cpu", enabled=False)

for epoch in range(2):
    for x, y in loader:
        with torch.autocast("cpu", enabled=False):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print("epoch", epoch, "done")
