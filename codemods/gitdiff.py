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


_ESC = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}


def git_quote(name: bytes) -> bytes:
    """A name as git's ``quote_c_style`` writes it (with ``core.quotePath`` on)."""
    if not any(b < 0x20 or b >= 0x7F or b in (34, 92) for b in name):
        return name
    out = []
    for b in name:
        if b in _ESC:
            out.append("\\" + _ESC[b])
        elif b < 0x20 or b >= 0x7F:
            out.append("\\%03o" % b)
        else:
            out.append(chr(b))
    return ('"' + "".join(out) + '"').encode("ascii")


def unified_diff(old: bytes, new: bytes, path: str, mode: int = 0o100644) -> bytes:
    """``git diff`` output for one file changed from ``old`` to ``new`` (empty when equal)."""
    if old == new:
        return b""
    import pygit2

    name = diff_path(path)
    try:
        name.encode("utf-8")
        data = pygit2.Patch.create_from(old, new, old_as_path=name, new_as_path=name).data
    except UnicodeEncodeError:  # undecodable bytes in the name: libgit2 takes str only
        placeholder = "torchmend-placeholder.py"
        data = pygit2.Patch.create_from(old, new, old_as_path=placeholder, new_as_path=placeholder).data
        raw = os.fsencode(name)
        head, sep, rest = data.partition(b"\n@@")
        head = (
            head.replace(b"diff --git a/%s b/%s" % (placeholder.encode(), placeholder.encode()),
                         b"diff --git " + git_quote(b"a/" + raw) + b" " + git_quote(b"b/" + raw))
            .replace(b"--- a/" + placeholder.encode(), b"--- " + git_quote(b"a/" + raw))
            .replace(b"+++ b/" + placeholder.encode(), b"+++ " + git_quote(b"b/" + raw))
        )
        data = head + sep + rest
    if stat.S_ISREG(mode) and mode & stat.S_IXUSR:
        # libgit2 does not know the file mode; git prints it on the index line
        head, sep, rest = data.partition(b"\n--- ")
        if head.endswith(b" 100644"):
            data = head[: -len(b"100644")] + b"100755" + sep + rest
    return data
