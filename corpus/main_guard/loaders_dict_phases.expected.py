# the transfer-learning tutorial shape: loaders in a dict built by a comprehension, a
# training function that indexes it by phase, called at top level
import copy

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_model(model, criterion, optimizer, num_epochs=1):
    best = copy.deepcopy(model.state_dict())
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            correct = 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                correct += (outputs.argmax(1) == labels).sum().item()
            print(epoch, phase, correct / sizes[phase])
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    datasets = {x: TensorDataset(torch.randn(16, 5), torch.randint(0, 3, (16,))) for x in ["train", "val"]}
    dataloaders = {x: DataLoader(datasets[x], batch_size=8, shuffle=True, num_workers=1) for x in ["train", "val"]}
    sizes = {x: len(datasets[x]) for x in ["train", "val"]}

    net = nn.Linear(5, 3)
    net = train_model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
