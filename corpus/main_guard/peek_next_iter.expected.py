import torch
from torch.utils import data

features = torch.randn(12, 4)
targets = torch.randint(0, 2, (12,))
loader = data.DataLoader(data.TensorDataset(features, targets), batch_size=6, num_workers=1)

if __name__ == "__main__":
    # look at one batch before training
    xb, yb = next(iter(loader))
    print("batch", tuple(xb.shape), tuple(yb.shape))
