"""In the training loop the output is reassigned to its softmax (same name) before the
criterion; the comment on that line moves to the loss line."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(10, 3)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
x, y = torch.randn(30, 10), torch.randint(0, 3, (30,))
for epoch in range(4):
    outputs = model(x)
    # normalise the scores
    loss = criterion(outputs, y)  # probabilities
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", loss.item())
