"""torchmend: find and fix the five PyTorch training pitfalls.

The Python API is two functions over source text (nothing is read or written)::

    import torchmend

    for f in torchmend.check_text(source, path="train.py"):
        print(f.line, f.col, f.code, f.message)        # torchmend.Finding objects
    fixed = torchmend.fix_text(source, path="train.py")  # the source with the safe fixes

``select`` takes what ``--select`` takes (codes ``TM201``, prefixes ``TM2``, rule names,
pitfalls, ``ALL``); ``unsafe_fixes=True`` also applies the fixes classed unsafe.  Source
that a rule needs to parse and cannot raises :class:`SourceError` (one line, no path);
findings are plain data (the fix's syntax trees dropped, ``Finding.safety`` kept).  A file marked as
generated (``@generated``, ``DO NOT EDIT`` in its first lines) is left alone: no
findings, source returned unchanged.  Configuration files are not read: the arguments
are the whole configuration.  The command line is ``torchmend.cli``.
"""

from __future__ import annotations

import sys as _sys


def _safe_module_path() -> None:
    """``python -m torchmend`` (or ``-m torchmend.cli``) puts the working directory first on
    the module path: a file of the tree being checked named like a module that torchmend
    imports (``typing.py``, ``grp.py``, which ``shutil`` imports) would run.  That entry
    goes before anything else is imported, as ``python -P`` would have it.  Only for a
    command line that runs torchmend itself: a program that imports torchmend keeps its
    path as it is."""
    import os

    argv = list(getattr(_sys, "orig_argv", ()))
    run = None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            i += 2  # (an option and its value)
            continue
        if not a.startswith("-") or a in ("-", "-c") or a.startswith(("-c", "-X", "-W")):
            break  # a script, standard input or ``-c``: not torchmend's own command line
        k = a.find("m", 1)
        if not a.startswith("--") and k > 0 and all(c in _FLAGS for c in a[1:k]):
            run = a[k + 1 :] or (argv[i + 1] if i + 1 < len(argv) else None)  # ``-m name``, ``-Im name``, ``-mname``
            break
        i += 1
    if run is None or (run != "torchmend" and not run.startswith("torchmend.")):
        return
    if getattr(_sys.flags, "safe_path", False) or not _sys.path:
        return
    try:
        here = os.getcwd()
    except OSError:
        return
    if os.path.abspath(_sys.path[0] or os.curdir) == here:
        del _sys.path[0]


_FLAGS = "bBdEiIOPqRsSuvx"  # the interpreter's options that take no value


if _sys.argv[:1] == ["-m"]:  # (being imported by runpy for ``python -m``)
    _safe_module_path()

from typing import TYPE_CHECKING, Iterable, Optional  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Finding", "SourceError", "__version__", "check_text", "fix_text"]

if TYPE_CHECKING:
    from .rule import Finding
    from .sourcefile import SourceError


def __getattr__(name: str):  # the library loads lazily: ``import torchmend`` stays cheap
    if name == "Finding":
        from .rule import Finding

        return Finding
    if name == "SourceError":
        from .sourcefile import SourceError

        return SourceError
    raise AttributeError(f"module 'torchmend' has no attribute {name!r}")


def _options(select: Optional[Iterable[str]], unsafe_fixes: bool, fix: bool):
    from .engine import Options
    from .registry import resolve

    codes = resolve(list(select)) if select is not None else frozenset()
    if select is not None and not codes:
        raise ValueError("select names no rule")
    return Options(select=frozenset(codes), unsafe_fixes=unsafe_fixes, fix=fix)


def check_text(source: str, path: str = "<stdin>", select: Optional[Iterable[str]] = None) -> "list[Finding]":
    """The findings in ``source`` (as ``torchmend check`` reports them for a file named
    ``path``), sorted by position; suppression comments are honoured."""
    from .engine import process_text
    from .sourcefile import Skipped

    try:
        return [f.stripped() for f in process_text(path, source, _options(select, False, fix=False)).findings]
    except Skipped:
        return []


def fix_text(source: str, path: str = "<stdin>", select: Optional[Iterable[str]] = None, unsafe_fixes: bool = False) -> str:
    """``source`` with the fixes applied (safe ones; with ``unsafe_fixes`` all), exactly
    what ``torchmend apply`` writes; ``source`` itself when nothing applies."""
    from .engine import fix_text as _fix_text
    from .sourcefile import GENERATED_MARKERS

    head = "\n".join(source.splitlines()[:5])
    if any(m in head for m in GENERATED_MARKERS):
        return source
    return _fix_text(path, source, _options(select, unsafe_fixes, fix=True))[1]
