"""The model is a module-level global that train() and evaluate() read directly; the
forward applies a softmax module attribute through a variable (with a comment on that
line); evaluate() computes accuracy with torch.max(outputs.data, 1) and outputs.size(0)."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.out = nn.Linear(16, 3)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.out(self.body(x))
        x = self.softmax(x)  # class probabilities
        return x


torch.manual_seed(0)
dataset = TensorDataset(torch.randn(90, 8), torch.randint(0, 3, (90,)))
loader = DataLoader(dataset, batch_size=30)
model = Classifier()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
print(model)


def train():
    model.train()
    for inputs, labels in loader:
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate():
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            outputs = model(inputs)
            _, predicted = torch.max(outputs.data, 1)
            total += outputs.size(0)
            correct += (predicted == labels).sum().item()
    return correct / total


for epoch in range(3):
    print(epoch, train(), evaluate())
