"""Look-alike: a dict batch moved item by item, each result stored back under its key (in
a loop over the keys, and one key at a time in the evaluation)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Records(Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        return {"features": torch.randn(3), "label": torch.tensor(i % 4)}


loader = DataLoader(Records(), batch_size=5, shuffle=True)
model = nn.Linear(3, 4).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for batch in loader:
        for name, value in batch.items():
            batch[name] = value.to(device)
        optimizer.zero_grad()
        loss = criterion(model(batch["features"]), batch["label"])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())

correct = 0
with torch.no_grad():
    for batch in loader:
        batch["features"] = batch["features"].to(device)
        batch["label"] = batch["label"].to(device)
        correct += (model(batch["features"]).argmax(1) == batch["label"]).sum().item()
print(correct)
