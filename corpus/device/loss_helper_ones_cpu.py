"""An ordinal loss written as a plain function: it pads the labels with a column of ones
made on the CPU, and the training loop calls it with the output of a moved model and
moved labels."""
import torch
import torch.nn as nn


class Ordinal(nn.Module):
    def __init__(self, n_in, n_levels):
        super().__init__()
        self.fc = nn.Linear(n_in, n_levels - 1)

    def forward(self, x):
        return self.fc(x)


def ordinal_loss(logits, levels):
    ones = torch.ones(levels.shape[0], 1)
    padded = torch.cat([ones, levels[:, :-1]], dim=1)
    return nn.functional.binary_cross_entropy_with_logits(logits, levels * padded)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Ordinal(6, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 6, device=device)
levels = (torch.rand(8, 3, device=device) > 0.5).float()
for step in range(3):
    optimizer.zero_grad()
    loss = ordinal_loss(model(x), levels)
    loss.backward()
    optimizer.step()
print("loss", loss.item())
