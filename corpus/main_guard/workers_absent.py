import torch
from torch.utils.data import DataLoader, TensorDataset

# num_workers is not given: the default (0) loads in the main process
loader = DataLoader(TensorDataset(torch.randn(6, 2)), batch_size=3)
first = next(iter(loader))
print([tuple(t.shape) for t in first])
for epoch in range(2):
    for (x,) in loader:
        print(epoch, round(x.sum().item(), 3))
