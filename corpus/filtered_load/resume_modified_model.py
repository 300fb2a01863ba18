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
path = os.path.join(tmp, "resnet_finetune_last.pt")

# first run: fine-tune with a 3-class head and save a resumable checkpoint
run1 = Backbone()
run1.fc = nn.Linear(16, 3)
opt1 = torch.optim.SGD(run1.parameters(), lr=0.1, momentum=0.9)
torch.nn.functional.cross_entropy(run1(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0])).backward()
opt1.step()
torch.save({"model": run1.state_dict(), "optimizer": opt1.state_dict(), "epoch": 1}, path)

# resume: same modified architecture, so the strict load is right
model = Backbone()
model.fc = nn.Linear(16, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ckpt = torch.load(path)
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])
start_epoch = ckpt["epoch"] + 1

for k, v in run1.state_dict().items():
    assert torch.equal(model.state_dict()[k], v), k
print("resumed at epoch", start_epoch)
