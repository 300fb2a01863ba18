import math
import random

import numpy as np
import torch
from torch import nn


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.weight = nn.Parameter(torch.empty((out_features, in_features), **factory_kwargs))
        nn.init.uniform_(self.weight, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))

    def forward(self, x):
        return x @ self.weight.t()


class DQN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), NoisyLinear(16, 2))

    def forward(self, x):
        return self.l(x)

    def act(self, x, epsilon):
        with torch.no_grad():
            if random.random() < epsilon:
                return np.random.randint(2)
            x = torch.FloatTensor(x)
            return self.forward(x).argmax().item()


net = DQN()
optimizer = torch.optim.Adam(net.parameters())
state = np.zeros(4, dtype=np.float32)
for i in range(3):
    print(net.act(state, 0.0))
    loss = net(torch.zeros(1, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
