"""Probabilities computed once, used for the loss (wrong) and for a confidence metric (fine)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
head = nn.Linear(12, 3)
optimizer = torch.optim.SGD(head.parameters(), lr=0.2)
features = torch.randn(40, 12)
labels = torch.randint(0, 3, (40,))

for step in range(4):
    logits = head(features)
    probs = F.softmax(logits, dim=1)
    loss = nn.CrossEntropyLoss(reduction="none")(logits, labels).mean()
    confidence = probs.max(dim=1).values.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.3f} confidence {confidence.item():.3f}")
