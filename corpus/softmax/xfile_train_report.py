"""A training script that imports its model from another file (5.8): the model ends with a
softmax and the loss is CrossEntropyLoss.  Other consumers of the model are not visible from
here, so the tool only reports."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xfile_model_def import SoftmaxNet  # noqa: E402

torch.manual_seed(0)
model = SoftmaxNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(24, 6), torch.randint(0, 3, (24,))
for epoch in range(3):
    output = model(x)
    loss = criterion(output, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", loss.item())
