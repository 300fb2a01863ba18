"""A file's stdlib ``ast``, parsed only as far as the rules need it.

Most of a real model file is code no rule looks at (layer definitions, weight
initialisation, output classes).  The source is cut at its top-level definitions into
*chunks*: a ``def`` or ``class`` (with its decorators) is one chunk, and a run of other
top-level statements (imports, assignments, loops, ``if __name__ == ...``) is another.
Statement chunks are always parsed; a definition is parsed when a query reaches it: a
rule asks for nodes whose text contains a word the definition's text contains, or a
name resolves to it.  Each chunk is parsed padded with newlines so that line numbers are
the file's, and column offsets are the file's because chunks start at line starts; the
chunks one query needs are parsed in one call, their texts joined at their own lines
(``parse_all``).

The cut is made where a new top-level statement certainly starts: a line that begins in
column 0 with ``def``/``class``/``@`` (definitions) or with code after a definition's
body, outside any triple-quoted string (an even number of ``\"\"\"`` and of ``'''`` before
it), not after a backslash continuation, not a closing bracket.  Should a cut still be
wrong, the chunk on either side does not parse: ``LazyParseError`` is raised and the
caller starts over with the whole file parsed at once (``lazy=False``), which is also the
reference the equivalence tests compare with.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Iterator, Optional

__all__ = ["Callees", "Chunk", "LazyParseError", "ParsedSource", "Words", "before_a_call", "begins_statement", "callee_hits",
           "callees", "char_col", "continues_a_line", "has_word", "line_starts", "pad", "parse_at", "reversed_text",
           "starts_statement", "words"]

# a line that starts a top-level definition (matched where ``_CODE_LINE_NL`` found a line)
_DEF_START = re.compile(r"(?:@|def\b|async[ \t]+def\b|class\b)")
# the name a definition chunk binds
_DEF_NAME = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)|^class[ \t]+(\w+)", re.M)
# the newline before a line that begins with code in column 0 (not blank, not a
# comment, not a closing bracket): the pattern that scans a whole file matches the
# newline before the line, a literal first character that the regex engine skips ahead
# to, four times faster than ``^`` with re.M
_CODE_LINE_NL = re.compile(r"\n[^\s#)\]}]")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LF = re.compile("\n")


def line_starts(text: str) -> list[int]:
    """The offset at which each line of ``text`` starts (``\r\n``, ``\r`` and ``\n``
    end lines, as Python's tokenizer sees them)."""
    # (a search of the newlines: a third faster than splitting the text into lines)
    return [0] + [m.end() for m in (_LF if "\r" not in text else _NEWLINE).finditer(text)]


_PAD_STRING = 2  # from this many lines on, padding is a string literal
# code further down a file than this many lines per character of its text is parsed at
# line 1 and its line numbers shifted, not padded to its line (``parse_at``)
SHIFT_RATIO = 8


def pad(lines: int) -> str:
    """Text of ``lines`` lines to put before code parsed on its own, so that its line
    numbers are the file's: from ``_PAD_STRING`` lines on, a string literal spanning
    them (one expression statement the caller drops), which the tokenizer reads about
    twice as fast as as many empty lines."""
    if lines < _PAD_STRING:
        return "\n" * lines
    return '"""' + "\n" * (lines - 1) + '"""\n'


def parse_at(code: str, line: int) -> list:
    """The statements of ``code`` parsed as if it started on ``line`` of a file (the
    padding's own statement left out); SyntaxError/ValueError as ``ast.parse``.  Far down
    a file, a short text is parsed at line 1 and its line numbers shifted (a walk of its
    nodes): the padding's lines cost the tokenizer more than the walk then."""
    if line - 1 > SHIFT_RATIO * len(code):
        body = ast.parse(code).body
        for st in body:
            ast.increment_lineno(st, line - 1)
        return body
    body = ast.parse(pad(line - 1) + code).body
    if line - 1 >= _PAD_STRING:
        del body[0]
    return body


def char_col(text: str, starts: list[int], line: int, col: int) -> int:
    """The character column of ``ast``'s UTF-8 byte column ``col`` on ``line`` (1-based)."""
    a = starts[line - 1]
    s = text[a : starts[line] if line < len(starts) else len(text)]
    if s.isascii():
        return col
    return len(s.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "replace"))


_DEF_KINDS = {"def": (ast.FunctionDef, ast.AsyncFunctionDef), "class": (ast.ClassDef,)}


def _one_definition(chunk: "Chunk", stmts: list) -> bool:
    """A definition chunk holds exactly one definition of its kind (code chunks: any)."""
    kinds = _DEF_KINDS.get(chunk.kind)
    return kinds is None or (len(stmts) == 1 and isinstance(stmts[0], kinds))


class LazyParseError(Exception):
    """A chunk did not parse on its own: the cut was wrong (or the file is invalid)."""


class Chunk:
    """A slice of the file: lines ``start_line`` .. ``end_line`` (1-based, inclusive),
    characters ``start`` .. ``end``.  ``kind`` is ``"code"``, ``"def"`` or ``"class"``;
    ``name`` the name a definition binds; ``stmts`` its statements once parsed."""

    __slots__ = ("start", "end", "start_line", "end_line", "kind", "name", "stmts", "def_line", "members")

    def __init__(self, start: int, end: int, start_line: int, end_line: int, kind: str, name: Optional[str]):
        self.start, self.end = start, end
        self.start_line, self.end_line = start_line, end_line
        self.kind, self.name = kind, name
        self.stmts: Optional[list[ast.stmt]] = None
        self.def_line = start_line  # the line of the ``def``/``class`` keyword
        self.members = None  # a class parsed from its spine: its lazy methods (members.py)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Chunk({self.kind} {self.name or ''} {self.start_line}-{self.end_line})"


class ParsedSource:
    """The text of one file and its ``ast`` statements, parsed chunk by chunk on demand
    (``lazy=True``) or all at once."""

    def __init__(self, text: str, lazy: bool = True, min_chars: int = 2000):
        self.text = text
        # a class chunk this long is parsed from its spine, its methods of a tenth of that
        # on their own (members.py); 0 (the tests' forced cut): every class and method
        self.min_class = 2 * min_chars
        self._word_chunks: dict = {}
        self._chunk_starts: Optional[list[int]] = None
        self._chunk_lines: Optional[list[int]] = None  # each chunk's first line (chunk_of_line)
        self.lazy = lazy
        self.chunks: list[Chunk] = self._cut(text, min_chars) if lazy else []
        if not self.chunks:
            n = _line_count(text)
            self.chunks = [Chunk(0, len(text), 1, max(n, 1), "code", None)]
            self.lazy = False
        self.parse_all([c for c in self.chunks if c.kind == "code"])

    # ----------------------------------------------------------------- parsing
    def parse_all(self, chunks: list[Chunk]) -> None:
        """Parse every chunk of ``chunks`` (in file order) not parsed yet, in one call of
        the parser: their texts are joined, each at its own line, with newlines between
        them.  Padding each chunk alone to its line costs as many newlines as lines
        above it, which on a long file is more than the parse itself.  A chunk's
        statements are the same either way (each chunk is whole statements); should the
        joined text not parse, each chunk is parsed alone, which names the chunk."""
        todo = [c for c in chunks if c.stmts is None]
        if len(todo) < 2 or not self.lazy:
            for c in todo:
                self.parse(c)
            return
        parts: list[str] = []
        line = 1
        pads = set()  # the lines where a padding string starts
        for c in todo:
            if c.start_line - line >= _PAD_STRING:
                pads.add(line)
            parts.append(pad(c.start_line - line))
            body = self._chunk_text(c)
            if not body.endswith("\n"):
                body += "\n"  # the file's last chunk; a newline ends its last statement
            parts.append(body)
            line = c.end_line + 1
        try:
            stmts = ast.parse("".join(parts)).body
        except (SyntaxError, ValueError):
            stmts = None
        if stmts is not None:
            k, n = 0, len(stmts)
            got = []
            for c in todo:
                mine = []
                while k < n and stmts[k].lineno <= c.end_line:
                    if stmts[k].lineno not in pads:
                        mine.append(stmts[k])
                    k += 1
                got.append(mine)
            # a statement across two chunks (a wrong cut that the next chunk's text
            # happens to close) makes each chunk alone fail: parsed alone below
            if k == n and all(
                _one_definition(c, mine) and (not mine or (mine[0].lineno >= c.start_line and mine[-1].end_lineno <= c.end_line))
                for c, mine in zip(todo, got)
            ):
                for c, mine in zip(todo, got):
                    self._lazify(c, mine)
                    c.stmts = mine
                return
        for c in todo:  # the joined text does not parse: find the chunk that does not
            self.parse(c)

    def parse(self, chunk: Chunk) -> list[ast.stmt]:
        if chunk.stmts is None:
            body = self.text[chunk.start : chunk.end]
            if not self.lazy:
                chunk.stmts = ast.parse(body).body  # SyntaxError: the file's own error
            else:
                try:
                    stmts = parse_at(self._chunk_text(chunk), chunk.start_line)
                except (SyntaxError, ValueError) as e:
                    raise LazyParseError(str(e)) from None
                if not _one_definition(chunk, stmts):
                    raise LazyParseError(f"chunk at line {chunk.start_line} is not one definition")
                self._lazify(chunk, stmts)
                chunk.stmts = stmts
        return chunk.stmts

    def _chunk_text(self, chunk: Chunk) -> str:
        """The text a chunk is parsed from: a large class's spine (its methods' bodies
        left out, see ``members.py``), any other chunk's own text."""
        if chunk.kind == "class" and chunk.end - chunk.start >= self.min_class:
            from .members import spine

            text = self.text
            class_at = chunk.start
            for _ in range(chunk.def_line - chunk.start_line):  # past the decorators' lines
                class_at = text.find("\n", class_at, chunk.end) + 1 or chunk.end
            got = spine(text, chunk.start, chunk.end, chunk.start_line, class_at, self.min_class // 10)
            if got is not None:
                chunk.members = got[1]
                return got[0]
        chunk.members = None
        return self.text[chunk.start : chunk.end]

    def _lazify(self, chunk: Chunk, stmts: list) -> None:
        if chunk.members:
            from .members import lazify

            stmts[0] = lazify(stmts[0], chunk.members, self.text)

    def parsed(self) -> Iterator[Chunk]:
        return (c for c in self.chunks if c.stmts is not None)

    def body(self) -> list[ast.stmt]:
        """Every top-level statement of the file (parses every chunk)."""
        self.parse_all(self.chunks)
        out: list[ast.stmt] = []
        for c in self.chunks:
            out.extend(c.stmts)
        return out

    def chunks_containing(self, words: tuple[str, ...]) -> list[Chunk]:
        """Chunks whose text contains one of ``words`` (each parsed)."""
        if len(words) == 1:
            got = self.holding(words[0])
        else:
            hit = set()
            for w in words:
                hit.update(self.holding(w))
            got = sorted(hit)
        chunks = self.chunks
        out = [chunks[i] for i in got]
        self.parse_all(out)
        return out

    def chunk_at(self, offset: int) -> int:
        """The index of the chunk whose text holds ``offset``; -1 when none does."""
        if self._chunk_starts is None:
            self._chunk_starts = [c.start for c in self.chunks]
        i = bisect.bisect_right(self._chunk_starts, offset) - 1
        return i if i >= 0 and offset < self.chunks[i].end else -1

    def chunk_of_line(self, line: int) -> Optional[Chunk]:
        """The chunk whose lines hold ``line`` (1-based); None when none does."""
        if self._chunk_lines is None:
            self._chunk_lines = [c.start_line for c in self.chunks]
        i = bisect.bisect_right(self._chunk_lines, line) - 1
        return self.chunks[i] if i >= 0 and line <= self.chunks[i].end_line else None

    def holding(self, word: str) -> list[int]:
        """Indices of the chunks whose text contains ``word`` (remembered per word: the
        rules ask for the same names many times)."""
        memo = self._word_chunks
        got = memo.get(word)
        if got is None:
            # one scan of the text, skipping to the end of each chunk a hit falls in (a
            # word occurs in few chunks: not a search per chunk)
            text, chunks = self.text, self.chunks
            got = []
            j = text.find(word)
            while j >= 0:
                i = self.chunk_at(j)
                if i >= 0 and j + len(word) <= chunks[i].end:
                    got.append(i)
                    j = text.find(word, chunks[i].end)
                else:  # between chunks, or running past its chunk's end: not in a chunk's text
                    j = text.find(word, j + 1)
            memo[word] = got
        return got

    def definitions(self) -> list[Chunk]:
        return [c for c in self.chunks if c.kind != "code"]

    # ----------------------------------------------------------------- cutting
    @staticmethod
    def _cut(text: str, min_chars: int = 2000) -> list[Chunk]:
        """The chunks of ``text``; [] when it is better parsed whole."""
        if "\r" in text or "\x0c" in text or len(text) < min_chars:
            return []  # CR line ends, form feeds, small files: not worth it
        # every line that begins with code in column 0, in one scan: the definitions'
        # first lines among them, and later where module code resumes after each
        lines = [m.start() + 1 for m in _CODE_LINE_NL.finditer(text)]
        starts = [p for p in lines if text[p] in "@dac" and _DEF_START.match(text, p)]
        if _DEF_START.match(text):
            starts.insert(0, 0)
        if not starts:
            return []
        cuts: list[tuple[int, str]] = []  # (offset, "def" | "code")
        dq = sq = 0  # triple quotes seen before the last cut examined
        last = 0
        pending_decorator = False
        for off in starts:
            dq += text.count('"""', last, off)
            sq += text.count("'''", last, off)
            last = off
            if dq % 2 or sq % 2 or _continued(text, off):
                continue
            if pending_decorator:
                if text.startswith("@", off):
                    continue  # another decorator of the same definition
                pending_decorator = False
                continue  # the def/class line of a decorated definition
            cuts.append((off, "def"))
            pending_decorator = text.startswith("@", off)
        if not cuts:
            return []
        # after each definition, module code may resume: cut where it does
        bounds = [c[0] for c in cuts] + [len(text)]
        full: list[tuple[int, str]] = []
        if cuts[0][0] > 0:
            full.append((0, "code"))
        for (off, _), nxt in zip(cuts, bounds[1:]):
            full.append((off, "def"))
            hdr = _DEF_NAME.search(text, off, nxt)
            if hdr is None:
                return []
            body_start = text.find("\n", hdr.start()) + 1
            if body_start <= 0 or body_start >= nxt:
                continue
            dq = sq = 0
            prev = off
            k = bisect.bisect_left(lines, body_start)
            while k < len(lines) and lines[k] < nxt:
                p = lines[k]
                k += 1
                dq += text.count('"""', prev, p)
                sq += text.count("'''", prev, p)
                prev = p
                if dq % 2 or sq % 2 or _continued(text, p):
                    continue
                full.append((p, "code"))
                break
        chunks: list[Chunk] = []
        line = 1
        offsets = [o for o, _ in full] + [len(text)]
        for (off, kind), end in zip(full, offsets[1:]):
            if end <= off:
                continue
            nlines = text.count("\n", off, end)
            name = None
            if kind == "def":
                hdr = _DEF_NAME.search(text, off, end)
                if hdr is None:
                    return []
                name = hdr.group(1) or hdr.group(2)
                kind = "class" if hdr.group(2) else "def"
            last_line = line + nlines - (1 if text.endswith("\n", off, end) else 0)
            chunk = Chunk(off, end, line, max(last_line, line), kind, name)
            if kind != "code":
                chunk.def_line = line + text.count("\n", off, hdr.start())
            chunks.append(chunk)
            line += nlines
        return chunks


def _continued(text: str, off: int) -> bool:
    """The line before offset ``off`` (a line start) ends with a backslash continuation."""
    if off == 0:
        return False
    i = off - 1  # the "\n"
    return i >= 1 and text[i - 1] == "\\"


def starts_statement(text: str, i: int) -> bool:
    """Only spaces and tabs stand between ``i`` and a line start, a ``:`` or a ``;``: a
    statement may start at ``i`` (textually; strings and comments are not told apart)."""
    k = i
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    return k == 0 or text[k - 1] in "\n\r:;"


def continues_a_line(text: str, i: int) -> bool:
    """Offset ``i`` (only spaces and tabs before it on its line) begins a line that goes
    on with the line above: that line holds no ``#`` and ends with an open bracket or a
    backslash.  Such a character at a line's end is the code's (the next line is inside
    its brackets, or joined to it) unless a string goes on past the line break, and then
    ``i`` is inside that string: no statement starts at ``i`` either way.  (False when it
    cannot be told so cheaply: a ``#`` may start a comment that hides the line's end.)"""
    k = i
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    if k < 2 or text[k - 1] != "\n":
        return False
    above = text[text.rfind("\n", 0, k - 1) + 1 : k - 1]
    return "#" not in above and above.rstrip(" \t\r\x0c").endswith(("(", "[", "{", "\\"))


def begins_statement(text: str, j: int) -> bool:
    """A statement may begin at ``j`` (``starts_statement``), or ``async`` standing
    where one may begin is all that comes before ``j`` (spaces between)."""
    if starts_statement(text, j):
        return True
    k = j
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    return k < j and text.endswith("async", 0, k) and starts_statement(text, k - 5)


_CALL_AFTER = re.compile(r"[\s)\\]*\(")  # what may stand between a callee and its ``(``
_BEFORE_CALLEE = " \t\\\n\r\x0c"  # what may stand between a ``.`` (or ``def``) and the name
_NOT_CALLED = (0, False, False)


def before_a_call(text: str, i: int) -> bool:
    """What follows offset ``i`` (the end of a name) is a ``(``, with only spaces, line
    breaks, continuations or closing brackets between: the name is written as a callee."""
    return _CALL_AFTER.match(text, i) is not None


_CALLEE_HITS: dict = {}


def callee_hits(names: tuple):
    """A ``find_named`` ``keep`` for calls by one of ``names``: the hits where a name is
    written as a callee (``before_a_call``), as the callee of every call node found by
    its name is; a statement or method where a name only stands otherwise (an import,
    an annotation, a comment, ``isinstance(x, Name)``) is not entered (kept per tuple of
    names)."""
    got = _CALLEE_HITS.get(names)
    if got is None:

        def got(text: str, start: int, end: int, hits) -> list:
            out = []
            for h in hits:
                for w in names:
                    if text.startswith(w, h) and before_a_call(text, h + len(w)):
                        out.append(h)
                        break
            return out

        _CALLEE_HITS[names] = got
    return got


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def has_word(text: str, word: str) -> bool:
    """``word`` stands in ``text`` as a word of its own, no letter, digit or ``_`` on
    either side (strings and comments count): a search for the literal, then a look at
    its neighbours (``\bword\b`` would be tried at every position)."""
    n = len(word)
    j = text.find(word)
    while j >= 0:
        if not (j and _word(text[j - 1])) and not (j + n < len(text) and _word(text[j + n])):
            return True
        j = text.find(word, j + n)
    return False


class Callees:
    """Where a text writes a name as a callee: the name, a whole word, followed by
    ``(`` with only spaces, line breaks, continuations or closing brackets between
    (``f (x)``, ``(obj.f)(x)``).  ``get(name)`` gives ``(places, after_dot, plain)``:
    how many such places there are (a ``def name(`` line is one), whether one follows a
    ``.`` (a method call; spaces between), whether one is no ``def name(``/``class
    name(`` line.  Strings and comments are not told apart: a superset of the calls an
    ``ast`` finds, but for one written with a comment between the name and its ``(``
    or ``.`` (inside brackets: ``f  # why\n (x)``), which is not seen.  Each name is
    looked for in the text on its own until the text has been asked about
    ``SCAN_LIMIT`` names; then every ``(`` of it is read once (a long file asks about
    many names: a search of the whole text per name grows with the square of its
    length).  Both ways give the same answers."""

    SCAN_LIMIT = 16

    def __init__(self, text: str):
        self.text = text
        self._got: dict = {}
        self._all: Optional[dict] = None

    def get(self, name: str) -> tuple:
        got = self._got.get(name)
        if got is None:
            if self._all is None and len(self._got) >= self.SCAN_LIMIT:
                self._all = self._index()
            got = self._all.get(name, _NOT_CALLED) if self._all is not None else self._scan(name)
            self._got[name] = got
        return got

    def _place(self, k: int) -> tuple:
        """(after a dot, not a definition line) for a callee starting at ``k``."""
        text = self.text
        i = k
        while i > 0 and text[i - 1] in _BEFORE_CALLEE:
            i -= 1
        if text[i - 1 : i] == ".":
            return True, True
        kw = 3 if text.endswith("def", 0, i) else 5 if text.endswith("class", 0, i) else 0
        header = kw and i < k and not (i - kw > 0 and _word(text[i - kw - 1]))
        return False, not header

    def _scan(self, name: str) -> tuple:
        text = self.text
        n = len(name)
        places, dot, plain = 0, False, False
        j = text.find(name)
        while j >= 0:
            if not (j > 0 and _word(text[j - 1])) and not (j + n < len(text) and _word(text[j + n])) \
                    and before_a_call(text, j + n):
                places += 1
                d, p = self._place(j)
                dot, plain = dot or d, plain or p
            j = text.find(name, j + 1)
        return (places, dot, plain) if places else _NOT_CALLED

    def _index(self) -> dict:
        # the text reversed: each ``(``, what may stand before it, the name before that
        # and what precedes the name (a ``.``, or ``def``/``class`` and a space) are one
        # match of a pattern that starts with a literal (fast to look for)
        text = self.text
        end = len(text)
        out: dict = {}
        get = out.get
        for m in _CALLEE_REVERSED.finditer(reversed_text(text)):
            k = end - m.end(1)
            name = text[k : end - m.start(1)]
            dot = m.start(2) >= 0
            plain = m.start(3) < 0  # not a ``def name(``/``class name(`` line
            old = get(name)
            out[name] = (1, dot, plain) if old is None else (old[0] + 1, old[1] or dot, old[2] or plain)
        return out


# reading backwards from a ``(``: the gap (``[\s)\\]*``), the name, then either the
# spaces and the ``.`` of a method call, or the spaces and ``def``/``class`` of a
# definition line (the keyword a word of its own)
_CALLEE_REVERSED = re.compile(r"\([\s)\\]*(\w+)(?:[ \t\\\n\r\x0c]*(\.)|[ \t\\\n\r\x0c]+(fed|ssalc)(?!\w))?")


class Words:
    """Where any of a fixed set of words stands in a text: one regular expression for
    them all (the longest first).  When every word ends with one character that stands
    nowhere else in them (``Linear(``, ``Conv2d(``) and they begin with several, the
    expression is of the words reversed and runs over the text reversed: it then starts
    with a literal, which the engine looks for quickly, not with a choice of first letters
    tried at every capital.  The spans are the same either way: each match ends at an
    occurrence of that character and holds no other, so the matches ending at each one
    are the same words, the longest chosen."""

    # at most this many words that begin with different characters are looked for one by
    # one (a search each, the fast one of ``str.find``), their places merged as the
    # pattern would match them: a choice of first letters is tried at every position
    FEW = 6

    def __init__(self, words: tuple):
        last = {w[-1] for w in words}
        self.backwards = len(last) == 1 and len({w[0] for w in words}) > 1 and not any(
            ch in w[:-1] for w in words for ch in last)
        ordered = sorted(words, key=len, reverse=True)
        self.few = tuple(ordered) if not self.backwards and 1 < len(words) <= self.FEW \
            and len({w[0] for w in words}) > 1 and all(words) else None
        self.pattern = re.compile("|".join(re.escape(w[::-1] if self.backwards else w) for w in ordered))
        self._last: tuple = (None, 0, 0, [])  # (text, start, end, spans) of the last call

    def spans(self, text: str, start: int = 0, end: Optional[int] = None) -> list:
        """``(start, end)`` of each match in ``text[start:end]``, in text order (a
        backward pattern runs over :func:`reversed_text`).  The answer for the
        text last asked about is kept: a rule's whole-file gate and the semantic model's
        lookup of the same words ask the same question of the same text, one after the
        other (the list is shared: not to be changed)."""
        n = len(text)
        end = n if end is None else end
        last = self._last
        if last[0] is text and last[1] == start and last[2] == end:
            return last[3]
        if self.few is not None:
            out = _merged_spans(self.few, text, start, end)
        elif not self.backwards:
            out = [m.span() for m in self.pattern.finditer(text, start, end)]
        else:
            r = reversed_text(text)
            out = [(n - m.end(), n - m.start()) for m in self.pattern.finditer(r, n - end, n - start)]
            out.reverse()
        self._last = (text, start, end, out)
        return out


def _merged_spans(ordered: tuple, text: str, start: int, end: int) -> list:
    """The spans the alternation of ``ordered`` (the longest first) matches in
    ``text[start:end]``: each place of each word, in text order, the longest at a place
    first, a place inside the last match taken left out (the pattern goes on after it)."""
    places = []
    for w in ordered:
        n = len(w)
        j = text.find(w, start, end)
        while j >= 0:
            places.append((j, -n))
            j = text.find(w, j + 1, end)
    places.sort()
    out = []
    last = start
    for j, n in places:
        if j >= last:
            last = j - n
            out.append((j, last))
    return out


_WORDS: dict = {}


def words(ws: tuple) -> Words:
    """The :class:`Words` of ``ws`` (kept per tuple: rules ask with fixed sets)."""
    got = _WORDS.get(ws)
    if got is None:
        got = _WORDS[ws] = Words(ws)
    return got


_CALLEES: list = [None]  # the Callees of the text last asked about
_REVERSED: list = [None, None]  # the text last asked about and its reverse


def reversed_text(text: str) -> str:
    """``text[::-1]``, kept for the text last asked about: the patterns that run over a
    file's reversed text (a rule's gate, the callees index, the semantic model's word
    lookups) ask for the same file one after another."""
    if _REVERSED[0] is not text:
        _REVERSED[:] = [text, text[::-1]]
    return _REVERSED[1]


def callees(text: str) -> Callees:
    """The :class:`Callees` of ``text``, kept for the text last asked about (a file's
    screens and its semantic model ask about the same text, one file after another)."""
    got = _CALLEES[0]
    if got is None or got.text is not text:
        got = _CALLEES[0] = Callees(text)
    return got


def _line_count(text: str) -> int:
    if "\r" not in text:
        return text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return len(_NEWLINE.findall(text)) + (0 if text.endswith(("\n", "\r")) or not text else 1)
