"""Suppression comments: ``# torchmend: ignore`` / ``# torchmend: ignore[TM501]`` on the
flagged line silences all findings there, or only the listed codes."""

from __future__ import annotations

import re

_SUPPRESS = re.compile(r"#\s*torchmend:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]+)\])?", re.I)


def filter_findings(findings: list, text: str) -> list:
    if "torchmend" not in text or not findings:
        return findings
    lines = text.splitlines()
    return [f for f in findings if not _suppressed(f, lines)]


def _suppressed(f, lines) -> bool:
    if not 1 <= f.line <= len(lines):
        return False
    m = _SUPPRESS.search(lines[f.line - 1])
    if not m:
        return False
    codes = m.group("codes")
    if not codes:
        return True
    wanted = {c.strip().upper() for c in codes.split(",")}
    return f.code.upper() in wanted or any(f.code.startswith(c) for c in wanted if c)
