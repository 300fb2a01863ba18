"""Generate a realistic synthetic monorepo for benchmarking (seeded, deterministic).

    python bench/generate.py OUT_DIR --files 5000 [--seed 0]

The tree mixes what a PyTorch monorepo holds, with an average file of ~350 lines:

* large model files (attention with softmax, MLPs, losses with cross-entropy, forward
  methods creating tensors with and without ``device=``);
* training scripts, clean ones and ones embodying the five pitfalls: batch not moved to
  the model's device, missing ``zero_grad``, unguarded ``DataLoader(num_workers=2)``,
  ``load_state_dict`` after replacing the head, softmax before ``CrossEntropyLoss``;
* data utilities (Datasets, loaders built inside functions), general utilities, tests,
  code that has nothing to do with torch, small ``__init__.py`` files;
* a few unparsable files (Python 2 prints, unclosed brackets).

The filler code is varied Python (classes, loops, comprehensions, try/except, f-strings)
so that linters have real work to do.
"""

from __future__ import annotations

import argparse
import os
import random

WORDS = (
    "alpha beta gamma delta epoch batch layer token score weight bias grad cache index "
    "record entry value label sample frame chunk block stage shard queue event span node "
    "edge graph path route table column field config option state step rate scale mask "
    "query key head embed norm hidden output input buffer stream result report metric"
).split()


class Gen:
    def __init__(self, rng: random.Random):
        self.r = rng

    def name(self, n=2) -> str:
        return "_".join(self.r.choice(WORDS) for _ in range(self.r.randint(1, n)))

    def cls(self) -> str:
        return "".join(w.capitalize() for w in self.name(3).split("_"))

    def expr(self, names) -> str:
        r = self.r
        a, b = r.choice(names), r.choice(names)
        return r.choice(
            [
                f"{a} + {b}",
                f"{a} * {r.randint(2, 9)}",
                f"len({a}) if {a} else 0",
                f"[x for x in {a} if x]",
                f"{{k: v for k, v in {a}.items()}}" if r.random() < 0.3 else f"sorted({a})",
                f'f"{{{a}}}-{{{b}}}"',
                f"max({a}, {b})",
                f"{a}.get({b!r}, None)" if r.random() < 0.2 else f"str({a}).strip()",
                f"({a}, {b})",
                f"sum(v for v in {a})",
            ]
        )

    def body(self, ind: str, names: list[str], depth: int = 0, n: int | None = None) -> list[str]:
        r = self.r
        out: list[str] = []
        for _ in range(n or r.randint(3, 8)):
            k = r.random()
            if k < 0.35 or depth >= 2:
                v = self.name()
                out.append(f"{ind}{v} = {self.expr(names)}")
                names = names + [v]
            elif k < 0.5:
                v = self.name(1)
                out.append(f"{ind}for {v} in {r.choice(names)}:")
                out += self.body(ind + "    ", names + [v], depth + 1, r.randint(1, 3))
            elif k < 0.65:
                out.append(f"{ind}if {r.choice(names)} is not None and {r.choice(names)}:")
                out += self.body(ind + "    ", names, depth + 1, r.randint(1, 3))
                if r.random() < 0.5:
                    out.append(f"{ind}else:")
                    out += self.body(ind + "    ", names, depth + 1, r.randint(1, 2))
            elif k < 0.75:
                out.append(f"{ind}try:")
                out += self.body(ind + "    ", names, depth + 1, r.randint(1, 3))
                out.append(f"{ind}except (KeyError, ValueError) as exc:")
                out.append(f'{ind}    logger.warning("failed: %s", exc)')
            elif k < 0.85:
                out.append(f"{ind}# {' '.join(r.choice(WORDS) for _ in range(r.randint(4, 10)))}")
            else:
                out.append(f"{ind}{r.choice(names)}.append({self.expr(names)})")
        if all(ln.lstrip().startswith("#") for ln in out):  # a block needs a statement
            out.append(f"{ind}{self.name()} = {self.expr(names)}")
        return out

    def function(self, ind: str = "", method: bool = False) -> list[str]:
        r = self.r
        args = sorted({self.name(1) for _ in range(r.randint(1, 4))})
        sig = ", ".join((["self"] if method else []) + [f"{a}: int = {i}" if i == len(args) - 1 and i else a for i, a in enumerate(args)])
        out = [f"{ind}def {self.name()}({sig}):"]
        out.append(f'{ind}    """{" ".join(r.choice(WORDS) for _ in range(r.randint(5, 12))).capitalize()}."""')
        out += self.body(ind + "    ", args)
        out.append(f"{ind}    return {r.choice(args)}")
        out.append("")
        return out

    def klass(self, base: str = "object") -> list[str]:
        out = [f"class {self.cls()}({base}):", f'    """{self.name(3).replace("_", " ").capitalize()}."""', ""]
        out += ["    def __init__(self, config):", "        self.config = config", f"        self.{self.name(1)} = {{}}", ""]
        for _ in range(self.r.randint(2, 6)):
            out += self.function("    ", method=True)
        return out

    def filler(self, lines: int) -> list[str]:
        out: list[str] = []
        while len(out) < lines:
            out += self.klass() if self.r.random() < 0.3 else self.function()
            out.append("")
        return out


HEADER_TORCH = """import logging
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

logger = logging.getLogger(__name__)
"""

HEADER_PLAIN = """import json
import logging
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)
"""


def model_file(g: Gen) -> str:
    r = g.r
    parts = [HEADER_TORCH]
    for i in range(r.randint(3, 7)):
        c = g.cls()
        kind = r.random()
        if kind < 0.4:
            pos = "torch.arange(t, device=x.device)" if r.random() < 0.95 else "torch.arange(t)"
            parts.append(f'''
class {c}Attention(nn.Module):
    """Multi-head self-attention."""

    def __init__(self, dim: int, heads: int = 8, dropout: float = 0.1):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)
        self.pos = nn.Embedding(1024, dim)

    def forward(self, x, mask=None):
        b, t, d = x.shape
        x = x + self.pos({pos})
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        attn = self.drop(attn)
        out = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out)
''')
        elif kind < 0.7:
            h0 = "torch.zeros(self.layers, x.size(0), self.hidden, device=x.device)" if r.random() < 0.95 else "torch.zeros(self.layers, x.size(0), self.hidden)"
            parts.append(f'''
class {c}Encoder(nn.Module):
    def __init__(self, vocab: int, hidden: int = 256, layers: int = 2):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        h0 = {h0}
        c0 = torch.zeros_like(h0)
        out, _ = self.rnn(self.embed(x), (h0, c0))
        return self.norm(out)
''')
        else:
            parts.append(f'''
class {c}Head(nn.Module):
    def __init__(self, dim: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 4)
        self.fc2 = nn.Linear(dim * 4, classes)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))

    def loss(self, logits, target, smoothing: float = 0.0):
        return F.cross_entropy(logits, target, label_smoothing=smoothing)

    def predict(self, x):
        return F.softmax(self(x), dim=-1).argmax(-1)
''')
        parts.append("\n".join(g.filler(r.randint(30, 90))))
    return "\n".join(parts)


TRAIN_PITFALLS = {
    "device": '''
def train(epochs: int = 3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=16)
    for epoch in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
''',
    "zero_grad": '''
def train(epochs: int = 3):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=16)
    for epoch in range(epochs):
        for inputs, labels in loader:
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
''',
    "main_guard": '''
dataset = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
loader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=2)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for inputs, labels in loader:
    optimizer.zero_grad()
    F.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
''',
    "filtered_load": '''
def finetune(ckpt_dir: str, classes: int = 10):
    model = Net()
    model.head = nn.Linear(32, classes)
    state = torch.load(os.path.join(ckpt_dir, "backbone.pt"))
    model.load_state_dict(state)
    return model
''',
    "softmax": '''
def train(epochs: int = 3):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=16)
    for epoch in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            probs = F.softmax(model(inputs), dim=1)
            loss = criterion(probs, labels)
            loss.backward()
            optimizer.step()
''',
    "clean": '''
def train(epochs: int = 3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=16, num_workers=2)
    for epoch in range(epochs):
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
''',
}

NET = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.body(x))
'''


def train_file(g: Gen) -> str:
    r = g.r
    kind = r.choice(list(TRAIN_PITFALLS) + ["clean", "clean"])
    parts = [HEADER_TORCH, NET, "\n".join(g.filler(r.randint(110, 250))), TRAIN_PITFALLS[kind]]
    if kind != "main_guard":
        parts.append('\nif __name__ == "__main__":\n    train()\n' if kind != "filtered_load" else "")
    return "\n".join(parts)


def data_file(g: Gen) -> str:
    r = g.r
    c = g.cls()
    return "\n".join(
        [
            HEADER_TORCH,
            f'''
class {c}Dataset(Dataset):
    def __init__(self, root: str, split: str = "train"):
        self.files = sorted(os.listdir(os.path.join(root, split)))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.load(self.files[i])


def make_loader(root: str, batch_size: int = 32, workers: int = 4):
    return DataLoader({c}Dataset(root), batch_size=batch_size, num_workers=workers, shuffle=True)
''',
            "\n".join(g.filler(r.randint(150, 300))),
        ]
    )


def test_file(g: Gen) -> str:
    r = g.r
    out = ["import pytest", "", "from . import helpers", ""]
    for _ in range(r.randint(15, 35)):
        out += [f"def test_{g.name(3)}():"] + g.body("    ", ["helpers"], n=r.randint(4, 9))
        out += [f"    assert helpers is not None", ""]
    return "\n".join(out) + "\n"


def plain_file(g: Gen) -> str:
    return HEADER_PLAIN + "\n" + "\n".join(g.filler(g.r.randint(130, 340))) + "\n"


def broken_file(g: Gen) -> str:
    if g.r.random() < 0.5:
        return HEADER_PLAIN + '\ndef main():\n    print "hello %s" % sys.argv[1]\n' + "\n".join(g.filler(100)) + "\n"
    return HEADER_TORCH + "\nx = torch.zeros((3, 4)\n" + "\n".join(g.filler(100)) + "\n"


KINDS = [  # (kind, share, generator, subdirectory)
    ("model", 0.14, model_file, "models"),
    ("train", 0.12, train_file, "scripts"),
    ("data", 0.08, data_file, "data"),
    ("test", 0.16, test_file, "tests"),
    ("plain", 0.44, plain_file, "lib"),
    ("init", 0.055, lambda g: '"""Package."""\n' + ("from .core import *  # noqa\n" if g.r.random() < 0.5 else ""), ""),
    ("broken", 0.005, broken_file, "legacy"),
]


def generate(out: str, files: int, seed: int = 0) -> dict[str, int]:
    rng = random.Random(seed)
    g = Gen(rng)
    counts: dict[str, int] = {}
    lines = 0
    for i in range(files):
        x, acc = rng.random(), 0.0
        for kind, share, fn, sub in KINDS:
            acc += share
            if x < acc:
                break
        pkg = f"pkg{i // 200:03d}"
        if kind == "init":
            rel = os.path.join(pkg, f"sub{i % 7}", "__init__.py") if i % 2 else os.path.join(pkg, "__init__.py")
            if os.path.exists(os.path.join(out, rel)):
                rel = os.path.join(pkg, f"mod{i}", "__init__.py")
        else:
            rel = os.path.join(pkg, sub, f"{kind}_{g.name(2)}_{i}.py")
        text = fn(g)
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        counts[kind] = counts.get(kind, 0) + 1
        lines += text.count("\n")
    counts["lines"] = lines
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if os.path.exists(a.out) and os.listdir(a.out):
        raise SystemExit(f"{a.out}: exists and is not empty")
    c = generate(a.out, a.files, a.seed)
    print(f"{a.files} files, {c['lines']} lines ({c['lines'] / a.files:.0f}/file): " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k != "lines"))


if __name__ == "__main__":
    main()
