"""Full-batch training on arrays turned into tensors: the model goes to the device, the
tensors made from the numpy data stay on the CPU (no DataLoader at all)."""
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

rng = np.random.default_rng(0)
features = rng.normal(size=(64, 5)).astype(np.float32)
classes = rng.integers(0, 3, size=64)
X_train = torch.from_numpy(features)
y_train = torch.tensor(classes, dtype=torch.long)

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(20):
    optimizer.zero_grad()
    outputs = model(X_train)
    loss = criterion(outputs, y_train)
    loss.backward()
    optimizer.step()
print("final loss", loss.item())
