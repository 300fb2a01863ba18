import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1, help="number of data loading workers")
    parser.add_argument("--batch-size", type=int, default=4)
    opt, _ = parser.parse_known_args()

    dataset = TensorDataset(torch.randn(8, 5), torch.randint(0, 2, (8,)))
    dataloader = DataLoader(dataset, batch_size=opt.batch_size, shuffle=True, num_workers=int(opt.workers))
    net = nn.Linear(5, 2)

    for i, (x, y) in enumerate(dataloader):
        out = net(x)
        print(i, tuple(out.shape))
