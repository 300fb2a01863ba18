import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(epoch):
    model.train()
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total:.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(16, 6), torch.randn(16, 1))
    loader = DataLoader(dataset, batch_size=8, num_workers=1)
    model = nn.Linear(6, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()

    for epoch in range(1):
        train(epoch)
