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


class Backbone(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))



def build_model(ckpt_path, num_classes):
    model = Backbone()
    model.fc = nn.Linear(16, num_classes)
    load_matching_state_dict(model, torch.load(ckpt_path, map_location="cpu", weights_only=True))
    return model


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
pretrained = Backbone()
torch.save(pretrained.state_dict(), os.path.join(tmp, "model.pt"))

model = build_model(os.path.join(tmp, "model.pt"), num_classes=2)
# the backbone must hold the checkpoint's weights
for k, v in pretrained.state_dict().items():
    if not k.startswith("fc."):
        assert torch.equal(model.state_dict()[k], v), k
# fine-tune the new head
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(2, 8)).sum()
loss.backward()
optimizer.step()
print("backbone loaded:", tuple(model(torch.randn(2, 8)).shape))
