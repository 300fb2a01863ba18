# the pytorch/examples super_resolution/main.py shape: two loaders with a worker count from
# argparse, train(epoch) / test() / checkpoint(epoch) reading module globals, and a
# top-level epoch loop right after the last def (one blank line)
import argparse
import os
import tempfile
from math import log10

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0], batch[1]
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            mse = criterion(model(batch[0]), batch[1])
            avg_psnr += 10 * log10(1 / mse.item())
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))


def checkpoint(epoch):
    model_out_path = os.path.join(out_dir, "model_epoch_{}.pth".format(epoch))
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="super resolution shape")
    parser.add_argument("--nEpochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="number of threads for data loader to use")
    opt, _ = parser.parse_known_args()

    torch.manual_seed(0)
    train_set = TensorDataset(torch.rand(8, 1, 4, 4), torch.rand(8, 1, 8, 8))
    test_set = TensorDataset(torch.rand(4, 1, 4, 4), torch.rand(4, 1, 8, 8))
    training_data_loader = DataLoader(dataset=train_set, num_workers=opt.threads, batch_size=4, shuffle=True)
    testing_data_loader = DataLoader(dataset=test_set, num_workers=opt.threads, batch_size=2, shuffle=False)

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.PixelShuffle(2))
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    out_dir = tempfile.mkdtemp()

    for epoch in range(1, opt.nEpochs + 1):
        train(epoch)
        test()
        checkpoint(epoch)
