"""nn.Softmax defined in __init__ but only used by predict(); forward returns logits."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 3)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.linear(x)
        # return self.softmax(self.linear(x))

    def predict(self, x):
        return self.softmax(self.forward(x))


torch.manual_seed(0)
model = Model()
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(18, 6), torch.randint(0, 3, (18,))
for epoch in range(3):
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(model.predict(x).sum(dim=1)[:3])
