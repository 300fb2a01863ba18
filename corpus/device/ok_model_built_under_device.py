"""The model is built under `with torch.device(device):`: its parameters are made on the
device, no move needed."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

with torch.device(device):
    model = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 3))

x = torch.randn(4, 6).to(device)
print(model(x).shape)
