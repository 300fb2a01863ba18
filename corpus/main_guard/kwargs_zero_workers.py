import torch
from torch.utils.data import DataLoader, TensorDataset

loader_kwargs = dict(batch_size=4, shuffle=False, num_workers=0)
loader = DataLoader(TensorDataset(torch.randn(8, 3)), **loader_kwargs)
print([tuple(x.shape) for (x,) in loader])
