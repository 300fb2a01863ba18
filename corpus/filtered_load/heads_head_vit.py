import os
import tempfile

import torch
import torch.nn as nn


class Heads(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.head(x)


class TinyViT(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU())
        self.heads = Heads(num_classes)

    def forward(self, x):
        return self.heads(self.encoder(x))


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
PRETRAINED_WEIGHTS = os.path.join(tmp, "vit_b_16_pretrained.pth")
pretrained = TinyViT()
torch.save(pretrained.state_dict(), PRETRAINED_WEIGHTS)


def build(num_classes):
    net = TinyViT()
    net.heads.head = nn.Linear(16, num_classes)
    net.load_state_dict(torch.load(PRETRAINED_WEIGHTS, map_location="cpu"))
    return net


model = build(7)
for k, v in pretrained.state_dict().items():
    if not k.startswith("heads."):
        assert torch.equal(model.state_dict()[k], v), k
print("encoder loaded:", tuple(model(torch.randn(2, 8)).shape))
