"""The batch is moved under the same condition as the model: correct as written."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()
loader = DataLoader(TensorDataset(torch.randn(12, 5), torch.randint(0, 3, (12,))), batch_size=4)
model = nn.Linear(5, 3)
if use_cuda:
    model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for batch_idx, (data, target) in enumerate(loader):
        if use_cuda:
            data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
