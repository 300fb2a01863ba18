import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __init__(self, n):
        self.x = torch.arange(n, dtype=torch.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.x[i] ** 2


def show_batch():
    for x, y in loader:
        print("x", x.tolist(), "y", y.tolist())
        break


LABELS = ("small", "large")


def label(v):
    return LABELS[int(v > 10)]


if __name__ == "__main__":
    loader = DataLoader(Squares(8), batch_size=4, num_workers=1)

    show_batch()

    print([label(v) for v in (1.0, 20.0)])
