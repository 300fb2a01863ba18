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
ckpt = os.path.join(tmp, "classifier.pt")
torch.save(Backbone(num_classes=3).state_dict(), ckpt)

# built with 3 classes and loaded from a checkpoint nothing marks as pretrained: the
# file's own kind of model (an inference script)
model = Backbone(num_classes=3)
model.load_state_dict(torch.load(ckpt))
print("loaded:", tuple(model(torch.randn(2, 8)).shape))
