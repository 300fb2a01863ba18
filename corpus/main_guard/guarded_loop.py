import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(8, 3))
loader = DataLoader(dataset, batch_size=4, num_workers=1)

if __name__ == '__main__':
    for (x,) in loader:
        print(tuple(x.shape))
