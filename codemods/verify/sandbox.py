"""The sandbox that ``torchmend verify`` runs a user's script in.

What a run gets (Linux; the pieces the OS refuses are reported, never silently skipped):

* **a private copy** of the script's directory (:func:`copy_tree`): regular copies, or
  reflinks where the filesystem has them, never links to the user's files; files that do
  not fit the copy budget are left out and listed (a script that needs one then fails
  with a missing file, and verify says why);
* **an allow-listed environment** (:func:`run_env`): PATH, locale, PYTHONPATH, virtualenv
  and CUDA/torch variables; HOME and TMPDIR point into the sandbox; nothing else of the
  caller's environment (tokens, keys) reaches the script;
* **namespaces** (:func:`enter_namespaces`), where unprivileged user namespaces are allowed:
  a user namespace owning a new mount, PID, IPC and network namespace.  The whole file
  system is read-only except the run's own directory and a private ``/dev/shm``; the
  network namespace has only a loopback interface; the script runs in a nested user
  namespace, so it cannot undo those mounts; its PID namespace has a private ``/proc``
  (other processes, and their environments, are invisible), and when the script's main
  process ends, the namespace's init ends and the kernel kills every process left in it,
  detached daemons included;
* **without namespaces** (a container that forbids them, macOS): the run's supervisor is a
  child subreaper (``PR_SET_CHILD_SUBREAPER``), so daemons that double-fork and ``setsid``
  are re-parented to it and killed with the script's process group when the run ends;
  writes outside the copy are not refused, but detected (:func:`snapshot`, compared before
  and after the runs) and reported;
* **resource limits** (:class:`Limits`): CPU time, data size, file size, no core files;
  and its own session.  Every process of a run also dies when ``verify`` dies
  (``PR_SET_PDEATHSIG`` down the chain verify -> worker -> supervisor).

The primitives here are called by the worker (forkserver.py) in the forked child that
supervises one run; nothing here runs a user's code.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import sys
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Optional

LINUX = sys.platform.startswith("linux")

# -- the copy -------------------------------------------------------------------------

COPY_LIMIT_BYTES = 1024 * 1024 * 1024  # per copy of the directory (--copy-limit)
MAX_COPY_FILES = 20000
MAX_WALK_ENTRIES = 200000  # a directory like $HOME or /tmp: stop walking, say so
SKIP_DIRS = {"__pycache__", "node_modules", "venv", ".venv", "env", "site-packages", "wandb", "mlruns", ".torchmend_cache"}


@dataclass
class CopyReport:
    files: int = 0
    bytes: int = 0
    reflinked: int = 0
    left_out: list[tuple[str, int, str]] = field(default_factory=list)  # (relative path, size, why)
    truncated_walk: bool = False

    def note(self, limit: int) -> Optional[str]:
        """One line about what the copy lacks, or None."""
        if not self.left_out and not self.truncated_walk:
            return None
        parts = []
        big = [x for x in self.left_out if x[2] == "limit"]
        other = [x for x in self.left_out if x[2] != "limit"]
        if big:
            shown = ", ".join(f"{p} ({_mib(s)})" for p, s, _ in sorted(big, key=lambda x: -x[1])[:3])
            more = f" and {len(big) - 3} more" if len(big) > 3 else ""
            parts.append(f"left out of the sandbox copy (over --copy-limit {_mib(limit)}): {shown}{more}")
        if other:
            shown = ", ".join(f"{p} ({why})" for p, _, why in other[:3])
            more = f" and {len(other) - 3} more" if len(other) > 3 else ""
            parts.append(f"not copied: {shown}{more}")
        if self.truncated_walk:
            parts.append(f"the directory has over {MAX_WALK_ENTRIES} entries: the rest is not copied (give --cwd a smaller directory)")
        return "; ".join(parts)

    def missing(self, path: str) -> Optional[tuple[str, int, str]]:
        """The left-out entry that ``path`` (relative, as in an error message) names."""
        norm = os.path.normpath(path)
        for rel, size, why in self.left_out:
            if norm == rel or norm.endswith(os.sep + rel) or rel.endswith(os.sep + norm):
                return rel, size, why
        return None


def _mib(n: int) -> str:
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GiB"
    return f"{n / 1024**2:.0f} MiB" if n >= 1024**2 else f"{n / 1024:.0f} KiB"


_FICLONE = 0x40049409  # ioctl(dst, FICLONE, src): a reflink (Btrfs, XFS, bcachefs...)


def _copy_file(src: str, dst: str, reflink_ok: list[bool]) -> bool:
    """Copy a regular file's bytes and times, as a reflink where the filesystem has them
    (tried until it fails once), else a real copy; True if reflinked.  Never a link:
    writing ``dst`` can never change ``src``."""
    if reflink_ok[0] and LINUX:
        import fcntl

        try:
            with open(src, "rb") as fs, open(dst, "wb") as fd:
                fcntl.ioctl(fd.fileno(), _FICLONE, fs.fileno())
            shutil.copystat(src, dst)
            return True
        except OSError:
            reflink_ok[0] = False  # not on this filesystem: copy from now on
    shutil.copy2(src, dst)  # sendfile on Linux
    return False


def copy_tree(src_dir: str, dst_dir: str, limit: int = COPY_LIMIT_BYTES, max_files: int = MAX_COPY_FILES,
              first: Iterable[str] = ()) -> CopyReport:
    """Copy ``src_dir`` to ``dst_dir`` for one run.

    Regular files only (symbolic links are followed and their targets copied, directories
    at most once each; sockets, FIFOs and devices are left out); hidden directories,
    ``__pycache__`` and virtual environments are skipped.  Files are copied smallest first
    until ``limit`` bytes or ``max_files`` files (``first``, relative paths such as the
    script, always); the rest is listed in the report."""
    rep = CopyReport()
    os.makedirs(dst_dir, exist_ok=True)
    files: list[tuple[int, str, str]] = []  # (size, src, rel)
    seen_dirs: set[str] = set()
    entries = 0

    def walk(d: str, rel: str) -> None:
        nonlocal entries
        real = os.path.realpath(d)
        if real in seen_dirs:
            return
        seen_dirs.add(real)
        try:
            it = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            rep.left_out.append((rel or ".", 0, e.strerror or "unreadable"))
            return
        for e in it:
            entries += 1
            if entries > MAX_WALK_ENTRIES:
                rep.truncated_walk = True
                return
            r = os.path.join(rel, e.name) if rel else e.name
            try:
                st = os.stat(e.path)  # follows links: the copy holds the target's bytes
            except OSError:
                rep.left_out.append((r, 0, "broken link" if e.is_symlink() else "unreadable"))
                continue
            if stat.S_ISDIR(st.st_mode):
                if e.name.startswith(".") or e.name in SKIP_DIRS:
                    continue
                walk(e.path, r)
                if rep.truncated_walk:
                    return
            elif stat.S_ISREG(st.st_mode):
                files.append((st.st_size, e.path, r))
            else:
                rep.left_out.append((r, 0, "not a regular file"))

    walk(src_dir, "")
    must = {os.path.normpath(p) for p in first}
    files.sort(key=lambda x: (x[2] not in must, x[0], x[2]))
    reflink_ok = [True]
    made: set[str] = set()
    for size, s, rel in files:
        if rel not in must and (rep.bytes + size > limit or rep.files >= max_files):
            rep.left_out.append((rel, size, "limit"))
            continue
        d = os.path.join(dst_dir, rel)
        parent = os.path.dirname(d)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        try:
            rep.reflinked += _copy_file(s, d, reflink_ok)
        except OSError as e:
            rep.left_out.append((rel, size, e.strerror or "unreadable"))
            continue
        rep.files += 1
        rep.bytes += size
    return rep


# -- the environment ------------------------------------------------------------------

# Passed through when set (values are paths and settings, not credentials).
ALLOWED_ENV = (
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "TORCH_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE",
    "MPLBACKEND",
)
ALLOWED_PREFIXES = ("LC_", "PYTORCH_", "TORCH_")  # locale; torch's own settings (PYTORCH_CUDA_ALLOC_CONF...)
# never passed, even under an allowed prefix
_DENY_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "_KEY", "APIKEY", "AUTH")


def allowed(name: str) -> bool:
    if any(w in name.upper() for w in _DENY_WORDS):
        return False
    return name in ALLOWED_ENV or name.startswith(ALLOWED_PREFIXES)


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment, allow-listed (see ALLOWED_ENV)."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if allowed(k)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    return env


def run_env(home: str, tmp: str, extra: Mapping[str, str] = (), *, network: bool, real_device: bool,
            environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one run: :func:`base_env`, HOME and TMPDIR in the sandbox, the
    caches torch and Hugging Face read from the caller's home (read-only: the file system
    outside the copy is), offline switches when there is no network, then ``extra``
    (``--env KEY=VAL``) last."""
    environ = os.environ if environ is None else environ
    env = base_env(environ)
    real_home = environ.get("HOME") or os.path.expanduser("~")
    cache = os.path.join(real_home, ".cache")
    if "TORCH_HOME" not in env and os.path.isdir(os.path.join(cache, "torch")):
        env["TORCH_HOME"] = os.path.join(cache, "torch")
    if "HF_HOME" not in env and os.path.isdir(os.path.join(cache, "huggingface")):
        env["HF_HOME"] = os.path.join(cache, "huggingface")
    env.update(HOME=home, TMPDIR=tmp, TEMP=tmp, TMP=tmp, PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("PYTHONHASHSEED", "0")
    env["MPLBACKEND"] = env.get("MPLBACKEND", "Agg")
    if not network:
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    if not real_device:
        env["CUDA_VISIBLE_DEVICES"] = ""
    env.update(extra)
    return env


# -- resource limits ------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    cpu_seconds: Optional[int] = None  # RLIMIT_CPU, per process (all its threads)
    data_bytes: Optional[int] = None  # RLIMIT_DATA: heap and private mappings (not RLIMIT_AS: CUDA reserves huge address ranges)
    file_bytes: Optional[int] = None  # RLIMIT_FSIZE: the largest file a run may write

    @classmethod
    def for_run(cls, timeout: float, memory_mib: Optional[int] = None, file_mib: Optional[int] = None) -> "Limits":
        cores = _cores()
        if memory_mib is None:
            try:
                memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
            except (ValueError, OSError, AttributeError):
                memory = None
        else:
            memory = memory_mib * 1024 * 1024 if memory_mib > 0 else None
        files = (4096 if file_mib is None else file_mib) * 1024 * 1024 if (file_mib is None or file_mib > 0) else None
        return cls(cpu_seconds=int(timeout * cores) + 30, data_bytes=memory, file_bytes=files)

    def apply(self) -> None:
        import resource

        def lim(which, value):
            if value is None:
                return
            try:
                soft, hard = resource.getrlimit(which)
                new = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(which, (new, hard))
            except (ValueError, OSError):
                pass

        lim(resource.RLIMIT_CPU, self.cpu_seconds)
        if hasattr(resource, "RLIMIT_DATA"):
            lim(resource.RLIMIT_DATA, self.data_bytes)
        lim(resource.RLIMIT_FSIZE, self.file_bytes)
        lim(resource.RLIMIT_CORE, 0)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# -- what a run got -------------------------------------------------------------------


@dataclass
class Isolation:
    """What the OS allowed, as found by :func:`probe` or by a run's own set-up."""

    namespaces: bool = False  # user + mount (+ pid, ipc) namespaces entered
    network: str = "shared"  # "none": a namespace with only loopback; "shared": the host's; "allowed": asked for
    files: str = "detected"  # "read-only": all but the run's directory; "detected": only compared afterwards
    pids: str = "subreaper"  # "namespace": a PID namespace with a private /proc; "subreaper"
    reason: str = ""  # why something is missing

    def describe(self) -> str:
        net = {"none": "no network", "allowed": "network allowed (--allow-network)"}.get(self.network, "network NOT isolated")
        files = ("files outside the copy read-only" if self.files == "read-only"
                 else "writes outside the copy NOT refused, only detected afterwards")
        procs = ("its own PID namespace (other processes invisible)" if self.pids == "namespace"
                 else "a subreaper (other processes visible)")
        why = f" ({self.reason})" if self.reason else ""
        return f"sandbox: {net}; {files}; allow-listed environment; resource limits; {procs}; every process killed at the end{why}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Isolation":
        return cls(**{k: d[k] for k in ("namespaces", "network", "files", "pids", "reason") if k in d})


# -- Linux primitives (ctypes; no third-party tool needed) ----------------------------

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
_NR_MOUNT_SETATTR = 442  # the same number on every architecture (new syscalls are unified)
_AT_FDCWD, _AT_RECURSIVE, _MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1

_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _check(rc: int, what: str) -> None:
    if rc != 0:
        import ctypes

        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def prctl(option: int, arg: int = 0) -> bool:
    """prctl(2) on Linux; False elsewhere or when refused."""
    if not LINUX:
        return False
    import ctypes

    try:
        return _libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(sig: int = signal.SIGKILL, parent: Optional[int] = None) -> None:
    """PR_SET_PDEATHSIG: get ``sig`` when the parent dies; if it already died (the race
    between fork and prctl), act on it now."""
    prctl(PR_SET_PDEATHSIG, int(sig))
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def _mount(src: Optional[str], target: str, fstype: Optional[str], flags: int) -> None:
    import ctypes

    _check(
        _libc().mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags), None),
        f"mount {target}",
    )


def _mount_setattr(path: str, set_: int = 0, clear: int = 0, recursive: bool = False) -> None:
    import ctypes

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    a = MountAttr(set_, clear, 0, 0)
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(ctypes.c_long(_NR_MOUNT_SETATTR), ctypes.c_int(_AT_FDCWD), path.encode(),
                      ctypes.c_uint(_AT_RECURSIVE if recursive else 0), ctypes.byref(a), ctypes.c_size_t(ctypes.sizeof(a)))
    _check(int(rc), f"mount_setattr {path}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _map_ids(uid: int, gid: int) -> None:
    """In a fresh user namespace: the same uid and gid inside as outside."""
    try:
        _write("/proc/self/setgroups", "deny")
    except OSError:
        pass  # already "deny" (a nested namespace inherits it)
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")


def _loopback_up() -> None:
    import fcntl
    import socket
    import struct

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x1, 0x8, 0x40
        fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))  # SIOCSIFFLAGS
    finally:
        s.close()


def enter_namespaces(writable: Iterable[str], network: bool) -> Isolation:
    """In a single-threaded process that will supervise one run: a new user namespace
    owning new mount, PID, IPC and (unless ``network``) network namespaces; everything
    mounted read-only except ``writable``; a private /dev/shm; loopback up.  The next child
    of this process is the PID namespace's init (see :func:`pid_init`).  Raises OSError
    when the OS refuses (then nothing has changed but, possibly, the namespaces)."""
    if not LINUX:
        raise OSError(errno.ENOSYS, "namespaces need Linux")
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (0 if network else CLONE_NEWNET)
    _check(_libc().unshare(flags), "unshare(user, mount, pid, net namespaces)")
    try:  # from here on this process is in the new namespaces: no way back
        return _set_up(uid, gid, writable, network)
    except OSError as e:
        raise SandboxSetupError(f"{e.strerror or e} (after entering the namespaces)") from None


class SandboxSetupError(RuntimeError):
    """The namespaces were entered but could not be set up (e.g. a kernel policy that
    allows ``unshare`` but not the uid map): the run cannot go on in this process."""


def _set_up(uid: int, gid: int, writable: Iterable[str], network: bool) -> Isolation:
    _map_ids(uid, gid)
    iso = Isolation(namespaces=True, network="allowed" if network else "none", pids="namespace")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    writable = [os.path.realpath(w) for w in writable]
    for w in writable:
        _mount(w, w, None, MS_BIND | MS_REC)
    try:
        _mount_setattr("/", set_=_MOUNT_ATTR_RDONLY, recursive=True)
        for w in writable:
            _mount_setattr(w, clear=_MOUNT_ATTR_RDONLY)
        iso.files = "read-only"
    except OSError as e:  # kernel < 5.12: no recursive read-only; detection still runs
        iso.files = "detected"
        iso.reason = f"no read-only mounts: {e.strerror or e}"
    try:
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV)
    except OSError:
        pass  # no /dev/shm mount point: DataLoader workers fall back to files
    if not network:
        _loopback_up()
    return iso


def pid_init() -> bool:
    """In the PID namespace's init: a private /proc.  False when refused (a container
    that masks parts of /proc): the host's /proc stays visible."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        return True
    except OSError:
        return False


def drop_namespace_privileges() -> None:
    """In the process that will run the script: a nested user namespace, in which the
    capabilities over the mounts set up above are gone (they belong to the parent user
    namespace), so the script cannot unmount or remount them; no new privileges."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc().unshare(CLONE_NEWUSER), "unshare(nested user namespace)")
    _map_ids(uid, gid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)


# how long a run's supervisor waits for the processes it killed to be gone (the worker
# escalates to SIGKILL of the supervisor 10 s after asking it to stop)
KILL_WAIT_SECONDS = 5.0


def children() -> list[int]:
    """Live children of this process (Linux: /proc/self/task/*/children)."""
    out: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/children") as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    if not out and LINUX and not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        me = os.getpid()  # kernels without CONFIG_PROC_CHILDREN: scan /proc
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                            out.append(int(d))
                except (OSError, IndexError, ValueError):
                    pass
    return out


def kill_all_children(seconds: float = KILL_WAIT_SECONDS, known: Iterable[int] = ()) -> None:
    """SIGKILL every descendant re-parented to this subreaper and reap it, until none is
    left (a killed process's own children come to us next round) or ``seconds`` have
    passed.  A PID namespace's init is reaped only once the kernel has ended every
    process of its namespace: waiting for it is what makes "every process killed at the
    end" hold when ``verify`` returns; on a loaded machine that takes more than a second.

    ``known``: children of this process that :func:`children` may not list: a PID
    namespace's init mounts that namespace's /proc over the one this process reads, where
    it has no ``/proc/self``."""
    import time

    end = time.monotonic() + seconds
    pending = set(known)
    while True:
        for pid in list(pending):  # still a child of ours, not reaped yet?
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pending.discard(pid)
            except ChildProcessError:
                pending.discard(pid)
        kids = set(children()) | pending
        if not kids:
            break
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reaped = False
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pending.clear()
                break
            if pid == 0:
                break
            pending.discard(pid)
            reaped = True
        if time.monotonic() >= end:
            break
        if not reaped:
            time.sleep(0.005)
    while True:  # reap what is left
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


# -- probing ---------------------------------------------------------------------------


def probe(network: bool = False, scratch: Optional[str] = None) -> Isolation:
    """What a run will get here: forks a child that sets up the sandbox exactly as a run
    does (and a PID-namespace init that mounts its /proc), and reports.  Call from a
    single-threaded process (the worker does, before it imports torch)."""
    if not (LINUX and hasattr(os, "fork")):
        return Isolation(reason=f"no namespaces on {sys.platform}")
    import tempfile

    tmp = tempfile.mkdtemp(prefix="torchmend-probe-", dir=scratch)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            try:
                iso = enter_namespaces([tmp], network)
                rr, ww = os.pipe()
                init = os.fork()
                if init == 0:
                    os.close(rr)
                    ok = pid_init() and sorted(int(x) for x in os.listdir("/proc") if x.isdigit()) == [1]
                    os.write(ww, b"1" if ok else b"0")
                    os._exit(0)
                os.close(ww)
                got = os.read(rr, 1)
                os.waitpid(init, 0)
                if got != b"1":
                    iso.pids = "subreaper"
                    iso.reason = (iso.reason + "; " if iso.reason else "") + "no private /proc"
            except (OSError, SandboxSetupError) as e:
                iso = Isolation(reason=f"no user namespaces here: {getattr(e, 'strerror', None) or e}")
            os.write(w, json.dumps(iso.to_json()).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        return Isolation.from_json(json.loads(data))
    except ValueError:
        return Isolation(reason="the sandbox probe failed")


# -- detection of writes outside the copy --------------------------------------------

MAX_SNAPSHOT_FILES = 50000


def snapshot(dirs: Iterable[str], max_files: int = MAX_SNAPSHOT_FILES, exclude: Iterable[str] = ()) -> dict[str, tuple[int, int, int]]:
    """(size, mtime_ns, inode) of every file under ``dirs`` (hidden directories,
    virtualenvs and ``exclude``, the sandboxes themselves, skipped; at most ``max_files``)."""
    out: dict[str, tuple[int, int, int]] = {}
    skip = {os.path.realpath(x) for x in exclude}
    for top in dirs:
        for root, ds, fs in os.walk(top):
            ds[:] = [d for d in ds if not d.startswith(".") and d not in SKIP_DIRS
                     and os.path.realpath(os.path.join(root, d)) not in skip]
            for f in fs:
                p = os.path.join(root, f)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                out[p] = (st.st_size, st.st_mtime_ns, st.st_ino)
                if len(out) >= max_files:
                    return out
    return out


def changes(before: Mapping[str, tuple], after: Mapping[str, tuple]) -> list[tuple[str, str]]:
    """[(path, "created" | "modified" | "deleted")], sorted."""
    out = [(p, "created") for p in after if p not in before]
    out += [(p, "deleted") for p in before if p not in after]
    out += [(p, "modified") for p in before if p in after and before[p] != after[p]]
    return sorted(out)
