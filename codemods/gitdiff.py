"""Unified diffs byte-identical to ``git diff`` (libgit2's xdiff via pygit2, no difflib)."""

from __future__ import annotations

import os
import stat


def display_path(path: str) -> str:
    """The path as git would print it: relative to the current directory, '/'-separated."""
    rel = os.path.relpath(path)
    return rel.replace(os.sep, "/")


def unified_diff(old: bytes, new: bytes, path: str, mode: int = 0o100644) -> bytes:
    """``git diff`` output for one file changed from ``old`` to ``new`` (empty when equal)."""
    if old == new:
        return b""
    import pygit2

    name = display_path(path)
    data = pygit2.Patch.create_from(old, new, old_as_path=name, new_as_path=name).data
    if stat.S_ISREG(mode) and mode & stat.S_IXUSR:
        # libgit2 does not know the file mode; git prints it on the index line
        head, sep, rest = data.partition(b"\n--- ")
        if head.endswith(b" 100644"):
            data = head[: -len(b"100644")] + b"100755" + sep + rest
    return data
