"""Applying a reviewed patch (``torchmend diff REPO > migration.patch``), all or nothing.

The patch is parsed with ``unidiff``.  Every file is checked before anything is written:

* its path must stay inside the root: no absolute path, no ``..``, no symbolic link on
  the way (a link could point anywhere), an existing regular file;
* it must not have changed since the patch was made: the ``index OLD..NEW`` line names
  git's blob hash of the original bytes (sha1 of ``b"blob %d\\0" % len + data``), and every
  context and removed line must match exactly, at the hunk's position (no fuzz);
* the result must hash to the ``NEW`` blob id, when the header gives one.

Only then are the files written, each atomically (``sourcefile.atomic_write``, which also
refuses a file that changed in the meantime); should a write still fail, the files already
written are restored.  Errors are one line naming the file (:class:`PatchError`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from .sourcefile import SourceError, atomic_write

_INDEX = re.compile(r"^index ([0-9a-f]{4,40})\.\.([0-9a-f]{4,40})(?: [0-7]{6})?\s*$")


class PatchError(Exception):
    """A patch that cannot be applied; the message is one line and names the file."""


@dataclass
class FilePatch:
    path: str  # as written in the patch, relative to the root
    old: bytes
    new: bytes


def git_blob_hash(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _safe_path(name: str, root: str) -> str:
    """The file ``name`` of the patch under ``root``, or PatchError if it escapes."""
    if not name or "\0" in name:
        raise PatchError(f"{name!r}: empty or invalid path in the patch")
    if os.path.isabs(name) or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise PatchError(f"{name}: absolute path in the patch, refused")
    parts = re.split(r"[/\\]", name)
    if ".." in parts:
        raise PatchError(f"{name}: path escapes the root ('..'), refused")
    root_real = os.path.realpath(root)
    cur = root_real
    for part in parts:
        if part in ("", "."):
            continue
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            raise PatchError(f"{name}: symbolic link in the path, refused")
    if not os.path.isfile(cur):
        raise PatchError(f"{name}: no such file")
    real = os.path.realpath(cur)
    if not (real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)):
        raise PatchError(f"{name}: path escapes the root, refused")
    return cur


def _strip_prefix(p: str) -> str:
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
            raise PatchError(f"{name}: hunk at line {hunk.source_start} does not fit the file (it changed since the patch was made)")
        out.extend(lines[pos:start])
        pos = start
        for kind, value in items:
            if kind == "add":
                out.append(value)
                continue
            if pos >= len(lines) or lines[pos] != value:
                raise PatchError(f"{name}: line {pos + 1} differs from the patch (the file changed since the patch was made)")
            if kind == "ctx":
                out.append(lines[pos])
            pos += 1
    out.extend(lines[pos:])
    return "".join(out).encode("utf-8", "surrogateescape")


def plan(patch: bytes, root: str = ".") -> list[FilePatch]:
    """Check the whole patch against the files under ``root``; return the new contents
    (nothing is written).  Raises PatchError on the first problem."""
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
        src, tgt = _strip_prefix(pf.source_file), _strip_prefix(pf.target_file)
        name = tgt if tgt != "/dev/null" else src
        if pf.is_added_file or pf.is_removed_file or src != tgt or getattr(pf, "is_rename", False):
            raise PatchError(f"{name}: the patch creates, deletes or renames this file; only edits are applied")
        if getattr(pf, "is_binary_file", False):
            raise PatchError(f"{name}: binary patch, refused")
        full = _safe_path(name, root)
        real = os.path.realpath(full)
        if real in seen:
            raise PatchError(f"{name}: appears twice in the patch")
        seen.add(real)
        try:
            with open(full, "rb") as f:
                old = f.read()
        except OSError as e:
            raise PatchError(f"{name}: cannot read: {e.strerror or e}") from None
        ids = None
        for line in str(pf.patch_info).splitlines():
            m = _INDEX.match(line)
            if m:
                ids = m.groups()
        if ids is not None and not git_blob_hash(old).startswith(ids[0]):
            raise PatchError(f"{name}: the file changed since the patch was made (blob {git_blob_hash(old)[:len(ids[0])]}, patch expects {ids[0]})")
        new = _apply_hunks(name, old, pf)
        if ids is not None and set(ids[1]) != {"0"} and not git_blob_hash(new).startswith(ids[1]):
            raise PatchError(f"{name}: applying the patch does not give the file it describes (blob {ids[1]})")
        out.append(FilePatch(name, old, new))
    return out


def apply_patch(patch: bytes, root: str = ".") -> list[FilePatch]:
    """Apply ``patch`` under ``root``, all or nothing; returns the files written."""
    todo = plan(patch, root)
    done: list[FilePatch] = []
    try:
        for fp in todo:
            if fp.new == fp.old:
                continue
            try:
                atomic_write(os.path.join(root, fp.path), fp.new, expect=fp.old)
            except SourceError as e:
                raise PatchError(f"{fp.path}: {e}") from None
            done.append(fp)
    except BaseException:
        for fp in reversed(done):  # put back what was already written
            try:
                atomic_write(os.path.join(root, fp.path), fp.old, expect=fp.new)
            except Exception:
                pass
        raise
    return done
