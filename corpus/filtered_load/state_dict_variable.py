import os
import tempfile

import torch
import torch.nn as nn
from torch import load as torch_load


class Backbone(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
pretrained_path = os.path.join(tmp, "pretrained_backbone.pt")
pretrained = Backbone()
torch.save(pretrained.state_dict(), pretrained_path)

model = Backbone()
model.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(16, 5))
state = torch_load(pretrained_path, weights_only=True)
missing, unexpected = model.load_state_dict(state)
print("missing", missing, "unexpected", unexpected)

# the backbone must hold the checkpoint's weights
for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))
