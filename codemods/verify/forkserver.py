"""The verify worker: one process that imports torch once and forks a sandboxed child per
run (``import torch`` is most of a small script's cost: 1.5-3 s of it).

    python -m torchmend.verify.forkserver --parent PID --root DIR [--cold]

Started by :class:`Worker` (the client side, below) with the allow-listed environment only
(sandbox.base_env), in its own session.  It dies with its parent (PR_SET_PDEATHSIG), and
when it ends, however, it kills every run still going and removes ``--root``, where the
client keeps the sandboxes.  ``--cold`` imports no torch: each run then ``exec``s a fresh
interpreter after the same sandbox set-up (the "fresh interpreter" path).

Protocol, one JSON object per line.  Worker -> client: ``{"probe": Isolation}`` first
(what a run gets here: sandbox.probe, before torch is imported), then ``{"ready": true}``,
then per run ``{"id": N, "done": exit status of the supervisor}``.  Client -> worker:
``{"op": "run", "id": N, ...}`` (see :class:`Job`), ``{"op": "kill", "id": N}`` (a
timeout), ``{"op": "close"}``.  Runs go on in parallel.

Per run, the worker forks a *supervisor*: it redirects the run's stdin/stdout/stderr
(files in the run's capture directory), becomes a child subreaper, enters the namespaces
(sandbox.enter_namespaces) and forks the PID namespace's *init*, which mounts a private
/proc and forks the *script process*: new session, nested user namespace, resource
limits, the run's environment and working directory, then the bootstrap
(bootstrap.main, or an ``exec`` of it).  When the script process ends, init ends and the
kernel kills whatever is left in the namespace.  Without namespaces, the supervisor
forks the script process itself and, as its subreaper, kills its process group and every
re-parented descendant.  The supervisor writes ``{"status": S, "isolation": ...}`` to the
capture directory's ``info`` file (S: the script's exit status, negative for a signal) and
exits.  ``kill`` sends SIGTERM to the supervisor, which kills the whole run.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

from . import sandbox


# ---------------------------------------------------------------- the worker process


def _serve(parent: int, root: str, warm: bool) -> None:
    sandbox.die_with_parent(signal.SIGTERM, parent)
    sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)  # orphans of a run that lost its supervisor
    running: dict[int, tuple[int, Optional[int], float | None]] = {}  # id -> (pid, pidfd, SIGKILL deadline)

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client decides; a terminal's Ctrl-C reaches it first
    out_fd = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing else may write into the protocol

    def send(obj) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(out_fd, data):]

    try:
        send({"probe": sandbox.probe(network=False, scratch=root).to_json()})
        if warm:
            _import_torch()
        send({"ready": True})
        buf = b""
        in_fd = 0
        while True:
            fds = [in_fd] + [fd for _pid, fd, _d in running.values() if fd is not None]
            wait = 0.05 if any(fd is None for _p, fd, _d in running.values()) else 1.0
            r, _, _ = select.select(fds, [], [], wait)
            if in_fd in r:
                chunk = os.read(in_fd, 65536)
                if not chunk:
                    break  # the client is gone
                buf += chunk
                closing = False
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    req = json.loads(line)
                    op = req.get("op")
                    if op == "run":
                        pid = _fork_run(req, warm)
                        try:
                            pidfd = os.pidfd_open(pid)
                        except (AttributeError, OSError):
                            pidfd = None
                        running[req["id"]] = (pid, pidfd, None)
                    elif op == "kill" and req.get("id") in running:
                        pid, fd, _ = running[req["id"]]
                        _signal(pid, signal.SIGTERM)
                        running[req["id"]] = (pid, fd, time.monotonic() + 10)
                    elif op == "close":
                        closing = True
                if closing:
                    break
            finished = []
            for rid, (pid, fd, deadline) in list(running.items()):
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 0
                if done:
                    if fd is not None:
                        os.close(fd)
                    del running[rid]
                    finished.append({"id": rid, "done": os.waitstatus_to_exitcode(status)})
                elif deadline is not None and time.monotonic() > deadline:
                    _signal(pid, signal.SIGKILL)  # the supervisor did not finish its cleanup
            # what a supervisor killed before its cleanup left came to us: gone before it is reported
            _sweep({pid for pid, _fd, _d in running.values()})
            for msg in finished:
                send(msg)
    finally:
        # the end (the client closed, went away, or this is its death signal): a second
        # signal (the death signal after the client's pipe closed) must not cut this short,
        # not even one whose handler runs before the line that ignores it has taken effect
        while True:
            try:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                break
            except SystemExit:
                continue
        for pid, _fd, _d in running.values():
            _signal(pid, signal.SIGTERM)
        end = time.monotonic() + 5
        while running and time.monotonic() < end:
            for rid, (pid, _fd, _d) in list(running.items()):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        del running[rid]
                except ChildProcessError:
                    del running[rid]
            time.sleep(0.01)
        for pid, _fd, _d in running.values():
            _signal(pid, signal.SIGKILL)
        sandbox.kill_all_children()
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def _import_torch() -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  - the point of the worker
    import torch.nn  # noqa: F401
    import torch.optim  # noqa: F401
    import torch.utils.data  # noqa: F401
    import torch._dynamo  # noqa: F401  - optimizers import it on their first step (~1 s)
    import torch.overrides  # noqa: F401

    from . import bootstrap, detectors, simulate  # noqa: F401


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _sweep(known: set[int]) -> None:
    """Kill live children that are not supervisors: descendants of a run that were
    re-parented to the worker (their supervisor was killed before it could)."""
    for pid in sandbox.children():
        if pid not in known:
            _signal(pid, signal.SIGKILL)
            try:
                os.waitpid(pid, 0)  # only these: a supervisor's status is its own waitpid's
            except ChildProcessError:
                pass


def _fork_run(req: dict, warm: bool) -> int:
    worker = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the supervisor; never returns
        _supervise(req, warm, worker)
    finally:
        os._exit(70)


# ---------------------------------------------------------------- one run


def _supervise(req: dict, warm: bool, worker: int) -> None:
    sandbox.die_with_parent(signal.SIGTERM, worker)
    cap = req["capture"]
    info = os.open(os.path.join(cap, "info"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fds = [os.open(os.devnull, os.O_RDONLY),
           os.open(os.path.join(cap, "stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
           os.open(os.path.join(cap, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.dup2(info, 3)
    os.closerange(4, _max_fd())
    info = 3
    sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)
    state = {"child": None, "alive": False, "ns": False}

    def write_info(obj) -> None:
        os.write(info, (json.dumps(obj) + "\n").encode())

    def cleanup() -> None:
        child = state["child"]
        if child is not None:
            if not state["ns"]:
                _killpg(child)  # the script's session (its group id outlives it while members remain)
            if state["alive"]:
                _signal(child, signal.SIGKILL)  # in a namespace: its init; the kernel kills the rest
        # the init is waited for by its pid: its /proc, mounted over ours, lists no children of ours
        sandbox.kill_all_children(known=(child,) if child is not None else ())

    def on_term(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cleanup()
        write_info({"status": None, "killed": True})
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    iso = sandbox.Isolation(reason=req.get("no_namespaces_reason", ""))
    if req.get("namespaces", True):
        try:
            iso = sandbox.enter_namespaces(req["writable"], network=req.get("network", False))
        except OSError as e:  # refused before anything changed: the subreaper sandbox
            iso = sandbox.Isolation(reason=f"no user namespaces here: {e.strerror or e}")
        except sandbox.SandboxSetupError as e:
            os.write(2, f"TORCHMEND-ERROR: the sandbox could not be set up: {e} at ?\n".encode())
            write_info({"isolation": sandbox.Isolation(reason=str(e)).to_json(), "status": 70})
            os._exit(0)
    if req.get("network"):
        iso.network = "allowed"
    state["ns"] = iso.namespaces
    write_info({"isolation": iso.to_json()})
    t0 = time.monotonic()
    if iso.namespaces:
        r, w = os.pipe()
        init = os.fork()
        if init == 0:
            os.close(r)
            _init(req, warm, w)
        os.close(w)
        state["child"], state["alive"] = init, True
        data = b""
        while True:
            try:
                chunk = os.read(r, 4096)
            except InterruptedError:
                continue
            if not chunk:
                break
            data += chunk
        _wait(init)
        state["alive"] = False
        try:
            status = json.loads(data)["status"]
        except (ValueError, KeyError):
            status = None
    else:
        child = os.fork()
        if child == 0:
            _script(req, warm, ns=False)
        state["child"], state["alive"] = child, True
        status = _wait(child)
        state["alive"] = False
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the run is over: finish the cleanup
    cleanup()
    write_info({"status": status, "seconds": time.monotonic() - t0})
    os._exit(0)


def _init(req: dict, warm: bool, w: int) -> None:
    """PID 1 of the run's namespace: mounts its /proc, forks the script process, reaps
    orphans; exits as soon as the script process ends (the kernel then kills the rest)."""
    status = None
    try:
        sandbox.die_with_parent(signal.SIGKILL)
        sandbox.pid_init()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        child = os.fork()
        if child == 0:
            os.close(w)
            _script(req, warm, ns=True)
        while True:
            pid, st = os.waitpid(-1, 0)
            if pid == child:
                status = os.waitstatus_to_exitcode(st)
                break
    except BaseException:  # noqa: BLE001
        pass
    finally:
        try:
            os.write(w, json.dumps({"status": status}).encode())
        finally:
            os._exit(0)


def _script(req: dict, warm: bool, ns: bool) -> None:
    """The process that becomes the script.  Never returns."""
    code = 1
    try:
        os.setsid()
        os.close(3)  # the info file
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if ns:
            sandbox.drop_namespace_privileges()
        else:
            sandbox.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1)
        sandbox.die_with_parent(signal.SIGKILL)
        sandbox.Limits(**req.get("limits", {})).apply()
        env = req["env"]
        os.chdir(req["cwd"])
        if not warm:
            os.execve(sys.executable, [sys.executable, "-m", "torchmend.verify.bootstrap", *req["argv"]], env)
        os.environ.clear()
        os.environ.update(env)
        import tempfile

        tempfile.tempdir = None  # the worker's cached choice: the run's TMPDIR now
        # a PYTHONPATH of this run (--env) that the worker did not start with
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        sys.path[0] = req["cwd"]  # as `python -m` started there would have it; the bootstrap puts the script's directory there
        sys.path[1:1] = extra
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        if req.get("threads"):
            import torch

            torch.set_num_threads(int(req["threads"]))
        from . import bootstrap

        try:
            code = bootstrap.main(req["argv"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _wait(pid: int) -> Optional[int]:
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except InterruptedError:
            continue
        except ChildProcessError:
            return None


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _max_fd() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 65536)
    except (ValueError, OSError):
        return 1024


# ---------------------------------------------------------------- the client side


@dataclass
class Job:
    """One run: the bootstrap's argv, where, with what (see the module docstring)."""

    argv: list[str]
    cwd: str
    env: dict
    capture: str  # an empty directory for stdout, stderr, info (not writable by the script)
    writable: list[str]  # what stays writable in the namespace (the run's sandbox)
    timeout: float
    network: bool = False
    namespaces: bool = True
    no_namespaces_reason: str = ""
    limits: dict = field(default_factory=dict)
    threads: Optional[int] = None


@dataclass
class Result:
    stdout: str
    stderr: str
    status: Optional[int]  # the script's exit status (negative: a signal); None: killed or lost
    timed_out: bool
    seconds: float
    isolation: sandbox.Isolation


class WorkerError(RuntimeError):
    pass


class Worker:
    """The client of one worker process.  ``run(jobs)`` runs jobs, ``parallel`` at a time."""

    def __init__(self, warm: bool = True, scratch: Optional[str] = None):
        import subprocess
        import tempfile

        self.root = tempfile.mkdtemp(prefix="torchmend-verify-", dir=scratch)
        self.warm = warm
        env = sandbox.base_env()
        env["HOME"] = os.path.join(self.root, "worker-home")
        env["TMPDIR"] = self.root
        env["PYTHONWARNINGS"] = "ignore"
        env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        os.makedirs(env["HOME"], exist_ok=True)
        cmd = [sys.executable, "-m", "torchmend.verify.forkserver", "--parent", str(os.getpid()), "--root", self.root]
        if not warm:
            cmd.append("--cold")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, bufsize=0, start_new_session=True, cwd=self.root)
        self.buf = b""
        self._probe: Optional[sandbox.Isolation] = None
        self._ready = False
        self._done: dict[int, int] = {}
        self._next = 0
        self.closed = False

    # protocol
    def _read(self, timeout: Optional[float]):
        """One JSON message, or None after ``timeout`` seconds.  Unbuffered reads into our
        own buffer: two lines arriving together must not hide the second from select()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerError("the verify worker died")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        if "probe" in msg:
            self._probe = sandbox.Isolation.from_json(msg["probe"])
        elif msg.get("ready"):
            self._ready = True
        elif "done" in msg:
            self._done[msg["id"]] = msg["done"]
        return msg

    def _send(self, obj) -> None:
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise WorkerError("the verify worker died") from None

    def isolation(self, timeout: float = 60) -> sandbox.Isolation:
        """What a run gets here (the worker's probe; it arrives before torch is imported)."""
        end = time.monotonic() + timeout
        while self._probe is None:
            if self._read(max(0.0, end - time.monotonic())) is None:
                raise WorkerError("the verify worker did not start")
        return self._probe

    def wait_ready(self, timeout: float = 300) -> None:
        end = time.monotonic() + timeout
        while not self._ready:
            if self._read(max(0.0, end - time.monotonic())) is None:
                raise WorkerError("the verify worker did not start")

    def alive(self) -> bool:
        return not self.closed and self.proc.poll() is None

    def run(self, jobs: list[Job], parallel: int = 1) -> list[Result]:
        """Run ``jobs`` (``parallel`` at a time), each stopped after its timeout."""
        self.wait_ready()
        results: dict[int, Result] = {}
        pending = list(enumerate(jobs))
        active: dict[int, tuple[int, Job, float, bool]] = {}  # run id -> (index, job, start, killed)
        try:
            while pending or active:
                while pending and len(active) < max(1, parallel):
                    i, job = pending.pop(0)
                    self._next += 1
                    rid = self._next
                    req = dict(asdict(job), op="run", id=rid)
                    self._send(req)
                    active[rid] = (i, job, time.monotonic(), False)
                for rid in [r for r in active if r in self._done]:
                    i, job, t0, killed = active.pop(rid)
                    self._done.pop(rid)
                    results[i] = _collect(job, killed, time.monotonic() - t0)
                if not active:
                    continue
                now = time.monotonic()
                deadlines = [t0 + job.timeout for (_i, job, t0, killed) in active.values() if not killed]
                self._read(max(0.0, min([now + 1.0] + deadlines) - now))
                now = time.monotonic()
                for rid, (i, job, t0, killed) in list(active.items()):
                    if not killed and now - t0 > job.timeout:
                        self._send({"op": "kill", "id": rid})
                        active[rid] = (i, job, t0, True)
        except BaseException:
            for rid in active:  # interrupted: end the runs now
                try:
                    self._send({"op": "kill", "id": rid})
                except WorkerError:
                    pass
            end = time.monotonic() + 5
            while any(rid not in self._done for rid in active) and time.monotonic() < end:
                try:
                    self._read(0.1)
                except WorkerError:
                    break
            raise
        return [results[i] for i in range(len(jobs))]

    def close(self) -> None:
        """End the worker (every run still going is killed) and remove its sandboxes."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._ready:
                self._send({"op": "close"})
            else:  # still importing torch (nothing was run): do not wait for that
                self.proc.terminate()
        except (WorkerError, OSError):
            pass
        try:
            self.proc.wait(10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait(5)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


_CAPTURE_MAX = 8 << 20


def _collect(job: Job, killed: bool, seconds: float) -> Result:
    def read(name: str) -> str:
        """The file, or for a huge one (a script that prints without end) its first MiB
        and last 4 MiB: the bootstrap's report is at the end."""
        try:
            with open(os.path.join(job.capture, name), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size <= _CAPTURE_MAX:
                    data = f.read()
                else:
                    data = f.read(1 << 20) + b"\n[... output cut ...]\n"
                    f.seek(size - (4 << 20))
                    data += f.read()
            return data.decode("utf-8", "replace")
        except OSError:
            return ""

    status: Optional[int] = None
    iso = sandbox.Isolation(reason="the run's supervisor reported nothing")
    for line in read("info").splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "isolation" in msg:
            iso = sandbox.Isolation.from_json(msg["isolation"])
        if "status" in msg:
            status = msg["status"]
    return Result(read("stdout"), read("stderr"), None if killed else status, killed, seconds, iso)


def main(argv: Optional[list[str]] = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m torchmend.verify.forkserver")
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cold", action="store_true")
    ns = ap.parse_args(argv)
    try:
        _serve(ns.parent, ns.root, warm=not ns.cold)
    finally:
        os._exit(0)  # everything is cleaned up; tearing down torch's import costs seconds


if __name__ == "__main__":
    main()
