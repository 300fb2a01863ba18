"""The methods of a large class, parsed one by one as queries reach them.

A class chunk (see ``source.py``) of a real model file is mostly methods no rule looks
at.  Such a class is parsed from its *spine*: the chunk's text with the body of each
plain method (``def``, decorated or not, whose body starts on the line after its
header) replaced by a string literal that opens after the header's ``:`` and spans the
body's lines, so that every line keeps its number and every column its offset.  The parser then gives the class,
its class-level statements and each method's decorators, name, parameters and return
annotation exactly as in the full parse; each method node is then replaced by a
:class:`FunctionDef` whose ``body``, ``end_lineno`` and ``end_col_offset`` are read from
the method's own text on first access.  It *is* an ``ast.FunctionDef`` (a subclass
named like it), so every walk, ``isinstance`` test and visitor sees the same tree as
after a full parse, and anything that reads the body parses it first: a query never
sees a stub.  The semantic model asks :func:`pending` before it reads a method's end
(a word search in the method's text range, the order of a class-level binding), so
that a method whose text holds nothing asked for is not parsed.

The cut is made at lines indented as the class body's first statement that start a
``def``, a decorator or other code, outside triple-quoted strings and line
continuations.  A body with a line at that indentation that does not start a
statement, or with code left of it (a docstring's text, or quotes miscounted), is not
left out: what such a body holds is not certain from its lines.  A method's text is
checked when it is parsed: it must be one ``def`` with the spine's name, line and
column, ending inside its text; otherwise ``LazyParseError`` is raised and the file is
parsed whole, as for a wrong chunk cut.  A class whose last statement is such a method
is a :class:`ClassDef` whose end is read from that method (which parses it).
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Optional

from .nodes import BASE
from .source import LazyParseError, _word, parse_at

__all__ = ["ClassDef", "FunctionDef", "lazify", "pending", "pending_class", "spine"]

# a line of a class body's own indentation (the newline before it) ``{indent}`` with
# something on it; the pattern is made per indentation
_MEMBER_LINE: dict = {}
_DEDENTED: dict = {}  # per indentation: the newline before a line with code left of it
_STRING_START = re.compile(r"[rRbBuUfF]{0,2}('''|\"\"\"|'|\")")


def _as_plain(node):
    """``__reduce__`` of the lazy node types: a plain node of the stdlib type, with every
    field and position read (which parses what is pending)."""
    fields = {f: getattr(node, f) for f in node._fields if hasattr(node, f)}
    attrs = {a: getattr(node, a) for a in node._attributes if hasattr(node, a)}
    return (_plain, (BASE[type(node)], fields, attrs))


def _plain(t: type, fields: dict, attrs: dict):
    n = t(**fields)
    for k, v in attrs.items():
        setattr(n, k, v)
    return n


def _lazy_copy(t: type, node, skip: tuple = ()):
    """A node of the lazy type ``t`` with the fields and start of ``node`` (but ``skip``),
    put in its ``__dict__`` (past the properties)."""
    new = t.__new__(t)
    d = new.__dict__
    for f in node._fields:
        if f not in skip and hasattr(node, f):
            d[f] = getattr(node, f)
    d["lineno"], d["col_offset"] = node.lineno, node.col_offset
    return new


class FunctionDef(ast.FunctionDef):
    """A method of a class parsed from its spine: ``body`` and its end position are
    parsed from the method's text on first access (see the module's docstring)."""

    # (the class keeps ast.FunctionDef's name: visitors dispatch on it)
    def _materialize(self) -> None:
        d = self.__dict__
        lz = d.get("_lz")
        if lz is None:
            return
        text, first_line, start, end = lz
        seg = text[start:end]
        if not seg.endswith("\n"):
            seg += "\n"
        try:
            body = parse_at("class _:\n" + seg, first_line - 1)
        except (SyntaxError, ValueError) as e:
            raise LazyParseError(f"method at line {first_line}: {e}") from None
        cls = body[0] if len(body) == 1 else None
        real = cls.body[0] if isinstance(cls, ast.ClassDef) and len(cls.body) == 1 else None
        if (type(real) is not ast.FunctionDef or real.name != self.name
                or real.lineno != self.lineno or real.col_offset != self.col_offset
                or real.end_lineno > d["_lz_last"]):
            raise LazyParseError(f"method at line {first_line} is not the spine's `{self.name}`")
        d["_lz_body"] = real.body
        d["_lz_end_lineno"] = real.end_lineno
        d["_lz_end_col_offset"] = real.end_col_offset
        del d["_lz"]

    def _get(self, key):
        d = self.__dict__
        if "_lz" in d:
            self._materialize()
        return d[key]

    def _set(self, key, value):
        if "_lz" in self.__dict__:
            self._materialize()  # set from outside (``ast.increment_lineno``): the rest stays right
        self.__dict__[key] = value

    body = property(lambda self: self._get("_lz_body"), lambda self, v: self._set("_lz_body", v))
    end_lineno = property(lambda self: self._get("_lz_end_lineno"), lambda self, v: self._set("_lz_end_lineno", v))
    end_col_offset = property(lambda self: self._get("_lz_end_col_offset"),
                              lambda self, v: self._set("_lz_end_col_offset", v))

    __reduce__ = _as_plain  # copies and pickles are plain FunctionDef nodes


FunctionDef.__name__ = FunctionDef.__qualname__ = "FunctionDef"
BASE[FunctionDef] = ast.FunctionDef


class ClassDef(ast.ClassDef):
    """A class whose last statement is a method parsed on first access: the class ends
    where that method ends (read from it, which parses it)."""

    def _end(self, key):
        got = self.__dict__.get("_lz_" + key)
        return got if got is not None else getattr(self.body[-1], key)

    def _set_end(self, key, value):
        self.__dict__["_lz_" + key] = value

    end_lineno = property(lambda self: self._end("end_lineno"), lambda self, v: self._set_end("end_lineno", v))
    end_col_offset = property(lambda self: self._end("end_col_offset"), lambda self, v: self._set_end("end_col_offset", v))

    __reduce__ = _as_plain


ClassDef.__name__ = ClassDef.__qualname__ = "ClassDef"
BASE[ClassDef] = ast.ClassDef




def pending(node) -> Optional[tuple[int, int, int, int]]:
    """``(start, end, first_line, last_line)`` of the text of a method not parsed yet
    (its decorators, header and body, with the blank and comment lines after it); None
    for any other node."""
    if type(node) is FunctionDef:
        lz = node.__dict__.get("_lz")
        if lz is not None:
            return lz[2], lz[3], lz[1], node.__dict__["_lz_last"]
    return None


def pending_class(node) -> Optional[tuple[int, int, int]]:
    """For a class whose last method is not parsed yet: ``(text_start, first_line,
    text_end)`` of that method's text (everything of the class before it is certainly
    inside the class; where the class ends is known once the method is parsed); None
    otherwise."""
    if type(node) is ClassDef:
        last = node.body[-1]
        lz = last.__dict__.get("_lz") if type(last) is FunctionDef else None
        if lz is not None:
            return lz[2], lz[1], lz[3]
    return None


def _skip_string(text: str, i: int, end: int) -> int:
    """The offset after the string literal whose prefix or quote starts at ``i``; -1
    when it does not close before ``end``."""
    m = _STRING_START.match(text, i, end)
    if m is None:
        return i + 1
    q = m.group(1)
    j = m.end()
    while True:
        k = text.find(q, j, end)
        if k < 0:
            return -1
        # a quote preceded by an odd number of backslashes is escaped (not in a raw string:
        # there it still cannot end the literal)
        b = k
        while b > j and text[b - 1] == "\\":
            b -= 1
        if (k - b) % 2 == 0:
            if len(q) == 1 and text.find("\n", j, k) >= 0:
                return -1  # a one-line string across lines: not what we thought
            return k + len(q)
        j = k + 1


# the characters a header's scan stops at (a string prefix is passed over with the name
# it may be part of: the quote after it starts the literal all the same)
_HEADER_STOP = re.compile(r"[()\[\]{}#'\":\n]")


def _header_colon(text: str, i: int, end: int) -> int:
    """The offset of the ``:`` that ends the ``def``/``class`` header starting at ``i``
    (outside brackets, strings and comments); -1 when there is none before ``end``."""
    depth = 0
    search = _HEADER_STOP.search
    while True:
        m = search(text, i, end)
        if m is None:
            return -1
        i = m.start()
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        elif ch == "#":
            nl = text.find("\n", i, end)
            if nl < 0:
                return -1
            i = nl
            continue
        elif ch == "'" or ch == '"':
            j = _skip_string(text, i, end)
            if j < 0:
                return -1
            i = j
            continue
        elif ch == ":":
            if depth == 0:
                return i
        elif depth == 0 and text[i - 1] != "\\":  # a newline
            return -1  # the header's line ended without a ':'
        i += 1


def spine(text: str, start: int, end: int, first_line: int, class_at: int, min_method: int = 400):
    """The spine of the class chunk ``text[start:end]`` (its first line ``first_line``,
    its ``class`` keyword at offset ``class_at``, after the decorators) and its lazy
    methods, ``[(def_line, indent, text_start, text_end, text_first_line,
    text_last_line)]``; None when the class is not worth it or cannot be cut."""
    if not text.startswith("class", class_at) or text.find("\t", start, end) >= 0:
        return None
    colon = _header_colon(text, class_at, end)
    if colon < 0:
        return None
    nl = text.find("\n", colon, end)
    rest = text[colon + 1 : nl].strip()
    if nl < 0 or (rest and not rest.startswith("#")):
        return None  # a one-line class body
    # the body's indentation: its first line with code
    i = nl + 1
    indent = None
    while i < end:
        e = text.find("\n", i, end)
        e = end if e < 0 else e
        line = text[i:e]
        s = line.lstrip(" ")
        if s and not s.startswith("#"):
            indent = len(line) - len(s)
            break
        i = e + 1
    if not indent:
        return None
    pat = _MEMBER_LINE.get(indent)
    if pat is None:
        pat = _MEMBER_LINE[indent] = re.compile(r"\n" + " " * indent + r"(?=[^\s#])")
    # the lines that start a member or a class-level statement
    starts = []
    rejected = []  # lines of the body's indentation that seem not to start a statement
    dq = sq = 0
    last = start
    pos = i - 1 if i > start else i
    for mm in pat.finditer(text, pos, end):
        off = mm.end() - indent
        dq += text.count('"""', last, off)
        sq += text.count("'''", last, off)
        last = off
        if dq % 2 or sq % 2 or (text[off - 2] == "\\" if off >= 2 else False) or text[mm.end()] in ")]}":
            rejected.append(off)
            continue
        starts.append(off)
    if len(starts) < 2:
        return None
    dedented = _DEDENTED.get(indent)
    if dedented is None:
        dedented = _DEDENTED[indent] = re.compile(r"\n {0,%d}(?=[^\s#])" % (indent - 1))
    bounds = starts + [end]
    out = []
    pieces = []
    cur = start
    at, at_line = start, first_line  # a line count kept as the cut moves down the text

    def line(off: int) -> int:
        nonlocal at, at_line
        at_line += text.count("\n", at, off)
        at = off
        return at_line

    k = 0
    n = len(starts)
    while k < n:
        off = starts[k]
        j = k
        while j < n and text.startswith("@", starts[j] + indent):
            j += 1  # decorators: the definition follows them
        if j >= n or not text.startswith("def", starts[j] + indent) or _word(text[starts[j] + indent + 3 : starts[j] + indent + 4]):
            k = j + 1 if j > k else k + 1
            continue
        def_off = starts[j] + indent
        seg_end = bounds[j + 1]
        colon = _header_colon(text, def_off, seg_end)
        if colon < 0:
            k = j + 1
            continue
        nl = text.find("\n", colon, seg_end)
        rest = text[colon + 1 : nl if nl >= 0 else seg_end].strip()
        if nl < 0 or (rest and not rest.startswith("#")) or seg_end - nl < min_method:
            k = j + 1
            continue  # a one-line body, or too short to be worth a parse of its own
        r = bisect.bisect_left(rejected, nl)
        if (r < len(rejected) and rejected[r] < seg_end) or dedented.search(text, nl, seg_end):
            # a line of the body at the class's indentation or left of it (in a string,
            # or a cut gone wrong): what the body holds is not certain from its lines
            k = j + 1
            continue
        # the spine: the text up to the header's ':', then a string literal over the
        # body's lines (read by the tokenizer twice as fast as empty lines)
        ends_nl = text[seg_end - 1] == "\n"
        body_lines = text.count("\n", nl + 1, seg_end) + (0 if ends_nl else 1)
        if body_lines < 1:
            k = j + 1
            continue
        pieces.append(text[cur : colon + 1])
        pieces.append(' """' + "\n" * body_lines + '"""' + ("\n" if ends_nl else ""))
        cur = seg_end
        seg_first = line(off)
        def_line = line(def_off)
        last_line = line(seg_end - 1)
        out.append((def_line, indent, off, seg_end, seg_first, last_line))
        k = j + 1
    if not out:
        return None
    pieces.append(text[cur:end])
    return "".join(pieces), out



def lazify(cls: ast.ClassDef, members: list, text: str) -> ast.ClassDef:
    """Replace the stub methods of ``cls`` (parsed from its spine) with lazy ones; the
    class itself is replaced (the node returned) when its last statement is one."""
    by_line = {m[0]: m for m in members}
    body = cls.body
    found = 0
    for idx, s in enumerate(body):
        mem = by_line.get(getattr(s, "lineno", None))
        if mem is None or type(s) is not ast.FunctionDef:
            continue
        if not (len(s.body) == 1 and isinstance(s.body[0], ast.Expr) and isinstance(s.body[0].value, ast.Constant)
                and isinstance(s.body[0].value.value, str) and not s.body[0].value.value.strip("\n")
                and s.col_offset == mem[1]):
            raise LazyParseError(f"method at line {s.lineno}: the spine is not what was cut")
        lz = _lazy_copy(FunctionDef, s, skip=("body",))
        d = lz.__dict__
        d["_lz"] = (text, mem[4], mem[2], mem[3])
        d["_lz_last"] = mem[5]
        body[idx] = lz
        found += 1
    if found != len(members):
        raise LazyParseError(f"class at line {cls.lineno}: {len(members) - found} cut method(s) not found")
    if type(body[-1]) is not FunctionDef:
        return cls
    return _lazy_copy(ClassDef, cls)
