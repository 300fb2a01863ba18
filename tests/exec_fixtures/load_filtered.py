"""Fixed: only the checkpoint's tensors whose shapes fit are loaded; the backbone is asserted
equal to the checkpoint's."""
import os
import tempfile

import torch
import torch.nn as nn


def make(classes):
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, classes))


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "pretrained.pt")
    pretrained = make(10)
    torch.save(pretrained.state_dict(), path)
    model = make(5)
    state = torch.load(path)
    own = model.state_dict()
    state = {k: v for k, v in state.items() if k in own and v.shape == own[k].shape}
    model.load_state_dict(state, strict=False)
    assert torch.equal(model[0].weight, pretrained[0].weight)
