import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for x, y in loader:
        out = model(x)
        loss = criterion(F.softmax(out, dim=1), y)  # probabilities!
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
