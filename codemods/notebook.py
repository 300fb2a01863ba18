"""Jupyter notebooks (``.ipynb``): one virtual module of the code cells, mapped back.

A notebook is read with ``nbformat`` (``nbformat.reader.reads`` then
``nbformat.validate``): a file that is not nbformat 4 JSON, or whose cells cannot be read
(a list of objects with a ``cell_type`` and a ``source``), is one
:class:`~torchmend.sourcefile.SourceError` naming the cause; other schema violations that
Jupyter opens all the same (a markdown cell with ``outputs``) are let through.  Its code
cells are joined into one virtual module, each cell preceded by a marker comment (``#
torchmend-cell-<token> <index>``), so that the rules see the notebook as the kernel runs
it, top to bottom, and a position maps back to ``(cell, line)``.

IPython syntax never reaches the parser: a line magic (``%time f()``, ``x = %sx ls``), a
shell escape (``!pip install ...``, ``files = !ls``) and help (``?obj``, ``obj??``) at the
start of a statement becomes ``pass`` (same indentation) with a numbered marker comment,
and is put back byte for byte when the cell is written; a cell magic (``%%bash``,
``%%time``) keeps its whole cell out of the module (it is never edited).  A cell whose
first line of code is indented runs, as IPython runs it, without that indentation
(:func:`leading_indent`); it is put back on every line that had it when the cell is
written, and a finding's column counts it.  Markdown and raw
cells, outputs, metadata, key order, the JSON indentation and the trailing newline are
untouched: writing replaces only the text of the ``source`` values of the edited code cells
in the original JSON (lines that did not change keep their exact JSON spelling), and the
result is read again with nbformat and compared with the original, everything but those
sources, before anything is written.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

from .sourcefile import SourceError, syntax_error

SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


# --------------------------------------------------------------------------- JSON spans
_WS = " \t\n\r"


def _ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


_DECODER = json.JSONDecoder()


def _skip(s: str, i: int) -> int:
    """The end of the JSON value starting at ``i``."""
    return _DECODER.raw_decode(s, i)[1]


def _members(s: str, i: int):
    """(key, value start, value end) of the object at ``i`` (``s[i] == "{"``); the
    object's end is sent back as the generator's return value."""
    from json.decoder import scanstring

    if s[i] != "{":
        raise ValueError("not an object")
    i = _ws(s, i + 1)
    if s[i] == "}":
        return i + 1
    while True:
        if s[i] != '"':
            raise ValueError("expected a key")
        key, i = scanstring(s, i + 1)
        i = _ws(s, i)
        if s[i] != ":":
            raise ValueError("expected ':'")
        start = _ws(s, i + 1)
        end = _skip(s, start)
        yield key, start, end
        i = _ws(s, end)
        if s[i] == "}":
            return i + 1
        if s[i] != ",":
            raise ValueError("expected ','")
        i = _ws(s, i + 1)


def _elements(s: str, i: int):
    """(start, end) of each element of the array at ``i``."""
    if s[i] != "[":
        raise ValueError("not an array")
    i = _ws(s, i + 1)
    if s[i] == "]":
        return
    while True:
        end = _skip(s, i)
        yield i, end
        i = _ws(s, end)
        if s[i] == "]":
            return
        if s[i] != ",":
            raise ValueError("expected ','")
        i = _ws(s, i + 1)


def source_spans(text: str) -> list[Optional[tuple[int, int]]]:
    """For each cell of the notebook JSON ``text``: the (start, end) of its ``source``
    value in ``text`` (None if the cell has none)."""
    i = _ws(text, 0)
    out: list[Optional[tuple[int, int]]] = []
    for key, start, end in _members(text, i):
        if key != "cells":
            continue
        out = []
        for cs, _ce in _elements(text, start):
            span = None
            for k, vs, ve in _members(text, cs):
                if k == "source":
                    span = (vs, ve)
            out.append(span)
    return out


# --------------------------------------------------------------------------- magics
_MAGIC_START = re.compile(r"[ \t]*(?:[%!?]|[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*[%!])")
_HELP_END = re.compile(r"[ \t]*[A-Za-z_][\w.\[\]()'\"]*[ \t]*\?\??[ \t]*$")


def _candidate(line: str) -> bool:
    body = line.rstrip("\r\n")
    if not body.strip() or body.lstrip().startswith("#"):
        return False
    if _MAGIC_START.match(body):
        # ``x = !ls`` but not ``x != y`` or ``a %= b`` (those are Python)
        s = body.lstrip()
        if s[0] in "%!?":
            return not s.startswith("!=")
        return True
    return bool(_HELP_END.match(body))


def _at_statement_start(prefix: str) -> bool:
    """Whether code after ``prefix`` (complete lines) starts a new statement: not inside
    a string, brackets or a backslash continuation."""
    if not prefix:
        return True
    try:
        for _ in tokenize.generate_tokens(io.StringIO(prefix).readline):
            pass
    except tokenize.TokenError:
        return False
    except (SyntaxError, ValueError):  # invalid code before it: the parser will say so
        return True
    return True


# line magics and aliases IPython runs without their ``%`` in a one-line cell (automagic:
# ``pip install torch``, ``cd data``), where the line is not Python
_AUTOMAGIC = frozenset({
    "pip", "conda", "mamba", "micromamba", "cd", "ls", "ll", "pwd", "env", "set_env", "time", "timeit", "matplotlib",
    "load_ext", "reload_ext", "unload_ext", "run", "who", "whos", "history", "cat", "cp", "mv", "rm", "mkdir", "rmdir",
    "clear", "less", "man", "lsmagic", "magic", "pdb", "prun", "debug", "config", "reset", "store", "xmode", "alias",
    "bookmark", "dhist", "pushd", "popd", "dirs", "sx", "system", "sc", "pinfo", "pinfo2", "psource", "pycat",
})
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*")


def _automagic(source: str) -> bool:
    """``source``, a one-line cell, is one that IPython runs as a line magic without its
    ``%`` (it transforms a cell that way only when it is one line), and not Python."""
    line = source.strip()
    m = _FIRST_WORD.match(line)
    if m is None or m.group() not in _AUTOMAGIC or line[m.end():m.end() + 1] not in ("", " ", "\t"):
        return False
    try:
        compile(line, "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    return False  # Python (``ls``, ``time = 3``): read as such


def mask(source: str, tag: str, first_id: int) -> tuple[str, list[tuple[str, str]]]:
    """``source`` with its IPython lines replaced by ``pass  # <tag>m<id>`` (the
    statement's indentation), and (that indentation, the original line without its line
    end) for each, in id order."""
    lines = source.splitlines(keepends=True)
    if len(lines) == 1 and _automagic(source):
        ln = lines[0]
        body = ln.rstrip("\r\n")
        indent = ln[: len(ln) - len(ln.lstrip(" \t"))]
        return f"{indent}pass  # {tag}m{first_id}{ln[len(body):]}", [(indent, body)]
    if not any(_candidate(ln) for ln in lines):
        return source, []
    out: list[str] = []
    magics: list[str] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if _candidate(ln) and _at_statement_start("".join(out)):
            group = [ln]
            while group[-1].rstrip("\r\n").endswith("\\") and i + len(group) < len(lines):
                group.append(lines[i + len(group)])
            indent = ln[: len(ln) - len(ln.lstrip(" \t"))]
            for g in group:
                body = g.rstrip("\r\n")
                end = g[len(body):]
                out.append(f"{indent}pass  # {tag}m{first_id + len(magics)}{end}")
                magics.append((indent, body))
            i += len(group)
            continue
        out.append(ln)
        i += 1
    return "".join(out), magics


def _unmask(text: str, tag: str, magics: list[str], first_id: int, seen: set) -> str:
    rx = re.compile(rf"^([ \t]*)pass  # {re.escape(tag)}m(\d+)[ \t]*$", re.M)

    def put(m):
        k = int(m.group(2)) - first_id
        if not 0 <= k < len(magics) or k in seen:
            raise SourceError("internal error: a fix moved IPython magics of a notebook cell; nothing written")
        seen.add(k)
        indent, body = magics[k]
        # re-indented by a fix (moved into a block): the same shift for the magic
        return m.group(1) + body[len(indent):] if body.startswith(indent) else body

    return rx.sub(put, text)


# the lines of one cell that :meth:`Notebook.mended` blanks at most
MEND_TRIES = 5
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

# the marker comment before each cell of the virtual module: ``# <tag> <index>``, the tag
# this prefix and a hash of the notebook (with ``x``s added while the JSON holds it)
TAG_PREFIX = "torchmend-cell-"
_MARKER = re.compile(r"# " + re.escape(TAG_PREFIX) + r"[0-9a-f]+x* \d+")


def is_cell_marker(line: str) -> bool:
    """``line`` is the marker comment that starts a cell in a notebook's virtual module."""
    return _MARKER.fullmatch(line) is not None


def displayed(text: str, stmt: ast.stmt) -> bool:
    """``stmt``, a top-level expression statement of the virtual module ``text``, is the
    last statement of its cell and not ended by ``;``: the kernel displays its value (it
    is used, not dropped)."""
    lines = text.split("\n")
    end = stmt.end_lineno or stmt.lineno
    rest = lines[end - 1].encode("utf-8")[stmt.end_col_offset or 0:].decode("utf-8", "replace")
    if rest.split("#", 1)[0].strip():
        return False  # (``x.to(d);``: display suppressed, or more on the line)
    for ln in lines[end:]:
        if is_cell_marker(ln):
            return True
        if ln.strip() and not ln.lstrip().startswith("#"):
            return False
    return True


def leading_indent(source: str) -> tuple[str, str, frozenset, bool]:
    """What IPython runs of a cell whose first line of code starts with spaces or tabs
    (its ``leading_indent`` clean-up, for a cell pasted from inside a block): that
    prefix taken off every line that starts with it.  Returns ``(the code as it runs,
    the prefix, the 1-based lines that lost it, whether a line of text does not start
    with it)``; lines of whitespace only are left as they are (Python skips them)."""
    lines = source.splitlines(keepends=True)  # (as IPython splits a cell)
    first = next((ln for ln in lines if ln.strip()), None)
    m = re.match(r"[ \t]+", first) if first is not None else None
    if m is None:
        return source, "", frozenset(), False
    prefix = m.group(0)
    out, stripped, odd = [], set(), False
    for i, ln in enumerate(lines, 1):
        if ln.strip() and ln.startswith(prefix):
            out.append(ln[len(prefix):])
            stripped.add(i)
        else:
            out.append(ln)
            odd = odd or bool(ln.strip())
    return "".join(out), prefix, frozenset(stripped), odd


def _reindent(text: str, prefix: str) -> str:
    """:func:`leading_indent` undone on a cell a fix changed: ``prefix`` before every line
    that holds more than whitespace."""
    return "".join(prefix + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


# --------------------------------------------------------------------------- the notebook
@dataclass
class CodeCell:
    index: int  # among all cells, 0-based
    source: str
    start: int  # the virtual line of its first source line (1-based)
    magics: list[tuple[str, str]] = field(default_factory=list)
    first_magic: int = 0
    indent: str = ""  # the leading indentation IPython takes off (leading_indent)
    dedented: str = ""  # the source as it runs, without that indentation
    stripped: frozenset = frozenset()  # the lines (1-based) that lost it
    odd: bool = False  # a line of text without it (a string's continuation): not re-indentable


class Notebook:
    """A notebook read from ``raw`` (its bytes): the JSON text, the nbformat node, the
    code cells and the virtual module :attr:`text`."""

    def __init__(self, raw: bytes, path: str = ""):
        self.raw = raw
        self.path = path
        bom = raw.startswith(b"\xef\xbb\xbf")
        try:
            self.json = raw[3 if bom else 0:].decode("utf-8")
        except UnicodeDecodeError as e:
            raise SourceError(f"not valid nbformat: not UTF-8 JSON (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
        self.prefix = raw[:3] if bom else b""
        if not self.json.strip():
            # a zero-byte notebook (a placeholder a repository keeps): Jupyter and editors
            # open it as a new one, with no code; nothing in it to check or write
            self.nb, self.spans = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, []
        else:
            self.nb = self._read(self.json)
            try:
                self.spans = source_spans(self.json)
            except (ValueError, IndexError) as e:  # pragma: no cover - nbformat read the same JSON
                raise SourceError(f"not valid nbformat: {e}") from None
        cells = self.nb.get("cells", [])
        if len(self.spans) != len(cells):  # pragma: no cover
            raise SourceError("not valid nbformat: the cells could not be located")
        self.tag = TAG_PREFIX + hashlib.blake2b(raw, digest_size=4).hexdigest()
        while self.tag in self.json:
            self.tag += "x"
        parts: list[str] = []
        self.cells: list[CodeCell] = []
        line = 1
        nmagic = 0
        for i, c in enumerate(cells):
            if c.get("cell_type") != "code":
                continue
            src = c.get("source", "")
            if isinstance(src, list):  # pragma: no cover - nbformat rejoins lines
                src = "".join(src)
            if src.lstrip().startswith("%%"):
                continue  # a cell magic: the cell is not Python, kept whole
            run, indent, stripped, odd = leading_indent(src)
            masked, magics = mask(run, self.tag, nmagic)
            cell = CodeCell(i, src, line + 1, magics, nmagic, indent, run, stripped, odd)
            nmagic += len(magics)
            self.cells.append(cell)
            parts.append(f"# {self.tag} {i}\n")
            body = masked if masked.endswith("\n") or not masked else masked + "\n"
            parts.append(body)
            line += 1 + body.count("\n")
        self.text = "".join(parts)
        self._starts = [c.start for c in self.cells]
        self._marker = re.compile(rf"^# {re.escape(self.tag)} (\d+)\n", re.M)

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _read(text: str):
        import nbformat
        from nbformat.reader import NotJSONError

        try:
            nb = nbformat.reader.reads(text)
        except NotJSONError as e:
            cause = e.__cause__ or e.__context__
            if isinstance(cause, json.JSONDecodeError):
                raise SourceError(f"not valid nbformat: invalid JSON at line {cause.lineno} column {cause.colno}: {cause.msg}") from None
            raise SourceError("not valid nbformat: not JSON") from None
        except Exception as e:  # ValidationError, NBFormatError, a JSON value that is no notebook
            raise SourceError(f"not valid nbformat: {_first_line(e)}") from None
        major = nb.get("nbformat")
        if major != 4:
            raise SourceError(f"not valid nbformat: nbformat {major} notebooks are not supported (convert it with "
                              "`jupyter nbconvert --to notebook --nbformat 4`)")
        import copy
        import warnings

        try:
            # nbformat warns (on stderr, a traceback-like line) about cells without an id, which
            # nbformat 4.5 notebooks written by older tools lack: nothing the user asked about
            with warnings.catch_warnings():
                missing_id = getattr(nbformat.validator, "MissingIDFieldWarning", None)
                if missing_id is not None:
                    warnings.simplefilter("ignore", missing_id)
                # (on a copy: validate adds the missing ids to what it checks, and the
                # notebook read back after a fix is compared with the one read here)
                nbformat.validate(copy.deepcopy(nb))
        except Exception as e:
            # what Jupyter opens all the same (a markdown cell with ``outputs``, an ``id`` in
            # an nbformat 4.4 file: older tools and hand edits write them) is read: only the
            # cells' types and sources are, and only those sources are ever written
            if not _cells_readable(nb):
                raise SourceError(f"not valid nbformat: {_first_line(e)}") from None
        # (an empty name says nothing: some tools write ``"language_info": {"name": ""}``
        # beside a python3 kernelspec)
        meta = nb.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        info, spec = meta.get("language_info"), meta.get("kernelspec")
        lang = info.get("name") if isinstance(info, dict) else None
        if not lang:
            lang = spec.get("language") if isinstance(spec, dict) else None
        if lang and str(lang).lower() not in ("python", "python3", "ipython"):
            from .sourcefile import Skipped

            raise Skipped(f"a {lang} notebook, not Python: left alone")
        return nb

    # ------------------------------------------------------------------ positions
    def locate(self, vline: int) -> tuple[int, int]:
        """(cell number, 1-based among all cells as a notebook editor shows them; line
        in that cell) of a line of the virtual module; (0, vline) for a marker line."""
        c = self._cell_at(vline)
        if c is None:
            return 0, vline
        return c.index + 1, vline - c.start + 1

    def _cell_at(self, vline: int) -> Optional[CodeCell]:
        """The last cell starting at or above a line of the virtual module."""
        k = bisect.bisect_right(self._starts, vline) - 1
        return self.cells[k] if k >= 0 else None

    def column_shift(self, vline: int) -> int:
        """The columns IPython's clean-up took off the start of a line of the virtual
        module (:func:`leading_indent`): what a column there needs to point into the cell."""
        c = self._cell_at(vline)
        return len(c.indent) if c is not None and vline - c.start + 1 in c.stripped else 0

    def virtual_line(self, cell: int, line: int) -> int:
        for c in self.cells:
            if c.index + 1 == cell:
                return c.start + line - 1
        raise KeyError(cell)

    def cell(self, number: int) -> Optional[CodeCell]:
        return next((c for c in self.cells if c.index + 1 == number), None)

    # ------------------------------------------------------------------ writing back
    def split(self, text: str) -> dict[int, str]:
        """The sources of the code cells in the virtual module ``text`` (a fixed copy of
        :attr:`text`): cell index -> source, magics restored.  SourceError when a fix
        crossed or removed a cell boundary."""
        ms = list(self._marker.finditer(text))
        if [int(m.group(1)) for m in ms] != [c.index for c in self.cells] or (ms and ms[0].start() != 0):
            raise SourceError("internal error: a fix crossed a notebook cell boundary; nothing written")
        out: dict[int, str] = {}
        seen: set = set()
        for c, body in self._bodies(text, ms):
            if c.magics:
                before = len(seen)
                body = _unmask(body, self.tag, c.magics, c.first_magic, seen)
                if len(seen) - before != len(c.magics):
                    raise SourceError("internal error: a fix removed IPython magics of a notebook cell; nothing written")
                seen.clear()
            if not c.source.endswith("\n") and body.endswith("\n"):
                body = body[:-1]
            if c.indent:
                if body == c.dedented:
                    body = c.source
                elif c.odd:
                    raise SourceError(f"a fix changed cell {c.index + 1}, whose first line is indented and which holds"
                                      " lines without that indentation (IPython keeps them as they are): nothing written")
                else:
                    body = _reindent(body, c.indent)
            out[c.index] = body
        return out

    def _bodies(self, text: str, ms: list):
        """(cell, its text in ``text``) for each code cell, ``ms`` the cell markers."""
        for k, (c, m) in enumerate(zip(self.cells, ms)):
            end = ms[k + 1].start() if k + 1 < len(ms) else len(text)
            yield c, text[m.end():end]

    def masked_cells(self):
        """(cell number as an editor shows it, source with its IPython lines masked) of
        each code cell, as the analysis reads it."""
        for c, body in self._bodies(self.text, list(self._marker.finditer(self.text))):
            yield c.index + 1, body

    def mended(self, tries: int = MEND_TRIES) -> Optional[tuple[str, list[str], str, list[int]]]:
        """The virtual module with the lines that keep a cell from compiling made blank
        (as a kernel runs a notebook: a cell with a syntax error fails alone, the other
        cells run): ``(text, the cells' errors, the blanked lines' text, the cells'
        numbers as an editor shows them)``; each cell is
        compiled alone, and the line its error names is blanked, up to ``tries`` lines
        a cell.  None when no cell fails alone, or a cell does not compile after that."""
        ms = list(self._marker.finditer(self.text))
        out: list[str] = []
        errors: list[str] = []
        numbers: list[int] = []
        removed: list[str] = []
        pos = 0
        for c, body in self._bodies(self.text, ms):
            msg = syntax_error(body, c.index + 1)
            if msg is None:
                continue
            if not msg.startswith("syntax error"):
                return None
            lines = _LINES.findall(body)  # (the compiler's line breaks, not all of splitlines')
            for _ in range(tries + 1):  # (the last try only compiles)
                try:
                    compile("".join(lines), "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
                    break
                except SyntaxError as e:
                    k = (e.lineno or 0) - 1
                    if not 0 <= k < len(lines) or not lines[k].strip():
                        return None
                    removed.append(lines[k])
                    lines[k] = "\n" if lines[k].endswith("\n") else ""
                except (ValueError, RecursionError, MemoryError):
                    return None
            else:
                return None
            start = ms[self.cells.index(c)].end()
            out += [self.text[pos:start], "".join(lines)]
            pos = start + len(body)
            errors.append(msg)
            numbers.append(c.index + 1)
        if not errors:
            return None
        out.append(self.text[pos:])
        return "".join(out), errors, "".join(removed), numbers

    def changed_cells(self, text: str) -> dict[int, str]:
        """Only the cells whose source ``text`` changes."""
        return {i: s for i, s in self.split(text).items() if s != self._source(i)}

    def _source(self, index: int) -> str:
        for c in self.cells:
            if c.index == index:
                return c.source
        raise KeyError(index)

    def render(self, new_sources: dict[int, str]) -> bytes:
        """The notebook's bytes with the ``source`` of the given cells replaced, and
        nothing else changed (checked by reading the result back with nbformat)."""
        if not new_sources:
            return self.raw
        ascii_only = self.json.isascii()
        pieces = []
        pos = 0
        for idx in sorted(new_sources):
            s, e = self.spans[idx]
            pieces.append(self.json[pos:s])
            pieces.append(self._spell(self.json[s:e], new_sources[idx], ascii_only, s))
            pos = e
        pieces.append(self.json[pos:])
        new_json = "".join(pieces)
        self._check(new_json, new_sources)
        return self.prefix + new_json.encode("utf-8")

    def _spell(self, old: str, new: str, ascii_only: bool, at: int) -> str:
        """``new`` as a JSON ``source`` value in the style of ``old`` (a string, or a
        list of lines; the list's layout and the spelling of unchanged lines kept)."""
        if old.startswith('"'):
            return json.dumps(new, ensure_ascii=ascii_only)
        known: dict[str, str] = {}
        for s, e in _elements(old, 0):
            known.setdefault(json.loads(old[s:e]), old[s:e])
        lines = new.splitlines(keepends=True)
        toks = [known.get(ln) or json.dumps(ln, ensure_ascii=ascii_only) for ln in lines]
        if "\n" not in old:
            els = list(_elements(old, 0))
            if len(els) >= 2:  # an inline list: its separator kept
                return "[" + old[els[0][1]:els[1][0]].join(toks) + "]"
            if "\n" not in self.json or not toks:
                return "[" + ",".join(toks) + "]"
            line_start = self.json.rfind("\n", 0, at) + 1
            head = self.json[line_start:at]
            key_indent = head[: len(head) - len(head.lstrip(" \t"))]
            inner = "\n" + key_indent + self._indent_unit()
            return "[" + inner + ("," + inner).join(toks) + "\n" + key_indent + "]"
        i = 1
        while old[i] in _WS:
            i += 1
        lead = old[1:i]
        j = len(old) - 1
        while old[j - 1] in _WS:
            j -= 1
        tail = old[j:-1]
        if not toks:
            return "[]"
        return "[" + lead + ("," + lead).join(toks) + tail + "]"

    def _indent_unit(self) -> str:
        m = re.search(r"\{\s*?\n([ \t]+)\"", self.json)
        return m.group(1) if m else " "

    def _check(self, new_json: str, new_sources: dict[int, str]) -> None:
        import copy

        import nbformat

        try:
            got = nbformat.reader.reads(new_json)
        except Exception as e:  # pragma: no cover - would be torchmend's bug
            raise SourceError(f"internal error: the rewritten notebook does not read back ({_first_line(e)}); nothing written") from None
        want = copy.deepcopy(self.nb)
        for idx, src in new_sources.items():
            want["cells"][idx]["source"] = src
        if got != want:  # pragma: no cover
            raise SourceError("internal error: the rewritten notebook differs beyond the fixed cells; nothing written")


def _cells_readable(nb) -> bool:
    """``nb`` has what a notebook is read for: a list of cells, each an object with a
    ``cell_type`` string and a ``source`` string (or list of strings)."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return False
    for c in cells:
        if not isinstance(c, dict) or not isinstance(c.get("cell_type"), str):
            return False
        src = c.get("source")
        if not (isinstance(src, str) or (isinstance(src, list) and all(isinstance(x, str) for x in src))):
            return False
    return True


def _first_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    text = msg[0] if msg else type(e).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# --------------------------------------------------------------------------- diffs
def cell_diff(path: str, cell: int, old: str, new: str) -> bytes:
    """A readable unified diff of one cell (as Ruff prints notebooks): ``--- path:cell N``
    / ``+++ path:cell N`` and git's hunks of the cell's source."""
    import pygit2

    from .gitdiff import diff_path

    a = (old if old.endswith("\n") or not old else old + "\n").encode("utf-8")
    b = (new if new.endswith("\n") or not new else new + "\n").encode("utf-8")
    if a == b:
        return b""
    data = pygit2.Patch.create_from(a, b, old_as_path="x", new_as_path="x").data
    _, sep, body = data.partition(b"\n@@")
    name = f"{diff_path(path)}:cell {cell}".encode("utf-8", "surrogateescape")
    return b"--- " + name + b"\n+++ " + name + b"\n@@" + body


def notebook_diff(nb: Notebook, path: str, new_sources: dict[int, str]) -> bytes:
    return b"".join(cell_diff(path, i + 1, nb._source(i), s) for i, s in sorted(new_sources.items()))


# --------------------------------------------------------------------------- as a script
def script(raw: bytes, path: str = "") -> str:
    """The code cells in order as one Python script (what ``torchmend verify`` runs):
    IPython lines commented out, cell-magic cells left out (each says so)."""
    nb = Notebook(raw, path)
    out = []
    code_cells = {c.index: c for c in nb.cells}
    for i, c in enumerate(nb.nb.get("cells", [])):
        if c.get("cell_type") != "code":
            continue
        out.append(f"# %% cell {i + 1}\n")
        cc = code_cells.get(i)
        if cc is None:
            out.append(f"# (cell magic, not run: {c.get('source', '').lstrip().splitlines()[0]})\n")
            continue
        src = cc.dedented
        if cc.magics:
            masked, magics = mask(src, nb.tag, 0)
            rx = re.compile(rf"^([ \t]*)pass  # {re.escape(nb.tag)}m(\d+)[ \t]*$", re.M)
            src = rx.sub(lambda m: f"{m.group(1)}pass  # IPython: {magics[int(m.group(2))][1].strip()}", masked)
        out.append(src if src.endswith("\n") or not src else src + "\n")
    return "".join(out)
