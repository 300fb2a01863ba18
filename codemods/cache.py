"""A persistent result cache, like Ruff's: unchanged files are not read again.

One file, ``.torchmend_cache/cache.json`` in the project root (a directory that ignores
itself: it holds a ``.gitignore`` containing ``*``), plain JSON with a schema and a
version, validated on load: nothing in it can run code.  A cache that fails validation
(corrupt, truncated, hand-made, written by something else) is ignored with one warning
line and rebuilt; one from another torchmend version is replaced silently.

It holds three tables:

* ``files``: absolute path -> ``[size, mtime_ns, content digest, seen_ns]``, what a file
  held when it was last read.  Fast path: same size and mtime_ns -> the recorded digest,
  without reading.  Otherwise (or when the entry is *racy*: the mtime is not clearly older
  than the moment the file was read, so an edit in the same clock tick could hide) the
  file is read and hashed.  ``verify=True`` (``apply``) always hashes: a write is never
  based on stat data alone.
* ``results``: one entry per *file content and effective settings*: the key is a hash of
  the settings (tool version and a fingerprint of all of the package's source, selected
  rules, ``--unsafe-fixes``, mode, size limit), the content digest and the file's name
  (not its directory, not the current directory, not the list of paths given).  The
  stored result names no path: it gets the path it is used for.  A result that carries a
  diff records the name the diff shows and is used only where that name is the same.
* ``deps``: ``[path, size, mtime_ns]`` of each file some stored result read (below), once;
  a result names its entries by index (a directory's results name the same neighbours:
  each is stored once, and checked once per run).

A result for which a rule looked at other files (``FileResult.tree_dependent``: is this
script imported elsewhere?  ``FileResult.deps``: which model does a sibling module
define?) is keyed on the file's absolute path too and stored with what it read: the
*tree fingerprint* (every discovered file's path, size and mtime) for the import index,
the size and mtime of each single file read; it is used only while those are unchanged.
Only results that depend on the file's bytes are stored (``FileResult.cacheable``).

Bounded: entries of files that no longer exist are dropped, results not used for
``KEEP_DAYS`` and not matching any recorded file are pruned, and at most
``MAX_RESULTS`` results are kept (least recently used go first).  ``torchmend clean``
removes the cache directories.  Writes are atomic (temporary file, rename).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
import sys
import time
from collections import Counter
from functools import lru_cache
from typing import Any, Optional

from .engine import FileResult, Options, Suggestion, _stat, content_digest
from .rule import Finding, Safety, Severity

CACHE_DIRNAME = ".torchmend_cache"
MARKER = b"# created by torchmend: this directory is a cache\n"
CACHE_FILE = "cache.json"
FORMAT = "torchmend-cache"
VERSION = 6  # 4: findings carry their notebook cell, warnings may too; 5: empty results as [stage, parsed, tree_dependent];
# 6: the files results read in one table, results naming them by index
RACY_NS = 2_000_000_000  # mtimes within 2 s of the read are not trusted
MAX_CACHE_BYTES = 256 * 1024 * 1024  # a bigger cache file is not loaded
MAX_RESULTS = 50_000
KEEP_DAYS = 14
_LEGACY = (".pickle",)  # torchmend <= 0.1 wrote <key>.pickle files here: removed, never read


class InvalidCache(Exception):
    """The cache file is not a valid torchmend cache of this version."""


# --------------------------------------------------------------------------- keys
@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """Version plus a hash of the package's own source, subpackages included (rules live
    in ``codemods/rules/<pitfall>/``): a rule edited in place invalidates the cache too.
    (Read once per process: the code that runs does not change while it runs.)"""
    from . import __version__

    return _source_fingerprint(os.path.dirname(os.path.abspath(__file__)), f"{__version__}|{VERSION}|{sys.version_info[:2]}")


def _source_fingerprint(pkg: str, salt: str = "") -> str:
    """A hash of every ``.py`` file under ``pkg`` (relative path and bytes)."""
    h = hashlib.blake2b(digest_size=12)
    h.update(salt.encode())
    found = []
    for d, dirs, names in os.walk(pkg):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        found.extend(os.path.join(d, n) for n in names if n.endswith(".py"))
    for p in sorted(found):
        with open(p, "rb") as f:
            h.update(os.path.relpath(p, pkg).replace(os.sep, "/").encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def _canon(v: Any) -> Any:
    """A JSON-able, order-independent form of an option value (sets are sorted: their
    iteration order changes from one process to the next)."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _canon(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (set, frozenset)):
        return sorted((_canon(x) for x in v), key=repr)
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in sorted(v.items(), key=lambda kv: repr(kv[0]))}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def settings_key(opts: Options) -> str:
    """What a result depends on besides the file: every option except ``write`` (apply
    and diff compute the same result), ``digest`` and the roots (a result that looked at the tree is
    keyed on the tree itself; only whether there are roots at all is seen by the rules)."""
    o = _canon(opts)
    o.pop("write", None)
    o.pop("digest", None)  # (a run with a cache always hashes)
    o["roots"] = bool(o.get("roots"))
    return hashlib.blake2b(json.dumps([tool_fingerprint(), o], sort_keys=True).encode(), digest_size=12).hexdigest()


def config_key(opts: Options) -> str:  # the name used before version 3
    return settings_key(opts)


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


# --------------------------------------------------------------------------- (de)serialising
def _b2s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _s2b(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise InvalidCache("a string that is not bytes") from None


def _finding_to_dict(f: Finding) -> dict:
    return {
        "code": f.code, "message": f.message, "line": f.line, "col": f.col, "severity": f.severity.value,
        "applied": f.applied, "safety": f.safety.value if f.safety is not None else None,
        "end": [f.end_line, f.end_col, *f.stmt_lines],
        "cell": f.cell,
    }


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise InvalidCache(what)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_FINDING_KEYS = frozenset({"code", "message", "line", "col", "severity", "applied", "safety", "end", "cell"})
_SEVERITIES = frozenset(v.value for v in Severity)
_SAFETIES = frozenset(v.value for v in Safety) | {None}


def _check_finding(d: Any) -> None:
    _need(isinstance(d, dict) and d.keys() == _FINDING_KEYS, "finding fields")
    _need(_is_int(d["cell"]), "finding cell")
    _need(isinstance(d["code"], str) and isinstance(d["message"], str), "finding code/message")
    _need(isinstance(d["end"], list) and len(d["end"]) == 4 and all(_is_int(v) for v in d["end"]), "finding end")
    _need(_is_int(d["line"]) and _is_int(d["col"]) and isinstance(d["applied"], bool), "finding position")
    _need(type(d["severity"]) is str and d["severity"] in _SEVERITIES, "finding severity/safety")
    _need(d["safety"] is None or (type(d["safety"]) is str and d["safety"] in _SAFETIES), "finding severity/safety")


def _finding_from_dict(d: Any, path: str) -> Finding:
    """The finding of a stored result ``_check_finding`` accepted."""
    sev = Severity(d["severity"])
    safety = None if d["safety"] is None else Safety(d["safety"])
    e = d["end"]
    return Finding(code=d["code"], message=d["message"], line=d["line"], col=d["col"], severity=sev, path=path, applied=d["applied"],
                   safety=safety, end_line=e[0], end_col=e[1], stmt_lines=(e[2], e[3]), cell=d["cell"])


_RESULT_KEYS = frozenset({"findings", "applied", "diff", "suggestions", "error", "skipped", "parsed", "stage", "tree_dependent", "deps",
                          "warnings"})


def result_to_dict(r: FileResult) -> Any:
    """The stored form of a (stripped) result: plain data, no path, no syntax trees.  A
    result with nothing in it (no finding, diff, error, warning or dependency), as most
    are, is the short list ``[stage, parsed, tree_dependent]``."""
    if not (r.findings or r.applied or r.diff or r.suggestions or r.error is not None or r.skipped is not None
            or r.deps or r.warnings):
        return [r.stage, r.parsed, r.tree_dependent]
    return {
        "findings": [_finding_to_dict(f) for f in r.findings],
        "applied": {str(k): int(v) for k, v in r.applied.items()},
        "diff": _b2s(r.diff),
        "suggestions": [{"finding": _finding_to_dict(s.finding), "diff": _b2s(s.diff)} for s in r.suggestions],
        "error": r.error,
        "skipped": r.skipped,
        "parsed": r.parsed,
        "stage": r.stage,
        "tree_dependent": r.tree_dependent,
        "deps": [[p, size, mtime] for p, size, mtime in r.deps],
        "warnings": [list(w) for w in r.warnings],
    }


def _check_empty(d: list) -> None:
    """The short form of an empty result: ``[stage, parsed, tree_dependent]``."""
    _need(len(d) == 3 and type(d[0]) is str and type(d[1]) is bool and type(d[2]) is bool, "empty result")


def _check_dep(dep: Any) -> None:
    _need(type(dep) is list and len(dep) == 3 and type(dep[0]) is str and type(dep[1]) is int and type(dep[2]) is int,
          "dependency")


def _check_result(d: Any, ndeps: Optional[int] = None) -> None:
    """InvalidCache unless ``d`` is exactly what :func:`result_to_dict` stores (``ndeps``:
    its dependencies are indices into a cache's table of that many, not triples)."""
    if type(d) is list:
        _check_empty(d)
        return
    _need(isinstance(d, dict) and d.keys() == _RESULT_KEYS, "result fields")
    _need(isinstance(d["findings"], list) and isinstance(d["suggestions"], list) and isinstance(d["deps"], list), "result lists")
    _need(isinstance(d["applied"], dict) and all(isinstance(k, str) and _is_int(v) for k, v in d["applied"].items()), "applied")
    _need(isinstance(d["diff"], str), "diff")
    _s2b(d["diff"])  # (bytes stored as text: a lone surrogate that is no byte is refused here)
    _need(all(v is None or isinstance(v, str) for v in (d["error"], d["skipped"])), "error/skipped")
    _need(isinstance(d["parsed"], bool) and isinstance(d["tree_dependent"], bool) and isinstance(d["stage"], str), "flags")
    _need(isinstance(d["warnings"], list) and all(
        isinstance(w, list) and len(w) in (2, 3) and _is_int(w[0]) and isinstance(w[1], str) and all(_is_int(x) for x in w[2:])
        for w in d["warnings"]), "warnings")
    for f in d["findings"]:
        _check_finding(f)
    for s in d["suggestions"]:
        _need(isinstance(s, dict) and s.keys() == {"finding", "diff"} and isinstance(s["diff"], str), "suggestion")
        _s2b(s["diff"])
        _check_finding(s["finding"])
    if ndeps is None:
        for dep in d["deps"]:
            _check_dep(dep)
    else:
        for i in d["deps"]:
            _need(type(i) is int and 0 <= i < ndeps, "dependency")


def result_from_dict(d: Any, path: str, check: bool = True, deps_table: Optional[list] = None) -> FileResult:
    """The result stored by :func:`result_to_dict`, for ``path``; InvalidCache if ``d``
    is not exactly that shape (``check=False``: ``d`` was checked when the cache was
    loaded).  ``deps_table``: ``d``'s dependencies are indices into it (a cache's table
    of ``[path, size, mtime_ns]``), not the triples themselves."""
    if check:
        _check_result(d, None if deps_table is None else len(deps_table))
    if type(d) is list:  # an empty result
        return FileResult(path=path, parsed=d[1], stage=d[0], cacheable=True, tree_dependent=d[2])
    suggestions = [Suggestion(_finding_from_dict(s["finding"], path), _s2b(s["diff"])) for s in d["suggestions"]]
    if deps_table is None:
        deps = tuple(tuple(dep) for dep in d["deps"])
    else:
        deps = tuple(tuple(deps_table[i]) for i in d["deps"])
    return FileResult(
        path=path,
        findings=[_finding_from_dict(f, path) for f in d["findings"]],
        applied=Counter(d["applied"]) if d["applied"] else Counter(),
        diff=_s2b(d["diff"]),
        suggestions=suggestions,
        error=d["error"],
        skipped=d["skipped"],
        parsed=d["parsed"],
        stage=d["stage"],
        cacheable=True,
        tree_dependent=d["tree_dependent"],
        deps=deps,
        warnings=[tuple(w) for w in d["warnings"]],
    )


_ENTRY_KEYS = frozenset({"d", "used", "tree", "name", "r"})


_TOP_KEYS = frozenset({"format", "version", "tool", "written_ns", "files", "results", "deps"})


def _validate(data: Any) -> tuple[dict, dict, list]:
    """(files, results, dependency table) of a loaded cache; InvalidCache on anything
    unexpected.  Stored results are checked here too, so that a bad one cannot surface
    mid-run."""
    _need(isinstance(data, dict), "not a JSON object")
    _need(data.get("format") == FORMAT, "not a torchmend cache")
    _need(data.keys() == _TOP_KEYS, "top-level fields")
    files, results, deps = data["files"], data["results"], data["deps"]
    _need(isinstance(files, dict) and isinstance(results, dict) and type(deps) is list, "tables")
    # (the loops run once per entry of a warm run's cache: exact type tests, written out;
    # JSON gives exactly list, str, int (never a bool for an int: ``type(v) is int``))
    for v in files.values():
        if not (type(v) is list and len(v) == 4 and type(v[0]) is int and type(v[1]) is int and type(v[2]) is str
                and type(v[3]) is int):
            raise InvalidCache("file entry")
    for dep in deps:
        _check_dep(dep)
    ndeps = len(deps)
    for e in results.values():
        _need(type(e) is dict and e.keys() == _ENTRY_KEYS, "result entry")
        _need(type(e["d"]) is str and type(e["used"]) is int, "result entry digest")
        _need(e["tree"] is None or type(e["tree"]) is str, "result entry tree")
        _need(e["name"] is None or type(e["name"]) is str, "result entry name")
        _check_result(e["r"], ndeps)
    return files, results, deps


def _read_regular(path: str, limit: int) -> Optional[bytes]:
    """The bytes of ``path`` if it is a regular file (not through a symbolic link) of at
    most ``limit`` bytes; None if there is none; InvalidCache for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InvalidCache("a symbolic link") from None
        raise InvalidCache(e.strerror or str(e)) from None
    try:
        st = os.fstat(fd)
        _need(stat.S_ISREG(st.st_mode), "not a regular file")
        _need(st.st_size <= limit, f"larger than {limit // (1 << 20)} MB")
        chunks, total = [], 0
        while total <= limit:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
            total += len(b)
        _need(total <= limit, "grew while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the cache
def _normal_relative(path: str) -> bool:
    """``path`` is relative and ``os.path.normpath`` leaves it as it is (POSIX; no empty,
    ``.`` or ``..`` part), so that joined to a normal directory it is normal too."""
    return (
        os.sep == "/" and path != "" and path[0] != "/" and path not in (".", "..")
        and not path.startswith(("./", "../")) and not path.endswith(("/", "/.", "/.."))
        and "//" not in path and "/./" not in path and "/../" not in path
    )


class Cache:
    """``get``/``put`` results for one run's settings; ``save`` writes it back.
    ``warning``: one line to show the user (an invalid cache that was ignored), or None."""

    def __init__(self, opts: Options, directory: Optional[str] = None, verify: bool = False):
        self.dir = directory or os.path.join(project_root(), CACHE_DIRNAME)
        self.file = os.path.join(self.dir, CACHE_FILE)
        self.settings = settings_key(opts)
        self._per_settings: dict = {}
        self._settings_by_id: dict = {}
        self.tool = tool_fingerprint()
        self.verify = verify
        self.max_bytes = opts.max_bytes
        self.files: dict[str, list] = {}
        self.results: dict[str, dict] = {}
        # ``[path, size, mtime_ns]`` of the files results read (``deps``: the entries of a
        # directory's files read their neighbours, so the same few are named thousands of
        # times): each once, results name them by index
        self.deps: list[list] = []
        self._dep_ids: Optional[dict] = None  # (path, size, mtime_ns) -> index, made by the first put
        self.dirty = False
        self.hits = 0
        # a run does not change directory: relative paths are joined to it here (abspath
        # asks the system for it again on every call, twice per file)
        self._cwd = os.getcwd()
        self._cwd_pre = self._cwd if self._cwd.endswith(os.sep) else self._cwd + os.sep
        self.warning: Optional[str] = None
        self.disabled = False
        # when an entry was last used, to the hour: a warm run within the hour rewrites nothing
        self._now = int(time.time()) // 3600 * 3600
        if directory is None and os.path.islink(self.dir):
            self.disabled = True  # a link shipped in a repository could send our writes anywhere
            self.warning = f"warning: {self._shown(self.dir)} is a symbolic link: the cache is not used (remove the link, or pass --cache-dir)"
            return
        self._load()

    @staticmethod
    def _shown(p: str) -> str:
        try:
            rel = os.path.relpath(p)
            return rel if not rel.startswith("..") else p
        except ValueError:
            return p

    def _load(self) -> None:
        try:
            raw = _read_regular(self.file, MAX_CACHE_BYTES)
            if raw is None:
                return
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError) as e:  # ValueError: also bad UTF-8, huge ints
                raise InvalidCache(f"not valid JSON ({str(e).splitlines()[0][:80]})") from None
            if isinstance(data, dict) and data.get("format") == FORMAT and (data.get("version") != VERSION or data.get("tool") != self.tool):
                self.dirty = True  # another torchmend version: replaced without a word
                return
            self.files, self.results, self.deps = _validate(data)
        except Exception as e:  # InvalidCache, or anything else a hand-made file provokes
            self.files, self.results, self.deps = {}, {}, []
            self.dirty = True
            why = str(e) if isinstance(e, InvalidCache) else f"unexpected content: {type(e).__name__}"
            self.warning = f"warning: ignoring the cache {self._shown(self.file)} ({why}): it will be rebuilt"

    # ----------------------------------------------------------------- lookups
    def _settings(self, opts: Optional[Options]) -> str:
        """The settings key of a file's own Options (per-file configuration), or the run's
        (looked up by identity first: the run hands the same few objects again and again,
        and hashing an Options hashes all its fields)."""
        if opts is None:
            return self.settings
        got = self._settings_by_id.get(id(opts))
        if got is not None and got[0] is opts:
            return got[1]
        key = self._per_settings.get(opts)
        if key is None:
            key = self._per_settings[opts] = settings_key(opts)
        self._settings_by_id[id(opts)] = (opts, key)  # (holding opts: its id is not reused)
        return key

    def _result_key(self, digest: str, name: str, path: Optional[str], settings: Optional[str] = None) -> str:
        parts = [settings or self.settings, digest, name] + ([path] if path is not None else [])
        return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()

    def _digest(self, path: str, ap: str, known=None) -> Optional[tuple[str, os.stat_result]]:
        """The content digest of ``path`` now (from the stat data or by hashing it).
        ``known``: ``(stat result or None, a time before that stat was taken)``, from a
        caller that has just taken it (None: stat it here)."""
        if known is not None:
            st, read_ns = known
            if st is None:
                return None
        else:
            read_ns = time.time_ns()
            try:
                st = os.stat(path)
            except OSError:
                return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_bytes:
            return None
        f = self.files.get(ap)
        if f is not None and not self.verify and f[0] == st.st_size and f[1] == st.st_mtime_ns and st.st_mtime_ns + RACY_NS <= f[3]:
            return f[2], st
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            fst = os.fstat(fd)
            if (fst.st_dev, fst.st_ino, fst.st_size) != (st.st_dev, st.st_ino, st.st_size) or not stat.S_ISREG(fst.st_mode):
                return None
            raw = b""
            while len(raw) <= st.st_size:
                b = os.read(fd, st.st_size + 1 - len(raw))
                if not b:
                    break
                raw += b
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(raw) != st.st_size:
            return None
        digest = content_digest(raw)
        # a new entry, or one read again now that its mtime is out of the racy window (a
        # tree just checked out: hashed once more, then trusted from its stat data)
        if f is None or f[:3] != [st.st_size, st.st_mtime_ns, digest] or f[3] < st.st_mtime_ns + RACY_NS <= read_ns:
            self.files[ap] = [st.st_size, st.st_mtime_ns, digest, read_ns]
            self.dirty = True
        return digest, st

    def _abs(self, path: str) -> str:
        """``os.path.abspath(path)`` against the directory of the run (a relative path
        in normal form, as discovery gives them, is appended to it as it is)."""
        if _normal_relative(path):
            return self._cwd_pre + path
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(self._cwd, path))

    def get(self, path: str, tree: Optional[str] = None, opts: Optional[Options] = None, known=None,
            dep_stats: Optional[dict] = None) -> Optional[FileResult]:
        """The stored result for ``path`` if one matches its content and its settings
        (``opts``, the file's own Options; default: the run's), and, for a result that
        depends on other files, the tree fingerprint ``tree`` and the files it read; else
        None.  ``known``: the file's stat as :func:`stat_files` took it.  ``dep_stats``:
        a run's memo of the (size, mtime) of the files results read, by path, and of
        whether each entry of the table still holds, by its index (many results read
        the same few files: each is asked once per run, not once per result)."""
        if self.disabled or not self.results:
            return None  # (an empty cache: no file is read and hashed here for nothing)
        ap = self._abs(path)
        got = self._digest(path, ap, known)
        if got is None:
            return None
        digest, st = got
        name = os.path.basename(path) if os.altsep else path[path.rfind("/") + 1:]
        sk = self._settings(opts)
        e = self.results.get(self._result_key(digest, name, None, sk)) or self.results.get(self._result_key(digest, name, ap, sk))
        if e is None:
            return None
        rd = e["r"]  # (checked when the cache was loaded)
        if type(rd) is list:
            if rd[2] and e["tree"] != tree:
                return None
        else:
            if rd["tree_dependent"] and e["tree"] != tree:
                return None
            if rd["deps"]:
                # the memo holds each file's (size, mtime) by path and, by the entry's
                # index, whether the table's entry still holds (a directory's results
                # name the same entries)
                memo = dep_stats if dep_stats is not None else {}
                table = self.deps
                for i in rd["deps"]:
                    ok = memo.get(i)
                    if ok is None:
                        d, dsize, dmtime = table[i]
                        got = memo.get(d)
                        if got is None:
                            got = memo[d] = _stat(d)
                        ok = memo[i] = got[0] == dsize and got[1] == dmtime
                    if not ok:
                        return None
        if e["name"] is not None:
            from .gitdiff import diff_path

            if diff_path(path) != e["name"]:
                return None  # its diff names the file otherwise (another current directory)
        r = result_from_dict(rd, path, check=False, deps_table=self.deps)
        r.digest, r.size, r.mtime_ns = digest, st.st_size, st.st_mtime_ns
        if e["used"] != self._now:
            e["used"] = self._now
            self.dirty = True
        self.hits += 1
        return r

    def put(self, r: FileResult, seen_ns: int, tree: Optional[str] = None, opts: Optional[Options] = None) -> None:
        if self.disabled or not r.cacheable or not r.digest:
            return
        ap = self._abs(r.path)
        entry = [r.size, r.mtime_ns, r.digest, seen_ns]
        if self.files.get(ap) != entry:
            self.files[ap] = entry
            self.dirty = True
        dependent = r.tree_dependent or bool(r.deps)
        key = self._result_key(r.digest, os.path.basename(r.path), ap if dependent else None, self._settings(opts))
        name = None
        if r.diff or r.suggestions:
            from .gitdiff import diff_path

            name = diff_path(r.path)
        rd = result_to_dict(r)
        if type(rd) is dict and rd["deps"]:
            rd["deps"] = [self._dep_id(dep) for dep in rd["deps"]]
        e = {"d": r.digest, "used": self._now, "tree": tree if r.tree_dependent else None, "name": name, "r": rd}
        if self.results.get(key) != e:
            self.results[key] = e
            self.dirty = True

    def _dep_id(self, dep: list) -> int:
        """The index of ``[path, size, mtime_ns]`` in the table (added if new)."""
        ids = self._dep_ids
        if ids is None:
            ids = self._dep_ids = {tuple(d): i for i, d in enumerate(self.deps)}
        key = tuple(dep)
        i = ids.get(key)
        if i is None:
            i = ids[key] = len(self.deps)
            self.deps.append(list(dep))
        return i

    # ----------------------------------------------------------------- saving
    def _prune(self) -> None:
        month = 30 * 86400 * 10**9
        now_ns = time.time_ns()
        self.files = {k: v for k, v in self.files.items() if now_ns - v[3] < month and os.path.exists(k)}
        live = {v[2] for v in self.files.values()}
        keep_after = self._now - KEEP_DAYS * 86400
        self.results = {k: e for k, e in self.results.items() if e["d"] in live or e["used"] >= keep_after}
        if len(self.results) > MAX_RESULTS:
            newest = sorted(self.results.items(), key=lambda kv: kv[1]["used"], reverse=True)[:MAX_RESULTS]
            self.results = dict(newest)
        # the table keeps the files the kept results read, renumbered in first-use order
        renumber: dict = {}
        table: list = []
        for e in self.results.values():
            rd = e["r"]
            if type(rd) is dict and rd["deps"]:
                new = []
                for i in rd["deps"]:
                    j = renumber.get(i)
                    if j is None:
                        j = renumber[i] = len(table)
                        table.append(self.deps[i])
                    new.append(j)
                rd["deps"] = new
        self.deps = table
        self._dep_ids = None

    def save(self) -> None:
        if self.disabled or not self.dirty:
            return
        from .sourcefile import remove_stale_temp_files

        self._prune()
        data = {
            "format": FORMAT, "version": VERSION, "tool": self.tool, "written_ns": time.time_ns(),
            "files": self.files, "results": self.results, "deps": self.deps,
        }
        try:
            os.makedirs(self.dir, exist_ok=True)
            ignore = os.path.join(self.dir, ".gitignore")
            if not os.path.lexists(ignore):
                try:
                    _write_new(self.dir, ".gitignore", MARKER + b"*\n")
                except FileExistsError:
                    pass
            remove_stale_temp_files(self.dir)
            _write_new(self.dir, CACHE_FILE, json.dumps(data, separators=(",", ":")).encode("utf-8", "surrogateescape"), replace=True)
            for n in os.listdir(self.dir):
                if n.endswith(_LEGACY) and len(n) == 24 + len(".pickle"):
                    try:
                        os.unlink(os.path.join(self.dir, n))
                    except OSError:
                        pass
            self.dirty = False
        except OSError:
            pass  # a read-only tree: run without a cache


def _write_new(d: str, name: str, data: bytes, replace: bool = False) -> None:
    """Write ``d/name`` through a temporary file (never through a link)."""
    from .sourcefile import _tmp_name

    tmp = os.path.join(d, _tmp_name())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if replace:
            os.replace(tmp, os.path.join(d, name))
        else:
            os.link(tmp, os.path.join(d, name)) if hasattr(os, "link") else os.rename(tmp, os.path.join(d, name))
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def stat_files(files: list[str]) -> dict:
    """``path -> (stat result or None, a time before it was taken)`` for each file: one
    stat per file for both the tree fingerprint and the cache lookups."""
    before = time.time_ns()
    out = {}
    for p in files:
        try:
            out[p] = (os.stat(p), before)
        except OSError:
            out[p] = (None, before)
    return out


def tree_fingerprint(files: list[str], stats: Optional[dict] = None) -> str:
    """Every file's path, size and mtime: what a result that read other files of the
    tree depends on (a change anywhere invalidates those results, and only those).
    ``stats``: what :func:`stat_files` took for them (default: stat them here)."""
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(files):
        if stats is not None and p in stats:
            st = stats[p][0]
        else:
            try:
                st = os.stat(p)
            except OSError:
                st = None
        if st is not None:
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        else:
            h.update(f"{p}\0-\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


# --------------------------------------------------------------------------- clean
def clean(start: str = ".", cache_dir: Optional[str] = None) -> list[str]:
    """``torchmend clean``: remove ``.torchmend_cache`` directories in the project root,
    in ``start`` and below it (like ``ruff clean``), or ``cache_dir``; and torchmend's
    stale temporary files in the directories walked.  Returns what was removed.  A
    symbolic link named like the cache is removed itself, never followed."""
    import shutil

    from .sourcefile import remove_stale_temp_files

    targets = [cache_dir] if cache_dir else [os.path.join(project_root(start), CACHE_DIRNAME)]
    if not cache_dir:
        skip = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "site-packages", "__pycache__"}
        for d, dirs, names in os.walk(start):
            if CACHE_DIRNAME in dirs:
                targets.append(os.path.join(d, CACHE_DIRNAME))
            dirs[:] = [x for x in dirs if x not in skip and x != CACHE_DIRNAME]
            remove_stale_temp_files(d)
    removed = []
    seen = set()
    for t in targets:
        real = os.path.abspath(t)
        if real in seen or not os.path.lexists(t):
            continue
        seen.add(real)
        if os.path.islink(t):
            os.unlink(t)
        elif os.path.isdir(t):
            if not _is_ours(t):
                raise CleanError(f"{t}: not a torchmend cache (no {os.path.join(t, '.gitignore')} written by torchmend), left alone")
            shutil.rmtree(t)
        else:
            continue
        removed.append(t)
    return removed


class CleanError(Exception):
    pass


def _is_ours(d: str) -> bool:
    try:
        with open(os.path.join(d, ".gitignore"), "rb") as f:
            return f.read(len(MARKER)) == MARKER
    except OSError:
        return False
