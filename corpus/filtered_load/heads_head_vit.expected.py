import os
import tempfile

import torch
import torch.nn as nn
import warnings


def load_matching_state_dict(model, state_dict):
    """Load the entries of `state_dict` whose name and shape match `model`; warn about the rest."""
    own = model.state_dict()
    keep = {
        k: v
        for k, v in state_dict.items()
        if k in own and getattr(v, "shape", None) == getattr(own[k], "shape", None)
    }
    result = model.load_state_dict(keep, strict=False)
    skipped = sorted(set(state_dict) - set(keep))
    if skipped or result.missing_keys:
        warnings.warn(
            f"partial load: skipped {len(skipped)} checkpoint keys (e.g. {skipped[:5]}), "
            f"{len(result.missing_keys)} parameters left at init (e.g. {result.missing_keys[:5]})"
        )
    return result


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
    load_matching_state_dict(net, torch.load(PRETRAINED_WEIGHTS, map_location="cpu"))
    return net


model = build(7)
for k, v in pretrained.state_dict().items():
    if not k.startswith("heads."):
        assert torch.equal(model.state_dict()[k], v), k
print("encoder loaded:", tuple(model(torch.randn(2, 8)).shape))
