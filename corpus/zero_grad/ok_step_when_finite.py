"""zero_grad() every iteration and a step that is skipped when the loss is not finite:
not an accumulation window, nothing is wiped."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(34)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for i, (x, y) in enumerate(loader):
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    if torch.isfinite(loss):
        optimizer.step()
print("done")
