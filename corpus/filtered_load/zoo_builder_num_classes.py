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
PRETRAINED_PATH = os.path.join(tmp, "backbone_pretrained.pt")
pretrained = Backbone()
torch.save(pretrained.state_dict(), PRETRAINED_PATH)


def backbone(num_classes=10, pretrained=False):
    # a model-zoo style builder: the head follows num_classes, the weights are the 10-class ones
    model = Backbone(num_classes=num_classes)
    if pretrained:
        model.load_state_dict(torch.load(PRETRAINED_PATH, map_location="cpu"))
    return model


model = backbone(num_classes=4, pretrained=True)
for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))

