"""DataLoader workers at module level without a __main__ guard: fails under spawn."""
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
loader = DataLoader(data, batch_size=4, num_workers=1)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
