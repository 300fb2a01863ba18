"""A transformers-style head: forward computes CrossEntropyLoss on the classifier's logits
(loss_fct = CrossEntropyLoss()), while a self-attention block in the same file applies
softmax to its scores and multiplies them with the values."""
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss


class SelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        probs = nn.functional.softmax(q @ k.transpose(-2, -1), dim=-1)
        return probs @ v


class ForSequenceClassification(nn.Module):
    def __init__(self, dim=8, num_labels=4):
        super().__init__()
        self.num_labels = num_labels
        self.encoder = SelfAttention(dim)
        self.classifier = nn.Linear(dim, num_labels)

    def forward(self, x, labels=None):
        pooled = self.encoder(x)[:, 0]
        logits = self.classifier(pooled)
        loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            loss = loss_fct(logits.view(-1, self.num_labels), labels.view(-1))
        return loss, logits


torch.manual_seed(0)
model = ForSequenceClassification()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, labels = torch.randn(6, 5, 8), torch.randint(0, 4, (6,))
for step in range(3):
    loss, logits = model(x, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
