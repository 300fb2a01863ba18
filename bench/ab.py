"""Side by side in wall and CPU time: two versions of torchmend and Ruff, alternating.

On a shared VM the same command's time moves by 10-40% from one minute to the next, so
a benchmark run's best round of torchmend and best round of Ruff may fall in different
phases of the host.  This script runs ``torchmend check --no-cache .`` of each version
and ``ruff check --select ALL --no-cache --exit-zero --statistics .`` one after the
other, round after round, and prints for each the best and the median wall time and the
median CPU time (user + sys, all processes), then the ratios of the medians of the
per-round pairs (each pair ran within seconds of each other).  It complements
``instructions.py`` (exact, the analysis only) with the whole command, workers and
parent included.

    python bench/ab.py --tree /work/realcode/tree --rev cad26c1 --rev WORKTREE --rounds 5

A version is a git revision of this checkout or ``WORKTREE`` (see ``instructions.py``),
run as ``python -m torchmend`` with its package first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from instructions import package_for  # noqa: E402
from run import find_ruff, ruff_cmd  # noqa: E402


def timed(cmd: list[str], cwd: str, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children) of one run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--rev", action="append", help="a git revision or WORKTREE (twice; default: HEAD and WORKTREE)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    revs = a.rev or ["HEAD", "WORKTREE"]
    if len(revs) != 2:
        ap.error("give --rev twice (or not at all)")
    tree = os.path.abspath(a.tree)
    ruff = find_ruff()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    work = tempfile.mkdtemp(prefix="tm-ab-")
    try:
        cmds = {}
        labels = revs if revs[0] != revs[1] else [f"{revs[0]}#1", f"{revs[1]}#2"]
        for i, (rev, label) in enumerate(zip(revs, labels)):
            pkg = package_for(rev, os.path.join(work, f"v{i}"))
            cmds[label] = ([sys.executable, "-m", "torchmend", "check", "--no-cache", "."], {**env, "PYTHONPATH": pkg})
        if ruff is not None:
            cmds["ruff"] = (ruff_cmd(ruff), env)
        print(f"tree: {tree}; {a.rounds} rounds of {', '.join(cmds)}; load average {os.getloadavg()[0]:.2f}")
        got: dict = {k: [] for k in cmds}
        for n in range(a.rounds):
            for k, (cmd, e) in cmds.items():
                got[k].append(timed(cmd, tree, e))
            print(f"  round {n + 1}: " + ", ".join(f"{k} {got[k][-1][0]:.2f}s" for k in cmds), flush=True)
        for k, runs in got.items():
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            print(f"{k:>12}: wall best {min(walls):.2f} s, median {statistics.median(walls):.2f} s;"
                  f" CPU median {statistics.median(cpus):.2f} s")
        print(f"load average at end {os.getloadavg()[0]:.2f}")
        pairs = [(labels[1], labels[0])] + ([(r, "ruff") for r in labels] if ruff is not None else [])
        for x, y in pairs:
            wall = statistics.median(p[0] / q[0] for p, q in zip(got[x], got[y]))
            cpu = statistics.median(p[1] / q[1] for p, q in zip(got[x], got[y]))
            print(f"ratio {x} / {y}: wall {wall:.3f}x, CPU {cpu:.3f}x (medians of the rounds' pairs)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
