"""A Lightning-style module: training_step computes F.cross_entropy(self(x), y) and the
forward ends with a softmax.  The module calls itself (predict_proba uses the same
probabilities), so the tool reports and leaves the edit to a human."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(12, 4)

    def forward(self, x):
        return F.softmax(self.layer(x), dim=1)

    def training_step(self, batch):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def predict_proba(self, x):
        return self(x)


torch.manual_seed(0)
module = LitClassifier()
opt = torch.optim.SGD(module.parameters(), lr=0.3)
batch = (torch.randn(24, 12), torch.randint(0, 4, (24,)))
for step in range(4):
    loss = module.training_step(batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item(), "proba row sums", module.predict_proba(batch[0][:2]).sum(dim=1))
