"""Class weights made on the CPU, and the loss moved with the model: nothing to fix."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(24, 5), torch.randint(0, 3, (24,))), batch_size=8)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 4.0]))
criterion.to(device)
weights_on_device = torch.tensor([1.0, 2.0, 4.0], device=device)
nll = nn.NLLLoss(weight=weights_on_device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for features, target in loader:
    features, target = features.to(device), target.to(device)
    optimizer.zero_grad()
    out = model(features)
    loss = criterion(out, target) + nll(out.log_softmax(dim=1), target)
    loss.backward()
    optimizer.step()
print("loss", loss.item())
