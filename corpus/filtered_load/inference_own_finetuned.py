"""An inference script: a pretrained backbone gets a new 3-class head, then the
project's own fine-tuned weights (saved from the modified model, here by the training
run below) are loaded strictly. Nothing is trained in this file, so the new head's
weights can only come from that checkpoint: it fits, and the load is right."""
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
ckpt = os.path.join(tempfile.mkdtemp(), "model.pth")
finetuned = Backbone()
finetuned.fc = nn.Linear(16, 3)
torch.save(finetuned.state_dict(), ckpt)  # (what an earlier training run left)

model = Backbone()
model.fc = nn.Linear(16, 3)
model.load_state_dict(torch.load(ckpt, map_location="cpu"))
model.eval()
with torch.no_grad():
    print("prediction:", model(torch.randn(1, 8)).argmax(1).item())
