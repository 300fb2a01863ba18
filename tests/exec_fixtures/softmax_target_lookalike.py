"""Legitimate: softmax on the *target* (soft labels), logits as input; softmax for metrics."""
import torch
import torch.nn as nn

model = nn.Linear(5, 4)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    x = torch.randn(6, 5)
    soft = torch.softmax(torch.randn(6, 4), dim=1)
    opt.zero_grad()
    logits = model(x)
    probs = logits.softmax(dim=1)  # metrics only
    loss = criterion(logits, soft)
    loss.backward()
    opt.step()
    print("confidence", probs.max(dim=1).values.mean().item())
