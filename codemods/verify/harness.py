"""Run a script under the verification modes in a subprocess and read the outcome.

``run_script(path, mode, timeout, max_steps, real_device) -> RunOutcome`` runs
``python -m torchmend.verify.bootstrap`` (see bootstrap.py for the protocol) in a new
process group (killed whole on timeout, DataLoader workers included) and parses its
``TORCHMEND-*`` lines.

What each pitfall's run mode is, and what its original must show (``SIGNATURES``), is the
single source for both the corpus test and ``torchmend verify``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pitfall module -> run mode
PITFALL_MODE = {
    "device": "device",
    "zero_grad": "zero_grad",
    "softmax": "softmax",
    "main_guard": "spawn",
    "filtered_load": "load",
}
# pitfall -> what a run of the buggy original shows: detector codes, or error-text substrings
SIGNATURES: dict[str, tuple[str, ...]] = {
    "device": (
        "Expected all tensors to be on the same device",
        "should be the same",  # "Input type (...) and weight type (...) should be the same"
        "not at the same device",
        "must be on the current device",
    ),
    "zero_grad": ("TM201", "TM202"),
    "softmax": ("TM501", "TM502"),
    "main_guard": ("bootstrapping phase",),
    "filtered_load": ("size mismatch", "Error(s) in loading state_dict", "expected value 1000"),
}

_DET = re.compile(r"^TORCHMEND-DETECTOR: (\S+) at (\S*): (.*)$", re.M)
_ERR = re.compile(r"^TORCHMEND-ERROR: (.*) at (\S*)$", re.M)
_STEPS = re.compile(r"^TORCHMEND-STEPS: (\d+)$", re.M)
_STOP = re.compile(r"^TORCHMEND-STOPPED: (.*)$", re.M)
_TIME = re.compile(r"^TORCHMEND-TIME: ([0-9.]+)$", re.M)


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
    seconds: float = 0.0  # wall time of the whole subprocess
    script_seconds: float = 0.0  # of which the script itself (after interpreter start and modes)
    detectors: list[tuple[str, str, str]] = field(default_factory=list)  # (code, location, message)

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
            return f"{_short(self.error_text)} at {self.location or '?'}"
        if self.detectors:
            return "; ".join(f"{c} at {loc or '?'} ({msg})" for c, loc, msg in self.detectors)
        if self.returncode not in (0, None):
            return f"exit status {self.returncode}"
        how = "stopped" if self.stopped else "ran to the end"
        return f"{self.steps} step{'s' if self.steps != 1 else ''}, {how}, clean"


def _short(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def bootstrap_cmd(path: str, modes, max_steps: int | None, real_device: bool, args=()) -> list[str]:
    mode = modes if isinstance(modes, str) else ",".join(sorted(set(modes))) or "plain"
    cmd = [sys.executable, "-m", "torchmend.verify.bootstrap", "--mode", mode]
    if max_steps is not None:
        cmd += ["--max-steps", str(max_steps)]
    if real_device:
        cmd.append("--real-device")
    return cmd + [os.path.abspath(path), *args]


def run_script(
    path: str,
    mode: str | Iterable[str] = "plain",
    timeout: float = 60.0,
    max_steps: int | None = None,
    real_device: bool = False,
    args: Iterable[str] = (),
) -> RunOutcome:
    """Run ``path`` under ``mode`` ("device", "zero_grad,softmax", or a set) in a subprocess.

    An interpreter killed by a signal before the bootstrap printed anything (seen rarely
    under heavy load: SIGBUS while importing torch) is retried once."""
    out = _run_once(path, mode, timeout, max_steps, real_device, args)
    if out.returncode is not None and out.returncode < 0 and not out.timed_out and "TORCHMEND-" not in out.stderr:
        out = _run_once(path, mode, timeout, max_steps, real_device, args)
    return out


_SERVER = None


def _use_forkserver() -> bool:
    return os.environ.get("TORCHMEND_VERIFY_FORKSERVER") == "1" and hasattr(os, "fork")


def _run_forked(cmd, cwd, env, timeout) -> tuple[str, str, int | None, bool]:
    """Run the bootstrap in a child forked from the fork server (see forkserver.py)."""
    global _SERVER
    import tempfile

    from .forkserver import ForkServer

    if _SERVER is None or not _SERVER.alive():
        _SERVER = ForkServer(env)
    server = _SERVER
    try:
        with tempfile.TemporaryDirectory(prefix="torchmend-run-") as tmp:
            so, se = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            pid = server.start(cmd[3:], cwd, env, so, se)
            status = server.wait(timeout)
            timed_out = status is None
            try:
                os.killpg(pid, signal.SIGKILL)  # on timeout; else leftover workers
            except (ProcessLookupError, PermissionError, OSError):
                pass
            if timed_out:
                status = server.wait(30)
                if status is None:  # out of step with the server: start a new one next time
                    raise RuntimeError("fork server did not report the killed child")
            with open(so, "rb") as f:
                out = f.read().decode("utf-8", "replace")
            with open(se, "rb") as f:
                err = f.read().decode("utf-8", "replace")
    except (RuntimeError, OSError, ValueError):
        server.close()
        _SERVER = None
        raise RuntimeError("fork server failed") from None
    return out, err, status, timed_out


def _run_once(path, mode, timeout, max_steps, real_device, args) -> RunOutcome:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONWARNINGS"] = "ignore"
    if not real_device:
        env["CUDA_VISIBLE_DEVICES"] = env.get("CUDA_VISIBLE_DEVICES", "")
    cmd = bootstrap_cmd(path, mode, max_steps, real_device, tuple(args))
    t0 = time.monotonic()
    if _use_forkserver():
        try:
            out, err, status, timed_out = _run_forked(cmd, os.path.dirname(os.path.abspath(path)), env, timeout)
            return parse(out, err, status, timed_out, time.monotonic() - t0)
        except RuntimeError:
            pass  # the server failed: fall back to a fresh interpreter
    proc = subprocess.Popen(
        cmd,
        cwd=os.path.dirname(os.path.abspath(path)),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    _kill_group(proc)  # leftover workers of a finished script
    secs = time.monotonic() - t0
    return parse(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), proc.returncode, timed_out, secs)


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def parse(stdout: str, stderr: str, returncode: int | None, timed_out: bool = False, seconds: float = 0.0) -> RunOutcome:
    dets = [(m.group(1), m.group(2), m.group(3)) for m in _DET.finditer(stderr)]
    codes = sorted({d[0] for d in dets})
    err = _ERR.findall(stderr)
    steps = _STEPS.findall(stderr)
    error_text, location = (err[-1][0], err[-1][1]) if err else ("", "")
    if not error_text and returncode not in (0, 3, None) and not timed_out:
        # died without the bootstrap's report (a signal, a crash in C++): last stderr line
        lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("TORCHMEND-")]
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


def modes_for(pitfalls: Iterable[str]) -> set[str]:
    return {PITFALL_MODE.get(p, "plain") for p in pitfalls} or {"plain"}
