"""Check, on any tree, that the cheap paths change nothing: run torchmend with the
pre-filter, the ast gates and the focus (as shipped), then with every needle ignored,
every ``ast_check`` forced to True and nothing elided, and compare per file the findings
(code, line, column, message, applied, safety), the diff and the suggested diffs.

    PYTHONPATH=. python bench/soundness.py /tmp/bench/m5k --files 1000 --mode check
    PYTHONPATH=. python bench/soundness.py /tmp/bench/m20k --offset 5000 --files 1000 --mode diff

Modes: check, diff, unsafe (diff with --unsafe-fixes).  Prints one summary line and the
first differing files; exit status 1 when any file differs.  (tests/test_gates.py makes
the same comparison on the corpus and a small generated tree in every CI run.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from torchmend import engine, runner  # noqa: E402
from torchmend.engine import Options  # noqa: E402
from torchmend.rule import Rule  # noqa: E402


def _summary(res: runner.RunResult) -> dict:
    return {
        r.path: (
            [(f.code, f.line, f.col, f.message, f.applied, f.safety) for f in r.findings],
            r.diff,
            [(s.finding.code, s.finding.line, s.diff) for s in r.suggestions],
            r.error,
        )
        for r in res.results
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--mode", choices=("check", "diff", "unsafe"), default="check")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.root) for f in fs if f.endswith(".py"))
    paths = paths[a.offset : a.offset + a.files]
    opts = Options(fix=a.mode != "check", unsafe_fixes=a.mode == "unsafe")

    def run() -> dict:
        # forked workers, so that they inherit the switches below
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(a.jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            return _summary(runner.run(paths, opts, jobs=a.jobs, executor=ex))

    t0 = time.perf_counter()
    shipped = run()
    t1 = time.perf_counter()
    engine.FOCUS = False  # everything off
    Rule.may_match = classmethod(lambda cls, text: True)
    engine._overrides_ast_check = lambda rule: False
    plain = run()
    t2 = time.perf_counter()
    differ = [p for p in shipped if shipped[p][:3] != plain[p][:3]]
    # without the pre-filter, unparsable files reach LibCST and get a syntax error
    errors = [p for p in shipped if shipped[p][3] != plain[p][3] and not (plain[p][3] or "").startswith("syntax error")]
    print(
        f"{a.mode}: {len(paths)} files; findings {sum(len(v[0]) for v in shipped.values())} shipped, "
        f"{sum(len(v[0]) for v in plain.values())} with everything off; files with changes "
        f"{sum(1 for v in shipped.values() if v[1])}; differing files {len(differ)}; other error differences "
        f"{len(errors)}; {t1 - t0:.1f} s vs {t2 - t1:.1f} s"
    )
    for p in (differ + errors)[:5]:
        print(p, "\n  shipped:", shipped[p][0], "\n  off:    ", plain[p][0])
    return 1 if differ or errors else 0


if __name__ == "__main__":
    sys.exit(main())
