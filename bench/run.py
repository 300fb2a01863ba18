"""Benchmark torchmend against Ruff, side by side, in one run: on real code and/or the generated tree.

    python bench/run.py --real /tmp/realcode --repeat 3            # the real-code rows (+ the 100k-line file)
    python bench/run.py --generated /tmp/bench/m5k --files 5000    # the generated rows (tree made if missing)
    python bench/run.py --real /tmp/realcode --generated /tmp/bench/m5k --repeat 2   # both row sets
    python bench/run.py --files 5000                                # generated tree in a temp dir (removed)

Run it with the Python of the environment torchmend is installed in (``.venv/bin/python``):
the torchmend command is ``python -m torchmend`` with that interpreter.  Ruff is looked up
on PATH and next to that interpreter; nothing is installed: without Ruff its rows and the
ratio lines are skipped, and the run says so.

Rows, for each tree: ``torchmend check --no-cache`` (cold), ``torchmend check`` with the
cache populated and nothing changed (warm), ``torchmend diff --no-cache`` (cold), ``ruff
check --select ALL --no-cache --exit-zero``, and a bare ``libcst.parse_module`` of a
seeded sample of the files (extrapolated by bytes, divided by the number of jobs: an
ideal parallel parse; ``--libcst-sample 0`` parses every file, a negative value skips the
row).  ``--repeat N``: the cold, diff and Ruff rows are the best of N rounds, run
alternately (check, diff, ruff, check, ...), which evens out a noisy machine.

Memory, two columns: ``RSS max proc`` is the peak resident set of the largest single
process (``wait4`` rusage of the command: the max over it and the descendants it
reaped); ``RSS tree`` is the peak of the *sum* over the whole process tree (the command
and all its workers), sampled from /proc every 100 ms (a peak shorter than that can be
missed; the column is never below ``RSS max proc``).

With ``--real``, one large file (``--big-lines``, default 100,000 lines) is made by
concatenating real model files of the tree (``modeling_*.py``, whole files that parse
alone and have no ``from __future__`` import, the ones with the shortest lines first so
that it stays under torchmend's 4 MiB file limit; the result is checked with ``ast.parse``)
and ``torchmend check --no-cache`` on it reports time and peak memory.

The ratio lines come last: ``ratio torchmend check cold / ruff`` and ``ratio torchmend
diff cold / ruff`` for each tree.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TM = [sys.executable, "-m", "torchmend"]


def install_kind() -> str:
    """How the measured command finds torchmend (asked of the interpreter itself, from
    an empty directory): an editable (development) install starts every process
    through setuptools' import finder, which imports pathlib and more before torchmend
    runs (about 20 ms a process here); users run it from a wheel."""
    probe = ("import sys, torchmend; print(torchmend.__file__); "
             "print(any('__editable__' in getattr(f, '__module__', '') for f in sys.meta_path))")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-c", probe], cwd=d, capture_output=True, text=True)
    if r.returncode:
        return "torchmend not importable"
    where, editable = r.stdout.split()[:2]
    return f"editable install of {os.path.dirname(os.path.dirname(where))}" if editable == "True" else f"installed at {os.path.dirname(where)}"


def find_ruff() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "ruff")
    return shutil.which("ruff") or (here if os.path.exists(here) else None)


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants (kB), from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/statm") as f:
                rss[int(d)] = int(f.read().split()[1]) * page_kb
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
    """Run ``cmd``: wall time, CPU time of it and its reaped descendants, max single-process
    RSS (rusage), peak RSS of the process tree (sampled), exit code, stderr (and stdout)."""
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
    # both pipes drained at once (a command that fills stderr while stdout is read
    # would block forever); wait4 afterwards, for the rusage
    errs: list = []
    reader = threading.Thread(target=lambda: errs.append(p.stderr.read()), daemon=True)
    reader.start()
    out = p.stdout.read() if stdout else b""
    reader.join()
    err = errs[0] if errs else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "maxrss_mb": ru.ru_maxrss / 1024,
        "tree_mb": max(peak[0], ru.ru_maxrss) / 1024, "rc": p.returncode,
        "stderr": err.decode("utf-8", "replace"), "stdout": out.decode("utf-8", "replace"), "stdout_bytes": len(out),
    }


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


def py_files(root: str) -> list[str]:
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
    return files


def summary_line(stderr: str) -> str:
    return next((ln for ln in stderr.splitlines() if ln.startswith("torchmend:")), "(no summary line)")


def ruff_cmd(ruff: str) -> list[str]:
    return [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--statistics", "."]


def rowset(name: str, root: str, a, ruff: str | None) -> list[str]:
    """Benchmark one tree; prints its table, returns its ratio lines (printed last)."""
    files = py_files(root)
    nfiles = len(files)
    if not nfiles:
        sys.exit(f"bench: {root}: no .py files")
    nbytes = sum(os.path.getsize(f) for f in files)
    nlines = 0
    for f in files:
        with open(f, "rb") as fh:
            nlines += fh.read().count(b"\n")
    print(f"\n== {name}: {root}\ntree: {nfiles} files, {nlines} lines ({nlines / nfiles:.0f}/file), {nbytes / 1e6:.1f} MB; jobs={a.jobs}; cpus={os.cpu_count()}", flush=True)

    jobs = ["--jobs", str(a.jobs)]
    cache_dir = tempfile.mkdtemp(prefix="torchmend-bench-cache-")  # outside the tree
    rows: dict[str, dict] = {}

    def best(key, cmd, stdout=False):
        r = measure(cmd, root, stdout=stdout)
        if key not in rows or r["wall"] < rows[key]["wall"]:
            rows[key] = r
        return r

    for i in range(a.repeat):
        c = best("cold", TM + ["check", "--no-cache", *jobs, "."])
        msg = f"  round {i + 1}: torchmend check cold {c['wall']:.2f}s"
        if not a.no_diff:
            d = best("diff", TM + ["diff", "--no-cache", *jobs, "."], stdout=True)
            msg += f", diff cold {d['wall']:.2f}s"
        if ruff:
            r = best("ruff", ruff_cmd(ruff))
            msg += f", ruff {r['wall']:.2f}s"
        print(msg, flush=True)
    populate = measure(TM + ["check", "--cache-dir", cache_dir, *jobs, "."], root)
    for _ in range(max(1, a.repeat)):  # best of as many as the cold rows
        best("warm", TM + ["check", "--cache-dir", cache_dir, *jobs, "."])
    shutil.rmtree(cache_dir, ignore_errors=True)

    lc = None
    if a.libcst_sample >= 0:
        sample = files if a.libcst_sample == 0 or a.libcst_sample >= nfiles else random.Random(a.seed).sample(files, a.libcst_sample)
        lc = measure([sys.executable, "-c", LIBCST_SCRIPT, *sample], root, stdout=True)
        t_sample, b_sample = (float(lc["stdout"].split()[0]), int(lc["stdout"].split()[1])) if lc["stdout"].split() else (0.0, 1)
        lc["wall"] = t_sample * (nbytes / max(1, b_sample)) / a.jobs
        lc["cpu"] = t_sample * (nbytes / max(1, b_sample))
        lc_label = f"LibCST parse_module ({'all' if len(sample) == nfiles else f'{len(sample)} sampled, extrapolated'}, /{a.jobs} jobs)"

    table = [("torchmend check --no-cache (cold)", rows["cold"]), ("torchmend check (warm cache, no change)", rows["warm"])]
    if not a.no_diff:
        table.append(("torchmend diff --no-cache (cold)", rows["diff"]))
    if ruff:
        table.append(("ruff check --select ALL --no-cache --statistics", rows["ruff"]))
    if lc is not None:
        table.append((lc_label, lc))
    print()
    print(f"{'':56} {'wall s':>8} {'files/s':>8} {'CPU s':>8} {'RSS max proc':>13} {'RSS tree':>9}")
    for label, r in table:
        print(f"{label:56} {r['wall']:8.2f} {nfiles / max(r['wall'], 1e-9):8.0f} {r['cpu']:8.2f} {r['maxrss_mb']:11.0f}MB {r['tree_mb']:7.0f}MB")
    print(f"\ncheck cold: {summary_line(rows['cold']['stderr'])}  [exit {rows['cold']['rc']}]")
    if not a.no_diff:
        d = rows["diff"]
        print(f"diff cold:  {summary_line(d['stderr'])}  [exit {d['rc']}; patch {d['stdout_bytes']} bytes, {d['stdout'].count(chr(10) + 'diff --git ') + d['stdout'].startswith('diff --git ')} files]")
    print(f"warm: {summary_line(rows['warm']['stderr'])}  [exit {rows['warm']['rc']}; populate run {populate['wall']:.2f}s]")
    ratios = []
    if ruff:
        tag = f"  ({name}, {nfiles} files)"
        ratios.append(f"CPU time (user+sys, all processes) torchmend check cold / ruff: {rows['cold']['cpu'] / max(rows['ruff']['cpu'], 1e-9):.2f}x{tag}")
        ratios.append(f"ratio torchmend check cold / ruff: {rows['cold']['wall'] / rows['ruff']['wall']:.2f}x{tag}")
        if not a.no_diff:
            ratios.append(f"ratio torchmend diff cold / ruff: {rows['diff']['wall'] / rows['ruff']['wall']:.2f}x{tag}")
    return ratios


def big_file_source(root: str, lines: int, max_bytes: int = 4_000_000) -> tuple[str, int]:
    """About ``lines`` lines of real code in one valid module of at most ``max_bytes``:
    whole model files of the tree (``modeling_*.py``; any ``.py`` file when there are
    none), each one that parses alone and has no ``from __future__`` import (which must
    come first in a module), those with the shortest lines first (so that 100k lines fit
    under torchmend's 4 MiB file limit), concatenated in path order.  Returns (source,
    number of files used)."""
    files = py_files(root)
    models = [f for f in files if os.path.basename(f).startswith("modeling_")] or files
    cands = []
    for f in models:
        with open(f, "rb") as fh:
            data = fh.read()
        try:
            text = data.decode("utf-8")
            tree = ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if any(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in tree.body):
            continue
        if not text.endswith("\n"):
            text += "\n"
        cands.append((len(text.encode()) / max(1, text.count("\n")), f, text))
    chosen, total, nbytes = [], 0, 0
    for _, f, text in sorted(cands):
        if total >= lines:
            break
        size = len(text.encode())
        if nbytes + size > max_bytes:
            continue
        chosen.append((f, text))
        total += text.count("\n")
        nbytes += size
    src = "".join(text for _, text in sorted(chosen))
    ast.parse(src)  # the concatenation is a valid module
    return src, len(chosen)


def big_file(root: str, a, ruff: str | None) -> list[str]:
    # built in a fresh process: reading and parsing the candidates would grow this one,
    # and a child's peak RSS (ru_maxrss) starts from its parent's at the fork
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        src, used = pool.apply(big_file_source, (root, a.big_lines))
    tmp = tempfile.mkdtemp(prefix="torchmend-bench-big-")
    try:
        with open(os.path.join(tmp, "big_model.py"), "w", encoding="utf-8") as f:
            f.write(src)
        n = src.count("\n")
        print(f"\n== one large file: {n} lines, {len(src.encode()) / 1e6:.1f} MB, {used} model files of {root} concatenated (valid: ast.parse)", flush=True)
        res = [("torchmend check --no-cache big_model.py", measure(TM + ["check", "--no-cache", "big_model.py"], tmp))]
        if ruff:
            res.append(("ruff check --select ALL --no-cache --statistics big_model.py", measure([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--statistics", "big_model.py"], tmp)))
        print(f"{'':56} {'wall s':>8} {'lines/s':>8} {'CPU s':>8} {'RSS max proc':>13} {'RSS tree':>9}")
        for label, r in res:
            print(f"{label:56} {r['wall']:8.2f} {n / max(r['wall'], 1e-9):8.0f} {r['cpu']:8.2f} {r['maxrss_mb']:11.0f}MB {r['tree_mb']:7.0f}MB")
        print(f"big file: {summary_line(res[0][1]['stderr'])}  [exit {res[0][1]['rc']}]")
        for ln in res[0][1]["stderr"].splitlines():
            if ": error: " in ln:
                print(f"big file: {ln}")
        return [f"large file torchmend check: {res[0][1]['wall']:.2f}s, {res[0][1]['tree_mb']:.0f} MB  ({n} lines)"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def startup() -> str:
    """The fixed cost of one run: interpreter, CLI import, one tiny file."""
    tiny = tempfile.mkdtemp(prefix="torchmend-bench-tiny-")
    try:
        with open(os.path.join(tiny, "t.py"), "w") as f:
            f.write("x = 1\n")
        tm = min(measure(TM + ["check", "--no-cache", "t.py"], tiny)["wall"] for _ in range(3))
        bare = min(measure([sys.executable, "-c", "pass"], tiny)["wall"] for _ in range(3))
        typer_imp = min(measure([sys.executable, "-c", "import typer"], tiny)["wall"] for _ in range(3))
    finally:
        shutil.rmtree(tiny, ignore_errors=True)
    return f"`torchmend check` of a one-line file {tm:.3f}s (python alone {bare:.3f}s; python + import typer {typer_imp:.3f}s)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", metavar="DIR", help="benchmark the real-code tree DIR (bench/realcode.py build DIR)")
    ap.add_argument("--generated", "--dir", metavar="DIR", dest="generated", help="benchmark the generated tree DIR (generated there if missing or empty)")
    ap.add_argument("--files", type=int, default=5000, help="files of the generated tree (when it is generated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--libcst-sample", type=int, default=300, help="files to parse with LibCST (0: all, <0: skip the row)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-diff", action="store_true", help="skip the diff rows")
    ap.add_argument("--big-lines", type=int, default=100_000, help="lines of the one-large-file measurement (with --real; 0: skip)")
    a = ap.parse_args(argv)

    ruff = find_ruff()
    probe = subprocess.run(TM + ["--help"], capture_output=True, text=True)
    if probe.returncode:
        sys.exit(f"bench: `{' '.join(TM)}` does not run: {(probe.stderr.strip().splitlines() or ['?'])[-1]} (run bench/run.py with the Python torchmend is installed in)")
    ver = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip() if ruff else ""
    print(f"torchmend: {' '.join(TM)} ({install_kind()}); ruff: {f'{ruff} ({ver})' if ruff else 'NOT FOUND on PATH or next to ' + sys.executable + ' (pip install ruff): ruff rows and ratio lines skipped'}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    # as installed: pip byte-compiles a package when it installs it, so the runs measured
    # here use bytecode too (an environment that sets PYTHONDONTWRITEBYTECODE would make
    # every run compile torchmend's modules again)
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print("PYTHONDONTWRITEBYTECODE unset for the measured commands")
    import torchmend
    import torchmend.cli

    for pkg in (torchmend, torchmend.cli):
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(pkg.__file__)], stdout=subprocess.DEVNULL)

    tmp = None
    sets: list[tuple[str, str]] = []
    if a.real:
        if not os.path.isdir(a.real):
            sys.exit(f"bench: {a.real}: no such directory (python bench/realcode.py build {a.real})")
        sets.append(("real code", a.real))
    gen = a.generated
    if gen is None and not a.real:
        tmp = tempfile.mkdtemp(prefix="torchmend-bench-")
        gen = os.path.join(tmp, "mono")
    if gen is not None:
        if not os.path.isdir(gen) or not os.listdir(gen):
            sys.path.insert(0, os.path.join(REPO, "bench"))
            from generate import generate

            t0 = time.perf_counter()
            c = generate(gen, a.files, a.seed)
            print(f"generated {a.files} files, {c['lines']} lines in {time.perf_counter() - t0:.1f}s under {gen}", flush=True)
        sets.append(("generated", gen))
    last: list[str] = []
    try:
        for name, root in sets:
            last += rowset(name, root, a, ruff)
        if a.real and a.big_lines > 0:
            last = big_file(a.real, a, ruff) + last
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nstart-up: {startup()}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for line in last:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
