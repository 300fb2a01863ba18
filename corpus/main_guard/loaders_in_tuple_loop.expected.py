import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=1)
    val_loader = DataLoader(TensorDataset(torch.randn(4, 2)), batch_size=4)

    for name, loader in (("train", train_loader), ("val", val_loader)):
        means = [x.mean().item() for (x,) in loader]
        print(name, len(means))
