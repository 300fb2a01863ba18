import torch
import torch.nn.functional as F


def build_trainer(model, device):
    """Make a small trainer object bound to ``model`` on ``device``.

    This docstring pads the file so that the engine cuts it into chunks.
    Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor
    incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud
    exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute
    irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla
    pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia
    deserunt mollit anim id est laborum.
    """

    class Trainer:
        def __init__(self):
            self.model = model
            self.device = device

        def train_one_epoch(self, loader, optimizer):
            for images, labels in loader:
                images, labels = images.to(self.device), labels.to(self.device)
                outputs = self.model(images)
                loss = F.cross_entropy(outputs, labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def evaluate(self, loader):
            correct = 0
            for images, labels in loader:
                outputs = self.model(images.to(self.device))
                correct += (outputs.argmax(1) == labels).sum().item()
            return correct

    return Trainer()


def helper_one(a, b):
    """Padding function one: returns the sum of its arguments, nothing else at all."""
    return a + b


def helper_two(a, b):
    """Padding function two: returns the product of its arguments, nothing else here."""
    return a * b


def helper_three(a, b):
    """Padding function three: returns the difference of its arguments, that is all."""
    return a - b


def helper_four(a, b):
    """Padding function four: returns the quotient of its arguments, nothing more to it."""
    return a / b
