"""A model returning log_softmax; the criterion is a CrossEntropyLoss default of the
train() parameter: the loss becomes NLLLoss at its own line (the model is kept)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(7, 5)

    def forward(self, x):
        return F.log_softmax(self.lin(x), dim=1)


def train(model, x, y, epochs=3, criterion=nn.CrossEntropyLoss(ignore_index=-1)):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(epochs):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


torch.manual_seed(0)
print("loss", train(Tagger(), torch.randn(20, 7), torch.randint(0, 5, (20,))))
