"""How findings are printed: ``--output-format concise|full|json|json-lines|sarif|github|
gitlab|junit``, after Ruff's formats, plus ``--statistics``, ``--show-fixes`` and colour.

Everything here is a pure function from findings to text; the command line only picks
the function and the stream.  :func:`diagnostics` turns engine results into
:class:`Diagnostic` records (plain data: path, code, positions, severity, the fix's
applicability and its edits, read from the diff of that fix alone).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "junit")
TOOL_URI = "https://pypi.org/project/torchmend/"


# --------------------------------------------------------------------------- colour
def use_color(stream, environ=None) -> bool:
    """Colour on a terminal; ``NO_COLOR`` (any value) turns it off, ``FORCE_COLOR`` on
    (https://no-color.org, https://force-color.org); plain when piped."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    """ANSI styles, or nothing (``Style(False)``)."""

    CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36", "magenta": "35"}

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        return "\x1b[" + ";".join(self.CODES[s] for s in styles) + "m" + text + "\x1b[0m"


def color_diff(data: bytes, style: Style) -> bytes:
    """A diff with git's colours (headers bold, hunks cyan, removed red, added green)."""
    if not style.enabled:
        return data
    out = []
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        end = line[len(body):]
        text = body.decode("utf-8", "surrogateescape")
        if text.startswith(("diff --git", "index ", "--- ", "+++ ", "old mode", "new mode")):
            s = style(text, "bold")
        elif text.startswith("@@"):
            s = style(text, "cyan")
        elif text.startswith("+"):
            s = style(text, "green")
        elif text.startswith("-"):
            s = style(text, "red")
        else:
            s = text
        out.append(s.encode("utf-8", "surrogateescape") + end)
    return b"".join(out)


def plural(n: int, word: str, plural_form: Optional[str] = None) -> str:
    return f"{n} {word if n == 1 else (plural_form or word + 's')}"


# --------------------------------------------------------------------------- data
@dataclass
class Edit:
    """Replace the lines ``[row, end_row)`` (whole lines, 1-based) by ``content``."""

    content: str
    row: int
    end_row: int
    cell: Optional[int] = None  # a notebook's cell (rows are in that cell)


@dataclass
class Diagnostic:
    path: str  # as the engine named it
    code: str
    name: str
    message: str
    severity: str  # bug / warning / info
    line: int
    col: int
    end_line: int
    end_col: int
    applicability: Optional[str] = None  # "safe" / "unsafe" / None: no fix
    applied: bool = False
    diff: bytes = b""  # the diff of this fix alone, when known
    edits: list[Edit] = field(default_factory=list)
    cell: Optional[int] = None  # a notebook's cell, 1-based among all its cells; lines are in that cell

    @property
    def where(self) -> str:
        """``cell 3:`` for a notebook's finding, else nothing (goes before the line)."""
        return f"cell {self.cell}:" if self.cell else ""

    @property
    def fixable(self) -> bool:
        return self.applicability is not None


def edits_from_diff(data: bytes) -> list[Edit]:
    """Line edits of a one-file unified diff: each run of removed and added lines is one
    edit of the original text."""
    out: list[Edit] = []
    hunk = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
    cell_head = re.compile(rb"^--- .*:cell (\d+)$")
    cell: Optional[int] = None
    old = 0
    cur: Optional[list] = None  # [row, removed, added lines]

    def close():
        nonlocal cur
        if cur is not None:
            out.append(Edit("".join(cur[2]), cur[0], cur[0] + cur[1], cell))
            cur = None

    in_hunk = False
    last_kind = None
    for line in data.splitlines(keepends=True):
        c = cell_head.match(line.rstrip(b"\n"))
        if c:  # a notebook's cell diff (notebook.cell_diff)
            close()
            cell, in_hunk = int(c.group(1)), False
            continue
        m = hunk.match(line)
        if m:
            close()
            start, length = int(m.group(1)), int(m.group(2) or 1)
            old = start if length else start + 1  # an empty source range names the line before
            in_hunk = True
            continue
        if not in_hunk:
            continue
        text = line.decode("utf-8", "surrogateescape")
        if text.startswith("\\"):  # "\ No newline at end of file": the line before has none
            if last_kind == "+" and cur is not None and cur[2]:
                cur[2][-1] = cur[2][-1].rstrip("\n")
            continue
        kind, body = text[:1], text[1:]
        if kind == "-":
            if cur is None:
                cur = [old, 0, []]
            cur[1] += 1
            old += 1
        elif kind == "+":
            if cur is None:
                cur = [old, 0, []]
            cur[2].append(body)
        else:
            close()
            old += 1
        last_kind = kind
    close()
    return out


def diagnostics(results: Iterable, which: str = "unfixed") -> list[Diagnostic]:
    """Diagnostics of engine ``FileResult``s: the findings left for a human
    (``which="unfixed"``) or all of them (``"all"``)."""
    from .registry import names as rule_names

    names = rule_names()
    out = []
    for r in results:
        diffs = {(s.finding.cell, s.finding.line, s.finding.col, s.finding.code): s.diff for s in r.suggestions}
        for f in r.findings if which == "all" else r.unfixed():
            d = diffs.get((f.cell, f.line, f.col, f.code), b"")
            safety = f.safety if f.safety is not None else (f.fix.safety if f.fix is not None else None)
            out.append(Diagnostic(
                path=f.path or r.path, code=f.code, name=names.get(f.code, ""), message=f.message,
                severity=f.severity.value, line=f.line, col=f.col,
                end_line=f.end_line or f.line, end_col=f.end_col or f.col,
                applicability=None if safety is None else safety.value, applied=f.applied,
                diff=d, edits=edits_from_diff(d) if d else [], cell=f.cell or None,
            ))
    return out


# --------------------------------------------------------------------------- text formats
def _rel(path: str) -> str:
    from .gitdiff import display_path

    return display_path(path)


def _fix_note(d: Diagnostic, style: Style) -> str:
    if d.applied or d.applicability is None:
        return ""
    if d.applicability == "unsafe":
        return " " + style("(unsafe fix available: --unsafe-fixes)", "dim")
    return " " + style("(fix available)", "dim")


def _severity(d: Diagnostic, style: Style) -> str:
    color = {"bug": "red", "warning": "yellow", "info": "blue"}.get(d.severity, "bold")
    return style(f"[{d.severity}]", color)


def concise_line(d: Diagnostic, style: Style) -> str:
    cell = f"cell {d.cell}{style(':', 'cyan')}" if d.cell else ""
    loc = f"{style(_rel(d.path), 'bold')}{style(':', 'cyan')}{cell}{d.line}{style(':', 'cyan')}{d.col}{style(':', 'cyan')}"
    return f"{loc} {style(d.code, 'red', 'bold')} {_severity(d, style)} {d.message}{_fix_note(d, style)}"


def _indent_diff(diff: bytes, style: Style) -> str:
    text = color_diff(diff, style).decode("utf-8", "replace")
    return "".join("    " + ln + "\n" for ln in text.splitlines())


def render_concise(diags: Sequence[Diagnostic], style: Style, show_diffs: bool = False) -> str:
    out = []
    for d in diags:
        out.append(concise_line(d, style) + "\n")
        if show_diffs and d.diff:
            out.append("  suggested fix:\n" + _indent_diff(d.diff, style))
    return "".join(out)


def _cell_lines(path: str, cell: int) -> list[str]:
    """The lines of a notebook's cell (1-based among all cells)."""
    try:
        with open(path, "rb") as f:
            nb = json.loads(f.read().decode("utf-8-sig"))
        src = nb["cells"][cell - 1].get("source", "")
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return []
    return re.split(r"\r\n|\r|\n", "".join(src) if isinstance(src, list) else str(src))


def _source_lines(path: str, sources: Optional[dict]) -> list[str]:
    if sources and path in sources:
        text = sources[path]
    else:
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return []
    return re.split(r"\r\n|\r|\n", text)


def render_full(diags: Sequence[Diagnostic], style: Style, show_diffs: bool = False, sources: Optional[dict] = None) -> str:
    """Each finding with the lines it names and a caret under the flagged code."""
    out = []
    cache: dict[str, list[str]] = {}
    for d in diags:
        key = (d.path, d.cell)
        lines = cache.get(key)
        if lines is None:
            lines = cache[key] = _cell_lines(d.path, d.cell) if d.cell else _source_lines(d.path, sources)
        out.append(concise_line(d, style) + "\n")
        last = min(d.end_line, d.line + 4)
        width = len(str(last))
        bar = style(" " * width + " |", "blue")
        out.append(bar + "\n")
        for n in range(d.line, last + 1):
            if not 1 <= n <= len(lines):
                continue
            src = lines[n - 1].expandtabs(4) if "\t" not in lines[n - 1] else lines[n - 1]
            out.append(style(f"{n:>{width}} |", "blue") + " " + src + "\n")
            a = d.col if n == d.line else 1 + len(src) - len(src.lstrip())
            b = d.end_col if n == d.end_line else len(src) + 1
            if b <= a:
                b = a + 1
            marks = " " * (a - 1) + "^" * (b - a)
            out.append(bar + " " + style(marks, "red", "bold") + (" " + style(d.code, "red", "bold") if n == last else "") + "\n")
        out.append(bar + "\n")
        if show_diffs and d.diff:
            out.append("  suggested fix:\n" + _indent_diff(d.diff, style))
        out.append("\n")
    return "".join(out)


# --------------------------------------------------------------------------- machine formats
def _location(row: int, col: int) -> dict:
    return {"column": col, "row": row}


def to_json_obj(d: Diagnostic) -> dict:
    """One diagnostic as Ruff's JSON (``cell``, ``code``, ``end_location``, ``filename``,
    ``fix``, ``location``, ``message``, ``noqa_row``, ``url``) plus torchmend's ``name``
    and ``severity``.  The fix's edits are whole lines of the original text."""
    fix = None
    if d.applicability is not None:
        fix = {
            "applicability": d.applicability,
            "edits": [
                {"content": e.content, "location": _location(e.row, 1), "end_location": _location(e.end_row, 1),
                 **({"cell": e.cell} if e.cell is not None else {})}
                for e in d.edits
            ],
            "message": None,
        }
    return {
        "cell": d.cell,
        "code": d.code,
        "end_location": _location(d.end_line, d.end_col),
        "filename": os.path.abspath(d.path),
        "fix": fix,
        "location": _location(d.line, d.col),
        "message": d.message,
        "name": d.name,
        "noqa_row": d.line,
        "severity": d.severity,
        "url": None,
    }


def render_json(diags: Sequence[Diagnostic]) -> str:
    return json.dumps([to_json_obj(d) for d in diags], indent=2, sort_keys=True) + "\n"


def render_json_lines(diags: Sequence[Diagnostic]) -> str:
    return "".join(json.dumps(to_json_obj(d), sort_keys=True) + "\n" for d in diags)


def _uri(path: str) -> str:
    from urllib.parse import quote

    from .gitdiff import diff_path

    return quote(diff_path(path).encode("utf-8", "surrogateescape"), safe="/")


_SARIF_LEVEL = {"bug": "error", "warning": "warning", "info": "note"}


def render_sarif(diags: Sequence[Diagnostic], rules: Optional[Iterable] = None) -> str:
    """SARIF 2.1.0 (valid against the OASIS schema; tests/data/ holds it).  URIs are
    relative to the repository root (``%SRCROOT%``), as code-scanning services expect."""
    from . import __version__
    from .gitdiff import diff_root
    from .registry import all_rules

    rule_list = list(rules if rules is not None else all_rules())
    index = {r.code: i for i, r in enumerate(rule_list)}
    roots = sorted({diff_root(d.path) for d in diags}) or [os.getcwd()]
    results = []
    for d in diags:
        region = {"startLine": d.line, "startColumn": d.col, "endLine": d.end_line, "endColumn": d.end_col}
        res = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL.get(d.severity, "warning"),
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
                "region": region,
            }}],
        }
        if d.code in index:
            res["ruleIndex"] = index[d.code]
        if d.cell:  # a notebook: the region's lines are in that cell
            res["message"]["text"] = f"cell {d.cell}: {d.message}"
            res["properties"] = {"cell": d.cell}
        if d.edits and not d.cell:  # (a cell's line edits are no regions of the notebook's JSON)
            res["fixes"] = [{
                "description": {"text": f"{d.applicability} fix for {d.code}"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {"deletedRegion": {"startLine": e.row, "startColumn": 1, "endLine": e.end_row, "endColumn": 1},
                         "insertedContent": {"text": e.content}}
                        for e in d.edits
                    ],
                }],
            }]
        results.append(res)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchmend",
                "version": __version__,
                "informationUri": TOOL_URI,
                "rules": [{
                    "id": r.code,
                    "name": r.name,
                    "shortDescription": {"text": r.summary},
                    "fullDescription": {"text": r.doc()},
                    "help": {"text": r.doc()},
                    "defaultConfiguration": {"level": _SARIF_LEVEL.get(r.severity.value, "warning")},
                    "properties": {"pitfall": r.pitfall, "severity": r.severity.value},
                } for r in rule_list],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(roots[0])}},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


def _file_uri(directory: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(directory)).as_uri().rstrip("/") + "/"


def _gh_escape(s: str, prop: bool) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


_GH_LEVEL = {"bug": "error", "warning": "warning", "info": "notice"}


def render_github(diags: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands: ``::error file=...,line=...,col=...::...``,
    shown as annotations on the pull request (``file`` relative to the repository root,
    the message's path relative to the current directory)."""
    from .gitdiff import diff_path, printable

    out = []
    for d in diags:
        # file=: relative to the repository root, which is how GitHub names files
        props = ",".join(f"{k}={_gh_escape(str(v), True)}" for k, v in (
            ("title", f"torchmend ({d.code})"), ("file", printable(diff_path(d.path))), ("line", d.line), ("col", d.col),
            ("endLine", d.end_line), ("endColumn", d.end_col)))
        msg = f"{_rel(d.path)}:{d.where}{d.line}:{d.col}: {d.code} {d.message}"
        out.append(f"::{_GH_LEVEL.get(d.severity, 'error')} {props}::{_gh_escape(msg, False)}\n")
    return "".join(out)


_GITLAB_SEVERITY = {"bug": "major", "warning": "minor", "info": "info"}


def render_gitlab(diags: Sequence[Diagnostic]) -> str:
    """GitLab Code Quality report (a JSON array of issues with a stable fingerprint)."""
    out, seen = [], {}
    for d in diags:
        base = f"{_uri(d.path)}\0{d.code}\0{d.message}"
        n = seen[base] = seen.get(base, -1) + 1  # the same message twice in a file: distinct
        out.append({
            "type": "issue",
            "check_name": d.code,
            "description": f"{d.code}: {d.where.replace(':', ': ')}{d.message}",
            "categories": ["Bug Risk"],
            "fingerprint": hashlib.sha256(f"{base}\0{n}".encode("utf-8", "surrogateescape")).hexdigest()[:32],
            "severity": _GITLAB_SEVERITY.get(d.severity, "minor"),
            "location": {"path": _uri(d.path), "positions": {
                "begin": {"line": d.line, "column": d.col}, "end": {"line": d.end_line, "column": d.end_col}}},
        })
    return json.dumps(out, indent=2) + "\n"


def render_junit(diags: Sequence[Diagnostic], files: Sequence[str] = ()) -> str:
    """JUnit XML: a test suite per file, a failing test case per finding (and one passing
    case per clean file, so that the report counts every file checked)."""
    import xml.etree.ElementTree as ET

    by_file: dict[str, list[Diagnostic]] = {}
    for p in files:
        by_file.setdefault(p, [])
    for d in diags:
        by_file.setdefault(d.path, []).append(d)
    tests = sum(max(1, len(v)) for v in by_file.values())
    root = ET.Element("testsuites", name="torchmend", tests=str(tests), failures=str(len(diags)), errors="0")
    for path in sorted(by_file, key=lambda p: p.replace(os.sep, "/")):
        ds = by_file[path]
        rel = _rel(path)
        suite = ET.SubElement(root, "testsuite", name=rel, tests=str(max(1, len(ds))), failures=str(len(ds)), errors="0")
        if not ds:
            ET.SubElement(suite, "testcase", name="torchmend", classname=rel)
        for d in ds:
            case = ET.SubElement(suite, "testcase", name=f"torchmend.{d.code}", classname=rel, file=rel, line=str(d.line))
            fail = ET.SubElement(case, "failure", message=d.message, type=d.code)
            fail.text = f"{'cell %d, ' % d.cell if d.cell else ''}line {d.line}, col {d.col}, {d.message}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(fmt: str, diags: Sequence[Diagnostic], style: Style, *, show_diffs: bool = False,
           sources: Optional[dict] = None, files: Sequence[str] = ()) -> str:
    if fmt == "concise":
        return render_concise(diags, style, show_diffs)
    if fmt == "full":
        return render_full(diags, style, show_diffs, sources)
    if fmt == "json":
        return render_json(diags)
    if fmt == "json-lines":
        return render_json_lines(diags)
    if fmt == "sarif":
        return render_sarif(diags)
    if fmt == "github":
        return render_github(diags)
    if fmt == "gitlab":
        return render_gitlab(diags)
    if fmt == "junit":
        return render_junit(diags, files)
    raise ValueError(f"unknown output format {fmt!r} (one of {', '.join(FORMATS)})")


# --------------------------------------------------------------------------- summaries
def statistics(diags: Sequence[Diagnostic], style: Style, as_json: bool = False) -> str:
    """Ruff's ``--statistics``: one line per code, most frequent first."""
    counts: dict[str, list] = {}
    for d in diags:
        c = counts.setdefault(d.code, [0, d.name, False])
        c[0] += 1
        c[2] = c[2] or d.applicability == "safe"
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    if as_json:
        return json.dumps([{"code": k, "name": v[1], "count": v[0], "fixable": v[2]} for k, v in rows], indent=2) + "\n"
    if not rows:
        return ""
    w = max(len(str(v[0])) for _, v in rows)
    return "".join(
        f"{v[0]:>{w}}\t{style(k, 'red', 'bold')}\t{'[*]' if v[2] else '[ ]'} {v[1]}\n" for k, v in rows
    )


def show_fixes(results: Iterable, style: Style) -> str:
    """Ruff's ``--show-fixes``: the fixes applied, per file and rule."""
    from .registry import names as rule_names

    names = rule_names()
    per = [(r.path, r.applied) for r in results if r.applied]
    total = sum(sum(a.values()) for _, a in per)
    if not total:
        return ""
    out = [f"Fixed {plural(total, 'finding')}:\n"]
    for path, applied in per:
        out.append(f"- {style(_rel(path), 'bold')}:\n")
        for code, n in sorted(applied.items()):
            out.append(f"    {n} × {style(code, 'red', 'bold')} ({names.get(code, '')})\n")
    return "".join(out)
