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
os.chdir(tempfile.mkdtemp())

# the tutorial shape: the head is replaced, the modified model is saved and loaded back
resnet = Backbone()
resnet.fc = nn.Linear(resnet.fc.in_features, 4)
torch.save(resnet.state_dict(), "params.ckpt")
resnet.load_state_dict(torch.load("params.ckpt"))
print("reloaded:", tuple(resnet(torch.randn(2, 8)).shape))
