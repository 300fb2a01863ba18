import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(8, 2))
loaders = {
    "train": DataLoader(ds, batch_size=4, num_workers=2),
    "val": DataLoader(ds, batch_size=4),
}


def train():
    for (x,) in loaders["train"]:
        print(x.shape)


# only the loader without workers is iterated at import time
for (x,) in loaders["val"]:
    print("val", x.shape)
