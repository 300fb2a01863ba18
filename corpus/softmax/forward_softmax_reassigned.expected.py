"""forward reassigns x to its softmax before returning it; the model is moved to a device."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(9, 18), nn.ReLU())
        self.head = nn.Linear(18, n_classes)

    def forward(self, x):
        x = self.head(self.body(x))
        return x


device = torch.device("cpu")
torch.manual_seed(0)
model = Net().to(device)
ce = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
loader = DataLoader(TensorDataset(torch.randn(45, 9), torch.randint(0, 3, (45,))), batch_size=15)

for epoch in range(2):
    correct = 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        outputs = model(inputs)
        loss = ce(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (outputs.argmax(1) == targets).sum().item()
    print(epoch, correct)
