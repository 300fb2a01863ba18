"""Facts about the whole tree, for rules that need more than one file.

Only main_guard asks (is this script imported by another file?), and only for a file
it would fix, so the index is built lazily, once per process, with a regex scan.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

# an import statement from the start of its line (``^\s*`` of a multi-line scan); applied
# only to lines containing "import", which is several times faster than scanning every
# line start of the tree with the anchored pattern
_IMPORT = re.compile(r"\s*(?:from\s+([\w.]+)\s+import\s+\(?([\w, \t]*)|import\s+([\w., ]+))")


def _imports(text: str):
    pos, last, pos_floor = 0, -1, 0
    while True:
        i = text.find("import", pos)
        if i < 0:
            return
        start = text.rfind("\n", 0, i) + 1
        if start != last and start >= pos_floor:
            last = start
            m = _IMPORT.match(text, start)
            if m:
                yield m
                pos = pos_floor = max(m.end(), i + 1)  # matches do not overlap (finditer)
                continue
        end = text.find("\n", i)
        if end < 0:
            return
        pos = end


@lru_cache(maxsize=8)
def _index(roots: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """module name -> files importing it."""
    from .discovery import discover

    idx: dict[str, set[str]] = {}
    for path in discover(list(roots) or ["."]).files:
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        real = os.path.realpath(path)
        for m in _imports(text):
            if m.group(1):  # from a.b import c, d: a, b, c and d may all be modules of the tree
                names = [m.group(1)] + [n.strip().split(" ")[0] for n in m.group(2).split(",")]
            else:
                names = [n.strip().split(" ")[0] for n in m.group(3).split(",")]
            for n in names:
                for part in n.split("."):
                    if part:
                        idx.setdefault(part, set()).add(real)
    return {k: frozenset(v) for k, v in idx.items()}


def imported_module_names(roots: tuple[str, ...], exclude: str) -> set[str]:
    """Names imported by files of the tree other than ``exclude``.

    Without roots (a library call, a test) the tree is the directory of ``exclude``, and
    a path that is not a file on disk (in-memory text) has no tree at all."""
    real = os.path.realpath(exclude)
    if not roots:
        if not os.path.isfile(real):
            return set()
        roots = (os.path.dirname(real),)
    return {name for name, files in _index(tuple(roots)).items() if files - {real}}
