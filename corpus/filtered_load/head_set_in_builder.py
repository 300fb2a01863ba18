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


def build_classifier(num_classes):
    net = Backbone()
    net.fc = nn.Linear(16, num_classes)
    return net


torch.manual_seed(0)
tmp = tempfile.mkdtemp()
finetuned = build_classifier(3)
torch.save(finetuned.state_dict(), os.path.join(tmp, "classifier.pt"))

# the checkpoint was saved from the modified model: loading it strictly is right
model = build_classifier(3)
model.load_state_dict(torch.load(os.path.join(tmp, "classifier.pt"), map_location="cpu"))

for k, v in finetuned.state_dict().items():
    assert torch.equal(model.state_dict()[k], v), k
print("fine-tuned model loaded:", tuple(model(torch.randn(2, 8)).shape))
