import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def make_loaders(batch_size, workers=1):
    full = TensorDataset(torch.randn(20, 4), torch.randn(20, 1))
    train_set, val_set = random_split(full, [16, 4], generator=torch.Generator().manual_seed(0))
    train_dl = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers)
    val_dl = DataLoader(val_set, batch_size=batch_size)
    return train_dl, val_dl


if __name__ == "__main__":
    torch.manual_seed(0)
    train_dl, val_dl = make_loaders(8)
    model = nn.Linear(4, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        for xb, yb in train_dl:
            opt.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb).item() for xb, yb in val_dl)
        print(epoch, round(val, 3))
