import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def run_epoch(model, loader, opt, loss_fn):
    model.train()
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=8, num_workers=1)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print("loss", run_epoch(model, train_loader, opt, loss_fn=nn.MSELoss()))
