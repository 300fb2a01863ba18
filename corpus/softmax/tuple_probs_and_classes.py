"""`forward` returns the probabilities and the predicted classes as a tuple; the loop
unpacks it and feeds the probabilities to cross-entropy."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        logits = self.fc(x)
        probs = F.softmax(logits, dim=1)
        classes = torch.max(probs, 1)[1]
        return probs, classes


torch.manual_seed(0)
model = TextCNN()
loss_function = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
for step in range(5):
    optimizer.zero_grad()
    probs, classes = model(x)
    loss = loss_function(probs, y)
    loss.backward()
    optimizer.step()
print("loss", loss.item(), "correct", (classes == y).sum().item())
