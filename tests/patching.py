"""Applying a unified diff with unidiff (the tests' independent reader of our diffs)."""

from __future__ import annotations

import unidiff
from unidiff.constants import LINE_TYPE_NO_NEWLINE


def apply_patch(old: bytes, diff: bytes) -> bytes:
    """Apply a one-file diff to ``old``; checks context and removed lines as it goes."""
    ps = unidiff.PatchSet(diff.decode("utf-8"), metadata_only=False)
    assert len(ps) == 1, f"expected one file in the patch, got {len(ps)}"
    lines = old.decode("utf-8").splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for hunk in ps[0]:
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        out.extend(lines[pos:start])
        pos = start
        prev = None
        for ln in hunk:
            if ln.line_type == LINE_TYPE_NO_NEWLINE:
                if prev is not None and not prev.is_removed:  # the new side ends without a newline
                    out[-1] = out[-1].rstrip("\r\n")
                continue
            prev = ln
            if ln.is_context or ln.is_removed:
                assert lines[pos].rstrip("\r\n") == ln.value.rstrip("\r\n"), (lines[pos], ln.value)
                if ln.is_context:
                    out.append(lines[pos])
                pos += 1
            elif ln.is_added:
                out.append(ln.value)
    out.extend(lines[pos:])
    return "".join(out).encode("utf-8")
