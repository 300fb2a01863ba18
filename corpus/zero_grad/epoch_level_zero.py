import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(8)
loader = DataLoader(TensorDataset(torch.randn(24, 4), torch.randint(0, 2, (24,))), batch_size=6)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    optimizer.zero_grad(set_to_none=True)  # reset gradients
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
