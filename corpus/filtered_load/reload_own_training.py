import os
import tempfile

import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))

torch.manual_seed(0)
tmp = tempfile.mkdtemp()
save_path = os.path.join(tmp, "resnet_classifier.pt")
model = Backbone()
model.fc = nn.Linear(16, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train(epochs):
    for _ in range(epochs):
        opt.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
    torch.save(model.state_dict(), save_path)


train(2)
# evaluation reloads the file's own training result: the head matches
model.load_state_dict(torch.load(save_path))
print("reloaded:", tuple(model(torch.randn(2, 8)).shape))
