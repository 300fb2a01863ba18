"""Transfer-learning style: a dict of loaders built by a comprehension and a
`for phase in ["train", "val"]` loop; labels meet the output in the loss and the accuracy."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
datasets = {
    "train": TensorDataset(torch.randn(24, 10), torch.randint(0, 2, (24,))),
    "val": TensorDataset(torch.randn(12, 10), torch.randint(0, 2, (12,))),
}
dataloaders = {x: DataLoader(datasets[x], batch_size=6, shuffle=True) for x in ["train", "val"]}

model = nn.Linear(10, 2)
model = model.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for epoch in range(2):
    for phase in ["train", "val"]:
        if phase == "train":
            model.train()
        else:
            model.eval()
        running_loss, running_corrects = 0.0, 0
        for inputs, labels in dataloaders[phase]:
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                outputs = model(inputs)
                _, preds = torch.max(outputs, 1)
                loss = criterion(outputs, labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
            running_loss += loss.item() * inputs.size(0)
            running_corrects += torch.sum(preds == labels.data)
        print(epoch, phase, running_loss, running_corrects)
