"""A "pretrained" backbone with a 10-class head is saved; the new model has 5 classes and
loads the checkpoint strictly: size mismatch."""
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
    model.load_state_dict(torch.load(path))
