"""model.zero_grad() at the END of each epoch only: the first leak happens before any
clearing, but clearing is observed in the run, so zero_grad is misplaced (TM202), not missing."""
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for i in range(3):
        loss = model(torch.randn(4, 3)).pow(2).mean()
        loss.backward()
        opt.step()
    model.zero_grad()
