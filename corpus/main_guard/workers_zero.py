import torch
from torch.utils.data import DataLoader, TensorDataset

train_set = TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))
train_loader = DataLoader(train_set, batch_size=4, num_workers=0, shuffle=True)

for x, y in train_loader:
    print(tuple(x.shape), y.tolist())
