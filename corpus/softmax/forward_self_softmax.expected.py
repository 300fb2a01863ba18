"""A model whose forward ends with a softmax module attribute; the loop uses CrossEntropyLoss."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, n_in, n_classes):
        super().__init__()
        self.fc1 = nn.Linear(n_in, 16)
        self.fc2 = nn.Linear(16, n_classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = self.fc2(x)
        return x


def train(model, loader, criterion, optimizer):
    model.train()
    for inputs, labels in loader:
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for inputs, labels in loader:
            _, predicted = torch.max(model(inputs), 1)
            correct += (predicted == labels).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16)
    model = Classifier(10, 3)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        print(epoch, train(model, loader, criterion, optimizer), evaluate(model, loader))
