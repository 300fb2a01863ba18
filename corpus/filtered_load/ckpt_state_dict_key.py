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
# a published checkpoint: weights wrapped in a dict with metadata
torch.save({"arch": "vit_tiny", "state_dict": pretrained.state_dict()}, os.path.join(tmp, "vit_tiny_pretrain.pth"))

model = Backbone()
model.fc = nn.Linear(16, 4)
ckpt = torch.load(os.path.join(tmp, "vit_tiny_pretrain.pth"), map_location=torch.device("cpu"))
print("arch:", ckpt["arch"])
model.load_state_dict(ckpt["state_dict"])

# the backbone must hold the checkpoint's weights
for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))
