"""A tensor created in forward() without device= (an LSTM's h0) stays on the CPU."""
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, batch_first=True)
        self.out = nn.Linear(5, 3)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 5)
        c0 = torch.zeros(1, x.size(0), 5)
        y, _ = self.lstm(x, (h0, c0))
        return self.out(y[:, -1])


device = "cuda" if torch.cuda.is_available() else "cpu"
model = Tagger().to(device)
opt = torch.optim.AdamW(model.parameters())
for step in range(3):
    x = torch.randn(4, 7, 6).to(device)
    y = torch.randint(0, 3, (4,)).to(device)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
