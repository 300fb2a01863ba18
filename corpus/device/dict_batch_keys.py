"""Dict batches read by key: `model(batch["features"])`, `criterion(out, batch["label"])`."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "cpu"


class Records(Dataset):
    def __init__(self):
        self.x = torch.randn(20, 3)
        self.y = torch.randint(0, 4, (20,))

    def __len__(self):
        return 20

    def __getitem__(self, i):
        return {"features": self.x[i], "label": self.y[i], "name": f"row{i}"}


loader = DataLoader(Records(), batch_size=5)
model = nn.Linear(3, 4).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for batch in loader:
        optimizer.zero_grad()
        out = model(batch["features"])
        loss = criterion(out, batch["label"])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item(), batch["name"][0])
