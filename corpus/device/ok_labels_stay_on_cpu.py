"""The labels never meet the device: predictions are brought back to the CPU before the
accuracy, and the labels serve only as indices and sizes."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(20, 6), torch.randint(0, 3, (20,))), batch_size=5)
model = nn.Linear(6, 3).to(device)

model.eval()
correct, seen = 0, 0
with torch.no_grad():
    for x, y in loader:
        out = model(x.to(device))
        picked = out[torch.arange(len(y)), y]  # a CPU index into a device tensor is fine
        preds = out.argmax(1).cpu()
        correct += (preds == y).sum().item()
        seen += y.size(0)
print("accuracy", correct / seen, picked.shape)
