"""A transform module whose input may be a PIL image or a tensor: CPU random draws, a CPU
patch copied into the image; it runs on CPU data in the DataLoader."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RandomErase(nn.Module):
    def __init__(self, p=0.5, size=2):
        super().__init__()
        self.p, self.size = p, size

    def forward(self, img):
        if not isinstance(img, torch.Tensor):
            return img  # a PIL image: left alone
        if torch.rand(1) < self.p:
            i = int(torch.randint(0, img.shape[-2] - self.size + 1, size=(1,)).item())
            patch = torch.empty([img.shape[0], self.size, img.shape[-1]]).normal_()
            img = img.clone()
            img[:, i : i + self.size, :] = patch
        return img


class Images(Dataset):
    def __init__(self, transform):
        self.x = torch.randn(8, 1, 4, 4)
        self.y = torch.randint(0, 2, (8,))
        self.transform = transform

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.transform(self.x[i]), self.y[i]


model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2)).to(device)
loader = DataLoader(Images(RandomErase()), batch_size=4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
