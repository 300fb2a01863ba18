"""Side by side, without the machine's noise: the instructions two versions of torchmend
execute to check the same files, counted by valgrind's callgrind.

A shared 2-core VM moves wall and CPU time by 10-40% between two runs of the same
command, so a change worth a few percent cannot be told from noise by timing it (three
alternating pairs of a 10 s run disagreed in sign).  The number of instructions a run
executes is the same from one run to the next; this script counts them for each
version on one fixed workload, in one process (``process_one`` on every file, one
``Project``, the workers' garbage-collector policy), and prints the counts and their
ratio.  The interpreter's start and the imports are counted in a run with no file and
taken off, so the figures are the analysis alone.

    python bench/instructions.py --tree /work/realcode/tree --every 8 --rev HEAD~1 --rev HEAD
    python bench/instructions.py --tree /work/realcode/tree --every 8            # HEAD vs the working tree

``--every K`` takes every K-th of the files some rule's text gate lets through (sorted
by path; under callgrind a run is about 50 times slower: 136 files of the benchmark
tree take about a minute), ``--all-files`` every file instead (the gates' own cost).
A version is a git revision of this checkout (its ``codemods`` and ``cli``, from ``git
archive``) or ``WORKTREE`` (the files as they are).  Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_WORKLOAD = """
import sys
from torchmend.runner import _quiet_collector, process_one
from torchmend.engine import Options
from torchmend.project import NeedsProject, Project
_quiet_collector()
files = [ln.rstrip("\\n") for ln in open(sys.argv[1], encoding="utf-8") if ln.strip()]
opts = Options(fix=False)
project = Project(roots=(sys.argv[2],))
n = 0
for f in files:
    try:
        n += len(process_one(f, opts, project).findings)
    except NeedsProject:
        pass
print(len(files), n)
"""


def package_for(rev: str, where: str) -> str:
    """A directory to put first on ``PYTHONPATH`` so that ``import torchmend`` is
    version ``rev`` of this checkout (the source laid out as installed)."""
    src = ROOT if rev == "WORKTREE" else os.path.join(where, "src")
    if rev != "WORKTREE":
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "codemods", "cli"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    pkg = os.path.join(where, "pkg")
    tree = os.path.join(pkg, "torchmend")
    shutil.copytree(os.path.join(src, "codemods"), tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(src, "cli"), os.path.join(tree, "cli"), ignore=shutil.ignore_patterns("__pycache__"))
    # compiled once here, so that no run counts the compilation of the package
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    return pkg


def count(pkg: str, listing: str, tree: str) -> tuple[int, str]:
    """(instructions, the workload's output) of one run under callgrind."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = pkg
    env["PYTHONHASHSEED"] = "0"  # (set and dict orders, hence the work done, the same in every run)
    p = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _WORKLOAD, listing, tree],
        capture_output=True, text=True, env=env, cwd=tree,
    )
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"instructions: the run failed ({p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
    return int(m.group(1)), p.stdout.strip()


def gated_files(tree: str, every: int, all_files: bool) -> list[str]:
    from run import py_files  # (the benchmark's own listing of a tree: hidden directories left out)
    from torchmend.engine import rules_for, select_rules

    rules = rules_for(frozenset())
    out = []
    for path in py_files(tree):
        if not all_files:
            try:
                with open(path, encoding="utf-8") as f:
                    if not select_rules(f.read(), rules):
                        continue
            except (OSError, UnicodeDecodeError):
                continue
        out.append(os.path.relpath(path, tree))
    out.sort()
    return out[::every]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--every", type=int, default=8, help="every K-th file (default 8)")
    ap.add_argument("--all-files", action="store_true", help="every file, not only those a gate lets through")
    ap.add_argument("--rev", action="append", help="a git revision or WORKTREE (twice; default: HEAD and WORKTREE)")
    a = ap.parse_args(argv)
    revs = a.rev or ["HEAD", "WORKTREE"]
    if len(revs) != 2:
        ap.error("give --rev twice (or not at all)")
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not on the PATH: nothing measured", file=sys.stderr)
        return 2
    tree = os.path.abspath(a.tree)
    files = gated_files(tree, max(1, a.every), a.all_files)
    work = tempfile.mkdtemp(prefix="tm-instructions-")
    try:
        listing, empty = os.path.join(work, "files.txt"), os.path.join(work, "none.txt")
        with open(listing, "w", encoding="utf-8") as f:
            f.write("\n".join(files) + "\n")
        open(empty, "w").close()
        print(f"tree: {tree}; {len(files)} files ({'every' if a.all_files else 'gated'} file, every {a.every}th)")
        from concurrent.futures import ThreadPoolExecutor

        pkgs = [package_for(rev, os.path.join(work, f"v{i}")) for i, rev in enumerate(revs)]
        with ThreadPoolExecutor(2) as ex:  # (counts do not depend on what else runs)
            runs = {(i, what): ex.submit(count, pkg, what, tree) for i, pkg in enumerate(pkgs) for what in (empty, listing)}
            got = []
            for i, rev in enumerate(revs):
                start, _ = runs[(i, empty)].result()
                total, out = runs[(i, listing)].result()
                nfiles, nfind = out.split()
                got.append(total - start)
                print(f"{rev:>12}: {total - start:>15,} instructions analysing ({start:,} start-up and imports); "
                      f"{nfiles} files, {nfind} findings")
        print(f"ratio {revs[1]} / {revs[0]}: {got[1] / got[0]:.4f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
