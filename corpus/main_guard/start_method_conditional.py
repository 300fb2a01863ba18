import multiprocessing as mp

import torch
from torch.utils.data import DataLoader, TensorDataset

# workers only where they are forked; spawn/forkserver would re-run this script
NUM_WORKERS = 0 if mp.get_start_method() != "fork" else 2

loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=NUM_WORKERS)
for (x,) in loader:
    print(tuple(x.shape))
