"""Unified diffs byte-identical to ``git diff`` (libgit2's xdiff via pygit2, no difflib).

File names in a diff are relative to the root of the git repository holding the file
(what ``git diff`` prints from any directory of it), so a patch made from a subdirectory
applies with ``git apply`` and ``torchmend apply --patch`` at the top; outside a
repository they are relative to the current directory.  Names git would quote
(non-ASCII, control characters, quotes; undecodable bytes too) are quoted as git does.
"""

from __future__ import annotations

import os
import stat
from functools import lru_cache


def printable(name: str) -> str:
    """``name`` safe to print: undecodable bytes of a file name (kept by Python as
    surrogates) become ``\\xNN``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def display_path(path: str) -> str:
    """The path for messages: relative to the current directory, '/'-separated."""
    rel = os.path.relpath(path)
    return printable(rel.replace(os.sep, "/"))


@lru_cache(maxsize=4096)
def _repo_root(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` holding ``.git`` (a directory, or
    the file of a worktree or submodule)."""
    if os.path.lexists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _repo_root(parent)


def repo_root(start: str = ".") -> str | None:
    d = os.path.abspath(start)
    return _repo_root(d if os.path.isdir(d) else os.path.dirname(d))


def diff_root(path: str) -> str:
    """The directory the diff names ``path`` relative to: its repository's root, else the
    current directory."""
    ab = os.path.abspath(path)
    return _repo_root(os.path.dirname(ab)) or os.getcwd()


def diff_path(path: str) -> str:
    """The name of ``path`` in a diff: relative to :func:`diff_root`, '/'-separated."""
    return os.path.relpath(os.path.abspath(path), diff_root(path)).replace(os.sep, "/")


def unified_diff(old: bytes, new: bytes, path: str, mode: int = 0o100644) -> bytes:
    """``git diff`` output for one file changed from ``old`` to ``new`` (empty when equal)."""
    if old == new:
        return b""
    import pygit2

    name = diff_path(path)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8: libgit2 takes str only
        return _with_name(unified_diff(old, new, "torchmend-placeholder", mode), "torchmend-placeholder", name)
    data = pygit2.Patch.create_from(old, new, old_as_path=name, new_as_path=name).data
    if stat.S_ISREG(mode) and mode & stat.S_IXUSR:
        # libgit2 does not know the file mode; git prints it on the index line
        head, sep, rest = data.partition(b"\n--- ")
        if head.endswith(b" 100644"):
            data = head[: -len(b"100644")] + b"100755" + sep + rest
    return data


_C_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r", 34: b'\\"', 92: b"\\\\"}


def git_quote(name: bytes) -> bytes:
    """A path as git writes it in a diff header (``quote_c_style``, ``core.quotePath``
    on): unchanged unless it holds a control character, ``"``, ``\\`` or a non-ASCII
    byte; then in double quotes with C escapes and octal bytes."""
    if not any(c < 0x20 or c >= 0x7F or c in (34, 92) for c in name):
        return name
    out = bytearray(b'"')
    for c in name:
        if c in _C_ESCAPES:
            out += _C_ESCAPES[c]
        elif c < 0x20 or c >= 0x7F:
            out += b"\\%03o" % c
        else:
            out.append(c)
    out += b'"'
    return bytes(out)


def git_unquote(token: str) -> str:
    """The inverse of :func:`git_quote` on a (str) header token; ValueError if the quoted
    form is malformed.  Bytes that are not UTF-8 come back as surrogate escapes (what
    ``os`` functions take)."""
    if not (len(token) >= 2 and token[0] == '"' and token[-1] == '"'):
        return token
    body = token[1:-1]
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif len(body) >= i + 4 and all(c in "01234567" for c in body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            raise ValueError(f"bad escape in quoted path {token!r}")
    return out.decode("utf-8", "surrogateescape")


def _with_name(data: bytes, placeholder: str, name: str) -> bytes:
    """``data`` (a one-file diff made for ``placeholder``) with the header naming ``name``."""
    p = placeholder.encode()
    raw = name.encode("utf-8", "surrogateescape")
    qa, qb = git_quote(b"a/" + raw), git_quote(b"b/" + raw)
    head, sep, body = data.partition(b"\n@@")
    lines = []
    for ln in head.split(b"\n"):
        if ln == b"diff --git a/" + p + b" b/" + p:
            ln = b"diff --git " + qa + b" " + qb
        elif ln == b"--- a/" + p:
            ln = b"--- " + qa
        elif ln == b"+++ b/" + p:
            ln = b"+++ " + qb
        lines.append(ln)
    return b"\n".join(lines) + sep + body
