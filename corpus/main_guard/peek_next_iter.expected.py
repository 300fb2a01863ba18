import torch
from torch.utils import data

if __name__ == "__main__":
    features = torch.randn(12, 4)
    targets = torch.randint(0, 2, (12,))
    loader = data.DataLoader(data.TensorDataset(features, targets), batch_size=6, num_workers=1)

    # look at one batch before training
    xb, yb = next(iter(loader))
    print("batch", tuple(xb.shape), tuple(yb.shape))
