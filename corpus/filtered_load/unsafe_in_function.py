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



def build_model(ckpt_path, num_classes):
    model = Backbone()
    model.fc = nn.Linear(16, num_classes)
    model.load_state_dict(torch.load(ckpt_path, map_location="cpu", weights_only=True))
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
