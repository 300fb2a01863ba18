"""A CIFAR-style script: the batch is moved to `device`, the model never is (the first
convolution gets a CUDA input and CPU weights)."""
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


class SmallConvNet(nn.Module):
    def __init__(self, num_classes):
        super(SmallConvNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Linear(8 * 4 * 4, num_classes)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = x.view(x.size(0), -1)
        return self.fc(x)


train_dataset = TensorDataset(torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,)))
train_loader = DataLoader(dataset=train_dataset, batch_size=4, shuffle=True)

# Create the model
model = SmallConvNet(num_classes=10).to(device)

criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=0.001)

for epoch in range(2):
    for i, (images, labels) in enumerate(train_loader):
        # Move tensors to the configured device
        images = images.to(device)
        labels = labels.to(device)

        outputs = model(images)
        loss = criterion(outputs, labels)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

torch.save(model.state_dict(), "small_convnet.ckpt")
