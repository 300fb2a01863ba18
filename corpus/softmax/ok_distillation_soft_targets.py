"""Knowledge distillation: softmax on the teacher side only (KL target and soft CE target)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T = 2.0
teacher = nn.Linear(10, 5)
student = nn.Linear(10, 5)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(32, 10)
y = torch.randint(0, 5, (32,))

for step in range(4):
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean")
    soft_ce = F.cross_entropy(s_logits, F.softmax(t_logits / T, dim=-1))
    hard_ce = F.cross_entropy(s_logits, y)
    loss = kd * T * T + 0.5 * soft_ce + 0.5 * hard_ce
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
