import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    NUM_WORKERS = min(2, os.cpu_count() or 1)
    BATCH = 4

    ds = TensorDataset(torch.randn(12, 3), torch.randint(0, 3, (12,)))
    dl = DataLoader(ds, batch_size=BATCH, num_workers=NUM_WORKERS)
    weight = torch.zeros(3, 3, requires_grad=True)

    for step, (x, y) in zip(range(2), dl):
        loss = F.cross_entropy(x @ weight, y)
        loss.backward()
        print(step, round(loss.item(), 3))
