import os
import tempfile

import torch
from torch import nn


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
torch.save(pretrained.state_dict(), os.path.join(tmp, "imagenet_weights.pt"))

model = Backbone()
model.fc = nn.Linear(model.fc.in_features, 2)
# strict=False relaxes missing/unexpected keys only: the fc shapes still clash
model.load_state_dict(torch.load(os.path.join(tmp, "imagenet_weights.pt")), strict=False)

# the backbone must hold the checkpoint's weights
for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))
