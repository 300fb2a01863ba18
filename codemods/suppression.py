"""Suppression comments: which findings the code's author silenced.

Line level, on any line of the statement a finding is in (a multi-line call, a ``for``
header spanning lines, ``a; b``: the *logical line* of Python's tokenizer):

* ``# noqa`` silences every finding there; ``# noqa: TM501, TM502`` the listed codes
  (codes of other tools, ``E501``, are left to them), as in Ruff and flake8;
* ``# torchmend: ignore`` silences every finding; ``# torchmend: ignore[TM501]`` the listed
  selectors: codes, prefixes (``TM2``), rule names (``softmax-before-cross-entropy``) or
  pitfalls (``softmax``).

File level, anywhere in the file: ``# torchmend: ignore-file`` (every finding) or
``# torchmend: ignore-file[TM102, ...]``.

Comments are read with :mod:`tokenize` (a ``# noqa`` inside a string is not one), and
only for a file that has findings and contains such a comment.  Unknown codes are
reported by :func:`comment_warnings`.  :func:`add_noqa` writes ``# noqa: CODE`` for
``--add-noqa``.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

_ANY = re.compile(r"noqa|torchmend\s*:", re.I)


_TM_DIGIT = re.compile(r"tm\d")


# a directive is a comment that says ``noqa`` or ``torchmend`` after its ``#``
# (``_NOQA``/``_TM``): one search of the text, its literal ``#`` first, tells the files
# that have none (most) without lower-casing them
_DIRECTIVE_HINT = re.compile(r"#\s*(?i:noqa|torchmend)")


def _may_warn(text: str) -> bool:
    """Could ``text`` hold a directive to warn about (a torchmend one, or a noqa naming
    a TM code)?  Substring tests first: most files have no noqa naming a TM code."""
    if _DIRECTIVE_HINT.search(text) is None:
        return False
    low = text.lower()
    if "torchmend" in low:
        return True
    i = low.find("noqa")
    while i >= 0:
        j = low.find("\n", i)
        if _TM_DIGIT.search(low, i, j if j >= 0 else len(low)):
            return True
        i = low.find("noqa", i + 4)
    return False


def _maybe(text: str) -> bool:
    """Could ``text`` hold a suppression comment?  (A substring test of the lower-cased
    text, many times faster than the case-insensitive patterns on a whole file.)"""
    low = text.lower()
    return "noqa" in low or "torchmend" in low
# what could deserve a warning: a torchmend directive, or a noqa naming a TM code
_WARN_HINT = re.compile(r"torchmend\s*:|noqa\s*:[^\n]*TM", re.I)
_NOQA = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[A-Za-z][A-Za-z0-9]*(?:(?:\s*,\s*|\s+)[A-Za-z][A-Za-z0-9]*)*)?)?", re.I)
_TM = re.compile(r"#\s*torchmend\s*:\s*(?P<kind>ignore-file|ignore)\b(?:\[(?P<codes>[^\]]*)\])?", re.I)
_TM_CODE = re.compile(r"^TM\d+$", re.I)


@dataclass
class Directive:
    line: int
    kind: str  # "noqa", "ignore" (both line level) or "file"
    codes: Optional[frozenset]  # None: every code
    unknown: tuple = ()  # selectors that name no rule
    invalid: bool = False  # ``# noqa:`` without codes


@dataclass
class Comments:
    directives: list[Directive] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)  # logical lines (first, last), sorted
    open_rows: set = field(default_factory=set)  # rows where a comment may be appended
    comment_at: dict = field(default_factory=dict)  # row -> (col, comment text)

    def extent(self, line: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.spans, (line, float("inf"))) - 1
        if i >= 0 and self.spans[i][0] <= line <= self.spans[i][1]:
            return self.spans[i]
        return line, line


def _codes(sels: Iterable[str], exact: bool) -> tuple[frozenset, tuple]:
    from .registry import all_rules, resolve

    known, unknown = set(), []
    codes = {r.code for r in all_rules()}
    for s in sels:
        s = s.strip()
        if not s:
            continue
        if exact:  # noqa: exact codes; other tools' codes are theirs
            if s.upper() in codes:
                known.add(s.upper())
            elif _TM_CODE.match(s):
                unknown.append(s)
                known.add(s.upper())  # still silences a rule of that code, should one exist
            else:
                known.add(s.upper())  # another tool's code: harmless, never a torchmend rule
            continue
        try:
            known |= resolve([s])
        except ValueError:
            unknown.append(s)
            if re.match(r"^[A-Za-z]+\d+$", s):
                known.add(s.upper())  # still silences a rule of that code, should one exist
    return frozenset(known), tuple(unknown)


def _directives(line: int, comment: str) -> list[Directive]:
    out = []
    for m in _TM.finditer(comment):
        kind = "file" if m.group("kind").lower() == "ignore-file" else "ignore"
        if m.group("codes") is None:
            out.append(Directive(line, kind, None))
        else:
            codes, unknown = _codes(re.split(r"[,\s]+", m.group("codes")), exact=False)
            out.append(Directive(line, kind, codes, unknown))
    for m in _NOQA.finditer(comment):
        if m.group("colon") is None:
            out.append(Directive(line, "noqa", None))
        elif m.group("codes") is None:
            out.append(Directive(line, "noqa", frozenset(), invalid=True))
        else:
            codes, unknown = _codes(re.split(r"[,\s]+", m.group("codes")), exact=True)
            out.append(Directive(line, "noqa", codes, unknown))
    return out


def parse(text: str) -> Comments:
    """The suppression comments of ``text`` and its logical lines."""
    out = Comments()
    start = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            tt, row = tok.type, tok.start[0]
            if tt == tokenize.COMMENT:
                out.comment_at[tok.start[0]] = (tok.start[1], tok.string)
                out.open_rows.add(row)
                if _ANY.search(tok.string):
                    out.directives.extend(_directives(row, tok.string))
            elif tt in (tokenize.NL, tokenize.NEWLINE):
                out.open_rows.add(row)
                if tt == tokenize.NEWLINE and start is not None:
                    out.spans.append((start, row))
                    start = None
            elif tt in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                pass
            elif start is None:
                start = row
    except (tokenize.TokenError, SyntaxError, ValueError):
        # the tokenizer gave up (the parser did not, or this is a fix pass's text):
        # every line is its own statement, comments found by their text
        out = Comments()
        for i, ln in enumerate(re.split(r"\r\n|\r|\n", text), 1):
            j = ln.find("#")
            if j >= 0 and _ANY.search(ln, j):
                out.directives.extend(_directives(i, ln[j:]))
        return out
    if start is not None:
        out.spans.append((start, start))
    return out


def _covers(d: Directive, code: str) -> bool:
    return d.codes is None or code in d.codes


def filter(findings: Sequence, text: str) -> list:
    """``findings`` (of ``text``) without the suppressed ones."""
    if not findings or not _maybe(text) or not _ANY.search(text):
        return list(findings)
    c = parse(text)
    if not c.directives:
        return list(findings)
    file_level = [d for d in c.directives if d.kind == "file"]
    by_line: dict[int, list[Directive]] = {}
    for d in c.directives:
        if d.kind != "file":
            by_line.setdefault(d.line, []).append(d)
    out = []
    for f in findings:
        if any(_covers(d, f.code) for d in file_level):
            continue
        first, last = c.extent(f.line)
        lines = range(min(first, f.line), max(last, f.line) + 1)
        if any(_covers(d, f.code) for ln in lines for d in by_line.get(ln, ())):
            continue
        out.append(f)
    return out


def comment_warnings(text: str) -> list[tuple[int, str]]:
    """``(line, message)`` for each suppression comment naming no known rule."""
    if not _may_warn(text) or not _WARN_HINT.search(text):
        return []
    out = []
    for d in parse(text).directives:
        for u in d.unknown:
            out.append((d.line, f"unknown rule code {u!r} in a suppression comment (see `torchmend rules`)"))
        if d.invalid:
            out.append((d.line, "`# noqa:` without codes suppresses nothing (write `# noqa` or `# noqa: TM201`)"))
    return out


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")


def add_noqa(text: str, findings: Sequence) -> tuple[str, int]:
    """``text`` with ``# noqa: CODE`` appended to the first line of each finding's
    statement where a comment can go (not inside a string, not after a backslash),
    merged into a ``# noqa: ...`` already there.  Returns (new text, directives added)."""
    if not findings:
        return text, 0
    c = parse(text)
    want: dict[int, set[str]] = {}
    for f in findings:
        first, last = c.extent(f.line)
        rows = [r for r in range(first, last + 1) if r in c.open_rows] or [f.line]
        want.setdefault(rows[0], set()).add(f.code)
    lines = [m.group(0) for m in _LINE.finditer(text)]
    if lines and lines[-1] == "":
        lines.pop()
    added = 0
    for row, codes in sorted(want.items()):
        if not 1 <= row <= len(lines):
            continue
        ln = lines[row - 1]
        body = ln.rstrip("\r\n")
        end = ln[len(body):]
        existing = c.comment_at.get(row)
        if existing is not None:
            col, comment = existing
            m = _NOQA.search(comment)
            if m and m.group("colon") is None:
                continue  # a bare noqa covers everything already
            if m and m.group("codes"):
                have = re.split(r"[,\s]+", m.group("codes").strip())
                new = [x for x in sorted(codes) if x.upper() not in {h.upper() for h in have}]
                if not new:
                    continue
                s, e = m.span("codes")
                comment = comment[:s] + ", ".join(have + new) + comment[e:]
                body = body[:col] + comment + body[col + len(existing[1]):]
                added += 1
                lines[row - 1] = body + end
                continue
        body = body.rstrip(" \t") + "  # noqa: " + ", ".join(sorted(codes))
        lines[row - 1] = body + end
        added += 1
    return "".join(lines), added
