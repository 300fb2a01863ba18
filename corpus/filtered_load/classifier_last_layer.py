import os
import tempfile

import torch as T
import torch.nn as nn


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
model.load_state_dict(
    T.load(os.path.join(tmp, "vgg11_pretrained.pt"), map_location="cpu", weights_only=True)
)

for k, v in pretrained.state_dict().items():
    if not k.startswith("classifier.2."):
        assert T.equal(model.state_dict()[k], v), k
print("backbone loaded:", tuple(model(T.randn(2, 8)).shape))
