"""Run scripts under the verification modes, sandboxed, and read the outcome.

``run_scripts([RunSpec, ...]) -> [RunOutcome, ...]`` runs each script's bootstrap
(``python -m torchmend.verify.bootstrap``, see bootstrap.py for the protocol) in the
sandbox (sandbox.py) through the verify worker (forkserver.py: torch imported once, one
fork per run; runs in parallel), and parses its ``TORCHMEND-*`` lines.
``run_script(path, mode, ...)`` is the one-script form.

Which harness mode verifies which rule, and what a run of the buggy original shows, each
rule declares beside its code (``Rule.verify``); ``PITFALL_MODE`` / ``SIGNATURES``
collect them per pitfall.  Ask :func:`mode_for` and :func:`evidence_for`.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from . import sandbox

# What each pitfall's rules declare (``Rule.verify``: the harness mode that shows the
# problem, and the texts its failure shows), collected from the registry on first use:
# ``PITFALL_MODE`` (pitfall -> mode) and ``SIGNATURES`` (pitfall -> texts).
def _declared() -> tuple[dict, dict]:
    from ..registry import all_rules

    modes: dict[str, str] = {}
    texts: dict[str, list[str]] = {}
    for r in all_rules():
        modes.setdefault(r.pitfall, r.verify.mode)
        got = texts.setdefault(r.pitfall, [])
        got.extend(t for t in r.verify.evidence if t not in got)
    return modes, {p: tuple(t) for p, t in texts.items()}


_DECLARED: Optional[tuple[dict, dict]] = None


def __getattr__(name: str):
    global _DECLARED
    if name in ("PITFALL_MODE", "SIGNATURES"):
        if _DECLARED is None:
            _DECLARED = _declared()
        return _DECLARED[0] if name == "PITFALL_MODE" else _DECLARED[1]
    raise AttributeError(name)

def _pitfall(rule_or_pitfall) -> str:
    return rule_or_pitfall if isinstance(rule_or_pitfall, str) else getattr(rule_or_pitfall, "pitfall", "")


def mode_for(rule_or_pitfall) -> str:
    """The harness mode that makes a rule's (or a pitfall's) problem visible."""
    v = None if isinstance(rule_or_pitfall, str) else getattr(rule_or_pitfall, "verify", None)
    return getattr(v, "mode", None) or __getattr__("PITFALL_MODE").get(_pitfall(rule_or_pitfall), "plain")


def evidence_for(rule_or_pitfall) -> tuple[str, ...]:
    """What a run of the buggy original shows: detector codes or error-text substrings."""
    v = None if isinstance(rule_or_pitfall, str) else getattr(rule_or_pitfall, "verify", None)
    return tuple(getattr(v, "evidence", None) or __getattr__("SIGNATURES").get(_pitfall(rule_or_pitfall), ()))


def modes_for(items: Iterable) -> set[str]:
    """The modes for some rules or pitfalls (at least "plain")."""
    return {mode_for(x) for x in items} or {"plain"}


_DET = re.compile(r"^TORCHMEND-DETECTOR: (\S+) at (\S*): (.*)$", re.M)
_ERR = re.compile(r"^TORCHMEND-ERROR: (.*) at (\S*)$", re.M)
_STEPS = re.compile(r"^TORCHMEND-STEPS: (\d+)$", re.M)
_STOP = re.compile(r"^TORCHMEND-STOPPED: (.*)$", re.M)
_TIME = re.compile(r"^TORCHMEND-TIME: ([0-9.]+)$", re.M)

_SIGNAL_WHY = {
    "SIGXCPU": "the CPU time limit",
    "SIGXFSZ": "the file size limit (--file-size-limit)",
    "SIGKILL": "SIGKILL (out of memory?)",
}


@dataclass
class RunOutcome:
    ok: bool  # ran to the end (or a clean --max-steps stop), exit 0, no detector
    error_text: str = ""  # "RuntimeError: Expected all tensors ..." ("" if none)
    detector_codes: list[str] = field(default_factory=list)
    steps: int = 0
    location: str = ""  # file:line of the error, else of the first detector
    returncode: int | None = None
    timed_out: bool = False
    stopped: bool = False  # stopped cleanly after --max-steps
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0  # wall time of the whole run
    script_seconds: float = 0.0  # of which the script itself (after the modes were installed)
    detectors: list[tuple[str, str, str]] = field(default_factory=list)  # (code, location, message)
    isolation: Optional[sandbox.Isolation] = None  # what the sandbox of this run had

    def shows(self, expected: str) -> bool:
        """Whether this run shows ``expected``: a detector code that fired, or a substring of
        the error or of stderr (a spawned child's traceback lands there)."""
        if not expected:
            return not self.ok
        if re.fullmatch(r"TM\d{3}", expected):
            return expected in self.detector_codes
        return expected in self.error_text or expected in self.stderr

    def shows_any(self, expected: Iterable[str]) -> str | None:
        return next((e for e in expected if self.shows(e)), None)

    def summary(self) -> str:
        """One line of evidence: "RuntimeError: ... at train.py:42" / "TM201 at train.py:30" /
        "5 steps, clean"."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s ({self.steps} steps)"
        if self.error_text:
            return f"{_short(self.error_text)} at {self.location or '?'}" if self.location else _short(self.error_text)
        if self.detectors:
            return "; ".join(f"{c} at {loc or '?'} ({msg})" for c, loc, msg in self.detectors)
        if self.returncode not in (0, None):
            return f"exit status {self.returncode}"
        how = "stopped" if self.stopped else "ran to the end"
        return f"{self.steps} step{'s' if self.steps != 1 else ''}, {how}, clean"


def _short(s: str, n: int = 200) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def bootstrap_argv(path: str, modes, max_steps: int | None, real_device: bool, args=(), cwd: str | None = None) -> list[str]:
    """The bootstrap's arguments (``python -m torchmend.verify.bootstrap`` + these)."""
    mode = modes if isinstance(modes, str) else ",".join(sorted(set(modes))) or "plain"
    argv = ["--mode", mode]
    if max_steps is not None:
        argv += ["--max-steps", str(max_steps)]
    if real_device:
        argv.append("--real-device")
    if cwd is not None:
        argv += ["--cwd", os.path.abspath(cwd)]
    return argv + [os.path.abspath(path), "--", *args]


@dataclass
class RunSpec:
    """One run of a script (already in the directory it may write to)."""

    script: str
    mode: str | Iterable[str] = "plain"
    args: tuple[str, ...] = ()
    cwd: Optional[str] = None  # default: the script's directory
    env: Mapping[str, str] = field(default_factory=dict)  # --env additions
    writable: tuple[str, ...] = ()  # default: the working directory; plus the run's HOME and TMPDIR
    timeout: float = 60.0
    max_steps: Optional[int] = None
    real_device: bool = False
    network: bool = False
    namespaces: bool = True  # False: the subreaper sandbox only (what a machine without user namespaces gets)
    limits: Optional[sandbox.Limits] = None


# -- the worker -------------------------------------------------------------------------

_SHARED: dict[bool, object] = {}


def shared_worker(warm: bool = True):
    """This process's verify worker (started on first use, restarted if it died; ended
    at exit).  ``warm``: torch imported once, a fork per run; else a fresh interpreter
    per run, behind the same sandbox."""
    from .forkserver import Worker

    w = _SHARED.get(warm)
    if w is None or not w.alive():
        w = Worker(warm=warm)
        _SHARED[warm] = w
    return w


@atexit.register
def _close_workers() -> None:
    for w in list(_SHARED.values()):
        w.close()
    _SHARED.clear()


def _can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def run_scripts(specs: list[RunSpec], parallel: Optional[int] = None, fresh: bool = False, worker=None) -> list[RunOutcome]:
    """Run ``specs`` in the sandbox, ``parallel`` at a time (default: two when there are
    two cores), each stopped after its timeout; outcomes in order.

    ``fresh``: a fresh interpreter per run (the worker ``exec``s the bootstrap after the
    sandbox set-up) instead of a fork of the warm worker."""
    if not specs:
        return []
    if parallel is None:
        parallel = 2 if sandbox._cores() >= 2 else 1
    parallel = max(1, min(parallel, len(specs)))
    if not _can_fork():
        return [_run_subprocess(s) for s in specs]
    from .forkserver import WorkerError

    for attempt in (1, 2):
        w = worker or shared_worker(warm=not fresh)
        jobs, dirs = [], []
        iso = w.isolation()  # namespaces only where the worker's probe found them usable
        for s in specs:
            job, d = _job(s, w.root, parallel, iso)
            jobs.append(job)
            dirs.append(d)
        try:
            results = w.run(jobs, parallel=parallel)
            break
        except WorkerError:
            if worker is not None or attempt == 2:
                raise
            w.close()  # it died (killed from outside?): once more with a new one
        finally:
            import shutil

            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)
    outs = []
    for s, r in zip(specs, results):
        out = parse(r.stdout, r.stderr, r.status, r.timed_out, r.seconds)
        out.isolation = r.isolation
        outs.append(out)
    # an interpreter killed by a signal before the bootstrap printed anything (seen rarely
    # under heavy load: SIGBUS while importing torch) is run once more
    again = [i for i, o in enumerate(outs) if fresh and o.returncode is not None and o.returncode < 0
             and not o.timed_out and "TORCHMEND-" not in o.stderr]
    if again:
        for i, o in zip(again, run_scripts([specs[i] for i in again], parallel, fresh, worker)):
            outs[i] = o
    return outs


_RUN = [0]


def _job(s: RunSpec, root: str, parallel: int, iso: sandbox.Isolation):
    """The worker's Job for ``s``, and the run's own directory (removed afterwards)."""
    from .forkserver import Job

    _RUN[0] += 1
    d = os.path.join(root, f"run-{os.getpid()}-{_RUN[0]}")
    home, tmp, cap = os.path.join(d, "home"), os.path.join(d, "tmp"), os.path.join(d, "capture")
    for x in (home, tmp, cap):
        os.makedirs(x, exist_ok=True)
    script = os.path.abspath(s.script)
    cwd = os.path.abspath(s.cwd or os.path.dirname(script))
    env = sandbox.run_env(home, tmp, dict(s.env), network=s.network, real_device=s.real_device)
    threads = None
    if parallel > 1 and "OMP_NUM_THREADS" not in env:
        threads = max(1, sandbox._cores() // parallel)
        env["OMP_NUM_THREADS"] = str(threads)
    limits = s.limits or sandbox.Limits.for_run(s.timeout)
    job = Job(
        argv=bootstrap_argv(script, s.mode, s.max_steps, s.real_device, tuple(s.args), cwd=cwd),
        cwd=cwd,
        env=env,
        capture=cap,
        writable=[home, tmp, *(os.path.abspath(w) for w in (s.writable or (cwd,)))],
        timeout=s.timeout,
        network=s.network,
        namespaces=s.namespaces and iso.namespaces,
        no_namespaces_reason="" if iso.namespaces else iso.reason,
        limits=dict(cpu_seconds=limits.cpu_seconds, data_bytes=limits.data_bytes, file_bytes=limits.file_bytes),
        threads=threads,
    )
    return job, d


def run_script(
    path: str,
    mode: str | Iterable[str] = "plain",
    timeout: float = 60.0,
    max_steps: int | None = None,
    real_device: bool = False,
    args: Iterable[str] = (),
    *,
    fresh: bool = False,
    **spec,
) -> RunOutcome:
    """Run ``path`` under ``mode`` ("device", "zero_grad,softmax", or a set) in the
    sandbox, with its directory writable (``spec``: the other RunSpec fields)."""
    s = RunSpec(path, mode, tuple(args), timeout=timeout, max_steps=max_steps, real_device=real_device, **spec)
    return run_scripts([s], parallel=1, fresh=fresh)[0]


def _run_subprocess(s: RunSpec) -> RunOutcome:
    """Where there is no fork (Windows): a fresh interpreter in a new process group, with
    the allow-listed environment; no namespaces, no resource limits."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="torchmend-run-") as d:
        home, tmp = os.path.join(d, "home"), os.path.join(d, "tmp")
        os.makedirs(home)
        os.makedirs(tmp)
        cwd = os.path.abspath(s.cwd or os.path.dirname(os.path.abspath(s.script)))
        env = sandbox.run_env(home, tmp, dict(s.env), network=True, real_device=s.real_device)
        cmd = [sys.executable, "-m", "torchmend.verify.bootstrap",
               *bootstrap_argv(s.script, s.mode, s.max_steps, s.real_device, tuple(s.args), cwd=cwd)]
        flags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, creationflags=flags)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=s.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            out, err = proc.communicate()
        o = parse(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), None if timed_out else proc.returncode,
                  timed_out, time.monotonic() - t0)
        o.isolation = sandbox.Isolation(reason=f"no sandbox on {sys.platform}: environment filtered only")
        return o


def parse(stdout: str, stderr: str, returncode: int | None, timed_out: bool = False, seconds: float = 0.0) -> RunOutcome:
    dets = [(m.group(1), m.group(2), m.group(3)) for m in _DET.finditer(stderr)]
    codes = sorted({d[0] for d in dets})
    err = _ERR.findall(stderr)
    steps = _STEPS.findall(stderr)
    error_text, location = (err[-1][0], err[-1][1]) if err else ("", "")
    if not error_text and returncode not in (0, 3, None) and not timed_out:
        # ended without the bootstrap's report (sys.exit(2) of argparse, a signal, a crash
        # in C++): the last line of stderr says why
        lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("TORCHMEND-")]
        if returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"signal {-returncode}"
            error_text = f"killed by {_SIGNAL_WHY.get(name, name)}" + (f" ({lines[-1].strip()})" if lines else "")
        else:
            error_text = lines[-1].strip() if lines else f"exit status {returncode}"
    if "finished its bootstrapping phase" in stderr:
        # the real error is in a spawned child, which re-ran the unguarded script
        error_text = (
            "RuntimeError: An attempt has been made to start a new process before the current process has "
            "finished its bootstrapping phase (in a spawned child re-running the script without a "
            "`if __name__ == '__main__':` guard)" + (f"; then {error_text}" if error_text else "")
        )
    if location in ("?",):
        location = ""
    if not location and dets:
        location = dets[0][1]
    ok = returncode == 0 and not timed_out and not dets and not error_text
    return RunOutcome(
        ok=ok,
        error_text=error_text,
        detector_codes=codes,
        steps=int(steps[-1]) if steps else 0,
        location=location,
        returncode=returncode,
        timed_out=timed_out,
        stopped=bool(_STOP.search(stderr)),
        stdout=stdout,
        stderr=stderr,
        seconds=seconds,
        script_seconds=float(_TIME.findall(stderr)[-1]) if _TIME.findall(stderr) else 0.0,
        detectors=dets,
    )
