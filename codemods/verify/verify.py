"""``torchmend verify``: prove the fixes of a script by running it before and after.

For each script:

1. the engine computes its fixes (safe ones; unsafe too with ``unsafe_fixes``), in memory;
2. the directory it runs in (``cwd``, default the script's own) is copied for every run
   (sandbox.copy_tree: regular copies or reflinks, never links; files over the copy budget
   are left out and named), and the fixed text replaces the script in the fixed run's copy;
3. the original and the fixed copy run in parallel in the sandbox
   (harness.run_scripts: allow-listed environment, no network, the file system outside
   the copy read-only, resource limits, every process killed at the end, where the OS
   allows; see sandbox.py) under the modes that the applied fixes call for
   (harness.mode_for), with the script's arguments, a time limit, and stopped cleanly
   after ``max_steps`` optimizer steps;
4. a pitfall that the original does not show, while the script has fixes of several
   pitfalls, is run once more with every *other* pitfall's fixes applied (one failure can
   hide another: a device error stops the script before the zero_grad detector sees a
   step); when the simulated GPU is among several modes, the fixed copy also runs on the
   CPU, where the value detectors see values;
5. each applied fix is *verified* when the run that had to show its pitfall shows the
   pitfall's evidence (harness.evidence_for) and the fixed copy runs clean; *not verified*
   when the original ran clean without showing it, or the fixed copy fails; and the
   script *could not run* when that run failed for another reason (a missing module or
   file, a required argument, a time-out): no verdict either way.

Where the OS cannot refuse writes outside the copy, the project is compared before and
after (sandbox.snapshot) and every change is reported as an error.

Nothing is executed unless the user runs ``torchmend verify``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Mapping, Optional

from . import sandbox
from .harness import RunOutcome, RunSpec, evidence_for, mode_for, run_scripts


@dataclass(frozen=True)
class VerifyOptions:
    """How to run the scripts (the engine's Options say which fixes)."""

    timeout: float = 120.0
    max_steps: Optional[int] = 5
    real_device: bool = False
    args: tuple[str, ...] = ()  # the script's own arguments (after `--`)
    cwd: Optional[str] = None  # the directory copied and run in (default: the script's)
    env: tuple[tuple[str, str], ...] = ()  # --env KEY=VAL
    network: bool = False
    copy_limit: int = sandbox.COPY_LIMIT_BYTES
    memory_mib: Optional[int] = None
    file_mib: Optional[int] = None
    namespaces: bool = True  # False: the sandbox a machine without user namespaces gets
    fresh: bool = False  # a fresh interpreter per run instead of the warm worker


@dataclass
class FixEvidence:
    code: str
    pitfall: str
    line: int
    col: int
    message: str
    shown: Optional[str]  # the evidence the original showed, None if not shown
    verified: bool
    before: Optional[RunOutcome] = None  # the run that had to show the pitfall
    isolated: bool = False  # that run had every other pitfall's fixes applied
    evidence: tuple[str, ...] = ()
    could_not_run: Optional[str] = None  # why there is no verdict

    @property
    def status(self) -> str:
        return "verified" if self.verified else "could not run" if self.could_not_run else "NOT verified"


@dataclass
class ScriptReport:
    path: str
    fixes: list[FixEvidence] = field(default_factory=list)
    before: Optional[RunOutcome] = None
    after: Optional[RunOutcome] = None
    modes: tuple[str, ...] = ()
    error: Optional[str] = None  # the script could not be processed
    unsafe_only: tuple[str, ...] = ()  # no fix applied; these codes have unsafe fixes
    notes: list[str] = field(default_factory=list)
    outside_writes: list[tuple[str, str]] = field(default_factory=list)  # (path, created/modified/deleted)
    isolation: Optional[sandbox.Isolation] = None
    cells: tuple = ()  # a notebook run as a script: (script line of each cell's first line, cell number)

    def where(self, line: int) -> str:
        """``line`` of the script as the report shows it (``cell 3:5`` for a notebook)."""
        import bisect

        k = bisect.bisect_right([c[0] for c in self.cells], line) - 1
        if k < 0:
            return str(line)
        start, cell = self.cells[k]
        return f"cell {cell}:{line - start + 1}"

    @property
    def verified(self) -> bool:
        return self.outcome == "verified"

    @property
    def outcome(self) -> str:
        """verified | nothing | not verified | could not run | error"""
        if self.error or self.outside_writes:
            return "error"
        if any(f.could_not_run for f in self.fixes):
            return "could not run"
        if not self.fixes:
            return "nothing"
        return "verified" if all(f.verified for f in self.fixes) else "not verified"


def _applied_rules(select: frozenset[str]) -> dict:
    from ..engine import rules_for

    return {r.code: r for r in rules_for(select)}


def _project_root(d: str) -> str:
    """The nearest enclosing directory with .git or pyproject.toml (else ``d``): what the
    detection watches when writes cannot be refused."""
    home = os.path.realpath(os.path.expanduser("~"))
    cur = d
    while True:
        if os.path.exists(os.path.join(cur, ".git")) or os.path.isfile(os.path.join(cur, "pyproject.toml")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur or cur == home:
            return d
        cur = parent


class _Stage:
    """The sandbox directories of one script: one copy of its directory per run."""

    def __init__(self, base: str, src_dir: str, script_rel: str, raw: bytes, vo: VerifyOptions):
        self.base, self.src_dir, self.rel, self.raw, self.vo = base, src_dir, script_rel, raw, vo
        self.copy: Optional[sandbox.CopyReport] = None

    def make(self, label: str, script_bytes: bytes) -> str:
        """A fresh copy for the run ``label`` with ``script_bytes`` as the script; returns
        the script's path in it."""
        work = os.path.join(self.base, label, "work")
        rep = sandbox.copy_tree(self.src_dir, work, limit=self.vo.copy_limit, first=(self.rel,))
        if self.copy is None:
            self.copy = rep
        p = os.path.join(work, self.rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(script_bytes)
        return p

    def spec(self, script: str, modes, label: str) -> RunSpec:
        vo = self.vo
        work = os.path.join(self.base, label, "work")
        return RunSpec(
            script, modes, vo.args, cwd=work, env=dict(vo.env), writable=(work,), timeout=vo.timeout,
            max_steps=vo.max_steps, real_device=vo.real_device, network=vo.network, namespaces=vo.namespaces,
            limits=sandbox.Limits.for_run(vo.timeout, vo.memory_mib, vo.file_mib),
        )


def verify_script(
    path: str,
    unsafe_fixes: bool = False,
    timeout: float = 120.0,
    max_steps: Optional[int] = 5,
    real_device: bool = False,
    select: frozenset[str] = frozenset(),
    roots: tuple[str, ...] = (),
    vopts: Optional[VerifyOptions] = None,
    worker=None,
) -> ScriptReport:
    """Verify the fixes of one script (see the module docstring).  ``vopts`` wins over
    the ``timeout`` / ``max_steps`` / ``real_device`` shorthands."""
    from ..discovery import discover
    from ..engine import Options, fix_text
    from ..project import ImportIndex, Project
    from ..rule import Safety
    from ..sourcefile import Skipped, SourceError, read_source

    def ProjectInfo(roots):  # the project the fixes are decided in (its import index read on demand)
        return Project(roots=roots, index=ImportIndex(discover(list(roots)).files))

    from ..notebook import is_notebook

    vo = vopts or VerifyOptions(timeout=timeout, max_steps=max_steps, real_device=real_device)
    rep = ScriptReport(path=path)
    notebook = is_notebook(path)
    try:
        src = read_source(path)
        if notebook:
            # its code cells in order, as one script (IPython lines commented out): what
            # runs, before and after, and what the fixes are decided on
            from ..notebook import script
            from ..sourcefile import decode_source

            src = decode_source(path, script(src.raw, path).encode("utf-8"))
            rep.cells = _cell_starts(src.text)
        findings, new_text, _applied, _ctx = fix_text(
            path, src.text, Options(select=select, unsafe_fixes=unsafe_fixes, notebook=notebook),
            ProjectInfo(roots=roots or (path,))
        )
    except (SourceError, Skipped, OSError) as e:
        rep.error = str(e)
        return rep
    applied = [f for f in findings if f.applied]
    if not applied or new_text == src.text:
        rep.unsafe_only = tuple(sorted({
            f.code for f in findings
            if not f.applied and (f.fix.safety if f.fix else f.safety) is Safety.UNSAFE
        }))
        return rep
    rules = _applied_rules(select)
    pitfall_of = {c: getattr(r, "pitfall", "") for c, r in rules.items()}
    by_pit: dict[str, list] = {}
    for f in applied:
        by_pit.setdefault(pitfall_of.get(f.code, ""), []).append(f)
    mode_of_pit = {p: {mode_for(rules[f.code]) if f.code in rules else mode_for(p) for f in fs} for p, fs in by_pit.items()}
    modes = set().union(*mode_of_pit.values())
    rep.modes = tuple(sorted(modes))

    script = os.path.realpath(path)
    run_dir = os.path.realpath(vo.cwd) if vo.cwd else os.path.dirname(script)
    if not os.path.isdir(run_dir):
        rep.error = f"--cwd {vo.cwd}: not a directory"
        return rep
    rel = os.path.relpath(script, run_dir)
    if rel.startswith(os.pardir + os.sep) or rel == os.pardir or os.path.isabs(rel):
        rep.error = f"the script is not inside --cwd {vo.cwd} (that directory is what gets copied)"
        return rep

    from .harness import shared_worker

    w = worker
    if w is None and hasattr(os, "fork") and os.name != "nt":
        w = shared_worker(warm=not vo.fresh)
    import tempfile

    base = tempfile.mkdtemp(prefix="s-", dir=w.root if w is not None else None)
    watch = sorted({run_dir, _project_root(run_dir)})
    mine = (w.root,) if w is not None else (base,)
    snap = None if vo.namespaces and _refuses_writes(w) else sandbox.snapshot(watch, exclude=mine)
    try:
        stage = _Stage(base, run_dir, rel, src.raw, vo)
        b_path = stage.make("before", src.raw)
        a_path = stage.make("after", src.encode(new_text))
        note = stage.copy.note(vo.copy_limit) if stage.copy else None
        if note:
            rep.notes.append(note)

        def run(specs):
            return run_scripts(specs, fresh=vo.fresh, worker=w)

        rep.before, rep.after = run([stage.spec(b_path, modes, "before"), stage.spec(a_path, modes, "after")])
        rep.isolation = rep.before.isolation

        # wave 2: the fixed copy on the CPU; each pitfall the original did not show, with
        # every other pitfall's fixes applied, in its own modes only (the simulated GPU
        # computes no values, so it would hide what the softmax detector reads)
        wave: list[tuple[str, RunSpec, Optional[str]]] = []
        if "device" in modes and len(modes) > 1 and not vo.real_device and rep.after.ok:
            # (without "spawn" too: the fixed copy just ran clean under it, and a spawned
            # DataLoader worker costs a fresh interpreter that imports torch)
            cpu_modes = modes - {"device", "spawn"} or {"plain"}
            p = stage.make("after-cpu", src.encode(new_text))
            wave.append(("cpu", stage.spec(p, cpu_modes, "after-cpu"), None))
        applied_codes = {f.code for f in applied}
        for pit in sorted(by_pit):
            if len(by_pit) == 1 or rep.before.shows_any(_evidence(by_pit[pit], rules, pit)):
                continue
            others = frozenset(c for c in applied_codes if pitfall_of.get(c) != pit)
            try:
                _f, text_p, _a, _c = fix_text(
                    path, src.text, Options(select=others, unsafe_fixes=unsafe_fixes, notebook=notebook),
                    ProjectInfo(roots=roots or (path,))
                )
            except (SourceError, Skipped):
                continue
            if text_p in (src.text, new_text):
                continue
            label = f"before-{pit or 'other'}"
            p = stage.make(label, src.encode(text_p))
            wave.append((pit, stage.spec(p, mode_of_pit[pit], label), text_p))
        befores: dict[str, tuple[RunOutcome, bool]] = {}
        for (what, _spec, text_p), out in zip(wave, run([s for _w, s, _t in wave])):
            if what == "cpu":
                if not out.ok:
                    rep.after = out
            else:
                befores[what] = (_map_lines(out, os.path.basename(path), text_p, src.text), True)
        if snap is not None:
            rep.outside_writes = sandbox.changes(snap, sandbox.snapshot(watch, exclude=mine))
        every = _evidence(applied, rules, "")
        for f in applied:
            pit = pitfall_of.get(f.code, "")
            before, isolated = befores.get(pit, (rep.before, False))
            ev = _evidence([f], rules, pit)
            shown = before.shows_any(ev)
            cnr = None
            if not shown and not before.ok and not before.detector_codes and not before.shows_any(every):
                # no verdict: it failed, but not with any pitfall that a fix here addresses
                cnr = could_not_run_reason(before, stage.copy, vo)
            rep.fixes.append(FixEvidence(f.code, pit, f.line, f.col, f.message, shown, bool(shown) and rep.after.ok,
                                         before, isolated, ev, cnr))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if rep.cells:
        name = os.path.basename(path)
        memo: dict = {}  # one mapped copy per run (the report compares runs by identity)

        def mapped(o):
            if id(o) not in memo:
                memo[id(o)] = _cell_locations(o, rep, name)
            return memo[id(o)]

        rep.before, rep.after = mapped(rep.before), mapped(rep.after)
        for f in rep.fixes:
            f.before = mapped(f.before)
    return rep


def _cell_starts(text: str) -> tuple:
    """(line of the cell's first line, cell number) of a notebook's script (notebook.script)."""
    import re

    out = []
    for i, ln in enumerate(text.splitlines(), 1):
        m = re.match(r"# %% cell (\d+)$", ln)
        if m:
            out.append((i + 1, int(m.group(1))))
    return tuple(out)


def _cell_locations(out: Optional[RunOutcome], rep: "ScriptReport", name: str) -> Optional[RunOutcome]:
    """``name:LINE`` locations of a run of a notebook's script as ``name:cell N:LINE``."""
    import dataclasses

    if out is None or not rep.cells:
        return out

    def fix(loc: str) -> str:
        file, _, line = loc.rpartition(":")
        return f"{file}:{rep.where(int(line))}" if file == name and line.isdigit() else loc

    return dataclasses.replace(out, location=fix(out.location), detectors=[(c, fix(loc), m) for c, loc, m in out.detectors])


def _refuses_writes(w) -> bool:
    """Whether runs here get a read-only file system outside their copy."""
    if w is None:
        return False
    try:
        return w.isolation().files == "read-only"
    except Exception:  # noqa: BLE001
        return False


def _evidence(fixes, rules: Mapping, pit: str) -> tuple[str, ...]:
    out: list[str] = []
    for f in fixes:
        for e in evidence_for(rules[f.code]) if f.code in rules else evidence_for(pit):
            if e not in out:
                out.append(e)
    return tuple(out) or evidence_for(pit)


_MISSING = re.compile(r"No such file or directory: '([^']+)'")
_NETWORK = ("Network is unreachable", "Name or service not known", "Temporary failure in name resolution",
            "nodename nor servname", "Connection refused", "getaddrinfo failed")


def could_not_run_reason(out: RunOutcome, copy: Optional[sandbox.CopyReport], vo: VerifyOptions) -> str:
    """One line: why the original gave no verdict, with what to do about it."""
    import sys

    if out.timed_out:
        return (f"the original did not finish within --timeout {vo.timeout:g}s ({out.steps} steps): "
                "raise --timeout or lower --max-steps")
    text = out.summary()
    hint = ""
    err = out.error_text
    if "ModuleNotFoundError" in err or "ImportError" in err:
        hint = f"verify runs scripts with {sys.executable}: install the module there, or add it with --env PYTHONPATH=..."
    elif "the following arguments are required" in err or ("usage:" in out.stderr and out.returncode == 2):
        hint = "give the script's arguments after --, e.g. torchmend verify train.py -- --data DIR"
    elif "Read-only file system" in err:
        hint = "the sandbox refuses writes outside its copy of the directory (use relative paths, or --cwd a directory that holds them)"
    elif "No such file or directory" in err or "FileNotFoundError" in err:
        m = _MISSING.search(err)
        miss = copy.missing(m.group(1)) if (copy and m) else None
        if miss:
            hint = f"{miss[0]} was left out of the sandbox copy: {'over --copy-limit' if miss[2] == 'limit' else miss[2]}"
        else:
            hint = "the script runs in a copy of its directory (or of --cwd): relative paths resolve there"
    elif any(s in err for s in _NETWORK):
        hint = "the sandbox has no network: download the data beforehand, or --allow-network"
    elif "File too large" in err or "file size limit" in err:
        hint = "raise --file-size-limit"
    elif "MemoryError" in err or "out of memory" in err:
        hint = "raise --memory-limit"
    why = f"the original fails for another reason than the pitfall: {text}"
    return f"{why} ({hint})" if hint else why


def _map_lines(out: RunOutcome, name: str, new: str, orig: str) -> RunOutcome:
    """Locations of a run of ``new`` (a partly fixed copy), as lines of the original."""
    import dataclasses

    import pygit2

    # line numbers of ``new`` -> ``orig`` through the diff (libgit2's, as everywhere else)
    back: dict[int, int] = {}
    old_no = new_no = 0
    patch = pygit2.Patch.create_from(orig.encode(), new.encode(), context_lines=0)
    for hunk in patch.hunks:
        # unchanged lines before this hunk map one to one
        while new_no < hunk.new_start - (0 if hunk.new_lines == 0 else 1):
            old_no, new_no = old_no + 1, new_no + 1
            back[new_no] = old_no
        # inside it, lines that only changed indentation (a main guard) map in order
        olds = [(ln.old_lineno, ln.content.strip()) for ln in hunk.lines if ln.origin == "-"]
        i = 0
        for ln in hunk.lines:
            if ln.origin != "+":
                continue
            j = i
            while j < len(olds) and olds[j][1] != ln.content.strip():
                j += 1
            if j < len(olds):
                back[ln.new_lineno] = olds[j][0]
                i = j + 1
        old_no += hunk.old_lines
        new_no += hunk.new_lines
    for _ in range(len(new.splitlines()) - new_no):
        old_no, new_no = old_no + 1, new_no + 1
        back[new_no] = old_no

    def fix(loc: str) -> str:
        file, _, line = loc.rpartition(":")
        if file == name and line.isdigit() and int(line) in back:
            return f"{file}:{back[int(line)]}"
        return loc

    return dataclasses.replace(
        out, location=fix(out.location), detectors=[(c, fix(loc), m) for c, loc, m in out.detectors]
    )


def format_report(rep: ScriptReport) -> list[str]:
    """Evidence lines for one script."""
    from ..gitdiff import display_path

    dp = display_path(rep.path)
    if rep.error:
        return [f"{dp}: error: {rep.error}"]
    if not rep.fixes:
        if rep.unsafe_only:
            codes = ", ".join(rep.unsafe_only)
            return [f"{dp}: no safe fix to verify; the fixes of {codes} are classed unsafe: "
                    f"run `torchmend verify --unsafe-fixes {dp}` to verify them"]
        return [f"{dp}: no fix applies, nothing to verify"]
    out = [f"{dp}: note: {n}" for n in rep.notes]
    if rep.outside_writes:
        shown = ", ".join(f"{display_path(p)} ({k})" for p, k in rep.outside_writes[:5])
        more = f" and {len(rep.outside_writes) - 5} more" if len(rep.outside_writes) > 5 else ""
        out.append(f"{dp}: error: files outside the sandbox copy changed while the script ran: {shown}{more}")
    cnr = [f for f in rep.fixes if f.could_not_run]
    if cnr and len(cnr) == len(rep.fixes) and all(f.before is rep.before for f in cnr):
        out.append(f"{dp}: could not run: {cnr[0].could_not_run}")
        return out
    out.append(f"{dp}: ran the original and the fixed copy (modes: {', '.join(rep.modes)})")
    a = rep.after
    for f in rep.fixes:
        b = f.before or rep.before
        out.append(f"  {dp}:{rep.where(f.line) if rep.cells else f.line}:{f.col}: {f.code} {f.status}: {f.message}")
        label = "before (other fixes applied)" if f.isolated else "before"
        if f.could_not_run:
            out.append(f"    {label}: could not run: {f.could_not_run}")
            continue
        if f.shown:
            tag = "" if f.shown.startswith("TM") else f" ({f.code})"
            out.append(f"    {label}: {b.summary()}{tag}")
        else:
            want = " or ".join(f.evidence) or "a failure"
            out.append(f"    {label}: {b.summary()} -- did not show {want!r}")
        out.append(f"    after: {a.summary()}")
    return out
