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
IMAGENET_CKPT = os.path.join(tmp, "imagenet_backbone.pth")
pretrained = Backbone()
torch.save(pretrained.state_dict(), IMAGENET_CKPT)

# the constructor sizes the head for 5 classes; the checkpoint has the default 10
model = Backbone(num_classes=5)
model.load_state_dict(torch.load(IMAGENET_CKPT))

for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))

