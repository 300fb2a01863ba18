import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run():
    torch.manual_seed(9)
    ds = TensorDataset(torch.randn(20, 5), torch.randn(20, 1))
    loader = DataLoader(ds, batch_size=5)
    model = nn.Linear(5, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        for xb, yb in loader:
            loss = nn.functional.l1_loss(model(xb), yb)
            loss.backward()
            opt.step()
        model.zero_grad()
        print("epoch", epoch, loss.item())


if __name__ == "__main__":
    run()
