"""Train/eval functions receive model, loader and device as parameters; neither moves the batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(12, 20)
        self.l2 = nn.Linear(20, 4)

    def forward(self, x):
        return F.log_softmax(self.l2(F.relu(self.l1(x))), dim=1)


def train(model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    print("train epoch", epoch, loss.item())


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    print("correct", correct)


def main():
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    train_loader = DataLoader(TensorDataset(torch.randn(32, 12), torch.randint(0, 4, (32,))), batch_size=8)
    test_loader = DataLoader(TensorDataset(torch.randn(16, 12), torch.randint(0, 4, (16,))), batch_size=8)
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, 3):
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)


if __name__ == "__main__":
    main()
