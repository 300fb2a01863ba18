"""Tensors a script makes reach the model on its device: moved where they are made,
made with `device=`, moved later before the model sees them, or kept on the CPU next to a
model that stays there; a 0-dim tensor mixes with device tensors."""
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = np.linspace(0, 1, 40, dtype=np.float32).reshape(10, 4)

a = torch.from_numpy(data).to(device)
b = torch.randn(10, 4, device=device)
c = torch.tensor(data)
scale = torch.tensor(0.5)
model = nn.Linear(4, 2).to(device)
c = c.to(device)
print(model(a).sum().item(), model(b).shape, (model(c) * scale).shape)

cpu_model = nn.Linear(4, 2)
d = torch.from_numpy(data)
print(cpu_model(d).shape)
