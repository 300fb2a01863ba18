"""The corpus, executed with torch (the execution oracle; see corpus/README.md).

Data-driven from ``corpus/*/cases.toml``:

Each run happens in a temporary copy of the case's pitfall directory (scripts only).

* every case's ORIGINAL runs in its ``run`` mode: a bug must show its ``before`` (an
  error-text substring, or a detector code such as TM201); a look-alike must run clean;
* every bug case with a fix (``.expected.py`` or ``.unsafe.py``) runs the TOOL'S OUTPUT
  (the engine's safe fixes, or with --unsafe-fixes when only ``.unsafe.py`` exists)
  in place of the original: it must run clean (no error, no detector);
* mutation check: for each pitfall, one buggy original judged as if it were the fixed
  version must be declared NOT clean (removing the fix makes the oracle fail).
"""

from __future__ import annotations


import os

import pytest

from torchmend.engine import Options, fix_text
from torchmend.verify.harness import RunOutcome, evidence_for, run_script
from tests.corpus_cases import load_cases

TIMEOUT = 120  # generous: CI machines are slow and shared; cases take a few seconds
# TORCHMEND_REAL_DEVICE=1: device cases run on the machine's real CUDA, not the simulation
REAL_DEVICE = os.environ.get("TORCHMEND_REAL_DEVICE") == "1"

CASES = load_cases()
RUN_CASES = [c for c in CASES if c.kind in ("bug", "lookalike")]


def fixed_cases(cases):
    return [c for c in cases if c.kind == "bug" and (c.read(".expected.py") is not None or c.read(".unsafe.py") is not None)]


def mutation_cases(cases):
    """One bug case per pitfall, preferring one that has a fix."""
    seen, out = set(), []
    for c in fixed_cases(cases) + [c for c in cases if c.kind == "bug"]:
        if c.pitfall not in seen:
            seen.add(c.pitfall)
            out.append(c)
    return out


FIXED_CASES = fixed_cases(CASES)
MUTATION_CASES = mutation_cases(CASES)


def _diag(out: RunOutcome) -> str:
    return f"{out.summary()} [rc={out.returncode}, {out.seconds:.1f}s]\n--- stderr tail ---\n{out.stderr[-3000:]}"


def runs_clean(out: RunOutcome) -> bool:
    """The "after" judgement: finished (or stopped cleanly), exit 0, no error, no detector."""
    return out.ok and not out.timed_out and not out.detector_codes and not out.error_text


def _before(case) -> tuple[str, ...]:
    """What the original must show: the case's ``before``; on real CUDA, a device case may
    show any of the device rules' evidence (CUDA words a mismatch per operator, where the
    simulated GPU raises one message)."""
    if REAL_DEVICE and case.run == "device":
        return (case.before, *evidence_for(case.pitfall))
    return (case.before,)


def _stage(case, tmp_path, text: bytes | None = None) -> str:
    """Copy the case's pitfall directory (its sibling scripts, if a case imports one) into
    ``tmp_path`` and return the case's path there, with ``text`` in place of the original
    when given: whatever a script writes lands in the temporary directory."""
    import shutil

    src = os.path.dirname(case.path())
    for f in os.listdir(src):
        if f.endswith(".py") or f.endswith(".toml"):
            shutil.copy(os.path.join(src, f), tmp_path / f)
    p = tmp_path / os.path.basename(case.path())
    p.write_bytes(case.read() if text is None else text)
    return str(p)


def tool_output(case) -> str:
    """What torchmend makes of the case: the safe fixes, or all fixes when the case's fix
    exists only as ``.unsafe.py``."""
    text = case.read().decode("utf-8")
    unsafe = case.read(".expected.py") is None
    _findings, new, _applied, _ctx = fix_text(case.path(), text, Options(unsafe_fixes=unsafe))
    return new


@pytest.mark.parametrize("case", RUN_CASES, ids=lambda c: c.id)
def test_original(case, tmp_path):
    out = run_script(_stage(case, tmp_path), case.run, timeout=TIMEOUT, real_device=REAL_DEVICE)
    assert not out.timed_out, _diag(out)
    if case.kind == "lookalike":
        assert runs_clean(out), f"look-alike {case.id} must run clean in mode {case.run!r}: " + _diag(out)
    else:
        assert case.before, f"{case.id}: bug cases declare `before` in cases.toml"
        expected = _before(case)
        assert out.shows_any(expected), f"{case.id}: original must show {' or '.join(map(repr, expected))}: " + _diag(out)


@pytest.mark.parametrize("case", FIXED_CASES, ids=lambda c: c.id)
def test_fixed(case, tmp_path):
    new = tool_output(case)
    assert new != case.read().decode("utf-8"), f"{case.id}: the tool changes nothing"
    out = run_script(_stage(case, tmp_path, new.encode("utf-8")), case.run, timeout=TIMEOUT, real_device=REAL_DEVICE)
    assert runs_clean(out), f"{case.id}: the fixed script must run clean in mode {case.run!r}: " + _diag(out)


@pytest.mark.parametrize("case", MUTATION_CASES, ids=lambda c: c.pitfall)
def test_mutation_unfixed_is_caught(case, tmp_path):
    """Run the ORIGINAL in place of the fixed script: the oracle must reject it."""
    out = run_script(_stage(case, tmp_path), case.run, timeout=TIMEOUT, real_device=REAL_DEVICE)
    assert not runs_clean(out), f"{case.id}: the unfixed script passes as fixed: the oracle does not check this pitfall"
