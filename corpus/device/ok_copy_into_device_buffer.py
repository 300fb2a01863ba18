"""Pre-allocated device buffers filled with .copy_() (old dcgan style): never `.to()`'d, still correct."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,))), batch_size=4)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inp = torch.empty(4, 4, device=device)
label = torch.empty(4, dtype=torch.long, device=device)

for epoch in range(2):
    for real_cpu, target in loader:
        inp.copy_(real_cpu)
        label.copy_(target)
        loss = nn.functional.cross_entropy(model(inp), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
