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
weights = os.path.join(tmp, "weights.pt")
pretrained = Backbone()
torch.save(pretrained.state_dict(), weights)

# the file name does not tell whether these are the original or fine-tuned weights
model = Backbone()
model.fc = nn.Linear(16, 3)
model.load_state_dict(torch.load(weights))

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
