"""nn.Sequential ending with nn.LogSoftmax; the class-weighted loss is torch.nn.CrossEntropyLoss."""
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.LogSoftmax(dim=1))
weights = torch.tensor([1.0, 2.0, 0.5])
criterion = torch.nn.CrossEntropyLoss(weight=weights, ignore_index=-100)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(30, 5)
y = torch.randint(0, 3, (30,))

for epoch in range(3):
    optimizer.zero_grad()
    loss = criterion(net(x), y)
    loss.backward()
    optimizer.step()
    print(epoch, round(loss.item(), 4))
