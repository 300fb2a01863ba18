"""Multi-GPU training with nn.DataParallel: it scatters the CPU inputs to the GPUs itself,
so the script moves nothing, but the outputs are gathered on the first GPU and the labels
meet them on the CPU in the loss."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(32, 10), torch.randint(0, 3, (32,))), batch_size=8, shuffle=True)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
model = nn.DataParallel(model).cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for images, target in loader:
        target = target.cuda()
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
