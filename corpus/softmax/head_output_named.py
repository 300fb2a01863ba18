"""A classifier whose head is an `nn.Sequential` ending with a softmax; `forward` keeps
its output in a name before returning it, and the loop feeds it to cross-entropy."""
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.output_layer = nn.Sequential(nn.Linear(32, 4), nn.Softmax(dim=-1))

    def forward(self, x):
        h = self.features(x)
        output = self.output_layer(h)
        return output


torch.manual_seed(0)
model = Classifier()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
for epoch in range(5):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    accuracy = (model(x).argmax(dim=-1) == y).float().mean()
print("loss", loss.item(), "accuracy", accuracy.item())
