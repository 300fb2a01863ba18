"""Applying a reviewed patch (``torchmend diff REPO > migration.patch``), all or nothing.

The patch is parsed with ``unidiff`` (file names in git's quoted form, as ``git diff``
and torchmend write non-ASCII, tab or newline characters, are unquoted).  Every file is
checked before anything is written:

* its path must stay inside the root: no absolute path, no ``..``, no symbolic link on
  the way (a link could point anywhere), an existing regular file with one hard link;
* it must not be repository metadata or tool state: nothing under ``.git/`` (hooks and
  ``config`` run code: any component named ``.git`` in any case, ``.gitmodules`` and
  the like too), other version-control directories, ``.torchmend_cache`` and other
  caches (``.hypothesis``, ``.mypy_cache``, ``__pycache__``...), virtual environments;
* only content edits: a patch that changes a file's mode (``old mode``/``new mode``), or
  creates, deletes, renames, copies or binary-patches a file, is refused;
* it must not have changed since the patch was made: the ``index OLD..NEW`` line names
  git's blob hash of the original bytes (sha1 of ``b"blob %d\\0" % len + data``), and every
  context and removed line must match exactly, at the hunk's position (no fuzz);
* the result must hash to the ``NEW`` blob id, when the header gives one.

Then it is applied through a journal, so that even a ``kill -9`` never leaves a half
applied tree behind: the journal (``.torchmend-patch-journal.json`` in the root) is
written first, naming for each file a temporary file with the new content and a backup
(a hard link to the original, or a copy); the new contents are written and synced; the
journal is marked ``committing``; the temporary files are renamed over the originals;
backups and journal are removed.  Should anything fail or be interrupted in between
(an exception, Ctrl-C), the files already replaced are put back from their backups.  A
run killed outright leaves the journal: the next ``torchmend`` run in that directory
(:func:`recover`) finishes it, restoring every file to its original when the patch was
not completely applied, or only cleaning up when it was.  Errors are one line naming the
file (:class:`PatchError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Optional

from .gitdiff import git_unquote
from .sourcefile import HOST_TAG, TEMP_PREFIX, _tmp_name, file_kind

_INDEX = re.compile(r"^index ([0-9a-f]{4,40})\.\.([0-9a-f]{4,40})(?: [0-7]{6})?\s*$")
JOURNAL = ".torchmend-patch-journal.json"
_JOURNAL_FORMAT = "torchmend-patch-journal"
_BACKUP = re.compile(r"^\.torchmend-(?P<host>[0-9a-f]{6})-(?P<pid>\d+)-[0-9a-f]{8}\.orig$")
_TEMP = re.compile(r"^\.torchmend-(?P<host>[0-9a-f]{6})-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")

# directory (or file) names a patch may not touch: repository metadata and tool state
VCS_DIRS = {".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", "cvs"}
TOOL_STATE = {
    ".torchmend_cache", ".hypothesis", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__",
    ".tox", ".nox", ".ipynb_checkpoints", ".eggs", ".venv", "venv", "site-packages", ".direnv",
}
_HEADER_REFUSED = (
    ("old mode", "changes the file mode"),
    ("new mode", "changes the file mode"),
    ("new file mode", "creates the file"),
    ("deleted file mode", "deletes the file"),
    ("rename from", "renames the file"),
    ("rename to", "renames the file"),
    ("copy from", "copies the file"),
    ("copy to", "copies the file"),
    ("similarity index", "renames or copies the file"),
    ("dissimilarity index", "rewrites the file"),
    ("GIT binary patch", "is a binary patch"),
    ("Binary files", "is a binary patch"),
)


class PatchError(Exception):
    """A patch that cannot be applied; the message is one line and names the file."""


@dataclass
class FilePatch:
    path: str  # as written in the patch, relative to the root
    old: bytes
    new: bytes


def _shown(name: str) -> str:
    """A file name for a one-line message: git's quoted form when it has control or
    non-UTF-8 characters."""
    from .gitdiff import git_quote

    try:
        name.encode("utf-8")
        if name.isprintable():
            return name
    except UnicodeEncodeError:
        pass
    return git_quote(name.encode("utf-8", "surrogateescape")).decode("ascii", "backslashreplace")


def git_blob_hash(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _protected(parts: list[str]) -> Optional[str]:
    """Why a path with these components may not be patched, or None."""
    for i, part in enumerate(parts):
        # Windows and macOS file systems: case-insensitive, trailing dots and spaces ignored
        p = part.lower().rstrip(". ")
        if p in VCS_DIRS or p == "git~1" or (p.startswith(".git") and i == len(parts) - 1):
            return "repository metadata (.git/, .gitmodules and the like: git runs code from them)"
        if p in TOOL_STATE:
            return f"tool state ({part}/)"
        if p.startswith(TEMP_PREFIX):
            return "a torchmend temporary file"
    return None


def _safe_path(name: str, root: str, extra_protected: tuple[str, ...] = (), check_file: bool = True) -> str:
    """The file ``name`` of the patch under ``root``, or PatchError if it escapes or is
    protected (``check_file``: and it must be a writable regular file with one link)."""
    if not name or "\0" in name:
        raise PatchError(f"{_shown(name)}: empty or invalid path in the patch")
    if os.path.isabs(name) or name.startswith("/") or os.name == "nt" and (name.startswith("\\") or re.match(r"^[A-Za-z]:", name)):
        raise PatchError(f"{_shown(name)}: absolute path in the patch, refused")
    # "/" separates; a backslash is part of a POSIX file name (git quotes it), a separator on Windows
    parts = [p for p in re.split(r"[/\\]" if os.name == "nt" else "/", name) if p not in ("", ".")]
    if ".." in parts:
        raise PatchError(f"{_shown(name)}: path escapes the root ('..'), refused")
    why = _protected(parts)
    if why:
        raise PatchError(f"{_shown(name)}: {why}, refused")
    root_real = os.path.realpath(root)
    cur = root_real
    for part in parts:
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            raise PatchError(f"{_shown(name)}: symbolic link in the path, refused")
    for p in extra_protected:
        if cur == p or cur.startswith(p.rstrip(os.sep) + os.sep):
            raise PatchError(f"{_shown(name)}: inside the cache directory, refused")
    if not check_file:
        return cur
    try:
        st = os.lstat(cur)
    except FileNotFoundError:
        raise PatchError(f"{_shown(name)}: no such file") from None
    except OSError as e:
        raise PatchError(f"{_shown(name)}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise PatchError(f"{_shown(name)}: {file_kind(st.st_mode)}, not a regular file: refused")
    if st.st_nlink > 1:
        raise PatchError(f"{_shown(name)}: has {st.st_nlink} hard links (a rewrite would detach it from the others), refused")
    if not st.st_mode & stat.S_IWUSR:
        raise PatchError(f"{_shown(name)}: read-only file, refused")
    real = os.path.realpath(cur)
    if not (real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)):
        raise PatchError(f"{_shown(name)}: path escapes the root, refused")
    return cur


def _name(token: str) -> str:
    """A file name of a ``---``/``+++`` line: unquoted, without its ``a/``/``b/``."""
    try:
        p = git_unquote(token.strip())
    except ValueError as e:
        raise PatchError(f"<patch>: {e}") from None
    return p[2:] if p.startswith(("a/", "b/")) else p


def _lines(s: str) -> list[str]:
    """Split after each ``\\n`` only, as git does (str.splitlines also splits at form
    feeds, ``\\r`` and other characters that are not line ends for a diff)."""
    parts = s.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _apply_hunks(name: str, old: bytes, pfile) -> bytes:
    """Apply one file's hunks exactly: every context and removed line must be the file's
    line at that position, line ending included."""
    from unidiff.constants import LINE_TYPE_NO_NEWLINE

    lines = _lines(old.decode("utf-8", "surrogateescape"))
    out: list[str] = []
    pos = 0
    for hunk in pfile:
        items: list[list] = []  # [kind, text with its real line ending]
        for ln in hunk:
            if ln.line_type == LINE_TYPE_NO_NEWLINE:
                if items and items[-1][1].endswith("\n"):
                    items[-1][1] = items[-1][1][:-1]  # that line ends the file, without newline
                continue
            kind = "ctx" if ln.is_context else "del" if ln.is_removed else "add"
            items.append([kind, ln.value])
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        if start < pos or start > len(lines):
            raise PatchError(f"{_shown(name)}: hunk at line {hunk.source_start} does not fit the file (it changed since the patch was made)")
        out.extend(lines[pos:start])
        pos = start
        for kind, value in items:
            if kind == "add":
                out.append(value)
                continue
            if pos >= len(lines) or lines[pos] != value:
                raise PatchError(f"{_shown(name)}: line {pos + 1} differs from the patch (the file changed since the patch was made)")
            if kind == "ctx":
                out.append(lines[pos])
            pos += 1
    out.extend(lines[pos:])
    return "".join(out).encode("utf-8", "surrogateescape")


def plan(patch: bytes, root: str = ".", protect: tuple[str, ...] = ()) -> list[FilePatch]:
    """Check the whole patch against the files under ``root``; return the new contents
    (nothing is written).  Raises PatchError on the first problem.  ``protect``: more
    directories (real paths) whose files may not be patched, e.g. a ``--cache-dir``."""
    import unidiff

    text = patch.decode("utf-8", "surrogateescape")
    try:
        ps = unidiff.PatchSet(_lines(text))
    except unidiff.UnidiffParseError as e:
        raise PatchError(f"<patch>: not a unified diff: {str(e).splitlines()[0]}") from None
    if not len(ps):
        if text.strip():
            raise PatchError("<patch>: no file diffs found in the patch")
        return []
    seen: set[str] = set()
    out: list[FilePatch] = []
    for pf in ps:
        src, tgt = _name(pf.source_file), _name(pf.target_file)
        name = tgt if tgt != "/dev/null" else src
        if re.search(r"\.ipynb:cell \d+$", pf.source_file or "", re.I):
            nb = pf.source_file.rsplit(":cell ", 1)[0]
            raise PatchError(f"{_shown(nb)}: a notebook's cell diff (from `torchmend diff`) is for reading, not applying; "
                             f"run `torchmend apply {nb}`")
        for line in str(pf.patch_info).splitlines():
            for prefix, what in _HEADER_REFUSED:
                if line.startswith(prefix):
                    raise PatchError(f"{_shown(name)}: the patch {what} ({line.strip()}); only content edits are applied, refused")
        if pf.is_added_file or pf.is_removed_file or src != tgt or getattr(pf, "is_rename", False):
            raise PatchError(f"{_shown(name)}: the patch creates, deletes or renames this file; only edits are applied")
        if getattr(pf, "is_binary_file", False):
            raise PatchError(f"{_shown(name)}: binary patch, refused")
        full = _safe_path(name, root, protect)
        real = os.path.realpath(full)
        if real in seen:
            raise PatchError(f"{_shown(name)}: appears twice in the patch")
        seen.add(real)
        try:
            with open(full, "rb") as f:
                old = f.read()
        except OSError as e:
            raise PatchError(f"{_shown(name)}: cannot read: {e.strerror or e}") from None
        ids = None
        for line in str(pf.patch_info).splitlines():
            m = _INDEX.match(line)
            if m:
                ids = m.groups()
        if ids is not None and not git_blob_hash(old).startswith(ids[0]):
            raise PatchError(f"{_shown(name)}: the file changed since the patch was made (blob {git_blob_hash(old)[:len(ids[0])]}, patch expects {ids[0]})")
        new = _apply_hunks(name, old, pf)
        if ids is not None and set(ids[1]) != {"0"} and not git_blob_hash(new).startswith(ids[1]):
            raise PatchError(f"{_shown(name)}: applying the patch does not give the file it describes (blob {ids[1]})")
        out.append(FilePatch(name, old, new))
    return out


# --------------------------------------------------------------------------- the journal
def _fsync_dir(d: str) -> None:
    try:
        fd = os.open(d or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_journal(root: str, data: dict) -> None:
    path = os.path.join(root, JOURNAL)
    tmp = os.path.join(root, _tmp_name())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(data, indent=1).encode("utf-8", "surrogateescape"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(root)


def _write_file(path: str, data: bytes, like: os.stat_result) -> None:
    """A new file at ``path`` (which must not exist) holding ``data``, with ``like``'s
    permission bits, owner and group, synced."""
    from .sourcefile import _chown_like

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        _chown_like(fd, like)
        os.fchmod(fd, stat.S_IMODE(like.st_mode))
        os.fsync(fd)
    finally:
        os.close(fd)


def _blob_of(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return git_blob_hash(f.read())
    except OSError:
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _load_journal(root: str) -> Optional[dict]:
    path = os.path.join(root, JOURNAL)
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 64 * 1024 * 1024:
        raise PatchError(f"{JOURNAL}: not a journal written by torchmend; remove it by hand")
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
        ok = (
            isinstance(data, dict) and data.get("format") == _JOURNAL_FORMAT and data.get("version") == 1
            and data.get("state") in ("staging", "committing") and isinstance(data.get("files"), list)
        )
        for e in data["files"] if ok else ():
            ok = ok and isinstance(e, dict) and set(e) == {"path", "tmp", "backup", "old", "new"}
            ok = ok and all(isinstance(e[k], str) for k in e) and bool(_TEMP.match(e["tmp"])) and bool(_BACKUP.match(e["backup"]))
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        ok = False
    if not ok:
        raise PatchError(f"{JOURNAL}: not a journal written by torchmend (or damaged); remove it by hand")
    return data


def _undo(root: str, journal: dict) -> tuple[int, bool]:
    """Put back every file of the journal that was already replaced; remove temporary
    files and backups.  Returns (files restored, whether the patch had been applied
    completely: then nothing is put back, only cleaned up)."""
    entries = []
    for e in journal["files"]:
        full = _safe_path(e["path"], root, check_file=False)
        d = os.path.dirname(full)
        entries.append((e, full, os.path.join(d, e["tmp"]), os.path.join(d, e["backup"])))
    complete = journal["state"] == "committing" and all(_blob_of(full) == e["new"] for e, full, _, _ in entries)
    restored = 0
    if not complete:
        for e, full, tmp, bak in entries:
            cur = _blob_of(full)
            if cur == e["old"] or cur is None and not os.path.exists(bak):
                continue
            if cur != e["new"]:
                raise PatchError(f"{_shown(e['path'])}: changed since the interrupted `apply --patch`; cannot undo it (the original is in {bak}), nothing else touched")
            if not os.path.exists(bak) or _blob_of(bak) != e["old"]:
                raise PatchError(f"{_shown(e['path'])}: the backup of the interrupted `apply --patch` is missing; restore the file by hand")
            os.replace(bak, full)
            restored += 1
    for e, full, tmp, bak in entries:
        _unlink(tmp)
        _unlink(bak)
    for d in {os.path.dirname(full) for _, full, _, _ in entries}:
        _fsync_dir(d)
    _unlink(os.path.join(root, JOURNAL))
    _fsync_dir(root)
    return restored, complete


def recover(root: str = ".") -> Optional[str]:
    """Finish an ``apply --patch`` that was killed in ``root``: a one-line account of what
    was done, or None when there was nothing to do.  PatchError when it cannot be done
    safely (a file changed since; the journal is then left in place)."""
    from .sourcefile import remove_stale_temp_files

    journal = _load_journal(root)
    remove_stale_temp_files(root)  # a journal being written when the run was killed
    if journal is None:
        return None
    restored, complete = _undo(root, journal)
    n = len(journal["files"])
    if complete:
        return f"an interrupted `apply --patch` had written all {n} file{'s' if n != 1 else ''}: cleaned up"
    return (f"an interrupted `apply --patch` was rolled back: {restored} file{'s' if restored != 1 else ''} restored, "
            "none of it is applied (run it again)")


def apply_patch(patch: bytes, root: str = ".", protect: tuple[str, ...] = ()) -> list[FilePatch]:
    """Apply ``patch`` under ``root``, all or nothing, even when killed (see the module
    docstring); returns the files written."""
    recover(root)
    todo = [fp for fp in plan(patch, root, protect) if fp.new != fp.old]
    if not todo:
        return []
    items = []
    for fp in todo:
        full = os.path.join(root, fp.path)
        d = os.path.dirname(full)
        tmp, bak = _tmp_name(), _tmp_name()[: -len(".tmp")] + ".orig"
        items.append((fp, full, os.path.join(d, tmp), os.path.join(d, bak), tmp, bak))
    journal = {
        "format": _JOURNAL_FORMAT, "version": 1, "state": "staging", "host": HOST_TAG, "pid": os.getpid(),
        "files": [{"path": fp.path, "tmp": tmp, "backup": bak, "old": git_blob_hash(fp.old), "new": git_blob_hash(fp.new)}
                  for fp, _, _, _, tmp, bak in items],
    }
    try:
        _write_journal(root, journal)
    except OSError as e:
        raise PatchError(f"{JOURNAL}: cannot write the journal in {os.path.abspath(root)}: {e.strerror or e}") from None
    try:
        for fp, full, tmp, bak, _, _ in items:  # stage: nothing visible changes yet
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or _read(full) != fp.old:
                raise PatchError(f"{fp.path}: file changed since it was checked; nothing applied")
            _write_file(tmp, fp.new, st)
            try:
                os.link(full, bak)
            except OSError:  # no hard links here: a copy
                _write_file(bak, fp.old, st)
        for d in {os.path.dirname(full) for _, full, _, _, _, _ in items}:
            _fsync_dir(d)
        journal["state"] = "committing"
        _write_journal(root, journal)
        for fp, full, tmp, bak, _, _ in items:  # commit: one rename per file
            os.replace(tmp, full)
        for d in {os.path.dirname(full) for _, full, _, _, _, _ in items}:
            _fsync_dir(d)
        for fp, full, tmp, bak, _, _ in items:
            _unlink(bak)
        _unlink(os.path.join(root, JOURNAL))
        _fsync_dir(root)
    except BaseException as exc:
        try:
            _undo(root, journal)
        except Exception:
            pass  # the journal stays: the next run finishes the roll-back
        if isinstance(exc, OSError):
            raise PatchError(f"cannot write: {exc.strerror or exc} ({getattr(exc, 'filename', '')}); nothing applied") from None
        raise
    return todo


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
