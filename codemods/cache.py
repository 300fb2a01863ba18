"""A persistent result cache, like Ruff's: unchanged files are not read again.

One cache file per *effective configuration* (tool version and a fingerprint of the
rule code, selected codes, unsafe flag, mode, size limit, current directory: the diffs
name paths relative to it) under ``.torchmend_cache/`` in the project root, a directory
that ignores itself (it holds a ``.gitignore`` containing ``*``).  An entry maps a path to
``(size, mtime_ns, content digest, seen_ns, result)``:

* fast path: same size and mtime_ns as recorded -> the stored result, without reading;
* otherwise (or when the entry is *racy*: the file's mtime is not clearly older than
  the moment it was read, so an edit in the same clock tick could hide) the file is read
  and hashed, and the entry is used only if the digest matches;
* ``verify=True`` (``apply``) always hashes: a write is never based on stat data alone.

Only results that depend on the file's bytes are stored (see ``FileResult.cacheable``):
no I/O errors, no internal errors.  A result for which a rule looked at other files
(``FileResult.tree_dependent``: is this script imported elsewhere? which model does a
sibling module define?) is stored with what it read: the *tree fingerprint* (every
discovered file's path, size and mtime) for the import index, the size and mtime of each
single file read; it is used only while those are unchanged.  Writes are atomic; a corrupt or foreign cache file is ignored.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import time
from typing import Optional

from .engine import FileResult, Options, content_digest

CACHE_DIRNAME = ".torchmend_cache"
FORMAT = 2
RACY_NS = 2_000_000_000  # mtimes within 2 s of the read are not trusted


def tool_fingerprint() -> str:
    """Version plus a hash of the package's own source: a rule edited in place (same
    version number) invalidates the cache too."""
    from . import __version__

    h = hashlib.blake2b(digest_size=12)
    h.update(f"{__version__}|{FORMAT}|{sys.version_info[:2]}".encode())
    pkg = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def config_key(opts: Options) -> str:
    parts = (
        tool_fingerprint(),
        ",".join(sorted(opts.select)),
        f"unsafe={opts.unsafe_fixes}",
        f"fix={opts.fix}",
        f"max={opts.max_bytes}",
        f"roots={opts.roots}",
        f"cwd={os.getcwd()}",
    )
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


def project_root(start: str = ".") -> str:
    """The nearest directory at or above ``start`` holding ``.git`` or
    ``pyproject.toml``; the current directory when there is none."""
    d = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        if os.path.exists(os.path.join(d, ".git")) or os.path.isfile(os.path.join(d, "pyproject.toml")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return os.getcwd()
        d = parent


class Cache:
    def __init__(self, opts: Options, directory: Optional[str] = None, verify: bool = False):
        self.dir = directory or os.path.join(project_root(), CACHE_DIRNAME)
        self.key = config_key(opts)
        self.file = os.path.join(self.dir, f"{self.key}.pickle")
        self.verify = verify
        self.entries: dict[str, tuple] = {}
        self.dirty = False
        self.hits = 0
        try:
            with open(self.file, "rb") as f:
                data = pickle.load(f)
            if isinstance(data, dict) and data.get("format") == FORMAT:
                self.entries = data["entries"]
        except FileNotFoundError:
            pass
        except Exception:  # corrupt, truncated, from another version: start afresh
            self.entries = {}

    @staticmethod
    def _key(path: str) -> str:
        # the path as given (results name it so); the current directory is in the config key
        return path

    def get(self, path: str, tree: Optional[str] = None) -> Optional[FileResult]:
        """The stored result for ``path`` if the file (and, for a result that depends on
        other files, the tree fingerprint ``tree``) is unchanged, else None."""
        e = self.entries.get(self._key(path))
        if e is None:
            return None
        size, mtime_ns, digest, seen_ns, result, entry_tree = e
        if entry_tree is not None and entry_tree != tree:
            return None
        from .engine import _stat

        if any(_stat(d) != (dsize, dmtime) for d, dsize, dmtime in result.deps):
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if st.st_size != size:
            return None
        if self.verify or st.st_mtime_ns != mtime_ns or st.st_mtime_ns + RACY_NS > seen_ns:
            try:
                with open(path, "rb") as f:
                    raw = f.read(size + 1)
            except OSError:
                return None
            if len(raw) != size or content_digest(raw) != digest:
                return None
            if st.st_mtime_ns != mtime_ns:  # touched but same content: refresh the stat
                self.entries[self._key(path)] = (size, st.st_mtime_ns, digest, seen_ns, result, entry_tree)
                self.dirty = True
        self.hits += 1
        return result

    def put(self, r: FileResult, seen_ns: int, tree: Optional[str] = None) -> None:
        if not r.cacheable or not r.digest:
            return
        k = self._key(r.path)
        entry_tree = tree if r.tree_dependent else None
        old = self.entries.get(k)
        if old is not None and old[:3] == (r.size, r.mtime_ns, r.digest) and old[5] == entry_tree and old[4].deps == r.deps:
            return
        self.entries[k] = (r.size, r.mtime_ns, r.digest, seen_ns, r, entry_tree)
        self.dirty = True


    def save(self) -> None:
        if not self.dirty:
            return
        # forget files that no longer exist (one stat each, only when something changed)
        self.entries = {k: v for k, v in self.entries.items() if os.path.exists(k)}
        try:
            os.makedirs(self.dir, exist_ok=True)
            ignore = os.path.join(self.dir, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w") as f:
                    f.write("# created by torchmend: this directory is a cache\n*\n")
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.dir)
            with os.fdopen(fd, "wb") as f:
                pickle.dump({"format": FORMAT, "written_ns": time.time_ns(), "entries": self.entries}, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)
            self.dirty = False
        except OSError:
            pass  # a read-only tree: run without a cache


def tree_fingerprint(files: list[str]) -> str:
    """Every file's path, size and mtime: what a result that read other files of the
    tree depends on (a change anywhere invalidates those results, and only those)."""
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(files):
        try:
            st = os.stat(p)
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{p}\0-\n".encode())
    return h.hexdigest()
