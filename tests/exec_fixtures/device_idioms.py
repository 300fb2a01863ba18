"""Common training-script idioms that must run clean on the simulated GPU."""
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
if torch.cuda.is_available():
    torch.cuda.manual_seed_all(0)
    torch.backends.cudnn.benchmark = True
    print("gpu:", torch.cuda.get_device_name(0), torch.cuda.device_count())
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(16, 3, 8, 8), torch.randint(0, 4, (16,)))
loader = DataLoader(data, batch_size=4, shuffle=True, pin_memory=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(8 * 4 * 4, 4)
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        noise = torch.randn_like(x) * 0.01
        pos = torch.arange(x.size(0), device=x.device)
        h = self.features(x + noise).flatten(1) * self.scale
        return self.head(h) + pos[:, None] * 0


model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)  # built before the move
model = model.to(device)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
criterion = nn.CrossEntropyLoss(weight=torch.ones(4).to(device))
scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())

for epoch in range(2):
    model.train()
    total = 0.0
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=torch.cuda.is_available()):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
        if torch.isnan(loss):
            raise SystemExit("nan loss")
    scheduler.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            pred = model(x).argmax(dim=1)
            correct += (pred == y).sum().item()
            probs = torch.softmax(model(x), 1).cpu().tolist()
    print(f"epoch {epoch} loss {total / len(loader):.3f} acc {correct / len(data):.2f} {len(probs)}")
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        print("mem", torch.cuda.memory_allocated() / 2**20)

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "ckpt.pt")
    torch.save({"model": model.state_dict(), "opt": optimizer.state_dict()}, path)
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["opt"])
    cpu_state = {k: v.cpu() for k, v in model.state_dict().items()}
    print("saved", len(cpu_state))

# a CPU state dict loaded into the moved model; packed sequences (CPU batch_sizes); CPU masks
lin = nn.Linear(4, 2)
cpu_sd = {k: v.clone() for k, v in lin.state_dict().items()}
lin = lin.to(device)
lin.load_state_dict(cpu_sd)
lin(torch.randn(3, 4).to(device))
seq = torch.randn(3, 5, 4).to(device)
packed = nn.utils.rnn.pack_padded_sequence(seq, torch.tensor([5, 3, 2]), batch_first=True, enforce_sorted=False)
lstm = nn.LSTM(4, 3, batch_first=True).to(device)
out, _ = lstm(packed)
padded, lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
print(padded.shape, seq[torch.tensor([True, False, True])].shape, torch.where(seq > 0, seq, 0.0).shape)
