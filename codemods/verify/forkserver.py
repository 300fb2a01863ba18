"""A fork server for the harness: one process imports torch once, then forks a fresh child
per script run (``import torch`` is most of a run's cost: ~1.5-2 s of ~2.5 s).

Opt-in (``TORCHMEND_VERIFY_FORKSERVER=1``; the test suite uses it); ``torchmend verify``
runs every script in a fresh interpreter.  Protocol on the server's stdin/stdout, one JSON
object per line: request ``{"argv", "cwd", "env", "stdout", "stderr"}`` ->
``{"pid": P}`` then, once the child ended, ``{"status": S}`` (a negative S is a signal).
The child calls ``os.setsid()``, so the harness can kill its whole process group on a
timeout exactly as with a subprocess.  The server itself runs no torch operation before
forking (fork-safe: no thread pools started yet).
"""

from __future__ import annotations

import json
import os
import sys


def _serve() -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  - the point of the server
    import torch.nn  # noqa: F401
    import torch.optim  # noqa: F401
    import torch.utils.data  # noqa: F401
    import torch._dynamo  # noqa: F401  - optimizers import it on their first step (~1 s)
    import torch.overrides  # noqa: F401

    from . import detectors, simulate  # noqa: F401

    from . import bootstrap  # noqa: F401

    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: becomes the script's process
            code = 1
            try:
                os.setsid()
                fd_in = os.open(os.devnull, os.O_RDONLY)
                fd_out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                fd_err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
                    os.dup2(fd, target)
                    os.close(fd)
                os.environ.clear()
                os.environ.update(req["env"])
                os.chdir(req["cwd"])
                sys.path[0] = req["cwd"]  # as `python -m` in the script's directory would
                sys.stdin = open(0, closefd=False)
                sys.stdout = open(1, "w", buffering=1, closefd=False)
                sys.stderr = open(2, "w", buffering=1, closefd=False)
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
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()


class ForkServer:
    """Client side: one server per harness process, used for one run at a time."""

    def __init__(self, env: dict):
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchmend.verify.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=0,
        )
        self.buf = b""
        msg = self._read(120)
        if not msg or not msg.get("ready"):
            self.close()
            raise RuntimeError("fork server did not start")

    def _read(self, timeout: float | None):
        """One JSON line, or None after ``timeout`` seconds.  Unbuffered reads into our own
        buffer: two lines arriving together must not hide the second from select()."""
        import select
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("fork server died")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def start(self, argv, cwd, env, stdout, stderr) -> int:
        req = {"argv": argv, "cwd": cwd, "env": env, "stdout": stdout, "stderr": stderr}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        msg = self._read(60)
        if not msg or "pid" not in msg:
            raise RuntimeError("fork server did not fork")
        return msg["pid"]

    def wait(self, timeout: float | None):
        """The child's exit status, or None on timeout (the child keeps running)."""
        msg = self._read(timeout)
        return None if msg is None else msg["status"]

    def close(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(5)
        except Exception:  # noqa: BLE001
            pass


if __name__ == "__main__":
    _serve()
