import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    dataset = TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))
    loader = DataLoader(dataset, batch_size=4, num_workers=1)
    model = nn.Linear(3, 2)
    for x, y in loader:
        print(tuple(model(x).shape), y.tolist())


if __name__ == "__main__":
    main()
