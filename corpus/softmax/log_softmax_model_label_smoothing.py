"""A model returning log_softmax, with a label-smoothed CrossEntropyLoss: NLLLoss has no
label_smoothing, so the tool only reports this one."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)

    def forward(self, x):
        return self.lin(x).log_softmax(dim=-1)


torch.manual_seed(0)
tagger = Tagger()
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
x, y = torch.randn(20, 6), torch.randint(0, 4, (20,))
for epoch in range(3):
    loss = criterion(tagger(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
