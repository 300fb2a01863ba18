import functools

import torch
from torch.utils.data import DataLoader, TensorDataset


def add_batch(total, batch):
    return total + batch[0].sum().item()


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.ones(8, 2)), batch_size=4, num_workers=1)
    # a callee this tool cannot read receives the loader: it may iterate it (here it does)
    total = functools.reduce(add_batch, loader, 0.0)
    print("sum", total)
