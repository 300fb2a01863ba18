"""``torchmend verify``: prove the fixes of a script by running it before and after.

For each script:

1. the engine computes its fixes (safe ones; unsafe too with ``unsafe_fixes``), in memory;
2. the script's directory is copied twice into a fresh temporary directory
   (``<tmp>/before/`` and ``<tmp>/after/``), and the fixed text replaces the script in the
   ``after`` copy, so relative imports and relative data paths work and whatever the script
   writes lands in the copy, never next to the original.  Hidden directories,
   ``__pycache__`` and virtual environments are left out; files over 8 MiB are symlinked, not
   copied (a script that *writes* to such a file would write to the original); at most 5000
   files are copied;
3. both copies run in subprocesses (:func:`codemods.verify.harness.run_script`) under the
   modes that the applied fixes call for (device -> simulated GPU, zero_grad and softmax ->
   detectors, main_guard -> spawn start method, filtered_load -> plain run), with a time limit
   and stopped cleanly after ``max_steps`` optimizer steps;
4. a pitfall that the original does not show, while the script has fixes of several
   pitfalls, is run once more with every *other* pitfall's fixes applied (one failure can
   hide another: a device error stops the script before the zero_grad detector sees a step);
5. each applied fix is *verified* when the original shows its pitfall's signature
   (``harness.SIGNATURES``: the device error, the detector code, the spawn bootstrapping
   error, the load error) and the fixed copy runs clean (no error, no detector, in time).

Nothing is executed unless the user runs ``torchmend verify``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Optional

from .harness import SIGNATURES, RunOutcome, modes_for, run_script

MAX_COPY_BYTES = 8 * 1024 * 1024
MAX_COPY_FILES = 5000
_SKIP_DIRS = {"__pycache__", "node_modules", "venv", ".venv", "env", "site-packages", "wandb", "mlruns"}


@dataclass
class FixEvidence:
    code: str
    pitfall: str
    line: int
    col: int
    message: str
    shown: Optional[str]  # the signature the original showed, None if not shown
    verified: bool
    before: Optional[RunOutcome] = None  # the run that had to show the pitfall
    isolated: bool = False  # that run had every other pitfall's fixes applied


@dataclass
class ScriptReport:
    path: str
    fixes: list[FixEvidence] = field(default_factory=list)
    before: Optional[RunOutcome] = None
    after: Optional[RunOutcome] = None
    modes: tuple[str, ...] = ()
    error: Optional[str] = None  # the script could not be processed

    @property
    def verified(self) -> bool:
        return self.error is None and all(f.verified for f in self.fixes)


def copy_tree(src_dir: str, dst_dir: str) -> None:
    """Copy ``src_dir`` for a run (see the module docstring): small files are copied, big
    ones symlinked; once MAX_COPY_FILES are copied, the rest is symlinked (directories
    whole, without walking them)."""
    count = 0
    for root, dirs, files in os.walk(src_dir):
        rel = os.path.relpath(root, src_dir)
        out = os.path.join(dst_dir, rel) if rel != "." else dst_dir
        os.makedirs(out, exist_ok=True)
        for f in files:
            s, d = os.path.join(root, f), os.path.join(out, f)
            try:
                big = os.path.getsize(s) > MAX_COPY_BYTES
            except OSError:
                continue
            if big or count >= MAX_COPY_FILES:
                os.symlink(os.path.realpath(s), d)
            else:
                shutil.copy2(s, d)
                count += 1
        keep = []
        for d in sorted(dirs):
            s = os.path.join(root, d)
            if d.startswith(".") or d in _SKIP_DIRS:
                continue
            if os.path.islink(s) or count >= MAX_COPY_FILES:
                os.symlink(os.path.realpath(s), os.path.join(out, d))
            else:
                keep.append(d)
        dirs[:] = keep


def _code_pitfalls(select: frozenset[str]) -> dict[str, str]:
    from ..engine import rules_for

    return {r.code: r.pitfall for r in rules_for(select)}


def verify_script(
    path: str,
    unsafe_fixes: bool = False,
    timeout: float = 60.0,
    max_steps: Optional[int] = 5,
    real_device: bool = False,
    select: frozenset[str] = frozenset(),
    roots: tuple[str, ...] = (),
) -> ScriptReport:
    from ..discovery import discover
    from ..engine import Options, fix_text
    from ..project import ImportIndex, Project
    from ..sourcefile import Skipped, SourceError, read_source

    def ProjectInfo(roots):  # the project the fixes are decided in (its import index read on demand)
        return Project(roots=roots, index=ImportIndex(discover(list(roots)).files))

    rep = ScriptReport(path=path)
    try:
        src = read_source(path)
        findings, new_text, _applied, _ctx = fix_text(
            path, src.text, Options(select=select, unsafe_fixes=unsafe_fixes), ProjectInfo(roots=roots or (path,))
        )
    except (SourceError, Skipped, OSError) as e:
        rep.error = str(e)
        return rep
    applied = [f for f in findings if f.applied]
    if not applied or new_text == src.text:
        return rep
    pitfall_of = _code_pitfalls(select)
    pitfalls = {pitfall_of.get(f.code, "") for f in applied}
    modes = modes_for(pitfalls)
    rep.modes = tuple(sorted(modes))
    sdir = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    with tempfile.TemporaryDirectory(prefix="torchmend-verify-") as tmp:
        before_dir, after_dir = os.path.join(tmp, "before"), os.path.join(tmp, "after")
        copy_tree(sdir, before_dir)
        copy_tree(sdir, after_dir)
        for d in (before_dir, after_dir):  # the script itself is always a real copy
            p = os.path.join(d, name)
            if os.path.islink(p) or not os.path.exists(p):
                if os.path.lexists(p):
                    os.unlink(p)
                with open(p, "wb") as f:
                    f.write(src.raw)
        with open(os.path.join(after_dir, name), "wb") as f:
            f.write(src.encode(new_text))
        kw = dict(mode=modes, timeout=timeout, max_steps=max_steps, real_device=real_device)
        rep.before = run_script(os.path.join(before_dir, name), **kw)
        rep.after = run_script(os.path.join(after_dir, name), **kw)
        if "device" in modes and len(modes) > 1 and not real_device and rep.after.ok:
            # the simulated GPU computes no values, so the value detectors (softmax) see
            # nothing there: the fixed script must also run clean on the CPU with them on
            cpu = run_script(os.path.join(after_dir, name), **dict(kw, mode=modes - {"device"}))
            if not cpu.ok:
                rep.after = cpu
        # One pitfall's failure can hide another's (a device error stops the script before
        # the zero_grad detector sees a step): a pitfall the original did not show is run
        # again with every *other* pitfall's fixes applied.
        befores: dict[str, tuple[RunOutcome, bool]] = {}
        applied_codes = {f.code for f in applied}
        for pit in sorted(pitfalls):
            befores[pit] = (rep.before, False)
            if len(pitfalls) == 1 or rep.before.shows_any(SIGNATURES.get(pit, ())):
                continue
            others = frozenset(c for c in applied_codes if pitfall_of.get(c) != pit)
            try:
                _f, text_p, _a, _c = fix_text(
                    path, src.text, Options(select=others, unsafe_fixes=unsafe_fixes), ProjectInfo(roots=roots or (path,))
                )
            except (SourceError, Skipped):
                continue
            if text_p in (src.text, new_text):
                continue
            d = os.path.join(tmp, f"before-{pit}")
            copy_tree(sdir, d)
            p = os.path.join(d, name)
            if os.path.lexists(p):
                os.unlink(p)
            with open(p, "wb") as fh:
                fh.write(src.encode(text_p))
            # only this pitfall's mode: the others are fixed (and the simulated GPU would
            # hide the values that the softmax detector reads)
            befores[pit] = (_map_lines(run_script(p, **dict(kw, mode=modes_for({pit}))), name, text_p, src.text), True)
    for f in applied:
        pit = pitfall_of.get(f.code, "")
        before, isolated = befores.get(pit, (rep.before, False))
        shown = before.shows_any(SIGNATURES.get(pit, ()))
        rep.fixes.append(
            FixEvidence(f.code, pit, f.line, f.col, f.message, shown, bool(shown) and rep.after.ok, before, isolated)
        )
    return rep


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
        return [f"{dp}: no fix applied, nothing to verify"]
    out = [f"{dp}: ran before and after the fixes (modes: {', '.join(rep.modes)})"]
    a = rep.after
    for f in rep.fixes:
        b = f.before or rep.before
        status = "verified" if f.verified else "NOT verified"
        out.append(f"  {dp}:{f.line}:{f.col}: {f.code} {status}: {f.message}")
        label = "before (other fixes applied)" if f.isolated else "before"
        if f.shown:
            tag = "" if f.shown.startswith("TM") else f" ({f.code})"
            out.append(f"    {label}: {b.summary()}{tag}")
        else:
            want = " or ".join(SIGNATURES.get(f.pitfall, ())) or "a failure"
            out.append(f"    {label}: {b.summary()} -- did not show {want!r}")
        out.append(f"    after: {a.summary()}")
    return out
