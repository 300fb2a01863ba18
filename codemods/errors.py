"""One line per failure, naming the real cause: what the engine and the runner report
for a file (``path: error: <this>``) when something goes wrong.

"internal error" is kept for torchmend's own bugs; it says so and asks for a report.
Set ``TORCHMEND_DEBUG=1`` to get the traceback too (on stderr, from the process that
hit it).
"""

from __future__ import annotations

import os
import signal
import sys

class Interrupted(BaseException):
    """Ctrl-C in the command line (its SIGINT handler raises this rather than
    KeyboardInterrupt, which click would report as "Aborted!" with exit 1)."""


REPORT = "a bug in torchmend: please report it, with the output of TORCHMEND_DEBUG=1"


def debug() -> bool:
    return os.environ.get("TORCHMEND_DEBUG", "") not in ("", "0")


def internal(e: BaseException) -> str:
    msg = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    return f"internal error: {msg} ({REPORT})"


def describe(e: BaseException) -> str:
    """The one-line message for an exception raised while processing a file."""
    from .sourcefile import SourceError, os_error

    if debug():
        import traceback

        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    if isinstance(e, SourceError):
        return str(e)
    if isinstance(e, RecursionError):
        return "too deeply nested to analyse (recursion limit reached), skipped; nothing written"
    if isinstance(e, MemoryError):
        return "out of memory while analysing this file, skipped; nothing written"
    if isinstance(e, OSError):
        doing = "cannot write" if getattr(e, "filename", None) else "I/O error"
        return os_error(e, doing)
    return internal(e)


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def crashed(exitcode: int | None) -> str:
    """The message for a worker process that died while analysing a file."""
    if exitcode is not None and exitcode < 0:
        sig = -exitcode
        if sig == signal.SIGKILL:
            return f"analysis killed (signal {sig}, {signal_name(sig)}: out of memory?), skipped; nothing written"
        return f"parser crashed (signal {sig}, {signal_name(sig)}): too deeply nested or too long an expression for LibCST's native parser?, skipped; nothing written"
    return f"the worker process exited with status {exitcode} while analysing this file, skipped ({REPORT})"
