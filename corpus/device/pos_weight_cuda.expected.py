"""Multi-label training in the `.cuda()` style: `pos_weight` of BCEWithLogitsLoss is a
CPU tensor, the model and the batches are on the GPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(16, 6), torch.randint(0, 2, (16, 4)).float()), batch_size=4)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 4))
model.cuda()
pos_weight = torch.FloatTensor([1.0, 3.0, 3.0, 5.0])
criterion = nn.BCEWithLogitsLoss(
    pos_weight=pos_weight,  # positives are rare
).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step, (x, y) in enumerate(loader):
    x, y = x.cuda(), y.cuda()
    optimizer.zero_grad()
    loss = criterion.forward(model(x), y)
    loss.backward()
    optimizer.step()
print("loss", loss.item())
