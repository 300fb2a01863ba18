"""The torch.accelerator idiom of the current PyTorch tutorials; pin_memory with a worker-less
loader and a pinning thread; device properties."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")
if device == "cuda":
    print(torch.cuda.get_device_properties(0).total_memory // 2**30, "GiB")
loader = DataLoader(TensorDataset(torch.randn(12, 28 * 28), torch.randint(0, 10, (12,))), batch_size=4, pin_memory=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
model.train()
for batch, (X, y) in enumerate(loader):
    X, y = X.to(device), y.to(device)
    pred = model(X)
    loss = loss_fn(pred, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"loss: {loss.item():>7f}  [{(batch + 1) * len(X):>5d}]")
