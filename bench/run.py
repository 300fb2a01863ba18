"""Benchmark torchmend against Ruff and a bare LibCST parse, side by side, in one run.

    PYTHONPATH=. python bench/run.py --files 5000            # generates the tree in a temp dir
    PYTHONPATH=. python bench/run.py --dir /tmp/mono5k       # an existing tree (kept)

Rows: ``torchmend check --no-cache`` (cold), ``torchmend check`` with the cache populated
and nothing changed (warm), ``ruff check --select ALL --no-cache``, and a bare
``libcst.parse_module`` of every file (of a seeded sample when ``--libcst-sample`` is
smaller than the tree, extrapolated by bytes and divided by the number of jobs: an ideal
parallel parse, stated in the row).  For each: wall time, files/s, peak RSS of the largest
process (``wait4`` rusage) and peak RSS of the whole process tree (sampled from /proc every
100 ms; torchmend's workers are separate processes).  The last line is the ratio
torchmend cold / ruff.  With ``--repeat N`` the cold and ruff rows are the best of N,
alternating, which evens out a noisy machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_ruff() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "ruff")
    return shutil.which("ruff") or (here if os.path.exists(here) else None)


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants (kB), from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/statm") as f:
                rss[int(d)] = int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, ()))
    return total


def measure(cmd: list[str], cwd: str, env: dict | None = None, stdout: bool = False) -> dict:
    """Run ``cmd``; wall time, max-process RSS (rusage) and sampled tree RSS."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss_kb(p.pid))
            except Exception:
                pass
            done.wait(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out = p.stdout.read() if stdout else b""
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "maxrss_mb": ru.ru_maxrss / 1024, "tree_mb": max(peak[0], ru.ru_maxrss) / 1024, "rc": p.returncode, "stderr": err.decode("utf-8", "replace"), "stdout": out.decode()}


LIBCST_SCRIPT = r"""
import sys, time, libcst
paths = sys.argv[1:]
t0 = time.perf_counter(); nbytes = 0; errors = 0
for p in paths:
    data = open(p, "rb").read(); nbytes += len(data)
    try:
        libcst.parse_module(data.decode("utf-8"))
    except Exception:
        errors += 1
print(time.perf_counter() - t0, nbytes, errors)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description="torchmend vs ruff vs LibCST, one run")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", help="benchmark this tree (generated there if missing)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--libcst-sample", type=int, default=300, help="files to parse with LibCST (0: all)")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()

    tmp = None
    root = a.dir
    if root is None:
        tmp = tempfile.mkdtemp(prefix="torchmend-bench-")
        root = os.path.join(tmp, "mono")
    if not os.path.isdir(root) or not os.listdir(root):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        from generate import generate

        t0 = time.perf_counter()
        c = generate(root, a.files, a.seed)
        print(f"generated {a.files} files, {c['lines']} lines in {time.perf_counter() - t0:.1f}s under {root}", flush=True)
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        files += [os.path.join(d, n) for n in names if n.endswith(".py")]
    files.sort()
    nfiles = len(files)
    nbytes = sum(os.path.getsize(f) for f in files)
    nlines = sum(open(f, "rb").read().count(b"\n") for f in files)
    print(f"tree: {nfiles} files, {nlines} lines ({nlines / max(1, nfiles):.0f}/file), {nbytes / 1e6:.1f} MB; jobs={a.jobs}; cpus={os.cpu_count()}", flush=True)

    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    tm = [sys.executable, "-m", "torchmend"]
    cache_dir = tempfile.mkdtemp(prefix="torchmend-bench-cache-")  # outside the tree
    common = ["check", "--jobs", str(a.jobs), "."]
    ruff = find_ruff()
    rows: dict[str, dict] = {}

    def best(name, cmd, cwd, env_=None):
        r = measure(cmd, cwd, env_)
        if name not in rows or r["wall"] < rows[name]["wall"]:
            rows[name] = r
        return r

    for i in range(a.repeat):
        best("cold", tm + common[:1] + ["--no-cache"] + common[1:], root, env)
        if ruff:
            best("ruff", [ruff, "check", "--select", "ALL", "--no-cache", "--quiet", "--exit-zero", "."], root)
        print(f"  round {i + 1}: torchmend cold {rows['cold']['wall']:.2f}s" + (f", ruff {rows['ruff']['wall']:.2f}s" if ruff else ""), flush=True)
    populate = measure(tm + common[:1] + ["--cache-dir", cache_dir] + common[1:], root, env)
    warm = measure(tm + common[:1] + ["--cache-dir", cache_dir] + common[1:], root, env)
    rows["warm"] = warm

    # start-up: interpreter, CLI (typer, which builds pydantic adapters), one tiny file
    tiny = tempfile.mkdtemp(prefix="torchmend-bench-tiny-")
    with open(os.path.join(tiny, "t.py"), "w") as f:
        f.write("x = 1\n")
    startup = min(measure(tm + ["check", "--no-cache", "t.py"], tiny, env)["wall"] for _ in range(3))
    bare = min(measure([sys.executable, "-c", "pass"], tiny)["wall"] for _ in range(3))
    typer_imp = min(measure([sys.executable, "-c", "import typer._adapters"], tiny)["wall"] for _ in range(3))
    shutil.rmtree(tiny, ignore_errors=True)

    # bare LibCST parse: one process, a seeded sample, extrapolated by bytes, ideal /jobs
    sample = files if a.libcst_sample <= 0 or a.libcst_sample >= nfiles else random.Random(a.seed).sample(files, a.libcst_sample)
    lc = measure([sys.executable, "-c", LIBCST_SCRIPT, *sample], root, stdout=True)
    out = lc["stdout"].split()
    t_sample, b_sample = float(out[0]), int(out[1])
    lc["wall"] = t_sample * (nbytes / max(1, b_sample)) / a.jobs
    lc["cpu"] = t_sample * (nbytes / max(1, b_sample))
    lc_label = f"LibCST parse_module ({'all' if len(sample) == nfiles else f'{len(sample)} sampled, extrapolated'}, /{a.jobs} jobs)"

    summary = next((ln for ln in rows["cold"]["stderr"].splitlines() if ln.startswith("torchmend:")), "")
    label = "torchmend"
    table = [
        (f"{label} check --no-cache (cold)", rows["cold"]),
        (f"{label} check (warm cache, no change)", rows["warm"]),
    ]
    if ruff:
        table.append(("ruff check --select ALL --no-cache", rows["ruff"]))
    table.append((lc_label, lc))
    print()
    print(f"{'':56} {'wall s':>8} {'files/s':>8} {'CPU s':>8} {'RSS max proc':>13} {'RSS tree':>9}")
    for name, r in table:
        print(f"{name:56} {r['wall']:8.2f} {nfiles / r['wall']:8.0f} {r['cpu']:8.2f} {r['maxrss_mb']:11.0f}MB {r['tree_mb']:7.0f}MB")
    print(f"\ncold run: {summary}")
    print(f"start-up: `check` of a one-line file {startup:.3f}s (python alone {bare:.3f}s; python + import typer/pydantic {typer_imp:.3f}s)")
    print(f"cache populate run: {populate['wall']:.2f}s; warm run exit code {warm['rc']} (cold {rows['cold']['rc']})")
    if ruff:
        print(f"CPU time (user+sys, all processes) torchmend cold / ruff: {rows['cold']['cpu'] / rows['ruff']['cpu']:.2f}x")
        print(f"ratio torchmend cold / ruff: {rows['cold']['wall'] / rows['ruff']['wall']:.2f}x  ({nfiles} files)")
    shutil.rmtree(cache_dir, ignore_errors=True)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
