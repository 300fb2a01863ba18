"""Dict of loaders and a phase loop that moves inputs and labels: correct as written."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
dataloaders = {
    phase: DataLoader(TensorDataset(torch.randn(12, 10), torch.randint(0, 2, (12,))), batch_size=4)
    for phase in ("train", "val")
}
model = nn.Linear(10, 2).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(2):
    for phase in ["train", "val"]:
        model.train(phase == "train")
        corrects = 0
        for inputs, labels in dataloaders[phase]:
            inputs = inputs.to(device)
            labels = labels.to(device)
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                outputs = model(inputs)
                loss = criterion(outputs, labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
            corrects += torch.sum(outputs.argmax(1) == labels.data)
        print(epoch, phase, corrects)
