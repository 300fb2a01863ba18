import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(8, 2))


def run(loader):
    return sum(x.shape[0] for (x,) in loader)


# at import time `run` gets a loader without workers
print("rows", run(DataLoader(ds, batch_size=4)))


def later():
    # the loader with workers reaches `run` only from here, which nothing calls at import
    return run(DataLoader(ds, batch_size=4, num_workers=2))
