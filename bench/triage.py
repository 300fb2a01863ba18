"""Real-code triage: every finding and every rewrite torchmend makes on the real tree, with
a human verdict (TP / FP) from a checked-in file, and precision per rule.

    python bench/triage.py --tree /tmp/realcode                 # run torchmend, merge verdicts, report
    python bench/triage.py --tree /tmp/realcode --check         # exit 1: a row without verdict, or a wrong safe rewrite
    python bench/triage.py --from-rows bench/triage/rows.jsonl  # re-report from the last run's rows (no torchmend run)

torchmend runs over the tree in three modes, like ``torchmend check TREE``, ``torchmend
diff TREE`` and ``torchmend diff --unsafe-fixes TREE`` (one run each over the whole tree:
the tree is the project, ``roots`` included; ``--per-source``: each top-level directory is
its own project, as if torchmend ran in each repository).  Rows:

* ``finding``: every finding of ``check`` (is the pitfall really there?);
* ``safe-rewrite``: every finding whose fix ``diff`` applies (is the rewrite right?);
* ``unsafe-rewrite``: every finding whose unsafe fix ``diff --unsafe-fixes`` applies.

The two fixing modes run only on the files where ``check`` found something (a file
without findings has nothing to rewrite; their findings are compared with ``check``'s
and any difference is reported); ``--full`` runs them on every file.

Each row has a stable id ``SOURCE:PATH:CODE:KIND:LINE:HASH`` (SOURCE the package or
repository, PATH relative to it, HASH a short hash of the flagged line's stripped text;
``#2``... when the same id repeats).  A verdict whose id no longer matches exactly
still applies to the row with the same source, path, code, kind and hash at the nearest
line: a small upstream shift keeps its verdicts.

Verdicts: ``bench/triage/verdicts.tsv``, columns ``id``, ``verdict`` (TP or FP),
``why`` (one line); ``#`` starts a comment line.  Unjudged rows, with three lines of
context and the rewrite's hunk, go to ``bench/triage/unjudged.md`` (not committed: it
quotes third-party code) for a reviewer to judge; ``bench/triage/rows.jsonl`` keeps the
run's rows for ``--from-rows``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
TRIAGE = os.path.join(HERE, "triage")
VERDICTS = os.path.join(TRIAGE, "verdicts.tsv")
KINDS = ("finding", "safe-rewrite", "unsafe-rewrite")
MODES = {"check": dict(fix=False), "diff": dict(fix=True), "unsafe": dict(fix=True, unsafe_fixes=True)}
# the two pytorch/examples scripts whose TM301 bug issue 10 asks to see fixed
TM301_BUGS = (("pytorch/examples", "dcgan/main.py"), ("pytorch/examples", "super_resolution/main.py"))
HUNK_LINES = 60  # a TM301 fix re-indents a whole script: show its start


@dataclass
class Row:
    id: str
    source: str
    path: str  # relative to the source's directory
    code: str
    kind: str
    line: int
    col: int
    hash: str
    severity: str
    safety: str
    message: str
    text: str  # the flagged line
    context: str  # three lines either side, numbered
    hunk: str = ""  # the rewrite (rewrite rows)
    verdict: str = ""
    why: str = ""

    @property
    def key(self) -> tuple:
        return (self.source, self.path, self.code, self.kind, self.hash)


def line_hash(text: str) -> str:
    return hashlib.blake2b(text.strip().encode("utf-8", "replace"), digest_size=4).hexdigest()


def make_id(source: str, path: str, code: str, kind: str, line: int, h: str) -> str:
    return f"{source}:{path}:{code}:{kind}:{line}:{h}"


def parse_id(rid: str) -> tuple | None:
    """(key, line) of an id, or None.  The source may contain ':' no more than the path;
    the last four fields never do."""
    base = rid.split("#", 1)[0]
    parts = base.rsplit(":", 4)
    if len(parts) != 5:
        return None
    head, code, kind, line, h = parts
    if ":" not in head or not line.isdigit():
        return None
    source, path = head.split(":", 1)
    return (source, path, code, kind, h), int(line)


def split_path(tree: str, abspath: str) -> tuple[str, str]:
    """(source, path inside it) of a file of the tree."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from realcode import source_of_dir

    rel = os.path.relpath(abspath, tree).replace(os.sep, "/")
    top, _, rest = rel.partition("/")
    if not rest:
        return ".", top
    return source_of_dir(top, tree), rest


# --------------------------------------------------------------------------- running torchmend


def tree_files(tree: str) -> list[str]:
    out = []
    for d, dirs, names in os.walk(tree):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        out += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
    return out


def run_mode(tree: str, files: list[str], mode: str, jobs: int):
    """The file results of torchmend in ``mode`` over ``files`` of ``tree`` (the tree is
    the project root, as for ``torchmend MODE TREE``)."""
    from torchmend import runner
    from torchmend.engine import Options

    opts = Options(roots=(tree,), **MODES[mode])
    return runner.run([tree], opts, files=files, jobs=jobs).results


def _hunks(diff: bytes, line: int) -> str:
    """The hunk(s) of a one-file diff that touch ``line`` (else the nearest one)."""
    from unidiff import PatchSet

    try:
        ps = PatchSet(diff.decode("utf-8", "replace"))
    except Exception as e:  # a diff unidiff cannot read is itself worth a look
        return f"(unreadable diff: {e})\n" + diff.decode("utf-8", "replace")[:2000]
    hunks = [h for f in ps for h in f]
    if not hunks:
        return ""

    def dist(h):
        lo, hi = h.source_start, h.source_start + max(h.source_length, 1) - 1
        return 0 if lo <= line <= hi else min(abs(line - lo), abs(line - hi))

    best = min(dist(h) for h in hunks)
    lines = "".join(str(h) for h in hunks if dist(h) == best).splitlines()
    if len(lines) > HUNK_LINES:
        lines = lines[:HUNK_LINES] + [f"... ({len(lines) - HUNK_LINES} more lines)"]
    return "\n".join(lines)


def _context(lines: list[str], line: int, n: int = 3) -> str:
    out = []
    for i in range(max(1, line - n), min(len(lines), line + n) + 1):
        out.append(f"{'>' if i == line else ' '}{i:5} {lines[i - 1]}")
    return "\n".join(out)


def rows_of(tree: str, results: dict[str, list]) -> tuple[list[Row], list[str]]:
    """Rows from the results per mode; plus notes (errors, mode disagreements)."""
    rows: list[Row] = []
    notes: list[str] = []
    texts: dict[str, list[str]] = {}

    def lines_of(p):
        if p not in texts:
            with open(p, "rb") as f:
                # lines as Python counts them (str.splitlines would also split at \f, \x1c, ...)
                texts[p] = re.split(r"\r\n|\r|\n", f.read().decode("utf-8", "replace"))
        return texts[p]

    for mode, kind in (("check", "finding"), ("diff", "safe-rewrite"), ("unsafe", "unsafe-rewrite")):
        for r in results.get(mode, []):
            if r.error and mode == "check":
                notes.append(f"error: {os.path.relpath(r.path, tree)}: {r.error}")
            for f in r.findings:
                if kind != "finding" and not f.applied:
                    continue
                if kind == "unsafe-rewrite" and (f.safety is None or f.safety.name != "UNSAFE"):
                    continue  # a safe fix: its row is the safe-rewrite one
                source, rel = split_path(tree, r.path)
                ls = lines_of(r.path)
                text = ls[f.line - 1] if 1 <= f.line <= len(ls) else ""
                h = line_hash(text)
                rows.append(Row(
                    id=make_id(source, rel, f.code, kind, f.line, h), source=source, path=rel, code=f.code, kind=kind,
                    line=f.line, col=f.col, hash=h, severity=f.severity.value, safety=f.safety.name.lower() if f.safety else "none",
                    message=f.message, text=text, context=_context(ls, f.line),
                    hunk=_hunks(r.diff, f.line) if kind != "finding" else "",
                ))
    # the fixing modes' findings must be check's (same engine, same files)
    check = {r.path: [(f.code, f.line, f.col, f.message) for f in r.findings] for r in results.get("check", [])}
    for mode in ("diff", "unsafe"):
        for r in results.get(mode, []):
            got = [(f.code, f.line, f.col, f.message) for f in r.findings]
            if r.path in check and got != check[r.path]:
                notes.append(f"{mode} findings differ from check: {os.path.relpath(r.path, tree)}: {sorted(set(got) ^ set(check[r.path]))[:3]}")
            if r.error and not any(r.path == x.path and x.error for x in results.get("check", [])):
                notes.append(f"error in {mode} only: {os.path.relpath(r.path, tree)}: {r.error}")
    return uniquify(rows), notes


def uniquify(rows: list[Row]) -> list[Row]:
    rows.sort(key=lambda r: (r.source, r.path, KINDS.index(r.kind), r.line, r.col, r.code))
    seen: Counter = Counter()
    for r in rows:
        seen[r.id] += 1
        if seen[r.id] > 1:
            r.id = f"{r.id}#{seen[r.id]}"
    return rows


def collect(tree: str, jobs: int, full: bool = False, per_source: bool = False, log=print) -> tuple[list[Row], list[str]]:
    """Run the three modes; ``per_source``: each top-level directory of the tree is its own
    project (as if torchmend ran in each repository), else the tree is one project."""
    tree = os.path.abspath(tree)
    files = tree_files(tree)
    if per_source:
        groups: dict[str, list[str]] = {}
        for p in files:
            top = os.path.relpath(p, tree).split(os.sep)[0]
            groups.setdefault(os.path.join(tree, top) if top != os.path.basename(p) else tree, []).append(p)
    else:
        groups = {tree: files}
    results: dict[str, list] = {"check": [], "diff": [], "unsafe": []}
    for root, group in groups.items():
        t0 = time.perf_counter()
        check = run_mode(root, group, "check", jobs)
        results["check"] += check
        log(f"check {os.path.relpath(root, tree)}: {len(group)} files, {sum(len(r.findings) for r in check)} findings ({time.perf_counter() - t0:.0f} s)")
        flagged = group if full else [r.path for r in check if r.findings]
        for mode in ("diff", "unsafe"):
            t0 = time.perf_counter()
            res = run_mode(root, flagged, mode, jobs) if flagged else []
            results[mode] += res
            log(f"{mode} {os.path.relpath(root, tree)}: {len(flagged)} files, {sum(1 for r in res if r.diff)} changed ({time.perf_counter() - t0:.0f} s)")
    return rows_of(tree, results)


# --------------------------------------------------------------------------- verdicts


class VerdictError(Exception):
    pass


def read_verdicts(path: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#") or line.split("\t")[:2] == ["id", "verdict"]:
                continue
            parts = line.split("\t")
            if len(parts) != 3 or parts[1] not in ("TP", "FP") or not parts[2].strip() or parse_id(parts[0]) is None:
                raise VerdictError(f"{path}:{n}: expected 'id<TAB>TP|FP<TAB>why' with an id SOURCE:PATH:CODE:KIND:LINE:HASH")
            if parts[0] in out:
                raise VerdictError(f"{path}:{n}: {parts[0]} judged twice")
            out[parts[0]] = (parts[1], parts[2].strip())
    return out


def merge(rows: list[Row], verdicts: dict[str, tuple[str, str]]) -> tuple[int, list[str]]:
    """Set each row's verdict: by id, else by (source, path, code, kind, hash) at the
    nearest line.  Returns (rows matched after a shift, verdict ids matching no row)."""
    used = set()
    for r in rows:
        if r.id in verdicts:
            r.verdict, r.why = verdicts[r.id]
            used.add(r.id)
    spare: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
    for vid in verdicts:
        if vid not in used:
            key, line = parse_id(vid)
            spare[key].append((line, vid))
    shifted = 0
    for r in rows:
        if r.verdict or not spare.get(r.key):
            continue
        line, vid = min(spare[r.key], key=lambda c: abs(c[0] - r.line))
        spare[r.key].remove((line, vid))
        r.verdict, r.why = verdicts[vid]
        used.add(vid)
        shifted += 1
    return shifted, sorted(set(verdicts) - used)


# --------------------------------------------------------------------------- report


def _pct(tp: int, fp: int) -> str:
    return f"{100 * tp / (tp + fp):.0f}%" if tp + fp else "n/a"


def report(rows: list[Row], shifted: int, stale: list[str], notes: list[str]) -> tuple[str, bool]:
    """The printed report, and whether --check passes."""
    out = []
    by = defaultdict(list)
    for r in rows:
        by[(r.code, r.kind)].append(r)
    out.append(f"{'rule':6} {'kind':15} {'count':>5} {'TP':>4} {'FP':>4} {'unjudged':>8} {'precision':>9}")
    for kind in KINDS:
        for (code, k), rs in sorted(by.items()):
            if k != kind:
                continue
            tp, fp = sum(r.verdict == "TP" for r in rs), sum(r.verdict == "FP" for r in rs)
            out.append(f"{code:6} {kind:15} {len(rs):5} {tp:4} {fp:4} {len(rs) - tp - fp:8} {_pct(tp, fp):>9}")
        rs = [r for r in rows if r.kind == kind]
        tp, fp = sum(r.verdict == "TP" for r in rs), sum(r.verdict == "FP" for r in rs)
        out.append(f"{'all':6} {kind:15} {len(rs):5} {tp:4} {fp:4} {len(rs) - tp - fp:8} {_pct(tp, fp):>9}")
    per_source = Counter((r.source, r.kind) for r in rows)
    out.append("\nper source: " + "; ".join(f"{s} {per_source[(s, 'finding')]}/{per_source[(s, 'safe-rewrite')]}/{per_source[(s, 'unsafe-rewrite')]}" for s in sorted({r.source for r in rows})) + "  (findings/safe/unsafe rewrites)")

    def target(name, rs, goal):
        tp, fp = sum(r.verdict == "TP" for r in rs), sum(r.verdict == "FP" for r in rs)
        un = len(rs) - tp - fp
        if not rs:
            return f"  {name}: no rows"
        if goal == 1.0:
            met = "NOT met" if fp else ("met" if not un else f"unknown ({un} unjudged)")
        else:
            ok = tp + fp and tp / (tp + fp) >= goal
            met = ("met" if ok else "NOT met") + (f" on the judged rows ({un} unjudged)" if un else "")
        return f"  {name}: {tp} TP, {fp} FP, {un} unjudged of {len(rs)}: precision {_pct(tp, fp)}: {met}"

    out.append("\ntargets (issue 10):")
    out.append(target("every safe rewrite right", [r for r in rows if r.kind == "safe-rewrite"], 1.0))
    out.append(target("unsafe rewrites >= 90% right", [r for r in rows if r.kind == "unsafe-rewrite"], 0.9))
    out.append(target("TM102 findings >= 80% right", [r for r in rows if r.kind == "finding" and r.code == "TM102"], 0.8))
    for source, path in TM301_BUGS:
        mine = [r for r in rows if (r.source, r.path, r.code) == (source, path, "TM301")]
        kinds = sorted({r.kind for r in mine}, key=KINDS.index)
        state = "FIXED (safe rewrite)" if "safe-rewrite" in kinds else ("reported, not fixed" if "finding" in kinds else "not reported")
        if "unsafe-rewrite" in kinds:
            state += "; unsafe rewrite"
        out.append(f"  TM301 bug {source}:{path}: {state}")
    if shifted:
        out.append(f"\n{shifted} verdict(s) applied after a line shift (same line text)")
    if stale:
        out.append(f"{len(stale)} verdict(s) match no row now (the rule no longer reports them, or the code changed): " + ", ".join(stale[:10]) + (" ..." if len(stale) > 10 else ""))
    if notes:
        out.append(f"\n{len(notes)} note(s):")
        out += ["  " + n for n in notes]
    unjudged = [r for r in rows if not r.verdict]
    bad_safe = [r for r in rows if r.kind == "safe-rewrite" and r.verdict == "FP"]
    ok = not unjudged and not bad_safe
    return "\n".join(out), ok


def write_unjudged(rows: list[Row], path: str) -> int:
    todo = [r for r in rows if not r.verdict]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# Unjudged triage rows ({len(todo)})\n\nAdd a line `id<TAB>TP|FP<TAB>why` to bench/triage/verdicts.tsv for each.\n"
                "TP: the pitfall is really there (finding) / the rewrite is right (rewrite rows). FP otherwise.\n")
        for r in todo:
            f.write(f"\n## {r.id}\n\n{r.code} {r.kind} ({r.severity}, fix: {r.safety}) at {r.source}:{r.path}:{r.line}:{r.col}\n\n> {r.message}\n\n```python\n{r.context}\n```\n")
            if r.hunk:
                f.write(f"\n```diff\n{r.hunk}\n```\n")
    return len(todo)


def save_rows(rows: list[Row], notes: list[str], path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(json.dumps({"notes": notes}) + "\n")
        for r in rows:
            d = dataclasses.asdict(r)
            d.pop("verdict"), d.pop("why")
            f.write(json.dumps(d) + "\n")
    os.replace(path + ".tmp", path)


def load_rows(path: str) -> tuple[list[Row], list[str]]:
    with open(path, encoding="utf-8") as f:
        notes = json.loads(f.readline())["notes"]
        return [Row(**json.loads(line)) for line in f if line.strip()], notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", help="the real-code tree (bench/realcode.py build DIR)")
    ap.add_argument("--from-rows", metavar="FILE", help="report from a saved run's rows instead of running torchmend")
    ap.add_argument("--verdicts", default=VERDICTS)
    ap.add_argument("--unjudged", default=os.path.join(TRIAGE, "unjudged.md"))
    ap.add_argument("--rows", default=os.path.join(TRIAGE, "rows.jsonl"), help="where to save this run's rows")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--full", action="store_true", help="run diff and diff --unsafe-fixes on every file, not only flagged ones")
    ap.add_argument("--per-source", action="store_true", help="each top-level directory is its own project (default: the tree is one)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a row has no verdict or a safe rewrite is FP")
    a = ap.parse_args(argv)
    if bool(a.tree) == bool(a.from_rows):
        ap.error("give --tree DIR or --from-rows FILE")
    try:
        verdicts = read_verdicts(a.verdicts)
    except VerdictError as e:
        print(f"triage: {e}", file=sys.stderr)
        return 2
    if a.tree:
        if not os.path.isdir(a.tree):
            print(f"triage: {a.tree}: no such directory (python bench/realcode.py build {a.tree})", file=sys.stderr)
            return 2
        rows, notes = collect(a.tree, a.jobs, a.full, a.per_source, log=lambda s: print(s, file=sys.stderr, flush=True))
        save_rows(rows, notes, a.rows)
    else:
        rows, notes = load_rows(a.from_rows)
    shifted, stale = merge(rows, verdicts)
    text, ok = report(rows, shifted, stale, notes)
    print(text)
    n = write_unjudged(rows, a.unjudged)
    print(f"\n{n} unjudged row(s) listed in {a.unjudged}")
    if a.check and not ok:
        bad = [r.id for r in rows if r.kind == "safe-rewrite" and r.verdict == "FP"]
        print(f"triage --check: FAILED: {n} unjudged row(s), {len(bad)} wrong safe rewrite(s)" + (": " + ", ".join(bad) if bad else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
