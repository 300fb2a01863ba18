"""Fixed: the module-level work is in main(), behind the __main__ guard."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
    loader = DataLoader(data, batch_size=4, num_workers=1)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
