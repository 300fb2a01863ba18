"""How long `torchmend verify` takes against running the same script twice by hand.

    python bench/verify_bench.py [--case zero_grad/missing_basic.py ...] [--repeat 3]

In one invocation, per corpus case (copied alone into a temporary directory): two plain
``python script.py`` runs one after the other (what verifying by hand costs: the original,
then the fixed script), and ``torchmend verify script.py`` as a user runs it (a fresh
process: CLI start, fixes, the sandboxed original and fixed runs).  Rounds alternate the
two; the best round of each counts.  The load average is printed before and after (the
machine may be shared: figures taken under load are not figures).  The last line is the
ratio, verify / two plain runs, over all cases.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CASES = ("zero_grad/missing_basic.py", "device/tuple_batch_to_device.py", "main_guard/cpu_count_workers.py")


def _timed(cmd: list[str], cwd: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, r.returncode


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", help="corpus case, relative to corpus/ (repeatable)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (best counts)")
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch and torchmend")
    ns = ap.parse_args(argv)
    cases = ns.case or list(DEFAULT_CASES)
    py = ns.python
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    print(f"load average (1, 5, 15 min) before: {_load()}; {cores} cores; {py}")
    total_plain = total_verify = 0.0
    for case in cases:
        src = os.path.join(ROOT, "corpus", case)
        with tempfile.TemporaryDirectory(prefix="verify-bench-") as d:
            script = os.path.join(d, os.path.basename(case))
            shutil.copy(src, script)
            name = os.path.basename(script)
            plains, verifies = [], []
            for i in range(ns.repeat):
                a, rc_a = _timed([py, name], d)
                b, rc_b = _timed([py, name], d)
                v, rc_v = _timed([py, "-m", "torchmend", "verify", name], d)
                if rc_v != 0:
                    print(f"{case}: torchmend verify exited {rc_v}, not 0: the timing of a failed verification means nothing")
                    return 1
                plains.append(a + b)
                verifies.append(v)
                print(f"  {case} round {i + 1}: python script.py, twice: {a + b:.2f} s ({a:.2f} + {b:.2f}, exit {rc_a}/{rc_b}); "
                      f"torchmend verify: {v:.2f} s")
            p, v = min(plains), min(verifies)
            total_plain += p
            total_verify += v
            print(f"{case}: best of {ns.repeat}: python script.py, twice: {p:.2f} s; torchmend verify: {v:.2f} s "
                  f"({v / p:.2f}x)")
    print(f"load average after: {_load()}")
    print(f"ratio verify / two plain runs: {total_verify / total_plain:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
