import torch
from torch.utils.data import DataLoader, TensorDataset

train_kwargs = {"batch_size": 4, "shuffle": False, "num_workers": 1}
if __name__ == "__main__":
    dataset = TensorDataset(torch.arange(12.0).view(6, 2), torch.zeros(6))
    train_loader = DataLoader(dataset, **train_kwargs)

    # the sum of every batch, gathered with a comprehension
    sums = [x.sum().item() for x, _ in train_loader]
    print("batch sums", sums)
