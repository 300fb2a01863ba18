import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=1)

means = []
for (x,) in loader:
    means.append(x.mean().item())

from statistics import *  # noqa: E402,F403  (star import after the loop: cannot move under a guard)

print("mean of batch means", mean(means))
