"""pytorch/examples-style functions: `train()` moves data and target with `.cuda()` under
`if use_cuda:`, `main()` builds the model and never moves it."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        if use_cuda:
            data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "done")


def main():
    loader = DataLoader(TensorDataset(torch.randn(20, 12), torch.randint(0, 4, (20,))), batch_size=5)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4), nn.LogSoftmax(dim=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    for epoch in range(1, 3):
        train(model, loader, optimizer, epoch)


if __name__ == "__main__":
    main()
