import os
import tempfile

import torch as T
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


class VGGish(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.classifier = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


T.manual_seed(0)
tmp = tempfile.mkdtemp()
pretrained = VGGish()
T.save(pretrained.state_dict(), os.path.join(tmp, "vgg11_pretrained.pt"))

model = VGGish()
model.classifier[-1] = nn.Linear(16, 2)
load_matching_state_dict(model, T.load(os.path.join(tmp, "vgg11_pretrained.pt"), map_location="cpu", weights_only=True))

for k, v in pretrained.state_dict().items():
    if not k.startswith("classifier.2."):
        assert T.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(T.randn(2, 8)).shape))
