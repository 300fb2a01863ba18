"""The most basic script, pytorch/examples-style: train() and test() receive the model, the
forward ends with F.softmax, the loss is F.cross_entropy; the model's other uses are all
harmless (argmax accuracy, eval()/train(), parameters(), state_dict(), .to())."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.softmax(x, dim=1)


def train(model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.cross_entropy(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print(f"test loss {test_loss:.4f}, accuracy {correct}/{len(test_loader.dataset)}")


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")
    data = TensorDataset(torch.randn(128, 20), torch.randint(0, 5, (128,)))
    train_loader = DataLoader(data, batch_size=32, shuffle=True)
    test_loader = DataLoader(data, batch_size=64)
    model = Net().to(device)
    print("parameters:", sum(p.numel() for p in model.parameters()))
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, 3):
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
    state = model.state_dict()
    print("saved tensors:", len(state))


if __name__ == "__main__":
    main()
