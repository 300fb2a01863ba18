import os

import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(8, 2), torch.zeros(8))
# no worker processes on Windows, where they would be spawned
loader = DataLoader(ds, batch_size=4, num_workers=0 if os.name == "nt" else 2)
for x, y in loader:
    print(tuple(x.shape))
