"""Cold diagnostics latency of `torchmend server` for a 500-line file.

Starts a fresh `python -m torchmend server` for each run and times, from the same
client: start-up to the `initialize` answer, then `didOpen` of a generated 500-line
training script to its `publishDiagnostics` (the first analysis in that process: the
engine and its rules are imported then), then a `didChange` of the same text (warm).

    .venv/bin/python bench/lsp_latency.py [--runs 5]

Prints the figures (median and each run); it asserts nothing.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_lsp import Client, initialize  # noqa: E402


def five_hundred_lines() -> str:
    head = (ROOT / "corpus" / "zero_grad" / "missing_basic.py").read_text()
    out = [head.rstrip("\n") + "\n"]
    i = 0
    while sum(s.count("\n") for s in out) < 500:
        out.append(f"\n\ndef helper_{i}(x, scale={i}):\n    y = x * scale\n    for k in range(3):\n"
                   f"        y = y + k\n    return torch.relu(y)\n")
        i += 1
    text = "".join(out)
    lines = text.splitlines(keepends=True)[:500]
    return "".join(lines)


def one_run(text: str) -> tuple[float, float, float, int]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        path = root / "train.py"
        path.write_text(text)
        t0 = time.perf_counter()
        c = Client(root)
        try:
            initialize(c, root)
            t1 = time.perf_counter()
            c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python",
                                                               "version": 1, "text": text}})
            diags = c.diagnostics(path.as_uri())
            t2 = time.perf_counter()
            c.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": 2},
                                                "contentChanges": [{"text": text}]})
            c.diagnostics(path.as_uri())
            t3 = time.perf_counter()
        finally:
            c.close()
    return t1 - t0, t2 - t1, t3 - t2, len(diags)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    text = five_hundred_lines()
    print(f"file: {text.count(chr(10))} lines; python {sys.version.split()[0]}")
    runs = [one_run(text) for _ in range(a.runs)]
    for name, k in (("start-up to initialize answer", 0), ("cold didOpen -> publishDiagnostics", 1),
                    ("warm didChange -> publishDiagnostics", 2)):
        xs = [r[k] * 1000 for r in runs]
        print(f"{name:38s} median {statistics.median(xs):7.1f} ms   runs: {', '.join(f'{x:.0f}' for x in xs)}")
    print(f"diagnostics published: {runs[0][3]}")


if __name__ == "__main__":
    main()
