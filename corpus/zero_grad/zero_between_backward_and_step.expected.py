import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(10)
loader = DataLoader(TensorDataset(torch.randn(24, 6), torch.randn(24, 1)), batch_size=8)
model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(2):
    for inputs, target in loader:
        output = model(inputs)
        loss = nn.functional.mse_loss(output, target)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    print(epoch, loss.item())
