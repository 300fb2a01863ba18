"""Check, on any tree, that the engine's shortcuts change nothing: run torchmend as shipped,
then with every shortcut off (see ``shortcuts_off``), and compare per file the findings
(code, line, column, message, applied, safety), the diff, the suggested diffs and errors.

    python bench/soundness.py --tree /tmp/realcode --files 300 --seed 1 --mode check
    python bench/soundness.py --tree /tmp/realcode --files 0 --mode diff      # every file
    python bench/soundness.py --tree /tmp/bench/m5k --files 1000 --mode unsafe

``--files N`` takes a seeded random sample of N of the tree's ``.py`` files (0: all of
them).  Modes: check, diff, unsafe (diff with --unsafe-fixes).  Prints one summary line,
then every differing file with what differs; exit status 1 when any file differs.
(tests/test_gates.py makes the same comparison on the corpus and a small generated tree
in every CI run.)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time

from torchmend import gitdiff, runner
from torchmend.engine import Options


def shortcuts_off(opts: Options) -> Options:
    """``opts`` with every shortcut off (``Options.shortcuts``): no text gate, every rule
    run on every file, every file parsed whole -- the reference the shipped
    configuration must agree with."""
    return dataclasses.replace(opts, shortcuts=False)


def _summary(res: runner.RunResult) -> dict:
    return {
        r.path: (
            [(f.code, f.line, f.col, f.message, f.applied, f.safety.name if f.safety else None) for f in r.findings],
            r.diff,
            [(s.finding.code, s.finding.line, s.diff) for s in r.suggestions],
            r.error,
        )
        for r in res.results
    }


def run(paths: list[str], opts: Options, jobs: int) -> dict:
    # forked workers, so that a process-level switch (shortcuts_off on main) reaches them
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as ex:
        return _summary(runner.run(paths, opts, jobs=jobs, executor=ex))


def sample(root: str, n: int, seed: int) -> list[str]:
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py") and "/." not in d[len(root):])
    if 0 < n < len(paths):
        paths = sorted(random.Random(seed).sample(paths, n))
    return paths


def _text_diff(a: bytes, b: bytes, limit: int = 40) -> str:
    # the project's own git-exact diff (shipped -> shortcuts off)
    lines = gitdiff.unified_diff(a, b, "shipped-vs-off").decode("utf-8", "replace").splitlines()
    more = f"\n      ... {len(lines) - limit} more lines" if len(lines) > limit else ""
    return "\n".join("      " + ln for ln in lines[:limit]) + more


def differences(shipped: dict, off: dict) -> dict[str, list[str]]:
    """path -> what differs, in words.  Without the pre-filter, files that do not parse
    reach the parser and get a syntax error: that alone is not a difference."""
    out: dict[str, list[str]] = {}
    for p in sorted(shipped):
        s, o = shipped[p], off.get(p, ([], b"", [], "missing from the run without shortcuts"))
        what = []
        only_s = [f for f in s[0] if f not in o[0]]
        only_o = [f for f in o[0] if f not in s[0]]
        for f in only_s:
            what.append(f"    finding only as shipped: {f[0]} {f[1]}:{f[2]} {f[3]} (applied={f[4]}, {f[5]})")
        for f in only_o:
            what.append(f"    finding only with shortcuts off: {f[0]} {f[1]}:{f[2]} {f[3]} (applied={f[4]}, {f[5]})")
        if not only_s and not only_o and s[0] != o[0]:
            what.append("    same findings in a different order")
        if s[1] != o[1]:
            what.append("    diff differs (- shipped, + shortcuts off):\n" + _text_diff(s[1], o[1]))
        if s[2] != o[2]:
            for x in [x for x in s[2] if x not in o[2]]:
                what.append(f"    suggested diff only as shipped: {x[0]} line {x[1]}")
            for x in [x for x in o[2] if x not in s[2]]:
                what.append(f"    suggested diff only with shortcuts off: {x[0]} line {x[1]}")
            if all(x in o[2] for x in s[2]) and all(x in s[2] for x in o[2]):
                what.append("    same suggested diffs in a different order")
        if s[3] != o[3] and not (s[3] is None and (o[3] or "").startswith("syntax error")):
            what.append(f"    error: shipped {s[3]!r}, shortcuts off {o[3]!r}")
        if what:
            out[p] = what
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", help="the tree (same as --tree)")
    ap.add_argument("--tree", help="the tree: every .py file under it")
    ap.add_argument("--files", type=int, default=1000, help="a seeded sample of N files (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("check", "diff", "unsafe"), default="check")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    root = a.tree or a.root
    if not root or not os.path.isdir(root):
        ap.error("give the tree: --tree DIR")
    paths = sample(os.path.abspath(root), a.files, a.seed)
    opts = Options(fix=a.mode != "check", unsafe_fixes=a.mode == "unsafe")

    t0 = time.perf_counter()
    shipped = run(paths, opts, a.jobs)
    t1 = time.perf_counter()
    off = run(paths, shortcuts_off(opts), a.jobs)
    t2 = time.perf_counter()
    diff = differences(shipped, off)
    print(
        f"{a.mode}: {len(paths)} files (seed {a.seed}); findings {sum(len(v[0]) for v in shipped.values())} shipped, "
        f"{sum(len(v[0]) for v in off.values())} with shortcuts off; files with changes "
        f"{sum(1 for v in shipped.values() if v[1])}; differing files {len(diff)}; {t1 - t0:.1f} s vs {t2 - t1:.1f} s"
    )
    for p, what in diff.items():
        print(os.path.relpath(p, root))
        print("\n".join(what))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
