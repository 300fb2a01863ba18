import torch
from torch.utils.data import DataLoader, TensorDataset


def describe(t):
    return f"{tuple(t.shape)} mean={t.float().mean():.2f}"


if __name__ == "__main__":
    images = torch.rand(10, 1, 4, 4)
    labels = torch.randint(0, 5, (10,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=5, num_workers=1)

    dataiter = iter(loader)
    batch_images, batch_labels = next(dataiter)

    print("images", describe(batch_images))
    print("labels", describe(batch_labels))
