"""HF-style dict batches: `model(**batch)` with the batch left on the CPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TokenDataset(Dataset):
    def __init__(self, n=24):
        self.ids = torch.randint(0, 50, (n, 7))
        self.labels = torch.randint(0, 2, (n,))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.head = nn.Linear(8, 2)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, input_ids, labels):
        logits = self.head(self.emb(input_ids).mean(1))
        return self.loss(logits, labels)


dataloader = DataLoader(TokenDataset(), batch_size=8, shuffle=True)
model = TinyClassifier().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for epoch in range(2):
    for batch in dataloader:
        loss = model(**batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print("epoch", epoch, loss.item())
