"""An encoder and a decoder with one optimizer each, one shared loss; neither is zeroed."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(12)
loader = DataLoader(TensorDataset(torch.randn(24, 6)), batch_size=6)
encoder = nn.Sequential(nn.Linear(6, 3), nn.Tanh())
decoder = nn.Linear(3, 6)
enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)

for epoch in range(2):
    for (x,) in loader:
        recon = decoder(encoder(x))
        loss = nn.functional.mse_loss(recon, x)
        loss.backward()
        enc_opt.step()
        dec_opt.step()
    print(epoch, loss.item())
