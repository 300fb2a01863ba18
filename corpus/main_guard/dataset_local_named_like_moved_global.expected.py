import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n, scale):
        self.x = torch.arange(n, dtype=torch.float32)
        self.scale = scale

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        scale = self.scale  # a local name: not the module-level `scale` defined below
        return self.x[i] * scale


if __name__ == "__main__":
    loader = DataLoader(Noisy(8, 0.5), batch_size=4, num_workers=1)
    for batch in loader:
        print(batch.tolist())
    scale = torch.tensor(2.0)
    print("scale", scale.item())
