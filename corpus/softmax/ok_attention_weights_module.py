"""An attention-weights submodule whose forward *ends* with a softmax, used inside a
classifier through torch.bmm; the classifier returns logits to CrossEntropyLoss, and a
predict() helper applies softmax for inference only."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionWeights(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, h):
        scores = torch.bmm(self.q(h), self.k(h).transpose(1, 2)) / h.size(-1) ** 0.5
        return F.softmax(scores, dim=-1)


class Classifier(nn.Module):
    def __init__(self, dim=8, n_classes=3):
        super().__init__()
        self.attn = AttentionWeights(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, h):
        w = self.attn(h)
        context = torch.bmm(w, h).mean(dim=1)
        return self.head(context)


def predict(model, h):
    return F.softmax(model(h), dim=1)


torch.manual_seed(0)
model = Classifier()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
h, y = torch.randn(16, 5, 8), torch.randint(0, 3, (16,))
for step in range(4):
    loss = criterion(model(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item(), "p", predict(model, h[:2]).sum(dim=1))
