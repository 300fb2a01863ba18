"""A frozen teacher ends with nn.Softmax; its probabilities are the *target* of the
student's cross-entropy (soft labels).  The student's input to the loss is logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4), nn.Softmax(dim=1))
student = nn.Linear(10, 4)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(20, 10)
for step in range(4):
    with torch.no_grad():
        soft_labels = teacher(x)
    loss = F.cross_entropy(student(x), soft_labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
