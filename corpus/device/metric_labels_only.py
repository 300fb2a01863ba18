"""The evaluation loop moves the images but not the labels, which meet the predictions
only in the accuracy: the comparison fails on the device."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
test_loader = DataLoader(TensorDataset(torch.randn(18, 3, 4, 4), torch.randint(0, 5, (18,))), batch_size=6)
model = nn.Sequential(nn.Flatten(), nn.Linear(48, 5)).to(device)

model.eval()
correct = total = 0
with torch.no_grad():
    for images, labels in test_loader:
        images = images.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
print("accuracy", correct / total)
