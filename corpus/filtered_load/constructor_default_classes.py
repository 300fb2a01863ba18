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
pretrained = Backbone()
torch.save(pretrained.state_dict(), os.path.join(tmp, "resnet_imagenet.pth"))

# num_classes equals the constructor's default: the head is unchanged
model = Backbone(num_classes=10)
model.load_state_dict(torch.load(os.path.join(tmp, "resnet_imagenet.pth")))
for k, v in pretrained.state_dict().items():
    assert torch.equal(model.state_dict()[k], v), k
print("loaded:", tuple(model(torch.randn(2, 8)).shape))
