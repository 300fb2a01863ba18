"""The loss is computed by a same-file helper that receives the model and the batch;
neither the loop nor the helper moves the batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def compute_loss(net, inputs, targets):
    logits = net(inputs)
    return F.cross_entropy(logits, targets)


loader = DataLoader(TensorDataset(torch.randn(20, 4), torch.randint(0, 2, (20,))), batch_size=5)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = compute_loss(model, inputs, targets)
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
