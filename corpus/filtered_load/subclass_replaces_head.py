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


class FineTuned(Backbone):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 3)  # replaces the inherited 10-class head


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
pretrained = Backbone()
torch.save(pretrained.state_dict(), os.path.join(tmp, "resnet_pretrained.pt"))

model = FineTuned()
model.load_state_dict(torch.load(os.path.join(tmp, "resnet_pretrained.pt")))

for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))

