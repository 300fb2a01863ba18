import torch
from torch.utils.data import DataLoader, TensorDataset

pairs = TensorDataset(torch.randn(8, 3), torch.arange(8))
loader = DataLoader(pairs, batch_size=4, num_workers=1, collate_fn=lambda batch: [b[0] for b in batch])

for batch in loader:
    print(len(batch), tuple(batch[0].shape))
