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


def build_classifier(num_classes):
    net = Backbone()
    net.fc = nn.Linear(16, num_classes)
    return net


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
pretrained = Backbone()
torch.save(pretrained.state_dict(), os.path.join(tmp, "resnet18_imagenet.pth"))

# the builder replaced the head; the checkpoint is the pretrained backbone's
model = build_classifier(3)
model.load_state_dict(torch.load(os.path.join(tmp, "resnet18_imagenet.pth"), map_location="cpu"))

for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))

