"""The semantic model: one per file, built lazily, shared by every rule.

What it answers (each query parses only the code it needs, see ``source.py``):

* navigation: ``parent``, ``ancestors``, ``statement_of``, ``enclosing``, ``scope_of``;
* finding nodes: ``find(types, containing=words)`` -- the nodes of those types whose own
  text contains one of the words, in source order;
* names: ``resolve`` (LEGB lookup to the :class:`Binding` objects), ``reaching`` (the
  bindings that may hold at a use, in straight-line order), ``qualname``/``qualnames``
  (``nn.CrossEntropyLoss`` -> ``torch.nn.CrossEntropyLoss``, through imports and aliases),
  ``references`` (every use of a binding);
* functions: ``callee`` (the same-file function or method a call runs), ``call_sites``
  (every call of a same-file function or method, and whether that list is complete),
  ``param_values`` (what a parameter takes across them, defaults included), ``returns``;
* classes: ``class_info`` (methods, attributes bound on ``self``, bases),
  ``self_class`` (the class of a method's ``self``), ``derives_from``;
* values: ``origins`` -- where a value was made, following names, parameters bound at
  call sites, attributes on ``self``, container elements (``d["train"]``), builder
  functions' return values, conditional expressions.

Everything is on the stdlib ``ast``: detection never needs LibCST (which the engine
parses only to build a fix).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import enum
import os
import weakref
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional

from .members import pending, pending_class
from .nodes import BASE, TRY, child_nodes, descend, node_type
from .scope import Binding, BindingKind, Scope, ScopeKind, collect, collect_module_stmts
from .source import Chunk, LazyParseError, ParsedSource, _word, begins_statement, callees, char_col, line_starts
from .source import words as find_words

__all__ = ["CallSites", "ClassInfo", "Origin", "OriginKind", "ParamValues", "SemanticModel", "LazyParseError", "ValueUses"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# libraries whose ``from m import *`` is taken to bring a name no statement of the file
# binds (``from transformers import *`` then ``AutoModel``), beside torch and its kin
# (``torchvision.models``, ``torchaudio``)
_STAR_LIBRARIES = frozenset({"transformers"})
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPE_NODES = (*_DEFS, ast.ClassDef, ast.Lambda, *_COMPS)
_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 8
_NON_ASCII = __import__("re").compile(r"[^\x00-\x7f]")

_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements_bfs(node):
    """``node`` and the statements under it (with the except handlers and match cases
    that hold some), in the order ``ast.walk`` yields them: statements are never inside
    expressions, so the walk skips those."""
    from collections import deque

    q = deque([node])
    while q:
        n = q.popleft()
        yield n
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                q.extend(x for x in v if isinstance(x, _BLOCKS))


class OriginKind(enum.Enum):
    VALUE = "value"  # ``node`` is the expression that made the value (a call, a literal, ...)
    PARAMETER = "parameter"  # a parameter whose call sites are not all known
    IMPORT = "import"  # an imported name: ``qualname``
    DEFINITION = "definition"  # a function or class object of this file: ``node``
    ITEM = "item"  # an element of iterating ``node`` (a for / comprehension target), at ``path``
    PART = "part"  # a component of unpacking ``node`` (``a, b = f()``), at ``path``
    UNKNOWN = "unknown"  # could not be followed (``node`` is the expression)


@dataclass(frozen=True, eq=False)
class Origin:
    kind: OriginKind
    node: Optional[ast.AST]
    binding: Optional[Binding] = None
    path: tuple = ()
    qualname: Optional[str] = None

    def __repr__(self) -> str:  # pragma: no cover
        n = type(self.node).__name__ if self.node is not None else None
        return f"<Origin {self.kind.value} {n} {self.qualname or ''} {self.path}>"


@dataclass
class CallSites:
    """The calls of a same-file function or method.  ``complete``: no other caller can
    exist (every reference is one of these calls and nothing outside the file calls it)."""

    calls: list
    complete: bool
    method: bool = False  # the calls pass ``self`` implicitly


@dataclass
class ParamValues:
    """The expressions a parameter takes: ``(expr, call or None, is_default)``;
    ``complete`` when these are all (every call site known and mapped)."""

    values: list
    complete: bool


# ``torch.nn.Module`` methods that return the module itself
_MODULE_RETURNS_SELF = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16",
                                  "requires_grad_", "to_empty", "xpu", "share_memory"})


@dataclass
class ClassInfo:
    node: ast.ClassDef
    methods: dict  # name -> [FunctionDef]
    _attrs: object  # self attribute name -> [(statement, value or None, method)]; or a function computing it
    class_attrs: dict  # class-level name -> [value or None]

    @property
    def attrs(self) -> dict:
        """Attributes bound on ``self`` in the methods (computed on first use: it walks
        every method, and a method lookup needs only ``methods``)."""
        if callable(self._attrs):
            self._attrs = self._attrs()
        return self._attrs


@dataclass
class ValueUses:
    """What ``SemanticModel.value_uses`` found: the expressions holding the object where
    it is used, and the places where it escapes (``complete`` when there are none)."""

    uses: list
    escapes: list

    @property
    def complete(self) -> bool:
        return not self.escapes



def _text_start(n) -> tuple:
    """Where a node's text starts, ``(line, column)``: its first decorator's for a
    decorated definition (decorators stand above the ``def`` line)."""
    decos = getattr(n, "decorator_list", None)
    if decos:
        return min((n.lineno, n.col_offset), (decos[0].lineno, decos[0].col_offset))
    return n.lineno, n.col_offset


def _star_exports(other: "SemanticModel", name: str, depth: int = 0) -> tuple:
    """What ``from <other> import *`` binds to ``name``: ``(model, bindings)`` of the
    module-level bindings it takes (those of ``other``, or, when ``other`` binds no
    ``name`` itself, those its own star imports bring for certain:
    :meth:`SemanticModel.star_definitions`, two more modules deep at most), ``(None,
    [])`` when it binds none (a literal ``__all__`` that does not list it), ``None``
    when that cannot be told (an ``__all__`` that is no literal list or tuple, a star
    import of ``other`` that may bring it)."""
    alls = other.module_scope.get("__all__")
    if alls:
        if len(alls) != 1 or not isinstance(alls[0].value, (ast.List, ast.Tuple)) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in alls[0].value.elts):
            return None
        if name not in {e.value for e in alls[0].value.elts}:
            return None, []
    bs = other.module_scope.get(name)
    if bs:
        return (other, bs) if _after_star_imports(other, bs, depth) else None  # (else which binding runs last: not told)
    if not other.star_imports():
        return None, []
    if depth >= 2:
        return None
    got = other.star_definitions(name, depth=depth + 1)
    return got if got[0] is not None else None


def _after_star_imports(other: "SemanticModel", bs: list, depth: int = 0) -> bool:
    """What ``other`` binds to the name of ``bs`` once imported is one of ``bs``: each is a
    statement of its top level, and each star import of it that runs after one of them
    is of a module of the project that certainly does not bind that name (``from
    resnet_models import *``, then ``class Mynet``)."""
    stars = other.star_imports()
    if not stars:
        return True
    first = None
    for b in bs:
        st = other.statement_of(b.node) if b.node is not None else None
        if st is None or other.parent(st) is not other.module:
            return False
        first = min(first, (st.lineno, st.col_offset)) if first is not None else (st.lineno, st.col_offset)
    name = bs[0].name
    for st in stars:
        if (st.lineno, st.col_offset) < first:
            continue
        mod = other._resolve_from(st)
        path = other.project.module_file(mod, other.path) if mod and other.project is not None and other.path else None
        m = other.project.model_for(path) if path is not None else None
        if m is None or m is other or depth >= 2 or _star_exports(m, name, depth + 1) != (None, []):
            return False
    return True


class SemanticModel:
    def __init__(self, text: str, path: str = "", project=None, lazy: bool = True, package: Optional[str] = None,
                 lazy_min_chars: int = 2000):
        self.path = path
        self.text = text
        self.project = project
        self.package = package  # the dotted package this file belongs to (relative imports)
        self.source = ParsedSource(text, lazy=lazy, min_chars=lazy_min_chars)
        self.module = ast.Module(body=[], type_ignores=[])  # parent of every top-level statement
        self._parent: dict = {}
        self._by_type: dict = {}  # chunk -> {type: [nodes]}
        self._names_in: dict = {}  # scope node -> {name: [Name nodes]} (_names_within)
        self._scopes: dict = {}
        self._resolved: dict = {}
        self._origins: dict = {}
        self._sites: dict = {}
        self._named: dict = {}  # find_named's answers (types, names, words) -> nodes
        self._stmt_starts: dict = {}  # chunk -> where each of its statements starts (_adopt_around)
        self._classes: dict = {}
        self._attr_cache: dict = {}
        self._instance_busy: set = set()
        self._line_starts: Optional[list[int]] = None
        self._ascii = text.isascii()
        self._wide_lines: Optional[frozenset] = None  # lines with a non-ASCII character
        self.has_walrus = ":=" in text
        self.has_declarations = "global" in text or "nonlocal" in text
        self.module_scope = Scope(ScopeKind.MODULE, self.module, None, self)
        self._scopes[self.module] = self.module_scope
        for c in self.source.chunks:
            if c.stmts is not None:
                self._parse(c)  # (its nodes are indexed when a query walks it)
                collect_module_stmts(self.module_scope, c.stmts, self._resolve_from)
            else:
                kind = BindingKind.FUNCTION if c.kind == "def" else BindingKind.CLASS
                self.module_scope.add(
                    Binding(c.name, kind, self.module_scope, None, chunk=c, order=(c.end_line, 0))
                )
        # functions that declare ``global``/``nonlocal`` bind names of other scopes: read
        # them now, so that every module binding is known whatever is parsed later; they
        # are the only functions whose scopes hold such declarations (``declaring``: no
        # other function's code is searched for one)
        self.declaring: set = set()
        if self.has_declarations:
            declaring = self.statement_chunks(("global", "nonlocal"))
            if declaring:
                found = self.find(ast.Global, ast.Nonlocal, containing=("global", "nonlocal"), chunks=declaring)
                fns = [fn for fn in (self.enclosing(n, *_DEFS) for n in found) if fn is not None]
                self.declaring.update(fns)
                for fn in fns:
                    self.scope_for(fn)

    # ================================================================ chunks and nodes
    def _adopt_chunk(self, chunk: Chunk) -> None:
        """Record the parent of every node of a parsed chunk and index its nodes by type."""
        if chunk in self._by_type:
            return
        parent = self._parent
        by_type: dict = {}
        module = self.module
        for s in chunk.stmts:
            parent[s] = module
        base = BASE.get
        for n in descend(chunk.stmts, parent):
            t = type(n)
            t = base(t, t)
            lst = by_type.get(t)
            if lst is None:
                lst = by_type[t] = []
            lst.append(n)
        self._by_type[chunk] = by_type

    def _parse(self, chunk: Chunk) -> list:
        stmts = self.source.parse(chunk)
        if stmts and stmts[0] not in self._parent:
            for s in stmts:
                self._parent[s] = self.module
        return stmts

    def body(self) -> list:
        """Every top-level statement (parses the whole file)."""
        out = []
        for c in self.source.chunks:
            out.extend(self._parse(c))
        return out

    def statement_chunks(self, keywords: tuple[str, ...]) -> list:
        """The chunks, in file order, where a statement may begin with one of
        ``keywords`` (``global``, ``for``): the word at the start of a line or after a
        ``:`` or ``;`` (spaces between), or after ``async`` standing there, and followed
        by a space, a bracket or a line continuation (most occurrences of such words are
        parts of names: ``global_step``, ``forward``)."""
        text = self.text
        chunks = self.source.chunks
        found: dict = {}
        for word in keywords:
            j = text.find(word)
            while j >= 0:
                if text[j + len(word) : j + len(word) + 1] in (" ", "\t", "\x0c", "\\", "(", "[") and begins_statement(text, j):
                    i = self.source.chunk_at(j)
                    if i >= 0:
                        found[i] = chunks[i]
                j = text.find(word, j + 1)
        return [found[i] for i in sorted(found)]

    def find(self, *types: type, containing: tuple[str, ...] = (), chunks: Optional[list] = None) -> list:
        """Nodes of ``types`` whose own source text contains one of ``containing`` (every
        node of those types when empty), in source order.  Only chunks holding one of
        the words are parsed (``chunks``: only those, which the caller knows hold every
        node it asks for), and inside them only statements holding one are walked."""
        if chunks is not None:
            self.source.parse_all(chunks)
        else:
            chunks = self.source.chunks_containing(containing) if containing else list(self.source.chunks)
        out = []
        for c in chunks:
            stmts = self._parse(c)
            if not containing:
                self._adopt_chunk(c)
            if c in self._by_type:
                by_type = self._by_type[c]
                for t in types:
                    out.extend(n for n in by_type.get(t, ()) if not containing or self._contains(n, containing))
                continue
            # statements whose text holds none of the words are not entered
            for n in self._pruned(stmts, lambda st: self._contains(st, containing)):
                if node_type(n) in types and (isinstance(n, ast.stmt) or self._contains(n, containing)):
                    out.append(n)
        out.sort(key=lambda n: (n.lineno, n.col_offset))
        return out

    def _pruned(self, stmts: list, enter: Callable) -> Iterator:
        """The nodes under ``stmts`` (recording their parents), not entering a statement
        for which ``enter(stmt)`` is false (that statement is not yielded either)."""
        return descend(stmts, self._parent, enter)

    def _contains(self, node, words) -> bool:
        text = self.text
        lz = pending(node)
        if lz is not None and not any(text.find(w, lz[0], lz[1]) >= 0 for w in words):
            return False  # a method not parsed yet whose text holds none of the words: left unparsed
        pc = pending_class(node)
        if pc is not None:
            # a class whose last method is not parsed yet: its text up to that method is
            # certainly its own; only a word after that needs the class's end
            a = self._start_offset(node)
            if any(text.find(w, a, pc[0]) >= 0 for w in words):
                return True
            if not any(text.find(w, pc[0], pc[2]) >= 0 for w in words):
                return False
        a, b = self.offsets(node)
        return any(text.find(w, a, b) >= 0 for w in words)

    def definition_chunks(self, name: str) -> list[Chunk]:
        return [c for c in self.source.chunks if c.kind != "code" and c.name == name]

    # ================================================================ positions and text
    def _starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return self._line_starts

    def _char_col(self, line: int, col: int) -> int:
        if self._ascii:
            return col
        wide = self._wide_lines
        if wide is None:
            wide = self._non_ascii_lines()
        if line not in wide:
            return col
        return char_col(self.text, self._starts(), line, col)

    def _non_ascii_lines(self) -> frozenset:
        """The lines holding a non-ASCII character (only there do byte and character
        columns differ); found by one scan, as they are few."""
        if self.text.isascii():  # (most files: no scan)
            self._wide_lines = frozenset()
            return self._wide_lines
        starts = self._starts()
        text, search, out = self.text, _NON_ASCII.search, set()
        m = search(text)
        while m is not None:  # one search per such line: the next from the line after it
            line = bisect.bisect_right(starts, m.start())
            out.add(line)
            m = search(text, starts[line]) if line < len(starts) else None
        self._wide_lines = frozenset(out)
        return self._wide_lines

    def _start_offset(self, node) -> int:
        return self._starts()[node.lineno - 1] + self._char_col(node.lineno, node.col_offset)

    def offsets(self, node) -> tuple[int, int]:
        """Character offsets of ``node`` in the text."""
        starts = self._starts()
        if self._ascii:  # (columns are characters: the common case, without the calls below)
            a = starts[node.lineno - 1] + node.col_offset
            return a, starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
        a = self._start_offset(node)
        end_line = node.end_lineno or node.lineno
        b = starts[end_line - 1] + self._char_col(end_line, node.end_col_offset or 0)
        return a, b

    def position(self, node) -> tuple[int, int]:
        """(line, column), 1-based, columns in characters (as Ruff and flake8 print)."""
        return node.lineno, self._char_col(node.lineno, node.col_offset) + 1

    def segment(self, node) -> str:
        a, b = self.offsets(node)
        return self.text[a:b]

    # ================================================================ navigation
    def parent(self, node):
        p = self._parent.get(node)
        if p is None and node is not self.module:
            p = self._adopt_around(node)
        return p

    def _adopt_around(self, node):
        """The parent of a node no walk has recorded yet: descend to it from its top-level
        statement through the nodes whose span holds it (recording the parents of the
        children met on the way), not the whole chunk."""
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        key = (line, node.col_offset, node.end_lineno or line, node.end_col_offset or 0)
        parent = self._parent
        c = self.source.chunk_of_line(line)  # the one chunk whose lines hold the node's
        if c is None or c.stmts is None:
            return None
        stmts = c.stmts
        if len(stmts) > 32:  # (a long run of module-level statements: the one that may hold it)
            starts = self._stmt_starts.get(c)
            if starts is None:
                starts = self._stmt_starts[c] = [_text_start(st) for st in stmts]
            k = bisect.bisect_right(starts, key[:2]) - 1
            stmts = stmts[k:k + 1] if k >= 0 else []
        stack = [(self.module, st) for st in stmts]
        while stack:
            p, n = stack.pop()
            if n not in parent:
                parent[n] = p
            if n is node:
                return p
            ln = getattr(n, "lineno", None)
            lz = pending(n)
            if lz is not None:
                if not lz[2] <= key[0] <= lz[3]:
                    continue  # the node is in another method's text: this one stays unparsed
            elif ln is not None:
                start = _text_start(n)  # (decorators stand outside the ``def``'s span)
                pc = pending_class(n)
                if pc is not None and start <= key[:2] and key[0] < pc[1]:
                    pass  # in a class before its last method (not parsed yet): inside the class
                elif not (start <= key[:2] and key[2:] <= (n.end_lineno or ln, n.end_col_offset or 0)):
                    continue  # its span does not hold the node
            stack.extend((n, x) for x in child_nodes(n))
        if c not in self._by_type:  # not reached through the spans: index the chunk
            self._adopt_chunk(c)
        return parent.get(node)

    def ancestors(self, node) -> Iterator:
        p = self.parent(node)
        while p is not None and p is not self.module:
            yield p
            p = self.parent(p)
        if p is self.module:
            yield p

    def statement_of(self, node):
        """The innermost statement holding ``node`` (itself if it is one)."""
        n = node
        while n is not None and not isinstance(n, ast.stmt):
            n = self.parent(n)
        return n

    def enclosing(self, node, *types):
        for a in self.ancestors(node):
            if isinstance(a, types):
                return a
        return None

    def enclosing_function(self, node):
        """The function or lambda whose body holds ``node`` (None at module/class level)."""
        s = self.scope_of(node)
        while s is not None and s.kind not in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
            if s.kind in (ScopeKind.MODULE, ScopeKind.CLASS):
                return None
            s = s.parent
        return s.node if s is not None else None

    def block_of(self, stmt) -> Optional[list]:
        """The statement list holding ``stmt``."""
        p = self.parent(stmt)
        if p is self.module:
            for c in self.source.chunks:
                if c.stmts and stmt in c.stmts:
                    return self._module_block(c, stmt)
            return None
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(p, name, None)
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
        return None

    def _module_block(self, chunk, stmt) -> list:
        """Every top-level statement (the module's block holds the definitions too)."""
        return self.body()

    # ================================================================ scopes
    def scope_of(self, node) -> Scope:
        """The scope in which ``node`` is evaluated."""
        child = node
        below = None  # the node under ``child`` on the way up
        for anc in self.ancestors(node):
            if isinstance(anc, _SCOPE_NODES) and self._inside(anc, child, below):
                return self.scope_for(anc)
            below, child = child, anc
        return self.module_scope

    @staticmethod
    def _inside(anc, child, below) -> bool:
        # (``child`` is a child of ``anc``: of a def's or a class's children, only the
        # statements of its body are statements)
        if isinstance(anc, _DEFS):
            if child is anc.args:
                return isinstance(below, ast.arg)  # a parameter name, not a default
            return isinstance(child, ast.stmt)
        if isinstance(anc, ast.ClassDef):
            return isinstance(child, ast.stmt)
        if isinstance(anc, ast.Lambda):
            if child is anc.args:
                return isinstance(below, ast.arg)
            return child is anc.body
        # comprehension: all but the first iterable
        gens = anc.generators
        if child is gens[0]:
            return below is not gens[0].iter
        return True

    def scope_for(self, node) -> Scope:
        """The scope a function/class/lambda/comprehension node opens."""
        s = self._scopes.get(node)
        if s is None:
            if isinstance(node, _DEFS):
                kind = ScopeKind.FUNCTION
            elif isinstance(node, ast.ClassDef):
                kind = ScopeKind.CLASS
            elif isinstance(node, ast.Lambda):
                kind = ScopeKind.LAMBDA
            else:
                kind = ScopeKind.COMPREHENSION
            s = Scope(kind, node, self.scope_of(node), self)
            self._scopes[node] = s
            collect(s, self._resolve_from)
        return s

    def _resolve_from(self, node: ast.ImportFrom) -> Optional[str]:
        if not node.level:
            return node.module
        pkg = self.package
        if pkg is None and self.project is not None:
            pkg = self.project.package_of(self.path)
        if pkg is None:
            return None
        parts = pkg.split(".") if pkg else []
        up = node.level - 1
        if up > len(parts):
            return None
        base = parts[: len(parts) - up] if up else parts
        if node.module:
            base = base + node.module.split(".")
        return ".".join(base) or None

    # ================================================================ names
    def lookup(self, scope: Scope, name: str) -> list[Binding]:
        """The bindings ``name`` refers to from ``scope`` (Python's LEGB rule)."""
        s = scope
        first = True
        while s is not None:
            if name in s.globals:
                return self.module_scope.get(name)
            if name in s.nonlocals:
                s = s.parent
                while s is not None and s.kind is ScopeKind.CLASS:
                    s = s.parent
                first = False
                continue
            if s.kind is ScopeKind.CLASS and not first:
                s = s.parent
                continue
            got = s.get(name)
            if got:
                return got
            first = False
            s = s.parent
        return []

    def resolve(self, name: ast.Name) -> list[Binding]:
        got = self._resolved.get(name)
        if got is None:
            got = self._resolved[name] = self.lookup(self.scope_of(name), name.id)
        return got

    def reaching(self, name: ast.Name) -> list[Binding]:
        """The bindings that may hold where ``name`` is read.  In the scope of the use:
        the last binding before it that certainly runs first (in a block enclosing the
        use) and every later one before the use; bindings after the use inside a loop
        around it too (the next iteration).  From another scope (a global read in a
        function): every binding."""
        bs = self.resolve(name)
        if len(bs) <= 1:
            return bs
        use_scope = self.scope_of(name)
        if bs[0].scope is not use_scope:
            return bs
        pos = (name.lineno, name.col_offset)
        before = [b for b in bs if b.order <= pos]
        if not before:
            return bs
        before.sort(key=lambda b: b.order)
        out = []
        dom = None
        for b in reversed(before):
            if self._exclusive(b, name):
                continue  # the other branch of an ``if`` around the use
            out.append(b)
            if self._dominates(b, name):
                dom = b
                break
        loops = [a for a in self.ancestors(name) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))]
        if loops:
            outer = loops[-1]
            a, z = (outer.lineno, outer.col_offset), (outer.end_lineno, outer.end_col_offset)
            for b in bs:
                if b.order > pos and a <= b.order <= z and self.scope_of_binding(b) is use_scope:
                    # a later binding reaches the use through the back edge of the innermost
                    # loop holding both, unless a binding that dominates the use runs inside
                    # that loop first (each iteration rebinds the name before the use)
                    inner = next(lp for lp in loops if _spans(lp, b.order))
                    if dom is not None and _spans(inner, dom.order):
                        continue
                    out.append(b)
        return out or bs

    def scope_of_binding(self, b: Binding) -> Scope:
        return b.scope

    def _dominates(self, b: Binding, use) -> bool:
        """The statement of ``b`` is a statement of a block that (transitively) holds
        ``use``, and is not a loop/with header binding of a loop around it."""
        stmt = b.stmt
        if stmt is None:
            return b.kind is BindingKind.PARAMETER
        if b.kind is BindingKind.PARAMETER:
            return True
        if b.kind in (BindingKind.FOR_TARGET, BindingKind.COMPREHENSION_TARGET):
            return any(a is stmt for a in self.ancestors(use))
        # the statement must stand in the very block that holds (a statement holding) the
        # use: an ``if``'s body does not dominate its ``else``, a ``try``'s not its handlers
        block = self.block_of(stmt)
        ids = {id(x) for x in block} if block is not None else ()
        for a in self.ancestors(use):
            if a is stmt:
                return b.kind is BindingKind.WITH_TARGET or b.kind is BindingKind.FOR_TARGET
            if id(a) in ids:
                return True
        return False

    def _exclusive(self, b: Binding, use) -> bool:
        """``b`` is bound in one branch of an ``if`` and ``use`` sits in the other, and no
        loop of the scope encloses that ``if`` (which could run the other branch first)."""
        stmt = b.stmt
        if stmt is None:
            return False
        up = {id(a) for a in self.ancestors(use)}
        child = stmt
        for a in self.ancestors(stmt):
            if isinstance(a, _SCOPE_NODES):
                return False
            if id(a) in up:
                if not isinstance(a, ast.If):
                    return False
                child_u = use
                while self.parent(child_u) is not a:
                    child_u = self.parent(child_u)
                if child_u is a.test or any(x is child for x in a.body) == any(x is child_u for x in a.body):
                    return False
                for o in self.ancestors(a):
                    if isinstance(o, _SCOPE_NODES):
                        break
                    if isinstance(o, (ast.For, ast.AsyncFor, ast.While)):
                        return False
                return True
            child = a
        return False

    def qualnames(self, expr, _depth: int = 0) -> set[str]:
        """Dotted names an expression may refer to, through imports and simple aliases
        (``CE = nn.CrossEntropyLoss``); builtins as ``builtins.X``; empty if unknown."""
        if _depth > _MAX_DEPTH:
            return set()
        if isinstance(expr, ast.Name):
            bs = self.resolve(expr)
            if not bs:
                if expr.id in _BUILTINS:
                    return {f"builtins.{expr.id}"}
                for mod in self.module_scope.star_imports:
                    if mod.startswith("torch"):
                        return {f"{mod}.{expr.id}"}
                return self._star_qualnames(expr.id, _depth + 1)
            out: set[str] = set()
            for b in bs:
                if b.kind in (BindingKind.IMPORT, BindingKind.FROM_IMPORT):
                    if b.qualname is None:
                        return set()
                    out.add(b.qualname)
                elif b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, (ast.Name, ast.Attribute)) and len(bs) == 1:
                    out |= self.qualnames(b.value, _depth + 1)
                elif b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, ast.IfExp) and len(bs) == 1:
                    # ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``: either
                    either = [self.qualnames(v, _depth + 1) for v in (b.value.body, b.value.orelse)]
                    if not all(either):
                        return set()
                    out |= either[0] | either[1]
                else:
                    return set()
            return out
        if isinstance(expr, ast.Attribute):
            return {f"{q}.{expr.attr}" for q in self.qualnames(expr.value, _depth + 1)}
        return set()

    def _star_qualnames(self, name: str, _depth: int = 0) -> set[str]:
        """The dotted names of ``name``, which no statement of this file binds, when a
        ``from m import *`` of a module of the project brings it (``from utils import *``
        where utils.py has ``import torch``), or of torch or transformers (the name in it): what that module's own imports (or, in
        turn, its ``from torch.nn import *``) make of it.  Empty when unknown: no project,
        the module binds it otherwise (a function, an assignment), keeps it out of a
        literal ``__all__``, or cannot be read.  The last star import that exports the
        name is the one Python's binding leaves (names with ``_`` are not exported); one
        of a module that certainly binds no such name (read through its own star
        imports: ``from models import *`` after ``from utils import *``) is passed over."""
        return self._star_names(name, _depth) or set()

    def _star_names(self, name: str, _depth: int) -> Optional[set]:
        """:meth:`_star_qualnames`, with None for unknown and an empty set for "none of the
        file's star imports binds it"."""
        if self.project is None or name.startswith("_") or _depth > _MAX_DEPTH:
            return None
        for mod in reversed(self.module_scope.star_imports):
            if mod.startswith("torch") or mod.split(".", 1)[0] in _STAR_LIBRARIES:
                return {f"{mod}.{name}"}
            path = self.project.module_file(mod, self.path)
            other = self.project.model_for(path) if path is not None else None
            if other is None:
                return None  # (an installed package, or unreadable: anything)
            exported = other.module_scope.bindings.get("__all__")
            if exported:
                listed = _literal_strings(exported[-1].value) if len(exported) == 1 else None
                if listed is None:
                    return None
                if name not in listed:
                    continue
            bs = other.module_scope.bindings.get(name)
            if not bs:
                got = other._star_names(name, _depth + 1)
                if got is None or got:
                    return got
                continue  # (that module binds no such name, nor do its own star imports)
            if any(b.kind not in (BindingKind.IMPORT, BindingKind.FROM_IMPORT) or b.qualname is None for b in bs):
                return None
            return {b.qualname for b in bs}
        return set()

    def qualname(self, expr) -> Optional[str]:
        qs = self.qualnames(expr)
        return next(iter(qs)) if len(qs) == 1 else None

    def is_qualname(self, expr, *names: str) -> bool:
        return bool(self.qualnames(expr) & set(names))

    def call_qualname(self, call) -> Optional[str]:
        return self.qualname(call.func) if isinstance(call, ast.Call) else None

    def references(self, b: Binding) -> list[ast.Name]:
        """Every ``Name`` that reads ``b`` (source order)."""
        if b.scope is self.module_scope:
            cands = self.find_named((ast.Name,), (b.name,))
        else:
            cands = self._names_within(b.scope.node, b.name)
        return [n for n in cands if n.id == b.name and isinstance(n.ctx, ast.Load) and b in self.resolve(n)]

    def _names_within(self, root, name: str) -> list:
        """The ``Name`` nodes spelled ``name`` inside ``root``'s source span, in source
        order, from the index of its chunk (what walking ``root`` finds, without the walk;
        decorators lie outside the span, and they are evaluated outside the scope)."""
        top = root
        while self.parent(top) is not self.module and self.parent(top) is not None:
            top = self.parent(top)
        chunk = self.source.chunk_of_line(getattr(top, "lineno", 0))  # (chunks are whole lines, in order)
        if chunk is None or not chunk.stmts or not any(st is top for st in chunk.stmts):
            return sorted((n for n in ast.walk(root) if isinstance(n, ast.Name)), key=lambda n: (n.lineno, n.col_offset))
        by_name = self._names_in.get(root)
        if by_name is None:
            by_name = self._names_in[root] = self._index_names(root)
        a = (root.lineno, root.col_offset)
        z = (root.end_lineno, root.end_col_offset)
        return [n for n in by_name.get(name, ()) if a <= (n.lineno, n.col_offset) <= z]

    def _index_names(self, root) -> dict:
        """The ``Name`` nodes under ``root`` by spelling, in source order, with the parents
        of every node under it recorded (what resolving them needs)."""
        by_name: dict = {}
        for n in descend((root,), self._parent):
            if type(n) is ast.Name:
                by_name.setdefault(n.id, []).append(n)
        for v in by_name.values():
            v.sort(key=lambda n: (n.lineno, n.col_offset))
        return by_name

    # ================================================================ functions and calls
    def binding_of_def(self, fdef) -> Optional[Binding]:
        s = self.scope_of(fdef)
        for b in s.get(fdef.name):
            if b.kind in (BindingKind.FUNCTION, BindingKind.CLASS) and b.node is fdef:
                return b
        return None

    def callee(self, call: ast.Call):
        """The same-file function, method or class (constructor) ``call`` runs, or None."""
        f = call.func
        if isinstance(f, ast.Name):
            got = self._defined(f, (BindingKind.FUNCTION, BindingKind.CLASS))
            if got is None:
                cls = self.self_class(f)
                if cls is not None:
                    # ``self(x)`` in a method: its class's ``__call__``, for a torch module its ``forward``
                    got = self.method(cls, "__call__")
                    from .names import LIGHTNING_MODULES

                    if got is None and self.derives_from(cls, lambda q: q.startswith("torch.nn.") or q in LIGHTNING_MODULES):
                        got = self.method(cls, "forward")
            return got
        if isinstance(f, ast.Attribute):
            cls = self.instance_class(f.value)
            if cls is not None:
                return self.method(cls, f.attr)
        return None

    def callees(self, call: ast.Call) -> list:
        """The same-file functions and classes ``call`` may run: its :meth:`callee`, or
        for ``registry[key](...)`` the definitions of a dict literal's values
        (:meth:`dict_values`); an entry that is no same-file definition gives None.
        [] when nothing is known."""
        c = self.callee(call)
        if c is not None:
            return [c]
        if isinstance(call.func, ast.Subscript):
            vals = self.dict_values(call.func)
            if vals:
                return [self._defined(v, (BindingKind.FUNCTION, BindingKind.CLASS)) if isinstance(v, ast.Name) else None
                        for v in vals]
        return []

    # the reads of a dict that leave it as it is: ``d.get(k)``, ``d.keys()``, ...
    _DICT_READS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__", "__contains__"})
    # builtins that read a dict they are handed and keep no hold of it
    _DICT_READERS = frozenset({"builtins." + n for n in ("list", "sorted", "tuple", "set", "len", "print", "str",
                                                           "repr", "iter", "enumerate", "frozenset")})

    def dict_values(self, sub: ast.Subscript) -> Optional[list]:
        """The values ``d[key]`` may read: ``d`` a name bound once, to a dict literal
        with no ``**`` entry, that no code of the file changes or hands on (its every
        other use reads it: ``d[k]``, ``d.get(k)``, ``d.keys()``, ``k in d``, a loop
        over it, ``sorted(d)``); None otherwise."""
        d = sub.value
        if not isinstance(d, ast.Name) or not isinstance(sub.ctx, ast.Load):
            return None
        bs = self.resolve(d)
        if len(bs) != 1:
            return None
        b = bs[0]
        if (b.kind is not BindingKind.ASSIGNMENT or not isinstance(b.value, ast.Dict)
                or any(k is None for k in b.value.keys) or b.scope.star_imports
                or b.name in b.scope.globals or b.name in b.scope.nonlocals):
            return None
        for r in self.references(b):
            p = self.parent(r)
            if isinstance(p, ast.Subscript) and p.value is r:
                if not isinstance(p.ctx, ast.Load):
                    return None
            elif isinstance(p, ast.Attribute) and p.value is r:
                gp = self.parent(p)
                if p.attr not in self._DICT_READS or not (isinstance(gp, ast.Call) and gp.func is p):
                    return None
            elif isinstance(p, ast.Compare):
                if not any(c is r for c in p.comparators) or not all(isinstance(o, (ast.In, ast.NotIn)) for o in p.ops):
                    return None
            elif isinstance(p, (ast.For, ast.AsyncFor, ast.comprehension)) and p.iter is r:
                pass
            elif isinstance(p, ast.Call) and any(a is r for a in p.args) and not p.keywords and (
                    self.qualname(p.func) in self._DICT_READERS):
                pass
            else:
                return None  # stored into, deleted from, handed on, bound again by another name
        return list(b.value.values)

    def _plain_class(self, cls: ast.ClassDef) -> bool:
        """No decorator, and no base but ``object``, ``ABC`` or a torch module: a class
        whose annotations without value make no constructor fields."""
        if cls.decorator_list or cls.keywords:
            return False
        for b in cls.bases:
            q = self.qualname(b) or ""
            if q not in ("builtins.object", "abc.ABC") and not q.startswith("torch.nn."):
                return False
        return True

    def method(self, cls: ast.ClassDef, name: str, _depth: int = 0):
        """Method ``name`` of ``cls`` or of a same-file base class."""
        info = self.class_info(cls)
        got = info.methods.get(name)
        if got:
            return got[-1]
        if _depth < 5:
            for base in cls.bases:
                bc = self.class_def(base)
                if bc is not None and bc is not cls:
                    m = self.method(bc, name, _depth + 1)
                    if m is not None:
                        return m
        return None

    def class_def(self, expr) -> Optional[ast.ClassDef]:
        """The same-file class ``expr`` (a name) refers to."""
        if isinstance(expr, ast.Name):
            return self._defined(expr, (BindingKind.CLASS,))
        return None

    def _defined(self, name: ast.Name, kinds: tuple, depth: int = 0):
        """The same-file definition of one of ``kinds`` that ``name`` (bound once in its
        scope) refers to, also through names bound once to another name (``Exp =
        Exp_Main``, a few levels); a name bound more than once at module level, read in
        module-level code, is the binding of the module's body last before the read
        (``train = TensorDataset(...)`` above ``def train():``, then ``train()``:
        :meth:`_last_top_level`)."""
        bs = self.resolve(name)
        if len(bs) > 1:
            bs = self._last_top_level(name, bs)
        if len(bs) != 1:
            return None
        b = bs[0]
        if b.kind in kinds:
            return b.node
        if depth < 3 and b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, ast.Name) and b.value is not name:
            return self._defined(b.value, kinds, depth + 1)
        return None

    def _last_top_level(self, name: ast.Name, bs: list) -> list:
        """Of the module-level bindings ``bs`` of ``name``, read in module-level code, the
        one that reaches it: every binding is a statement of the module's own body (not
        under an ``if``, a loop, a ``try``), and the last of them before the statement
        of the module's body that holds the read is the value read (read from the
        statements' order: the same answer however the file was parsed); ``bs`` as it is
        otherwise."""
        top = name
        for a in self.ancestors(name):
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *_COMPS)):
                return bs  # (read in a function: any binding may be the one it sees)
            if a is self.module:
                break
            top = a
        stmts = []
        for b in bs:
            st = self.statement_of(b.node) if b.node is not None else None
            if st is None or self.parent(st) is not self.module:
                return bs
            stmts.append((st.lineno, st.col_offset, b))
        before = [x for x in stmts if (x[0], x[1]) < (top.lineno, top.col_offset)]
        return [max(before, key=lambda x: (x[0], x[1]))[2]] if before else bs

    def instance_class(self, expr) -> Optional[ast.ClassDef]:
        """The same-file class ``expr`` is an instance of: ``self`` in a method, or a value
        made by calling the class (every origin agreeing)."""
        if isinstance(expr, ast.Name):
            cls = self.self_class(expr)
            if cls is not None:
                return cls
        # ``x = x.f()``: the callee of ``x.f()`` asks for the class of ``x``, whose origin is
        # ``x.f()`` again: a value whose class is being asked for has none
        busy = self._instance_busy
        if expr in busy:
            return None
        busy.add(expr)
        try:
            found = None
            for o in self.origins(expr):
                if o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call):
                    return None
                c = self.callee(o.node)
                if c is None:
                    c = self._module_returning_itself(o.node)
                if not isinstance(c, ast.ClassDef):
                    return None
                if found is not None and found is not c:
                    return None
                found = c
            return found
        finally:
            busy.discard(expr)

    def _module_returning_itself(self, call: ast.Call) -> Optional[ast.ClassDef]:
        """``Net(...).to(device)``, ``net.cuda()``, ``net.eval()``: a ``torch.nn.Module``
        method that returns the module it is called on, on an instance of a same-file
        module class that does not define that method itself: that class."""
        f = call.func
        if not isinstance(f, ast.Attribute) or f.attr not in _MODULE_RETURNS_SELF:
            return None
        cls = self.instance_class(f.value)
        if cls is None or self.method(cls, f.attr) is not None:
            return None
        return cls if self.derives_from(cls, lambda q: q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper()) \
            else None

    def self_class(self, name: ast.Name) -> Optional[ast.ClassDef]:
        """The class whose method ``name`` is the first parameter of (``self``)."""
        bs = self.resolve(name)
        if len(bs) != 1 or bs[0].kind is not BindingKind.PARAMETER:
            return None
        fn = bs[0].scope.node
        if not isinstance(fn, _DEFS):
            return None
        params = [*fn.args.posonlyargs, *fn.args.args]
        if not params or params[0] is not bs[0].node:
            return None
        cls = self.parent(fn)
        if not isinstance(cls, ast.ClassDef):
            return None
        for d in fn.decorator_list:
            if isinstance(d, ast.Name) and d.id == "staticmethod":
                return None
            if isinstance(d, ast.Name) and d.id == "classmethod":
                return None
        return cls

    def call_sites(self, fdef) -> CallSites:
        """Every call of the same-file function (or method) ``fdef`` in this file."""
        got = self._sites.get(fdef)
        if got is not None:
            return got
        parent = self.parent(fdef)
        if isinstance(parent, ast.ClassDef):
            if fdef.name == "__init__":
                got = self._function_sites(parent)
                got.method = True
            else:
                got = self._method_sites(parent, fdef)
        else:
            got = self._function_sites(fdef)
        self._sites[fdef] = got
        return got

    def _function_sites(self, fdef, ask_project: bool = True) -> CallSites:
        b = self.binding_of_def(fdef)
        if b is None:
            return CallSites([], False)
        calls, complete = [], len(self.scope_of(fdef).get(fdef.name)) == 1
        for ref in self.references(b):
            p = self.parent(ref)
            if isinstance(p, ast.Call) and p.func is ref:
                calls.append(p)
            else:
                complete = False  # passed around, decorated, exported
        if b.scope is self.module_scope and complete and not fdef.name.startswith("_") and ask_project:
            complete = not self._importable(fdef.name)
        if fdef.decorator_list:
            complete = False
        return CallSites(calls, complete)

    def _method_sites(self, cls, fdef) -> CallSites:
        name = fdef.name
        calls, complete = [], not name.startswith("__") and not fdef.decorator_list
        for a in self.find_named((ast.Attribute,), (name,)):
            owner = self.instance_class(a.value)
            p = self.parent(a)
            is_call = isinstance(p, ast.Call) and p.func is a
            if owner is cls or (owner is not None and self.derives_from_class(owner, cls)):
                if is_call:
                    calls.append(p)
                else:
                    complete = False
            else:
                complete = False  # some other receiver: may be an instance of cls
        if complete and not cls.name.startswith("_"):
            complete = not self._importable(cls.name)
        return CallSites(calls, complete, method=True)

    def _importable(self, name: str) -> bool:
        """May another file use ``name`` from this one?  A module of a package may be
        imported by anyone (its public names are an API); a script only by a file that
        the project index says imports it."""
        if self.project is None:
            return False
        if self.project.package_of(self.path) is not None:
            return True
        return self.project.is_imported(self.path, name)

    def derives_from_class(self, cls: ast.ClassDef, base: ast.ClassDef, _depth: int = 0) -> bool:
        if cls is base:
            return True
        if _depth > 6:
            return False
        for b in cls.bases:
            bc = self.class_def(b)
            if bc is not None and bc is not cls and self.derives_from_class(bc, base, _depth + 1):
                return True
        return False

    def param_values(self, fdef, param: str) -> ParamValues:
        """What parameter ``param`` of ``fdef`` takes at its call sites (with defaults)."""
        args = fdef.args
        pos = [a.arg for a in (*args.posonlyargs, *args.args)]
        kwonly = [a.arg for a in args.kwonlyargs]
        if param not in pos and param not in kwonly:
            return ParamValues([], False)
        default = None
        if param in pos:
            i = pos.index(param)
            k = i - (len(pos) - len(args.defaults))
            default = args.defaults[k] if k >= 0 else None
        else:
            default = args.kw_defaults[kwonly.index(param)]
        sites = self.call_sites(fdef)
        values = []
        complete = sites.complete and bool(sites.calls)
        skip = 1 if sites.method and pos and not self._is_static(fdef) else 0
        for call in sites.calls:
            found, unknown = _passed(call, param, pos.index(param) - skip if param in pos else None)
            if found is not None:
                values.append((found, call, False))
            elif unknown:
                complete = False
            elif default is not None:
                values.append((default, call, True))
            else:
                complete = False
        if not sites.calls and default is not None:
            values.append((default, None, True))
        return ParamValues(values, complete)

    def importer_arguments(self, fdef, param: str, limit: int = 8) -> list:
        """``(model of the other file, argument, call)`` for what the files of this
        file's directory (and of the one above, see ``Project.neighbour_importers``) that
        import it pass for parameter ``param`` of its module-level function ``fdef``
        where they call it (``from train import fit`` then ``fit(net, ...)``; ``import
        train`` then ``train.fit(net, ...)``), or of a method ``fdef`` of its module-level
        class, called on an instance the importer makes (``local =
        LocalUpdate(...)``, then ``local.train(net=net)``), or of its ``__init__``, where
        the importer makes an instance (``Trainer(model, optimizer, loader)``): a script's
        callers, which ``param_values`` cannot see.  At most ``limit`` importers are read."""
        if not isinstance(fdef, _DEFS):
            return []
        skip = 0 if self.parent(fdef) is self.module else 1  # (``self`` of a method; importer_calls reads only those)
        args = fdef.args
        pos = [a.arg for a in (*args.posonlyargs, *args.args)]
        if param not in pos[skip:] and param not in (a.arg for a in args.kwonlyargs):
            return []
        index = pos.index(param) - skip if param in pos else None
        out = []
        for other, call in self.importer_calls(fdef, limit):
            found, _ = _passed(call, param, index)
            if found is not None:
                out.append((other, found, call))
        return out

    def importer_calls(self, fdef, limit: int = 8) -> list:
        """``(model of the other file, call)`` for the calls of ``fdef`` (a module-level
        function, a method of a module-level class or its ``__init__``) that the files
        importing this one make (:meth:`importer_arguments`)."""
        if self.project is None or not isinstance(fdef, _DEFS):
            return []
        owner = self.parent(fdef)
        if owner is self.module:
            owner = None
        elif not (isinstance(owner, ast.ClassDef) and self.parent(owner) is self.module and not fdef.decorator_list):
            return []
        out = []
        made = owner is not None and fdef.name == "__init__"  # (called as the class)
        for path, module in self.project.neighbour_importers(self.path, owner.name if owner else fdef.name)[:limit]:
            other = self.project.model_for(path)
            if other is None:
                continue
            target = f"{module}.{owner.name if owner else fdef.name}"
            for call in other.find_named((ast.Call,), (owner.name if made else fdef.name,)):
                if owner is None or made:
                    if target not in other.qualnames(call.func):
                        continue
                elif not (isinstance(call.func, ast.Attribute) and other._made_by(call.func.value, target)):
                    continue
                out.append((other, call))
        return out

    def _made_by(self, expr, qualname: str) -> bool:
        """Every value ``expr`` may hold is made by a call of the class ``qualname``."""
        origins = self.origins(expr)
        return bool(origins) and all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)
                                     and qualname in self.qualnames(o.node.func) for o in origins)

    @staticmethod
    def _is_static(fdef) -> bool:
        return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fdef.decorator_list)

    def returns(self, fdef) -> list:
        """The expressions ``fdef`` returns (a ``return`` without value gives None)."""
        if isinstance(fdef, ast.Lambda):
            return [fdef.body]
        out = []
        stack = list(fdef.body)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Return):
                out.append(n.value)
            elif isinstance(n, (*_DEFS, ast.ClassDef, ast.Lambda)):
                continue
            else:
                stack.extend(c for c in child_nodes(n) if isinstance(c, _BLOCKS))
        out.sort(key=lambda r: (r.lineno, r.col_offset) if r is not None else (0, 0))
        return out

    # ================================================================ classes
    def class_info(self, cls: ast.ClassDef) -> ClassInfo:
        got = self._classes.get(cls)
        if got is not None:
            return got
        methods: dict = {}
        class_attrs: dict = {}
        for s in cls.body:
            if isinstance(s, _DEFS):
                methods.setdefault(s.name, []).append(s)
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        class_attrs.setdefault(t.id, []).append(s.value)
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                # (``clip_model: CLIPModel`` in a plain class declares the attribute its
                # methods set, with no value; in a dataclass or the like it is a field
                # its constructor sets: unknown)
                if s.value is not None or not self._plain_class(cls):
                    class_attrs.setdefault(s.target.id, []).append(s.value)
        me = weakref.ref(self)  # the model holds its ClassInfos: no cycle back to it
        got = self._classes[cls] = ClassInfo(cls, methods, lambda: me()._self_attrs(methods), class_attrs)
        return got

    def _self_attrs(self, methods: dict) -> dict:
        attrs: dict = {}
        for ms in methods.values():
            for m in ms:
                params = [*m.args.posonlyargs, *m.args.args]
                if not params or self._is_static(m):
                    continue
                me = params[0].arg
                a, b = self.offsets(m)
                # a ``setattr`` may stand in any expression: then every node; else only the
                # statements (the same order as ``ast.walk``: breadth first)
                for n in (ast.walk(m) if self.text.find("setattr", a, b) >= 0 else _statements_bfs(m)):
                    if isinstance(n, ast.Assign):
                        for t in n.targets:
                            for tt, val in _target_values(t, n.value):
                                if isinstance(tt, ast.Attribute) and isinstance(tt.value, ast.Name) and tt.value.id == me:
                                    attrs.setdefault(tt.attr, []).append((n, val, m))
                    elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                        t = n.target
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                            val = n.value if isinstance(n, ast.AnnAssign) else None
                            attrs.setdefault(t.attr, []).append((n, val, m))
                    elif (
                        isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Name)
                        and n.func.id == "setattr"
                        and len(n.args) >= 3
                        and isinstance(n.args[0], ast.Name)
                        and n.args[0].id == me
                    ):
                        key = n.args[1].value if isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str) else "*"
                        attrs.setdefault(key, []).append((self.statement_of(n), n.args[2], m))
        return attrs

    def sibling_definitions(self, expr) -> tuple[Optional["SemanticModel"], list]:
        """The model of the other file of the project that ``expr`` (a name or a dotted
        attribute: ``Windows`` of ``from ds import Windows``, ``dataset.get``) names a
        module-level binding of, and those bindings; ``(None, [])`` when it names no file
        of the tree (an installed package, torch) or this file itself."""
        path, name = self._sibling_file(expr)
        other, bs = self._sibling_binding(path, name)
        return (other, bs) if other is not None else (None, [])

    def _sibling_binding(self, path: Optional[str], name: str, holds: tuple = ()) -> tuple:
        """``(model, bindings)`` of ``name`` at module level in the file at ``path`` of the
        project, followed through the modules that re-export it (a package's ``__init__``:
        ``from .net import Net``, or ``from .net import *`` when :meth:`star_definitions`
        makes it certain), three at most; ``holds``: words one of which the file that
        defines it must hold, read before it is parsed (a re-exporting file is parsed
        when it names ``name``).  ``(None, [])`` when no file is found, it cannot be read,
        or the way leads back to this file."""
        seen = {os.path.realpath(self.path)}
        for _ in range(3):
            real = os.path.realpath(path) if path is not None else None
            if real is None or real in seen:
                return None, []
            seen.add(real)
            if holds and not any(self.project.text_holds(path, w) for w in holds) \
                    and not self.project.text_holds(path, name):
                return None, []  # (neither the words nor, to re-export it, the name)
            other = self.project.model_for(path)
            if other is None:
                return None, []
            bs = other.module_scope.get(name)
            if bs and "*" in other.text and not _after_star_imports(other, bs):
                return None, []  # (a star import may rebind it after: which binding runs last is not read)
            if not bs and "*" in other.text:
                star, sbs = other.star_definitions(name)
                real = os.path.realpath(star.path) if star is not None else None
                if real is not None and real not in seen:
                    other, bs = star, sbs
                    path = star.path
                    seen.add(real)
            if len(bs) != 1 or bs[0].kind is not BindingKind.FROM_IMPORT or not bs[0].qualname \
                    or "." not in bs[0].qualname:
                if holds and not any(self.project.text_holds(path, w) for w in holds):
                    return None, []
                return other, bs
            mod, name = bs[0].qualname.rsplit(".", 1)
            path = self.project.module_file(mod, other.path)
        return None, []

    def star_imports(self) -> list:
        """The ``from M import *`` statements of the file, wherever they stand."""
        return [st for st in self.find(ast.ImportFrom, containing=("*",)) if any(a.name == "*" for a in st.names)]

    def star_binding(self, name: ast.Name) -> tuple[Optional["SemanticModel"], list]:
        """:meth:`star_definitions` of the name read at ``name``, which no statement of this
        file binds: at module level, the star imports above the read count; in a function,
        all of them (the name is looked up when the function runs).  ``(None, [])`` when
        the file binds it or has no star import."""
        if "*" not in self.text or self.resolve(name):
            return None, []
        inside = self.enclosing_function(name) is not None
        return self.star_definitions(name.id, before=None if inside else name)

    def star_definitions(self, name: str, before: Optional[ast.AST] = None,
                         depth: int = 0) -> tuple[Optional["SemanticModel"], list]:
        """The module-level bindings of ``name`` in the module of the project that a
        ``from M import *`` of this file takes it from, when that is certain: this file
        binds no ``name`` at module level itself, every star import of the file stands at
        its top level (none under a ``try`` or an ``if``) and names a module that can be
        told (a relative one from a file of a known package), and of those before
        ``before`` (a use) the last whose module binds the name is one of the tree whose
        bindings of it all stand at its top level (or whose own star imports bring it so:
        a package's ``__init__`` of ``from .net import *``), after which no star import of
        a module that may bind it runs (one the tree lacks, one whose star import may
        bring it, one whose ``__all__`` is not a literal); the name must be public and,
        when the module has a literal ``__all__``, listed there.  ``(None, [])``
        otherwise (``depth``: how many star imports led here)."""
        if self.project is None or not self.path or name.startswith("_") or self.module_scope.get(name) \
                or "*" not in self.text:
            return None, []
        stars = self.star_imports()
        if not stars or any(self.parent(st) is not self.module or not self._resolve_from(st) for st in stars):
            return None, []
        if before is not None:
            stars = [st for st in stars if (st.lineno, st.col_offset) < (before.lineno, before.col_offset)]
        got: tuple = (None, [])
        for st in sorted(stars, key=lambda n: (n.lineno, n.col_offset)):
            path = self.project.module_file(self._resolve_from(st), self.path)
            other = self.project.model_for(path) if path is not None and os.path.realpath(path) != os.path.realpath(
                self.path) else None
            if other is None:
                got = (None, [])  # (a module the tree lacks may bind it: what came before is shadowed, maybe)
                continue
            exported = _star_exports(other, name, depth)
            if exported is None:
                got = (None, [])
            elif exported[0] is not None:
                where, bs = exported
                got = exported if all(b.node is not None and where.statement_of(b.node) is not None
                                      and where.parent(where.statement_of(b.node)) is where.module for b in bs) \
                    else (None, [])
        return got

    def _sibling_file(self, expr) -> tuple:
        """``(path, name)``: the other file of the project and the module-level name in it
        that ``expr`` names (``sibling_definitions``), or ``(None, None)``."""
        import os

        if self.project is None or not self.path or not isinstance(expr, (ast.Name, ast.Attribute)):
            return None, None
        q = self.qualname(expr) or self._reaching_qualname(expr)
        if not q and isinstance(expr, ast.Name):
            # (``from models import *`` bringing a class or function a module of the tree defines)
            other, _ = self.star_binding(expr)
            return (other.path, expr.id) if other is not None else (None, None)
        if not q or "." not in q or q == "torch" or q.startswith("torch."):
            return None, None
        mod, name = q.rsplit(".", 1)
        path = self.project.module_file(mod, self.path)
        if path is None or os.path.realpath(path) == os.path.realpath(self.path):
            return None, None
        return path, name

    def sibling_callee(self, call: ast.Call, holds: tuple = ()) -> tuple[Optional["SemanticModel"], Optional[ast.AST]]:
        """``(model, def)``: the function of another file of the project that ``call``
        runs (``get_loaders(...)`` of ``from data import get_loaders``, ``data.get(...)``),
        or the method of a class of another file called on one of its instances made here
        (``p = Processor(); p.loaders()``, ``Processor().loaders()``).  ``holds``: words
        one of which that file's text must hold, read before it is parsed (a file without
        them is not parsed).  ``(None, None)`` when not such a call."""
        f = call.func
        meth = None
        if isinstance(f, ast.Attribute) and self.qualname(f) is None and self._reaching_qualname(f) is None:
            # ``recv.meth(...)``: every way ``recv`` is made is a call of the same class of another file
            made = [o.node for o in self.origins(f.value) if o.kind is OriginKind.VALUE]
            if not made or len(made) != len(self.origins(f.value)) or not all(isinstance(n, ast.Call) for n in made) \
                    or not isinstance(made[0].func, (ast.Name, ast.Attribute)):
                return None, None
            first = self.dotted(made[0].func)
            if first is None or any(self.dotted(n.func) != first for n in made[1:]):
                return None, None
            f, meth = made[0].func, f.attr
        path, name = self._sibling_file(f)
        # (a package's ``__init__`` that re-exports it: ``from .factory import get_model``)
        other, bs = self._sibling_binding(path, name, holds)
        if len(bs) != 1:
            return None, None
        node = bs[0].node
        if meth is None:
            return (other, node) if bs[0].kind is BindingKind.FUNCTION and isinstance(node, _DEFS) else (None, None)
        if bs[0].kind is not BindingKind.CLASS or not isinstance(node, ast.ClassDef):
            return None, None
        m = other.method(node, meth)
        return (other, m) if isinstance(m, _DEFS) else (None, None)

    def sibling_return_values(self, call: ast.Call, path: tuple = (), holds: tuple = ()) -> tuple[Optional["SemanticModel"], list]:
        """``(model, values)``: the expressions the function of another file that ``call``
        runs (:meth:`sibling_callee`) returns, in that file's model; ``path``: the
        component of a returned tuple or list literal (``a, b = f()``: ``(0,)`` for ``a``).
        ``(None, [])`` when not known: no such function, a generator, a bare ``return`` or
        one whose value is not a literal of that shape."""
        other, fdef = self.sibling_callee(call, holds)
        if other is None or is_generator(fdef):
            return None, []
        out = []
        for r in other.returns(fdef):
            for i in path:
                if isinstance(r, (ast.Tuple, ast.List)) and i < len(r.elts) and not any(isinstance(e, ast.Starred) for e in r.elts):
                    r = r.elts[i]
                else:
                    return None, []
            if r is None:
                return None, []
            out.append(r)
        return (other, out) if out else (None, [])

    def sibling_may_define(self, expr, keyword: str) -> bool:
        """The text of the file ``sibling_definitions(expr)`` would read holds ``keyword``
        right before the name (``"class "``: it may define a class of that name); a test
        of the text, which is read without parsing it."""
        path, name = self._sibling_file(expr)
        if path is None:
            return False
        if self.project.text_holds(path, f"{keyword}{name}"):
            return True
        if not self.project.text_holds(path, name):
            return False
        # (a module that re-exports it: ``from .net import Net`` in a package's ``__init__``)
        other, bs = self._sibling_binding(path, name)
        return other is not None and other.path != path and len(bs) == 1 \
            and self.project.text_holds(other.path, f"{keyword}{bs[0].name}")

    def _reaching_qualname(self, expr) -> Optional[str]:
        """The dotted name of ``expr`` (a name, or attributes of one) through the one
        import that reaches it where it is read, when the name is bound otherwise too:
        ``model = model.RNNModel(...)`` after ``import model`` reads the module."""
        dotted = self.dotted(expr)
        if dotted is None:
            return None
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        bs = self.reaching(expr)
        if len(bs) != 1 or bs[0].kind not in (BindingKind.IMPORT, BindingKind.FROM_IMPORT) or bs[0].qualname is None:
            return None
        return bs[0].qualname + dotted[len(expr.id):]

    def base_qualnames(self, cls: ast.ClassDef, _depth: int = 0) -> set[str]:
        """Qualified names of the library classes ``cls`` derives from (through
        same-file base classes)."""
        out: set[str] = set()
        if _depth > 6:
            return out
        for b in cls.bases:
            bc = self.class_def(b)
            if bc is not None and bc is not cls:
                out |= self.base_qualnames(bc, _depth + 1)
            else:
                out |= self.qualnames(b)
        return out

    def derives_from(self, cls: ast.ClassDef, pred: Callable[[str], bool]) -> bool:
        return any(pred(q) for q in self.base_qualnames(cls))

    # ================================================================ values
    def origins(self, expr, _depth: int = 0) -> list[Origin]:
        """Where the value of ``expr`` may have been made (see ``OriginKind``)."""
        if expr is None:
            return []
        got = self._origins.get(expr)
        if got is not None:
            return got
        if _depth > _MAX_DEPTH:
            return [Origin(OriginKind.UNKNOWN, expr)]
        self._origins[expr] = [Origin(OriginKind.UNKNOWN, expr)]  # cycle guard
        got = self._origins_of(expr, _depth)
        self._origins[expr] = got
        return got

    def _origins_of(self, expr, depth: int) -> list[Origin]:
        if isinstance(expr, ast.Name):
            bs = self.reaching(expr)
            if not bs:
                q = self.qualname(expr)
                return [Origin(OriginKind.IMPORT if q else OriginKind.UNKNOWN, expr, qualname=q)]
            out = []
            for b in bs:
                out.extend(self.binding_origins(b, depth + 1))
            return _dedup(out)
        if isinstance(expr, ast.Attribute):
            q = self.qualname(expr)
            if q is not None:
                return [Origin(OriginKind.IMPORT, expr, qualname=q)]
            vals = self.attribute_values(expr)
            if vals is None:
                return [Origin(OriginKind.UNKNOWN, expr)]
            out = []
            for v in vals:
                out.extend(self.origins(v, depth + 1) if v is not None else [Origin(OriginKind.UNKNOWN, expr)])
            return _dedup(out) or [Origin(OriginKind.UNKNOWN, expr)]
        if isinstance(expr, ast.Call):
            target = self.callee(expr)
            if isinstance(target, _DEFS) and not is_generator(target):
                rets = self.returns(target)
                if rets:
                    out = []
                    for r in rets:
                        out.extend(self.origins(r, depth + 1) if r is not None else [Origin(OriginKind.VALUE, ast.Constant(None))])
                    return _dedup(out)
            return [Origin(OriginKind.VALUE, expr)]
        if isinstance(expr, ast.Subscript):
            vals = self.element_values(expr)
            if vals is None:
                return [Origin(OriginKind.UNKNOWN, expr)]
            out = []
            for v in vals:
                out.extend(self.origins(v, depth + 1))
            return _dedup(out) or [Origin(OriginKind.UNKNOWN, expr)]
        if isinstance(expr, ast.IfExp):
            return _dedup(self.origins(expr.body, depth + 1) + self.origins(expr.orelse, depth + 1))
        if isinstance(expr, ast.BoolOp):
            out = []
            for v in expr.values:
                out.extend(self.origins(v, depth + 1))
            return _dedup(out)
        if isinstance(expr, ast.NamedExpr):
            return self.origins(expr.value, depth + 1)
        return [Origin(OriginKind.VALUE, expr)]

    def binding_origins(self, b: Binding, depth: int = 0) -> list[Origin]:
        k = b.kind
        if k in (BindingKind.IMPORT, BindingKind.FROM_IMPORT):
            return [Origin(OriginKind.IMPORT, b.node, b, qualname=b.qualname)]
        if k in (BindingKind.FUNCTION, BindingKind.CLASS):
            return [Origin(OriginKind.DEFINITION, b.node, b)]
        if k in (BindingKind.ASSIGNMENT, BindingKind.NAMED_EXPR):
            if b.value is not None:
                return self.origins(b.value, depth)
            if b.unpack is not None:
                whole, path = b.unpack
                parts = self._unpack(whole, path, depth)
                if parts is not None:
                    return parts
                return [Origin(OriginKind.PART, whole, b, path=path)]
            return [Origin(OriginKind.UNKNOWN, b.target, b)]
        if k is BindingKind.PARAMETER:
            fn = b.scope.node
            if isinstance(fn, _DEFS):
                if self.self_class_of_param(b) is not None:
                    return [Origin(OriginKind.PARAMETER, b.node, b)]
                pv = self.param_values(fn, b.name)
                if pv.complete and pv.values:
                    out = []
                    for v, _, _ in pv.values:
                        out.extend(self.origins(v, depth + 1))
                    return _dedup(out)
            return [Origin(OriginKind.PARAMETER, b.node, b)]
        if k in (BindingKind.FOR_TARGET, BindingKind.COMPREHENSION_TARGET):
            return [Origin(OriginKind.ITEM, b.iterable, b, path=_path_in_target(b))]
        if k is BindingKind.WITH_TARGET:
            return [Origin(OriginKind.UNKNOWN, b.target, b)]
        return [Origin(OriginKind.UNKNOWN, b.target, b)]

    def self_class_of_param(self, b: Binding) -> Optional[ast.ClassDef]:
        fn = b.scope.node
        params = [*fn.args.posonlyargs, *fn.args.args]
        if params and params[0] is b.node and isinstance(self.parent(fn), ast.ClassDef) and not self._is_static(fn):
            return self.parent(fn)
        return None

    def _unpack(self, whole, path, depth) -> Optional[list[Origin]]:
        """Origins of component ``path`` of ``whole`` when ``whole``'s origins are tuple
        or list literals of the right shape."""
        out = []
        for o in self.origins(whole, depth + 1):
            node = o.node
            if o.kind is not OriginKind.VALUE:
                return None
            for i in path:
                if isinstance(node, (ast.Tuple, ast.List)) and i < len(node.elts) and not any(
                    isinstance(e, ast.Starred) for e in node.elts
                ):
                    node = node.elts[i]
                else:
                    return None
            out.extend(self.origins(node, depth + 1))
        return _dedup(out) if out else None

    def attribute_values(self, expr: ast.Attribute) -> Optional[list]:
        """Values assigned to ``obj.attr`` when ``obj`` is an instance of a same-file class
        (``self.x = v`` in any method, or a class-level ``x = v``), or a namespace whose
        attribute the file sets before the namespace is used (:meth:`namespace_values`);
        None when unknown."""
        cls = self.instance_class(expr.value)
        if cls is None:
            return self.namespace_values(expr)
        vals = []
        for c in self._mro(cls):
            info = self.class_info(c)
            attrs = info.attrs if not callable(info._attrs) else self._self_attrs_named(info, expr.attr)
            for _, v, _ in attrs.get(expr.attr, ()):
                vals.append(v)
            for v in info.class_attrs.get(expr.attr, ()):
                vals.append(v)
            if "*" in attrs:
                return None
        return vals or None

    def namespace_values(self, expr: ast.Attribute) -> Optional[list]:
        """Values of ``ns.attr`` when ``ns`` holds one namespace object the file makes
        (``args = parser.parse_args()``, ``FLAGS, _ = parser.parse_known_args()``, a
        ``SimpleNamespace``/``EasyDict``; followed through the parameters of same-file
        functions: ``train(args)``) and a statement of the block that makes it sets the
        attribute (``args.device = torch.device(...)``) before the object is read
        anywhere (other than to read another attribute): every value then comes from the
        file's stores of that attribute on that object, which are those values.  None
        when unknown: a store on an object that may be this one, an attribute set by
        ``setattr``/``__dict__``/``vars(...).update``, a read of the object before the
        store."""
        text, attr = self.text, expr.attr
        if "parse_" not in text and "Namespace" not in text and "EasyDict" not in text:
            return None  # (no namespace is made here: most files)
        b = self._namespace_binding(expr.value, 0)
        if b is None:
            return None
        if "setattr" in text or "__dict__" in text or ("vars(" in text and ".update(" in text):
            return None
        stores = []
        for st in self.find(ast.Assign, ast.AnnAssign, ast.AugAssign, containing=("." + attr,)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                for n in ([t] if isinstance(t, ast.Attribute) else
                          [e for e in ast.walk(t) if isinstance(e, ast.Attribute)] if isinstance(t, (ast.Tuple, ast.List)) else []):
                    if n.attr != attr or not isinstance(n.ctx, ast.Store):
                        continue
                    if not isinstance(n.value, ast.Name) or self.instance_class(n.value) is not None:
                        continue  # (``self.device = ...``: an object of a same-file class)
                    ob = self._namespace_binding(n.value, 0)
                    if ob is None and not self._other_object(n.value):
                        return None  # may be this object
                    if ob is b:
                        if n is not t or not isinstance(st, (ast.Assign, ast.AnnAssign)) or st.value is None:
                            return None  # (unpacked, ``+=``: its value not told)
                        stores.append(st)
        made = b.stmt
        first = next((st for st in stores if self.parent(st) is self.parent(made) and st.lineno > made.end_lineno
                      and self._same_block(made, st)), None)
        if first is None:
            return None
        after = (first.end_lineno, first.end_col_offset)
        spans = [((st.lineno, st.col_offset), (st.end_lineno, st.end_col_offset)) for st in stores]
        for r in self.reads_of(b):
            at = (r.lineno, r.col_offset)
            if at > after or any(a <= at < z for a, z in spans):
                continue  # (after the first store; or in a store: its receiver, or what it computes the value from)
            p = self.parent(r)
            if isinstance(p, ast.Attribute) and p.value is r and p.attr != attr:
                pp = self.parent(p)
                if not (isinstance(pp, ast.Call) and pp.func is p) and not isinstance(p.ctx, ast.Del):
                    continue  # (``args.seed``: another attribute read, not a method call)
            return None
        return [st.value for st in stores]

    # namespaces: what they hold is what the code sets (no method of theirs sets an attribute)
    _NAMESPACE_CALLS = frozenset({"argparse.Namespace", "types.SimpleNamespace", "easydict.EasyDict"})

    def _namespace_binding(self, e, depth: int) -> Optional[Binding]:
        """The one binding that makes the namespace ``e`` holds (through parameters whose
        every call site passes it)."""
        if not isinstance(e, ast.Name) or depth > 3:
            return None
        bs = self.reaching(e)
        if len(bs) != 1:
            return None
        b = bs[0]
        if b.kind is BindingKind.ASSIGNMENT:
            v = b.value
            if v is None and b.unpack is not None and b.unpack[1] == (0,):
                v = b.unpack[0]
                if not (isinstance(v, ast.Call) and self.method_name(v) == "parse_known_args"):
                    return None
            elif not (isinstance(v, ast.Call) and (self.method_name(v) == "parse_args"
                                                   or self.call_qualname(v) in self._NAMESPACE_CALLS)):
                return None
            return b if isinstance(b.stmt, ast.Assign) else None
        if b.kind is BindingKind.PARAMETER and isinstance(b.scope.node, _DEFS) and self.self_class_of_param(b) is None:
            pv = self.param_values(b.scope.node, b.name)
            if not pv.complete or not pv.values:
                return None
            got = {self._namespace_binding(v, depth + 1) for v, _, _ in pv.values}
            return got.pop() if len(got) == 1 else None
        return None

    def _other_object(self, e: ast.Name) -> bool:
        """``e`` (no namespace of :meth:`namespace_values`: asked after
        ``_namespace_binding``) holds an object made here, a call's value or a literal,
        not one handed on from elsewhere: a store on it is not a store on one."""
        bs = self.reaching(e)
        return bool(bs) and all(
            b.kind is BindingKind.ASSIGNMENT and b.value is not None
            and not isinstance(b.value, (ast.Name, ast.Attribute, ast.Subscript)) for b in bs)

    def _same_block(self, a: ast.stmt, b: ast.stmt) -> bool:
        """``a`` and ``b`` stand in one statement list (the module's, or one field of
        their shared parent)."""
        p = self.parent(a)
        if p is self.module:
            return True
        return any(isinstance(blk, list) and any(x is a for x in blk) and any(x is b for x in blk)
                   for blk in (getattr(p, f, None) for f in ("body", "orelse", "finalbody")))

    def _self_attrs_named(self, info: ClassInfo, name: str) -> dict:
        """``info.attrs`` restricted to ``name`` (and ``"*"``), from the methods whose text
        holds ``name`` or ``setattr`` only (the same entries, without walking the rest)."""
        key = (info.node, name)
        got = self._attr_cache.get(key)
        if got is None:
            methods = {k: [m for m in ms if self._contains(m, (name, "setattr"))] for k, ms in info.methods.items()}
            full = self._self_attrs(methods)
            got = self._attr_cache[key] = {k: v for k, v in full.items() if k in (name, "*")}
        return got

    def _mro(self, cls, _depth=0) -> list:
        out = [cls]
        if _depth < 5:
            for b in cls.bases:
                bc = self.class_def(b)
                if bc is not None and bc is not cls:
                    out.extend(self._mro(bc, _depth + 1))
        return out

    def element_values(self, sub: ast.Subscript) -> Optional[list]:
        """Values of ``container[key]`` when the container is a dict/list/tuple literal
        (with its later ``c[k] = v`` stores): the element at a constant key, or every
        element when the key is not constant; None when unknown."""
        key = sub.slice
        const = key.value if isinstance(key, ast.Constant) else _MISSING
        out = []
        for o in self.origins(sub.value):
            n = o.node
            if o.kind is not OriginKind.VALUE:
                return None
            if isinstance(n, ast.Dict):
                if any(k is None for k in n.keys):
                    return None
                for k, v in zip(n.keys, n.values):
                    if const is _MISSING or (isinstance(k, ast.Constant) and k.value == const):
                        out.append(v)
                    elif not isinstance(k, ast.Constant):
                        out.append(v)
            elif isinstance(n, (ast.List, ast.Tuple)):
                if any(isinstance(e, ast.Starred) for e in n.elts):
                    return None
                if isinstance(const, int) and not isinstance(const, bool) and -len(n.elts) <= const < len(n.elts):
                    out.append(n.elts[const])
                elif const is _MISSING:
                    out.extend(n.elts)
                else:
                    return None
            elif isinstance(n, ast.DictComp):
                out.append(n.value)
            elif isinstance(n, (ast.ListComp, ast.GeneratorExp)):
                out.append(n.elt)
            else:
                return None
        # stores into the same container: ``loaders["val"] = DataLoader(...)``
        if isinstance(sub.value, ast.Name):
            for b in self.resolve(sub.value):
                for ref in self.references(b):
                    p = self.parent(ref)
                    if isinstance(p, ast.Subscript) and p.value is ref and isinstance(p.ctx, ast.Store):
                        k = p.slice
                        st = self.parent(p)
                        if isinstance(st, ast.Assign) and (const is _MISSING or not isinstance(k, ast.Constant) or k.value == const):
                            out.append(st.value)
        return out or None

    def iterated_values(self, iterable) -> Optional[list]:
        """What iterating ``iterable`` yields when it is a literal list/tuple/set (or a
        name bound to one): its elements; None otherwise."""
        vals = []
        for o in self.origins(iterable):
            n = o.node
            if o.kind is OriginKind.VALUE and isinstance(n, (ast.List, ast.Tuple, ast.Set)):
                if any(isinstance(e, ast.Starred) for e in n.elts):
                    return None
                vals.extend(n.elts)
            else:
                return None
        return vals

    # ================================================================ arguments
    @staticmethod
    def keyword(call: ast.Call, name: str):
        for k in call.keywords:
            if k.arg == name:
                return k.value
        return None

    def argument(self, call: ast.Call, name: str, position: Optional[int] = None):
        """The expression passed for parameter ``name`` (keyword, or positional at
        ``position``), looking into ``**kwargs`` dict literals; ``_UNKNOWN`` when a
        ``*args``/``**kwargs`` it cannot see into may hold it; None when absent."""
        v = self.keyword(call, name)
        if v is not None:
            return v
        if position is not None:
            for i, a in enumerate(call.args):
                if isinstance(a, ast.Starred):
                    return UNKNOWN_ARG
                if i == position:
                    return a
        for k in call.keywords:
            if k.arg is None:
                got = self.dict_entry(k.value, name)
                if got is not None:
                    return got
        return None

    def dict_entry(self, expr, key: str):
        """The value for ``key`` in a dict ``expr`` refers to (dict literal or ``dict(...)``
        call, with ``d.update({...})``/``d[key] = v`` applied in straight-line order);
        ``UNKNOWN_ARG`` when the dict cannot be seen into; None when absent."""
        found = None
        for o in self.origins(expr):
            n = o.node
            if o.kind is not OriginKind.VALUE:
                return UNKNOWN_ARG
            if isinstance(n, ast.Dict):
                for k, v in zip(n.keys, n.values):
                    if k is None:
                        inner = self.dict_entry(v, key)
                        if inner is not None:
                            found = inner
                    elif isinstance(k, ast.Constant) and k.value == key:
                        found = v
                    elif not isinstance(k, ast.Constant):
                        return UNKNOWN_ARG
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "dict" and not n.args:
                v = self.keyword(n, key)
                if v is not None:
                    found = v
                if any(k.arg is None for k in n.keywords):
                    return UNKNOWN_ARG
            else:
                return UNKNOWN_ARG
        if isinstance(expr, ast.Name):
            for b in self.resolve(expr):
                for ref in self.references(b):
                    p = self.parent(ref)
                    if isinstance(p, ast.Attribute) and p.value is ref and p.attr == "update":
                        call = self.parent(p)
                        if isinstance(call, ast.Call):
                            for a in call.args:
                                inner = self.dict_entry(a, key)
                                if inner is not None:
                                    found = inner
                            v = self.keyword(call, key)
                            if v is not None:
                                found = v
                    elif isinstance(p, ast.Subscript) and p.value is ref and isinstance(p.ctx, ast.Store):
                        if isinstance(p.slice, ast.Constant) and p.slice.value == key:
                            st = self.parent(p)
                            if isinstance(st, ast.Assign):
                                found = st.value
                        elif not isinstance(p.slice, ast.Constant):
                            return UNKNOWN_ARG
        return found

    # ================================================================ expressions
    @staticmethod
    def dotted(node) -> Optional[str]:
        """``a.b.c`` for a chain of names and attributes, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        return ".".join(reversed(parts))

    @staticmethod
    def method_name(call) -> Optional[str]:
        return call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None

    @staticmethod
    def receiver(call):
        return call.func.value if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None

    def walk(self, node, *, scopes: bool = True) -> Iterator[ast.AST]:
        """``node`` and its descendants; with ``scopes=False`` not into nested functions,
        classes and lambdas (their headers neither).  The parent of each node reached is
        recorded: a rule that walks a statement asks next for the ancestors of what it
        finds there (the scope of a name, the loop around a call), which would otherwise
        be found by a descent from the top-level statement."""
        return _walk(node, scopes, self._parent)

    # ---- added for main_guard
    def top_statement(self, node):
        """The top-level statement of the module that holds ``node`` (itself if it is one)."""
        n = node
        while n is not None:
            p = self._parent.get(n)
            if p is self.module:
                return n
            n = p
        return None

    def call_argument(self, fdef, call: ast.Call, param: str):
        """The expression ``call`` passes for parameter ``param`` of ``fdef`` (the function,
        method or ``__init__`` it runs), or the parameter's default when it passes none;
        ``UNKNOWN_ARG`` when a ``*args``/``**kwargs`` of the call may hold it (or ``param``
        is the function's own ``*args``/``**kwargs``); None when there is neither."""
        args = fdef.args
        pos = [a.arg for a in (*args.posonlyargs, *args.args)]
        kwonly = [a.arg for a in args.kwonlyargs]
        if param not in pos and param not in kwonly:
            return UNKNOWN_ARG
        skip = 0
        if isinstance(self._parent.get(fdef), ast.ClassDef) and pos and not self._is_static(fdef):
            f = call.func
            via_class = isinstance(f, ast.Attribute) and self.class_def(f.value) is not None
            if fdef.name == "__init__" or (isinstance(f, ast.Attribute) and not via_class):
                skip = 1  # ``self`` is passed implicitly
        if param in pos:
            i = pos.index(param) - skip
            for j, a in enumerate(call.args):
                if isinstance(a, ast.Starred):
                    return UNKNOWN_ARG
                if j == i:
                    return a
        for kw in call.keywords:
            if kw.arg == param:
                return kw.value
        for kw in call.keywords:
            if kw.arg is None:
                got = self.dict_entry(kw.value, param)
                if got is not None:
                    return got
        if param in pos:
            k = pos.index(param) - (len(pos) - len(args.defaults))
            return args.defaults[k] if k >= 0 else None
        return args.kw_defaults[kwonly.index(param)]

    def element_origins(self, iterable, path: tuple = (), _depth: int = 0) -> list[Origin]:
        """Where the element at index ``path`` of what iterating ``iterable`` yields was
        made: elements of list/tuple/set literals (or names bound to one), values of
        ``d.values()`` / ``d.items()`` of a dict literal, through ``enumerate``, ``zip``
        and pass-through wrappers (``reversed``, ``sorted``, ``tqdm``...); ``path`` indexes
        into an unpacking target (``for i, (x, y) in enumerate(pairs)``: ``x`` is ``(1, 0)``).
        An ``UNKNOWN`` origin when it cannot be followed."""
        from . import names as _names

        unknown = [Origin(OriginKind.UNKNOWN, iterable)]
        if _depth > _MAX_DEPTH:
            return unknown
        if isinstance(iterable, ast.Call):
            args = iterable.args
            starred = any(isinstance(a, ast.Starred) for a in args)
            q = self.qualname(iterable.func)
            if q == "builtins.enumerate" and args and not starred:
                if path and path[0] == 1:
                    return self.element_origins(args[0], path[1:], _depth + 1)
                return unknown
            if q == "builtins.zip" and not starred:
                if path and isinstance(path[0], int) and path[0] < len(args):
                    return self.element_origins(args[path[0]], path[1:], _depth + 1)
                return unknown
            if q in _names.ITER_PASSTHROUGH and args and not starred:
                return self.element_origins(args[0], path, _depth + 1)
            m = self.method_name(iterable)
            if m in ("values", "items") and not args and not iterable.keywords:
                sub = ast.Subscript(value=iterable.func.value, slice=ast.Name(id="_", ctx=ast.Load()), ctx=ast.Load())
                vals = self.element_values(sub)
                if vals is None:
                    return unknown
                if m == "items":
                    if not path or path[0] != 1:
                        return unknown
                    path = path[1:]
                out = []
                for v in vals:
                    out.extend(self._origins_at(v, path, _depth + 1))
                return _dedup(out) or unknown
        vals = self.iterated_values(iterable)
        if vals is None:
            return unknown
        out = []
        for v in vals:
            out.extend(self._origins_at(v, path, _depth + 1))
        return _dedup(out) or unknown

    def _origins_at(self, expr, path: tuple, depth: int) -> list[Origin]:
        """Origins of component ``path`` of the value of ``expr`` (tuple/list literals)."""
        if not path:
            return self.origins(expr)
        if isinstance(expr, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in expr.elts) or not isinstance(path[0], int):
                return [Origin(OriginKind.UNKNOWN, expr)]
            if path[0] < len(expr.elts):
                return self._origins_at(expr.elts[path[0]], path[1:], depth + 1)
            return [Origin(OriginKind.UNKNOWN, expr)]
        out = []
        for o in self.origins(expr):
            if o.kind is OriginKind.VALUE and isinstance(o.node, (ast.Tuple, ast.List)) and depth <= _MAX_DEPTH:
                out.extend(self._origins_at(o.node, path, depth + 1))
            else:
                out.append(Origin(OriginKind.UNKNOWN, expr))
        return _dedup(out)


    # ---- added for softmax
    def with_context(self, b) -> Optional[ast.AST]:
        """The expression whose ``__enter__`` the ``with`` target binding ``b`` holds
        (``bar`` of ``with tqdm(loader) as bar:``: ``tqdm(loader)``), when the target is
        that plain name; None otherwise."""
        if b is None or b.kind is not BindingKind.WITH_TARGET or not isinstance(b.node, (ast.With, ast.AsyncWith)):
            return None
        return next((i.context_expr for i in b.node.items
                     if isinstance(i.optional_vars, ast.Name) and i.optional_vars.id == b.name), None)

    def target_binding(self, target) -> Optional[Binding]:
        """The binding that a stored name (an ``ast.Name`` in an assignment, for, with or
        walrus target) or a parameter (an ``ast.arg``) creates; None when unknown."""
        name = target.id if isinstance(target, ast.Name) else getattr(target, "arg", None)
        if name is None:
            return None
        for b in self.scope_of(target).get(name):
            if b.target is target:
                return b
        return None

    def bound_parameter(self, call: ast.Call, arg):
        """The parameter of the same-file function, method or class (its ``__init__``)
        that ``call`` runs which receives the argument expression ``arg``: its
        :class:`Binding`; ``UNKNOWN_ARG`` when the callee is of this file but the
        argument cannot be mapped (``*args``, ``**kwargs``); None when the callee is not
        of this file."""
        target = self.callee(call)
        skip = 0
        if isinstance(target, ast.ClassDef):
            target = self.method(target, "__init__")
            if target is None:
                return UNKNOWN_ARG
            skip = 1
        elif isinstance(target, _DEFS) and isinstance(call.func, ast.Attribute) and not self._is_static(target):
            skip = 1  # obj.method(arg): ``self`` is bound implicitly
        if not isinstance(target, _DEFS):
            return None
        if any(isinstance(d, ast.Name) and d.id == "classmethod" for d in target.decorator_list):
            return UNKNOWN_ARG
        args = target.args
        pos = [*args.posonlyargs, *args.args]
        param = None
        for j, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                return UNKNOWN_ARG
            if a is arg:
                k = j + skip
                param = pos[k] if k < len(pos) else args.vararg
                break
        else:
            for kw in call.keywords:
                if kw.value is arg:
                    if kw.arg is None:
                        return UNKNOWN_ARG
                    named = [a for a in (*args.args, *args.kwonlyargs) if a.arg == kw.arg]
                    param = named[0] if named else args.kwarg
                    break
        if param is None or param is args.vararg or param is args.kwarg:
            return UNKNOWN_ARG
        b = self.target_binding(param)
        return b if b is not None else UNKNOWN_ARG

    def maybe_instance(self, expr, cls: ast.ClassDef) -> Optional[bool]:
        """Is ``expr`` an instance of same-file class ``cls`` (or of a subclass)?  True
        when it certainly is, False when it certainly is not (every origin is a value
        made by something else), None when it may be."""
        if isinstance(expr, ast.Name):
            own = self.self_class(expr)
            if own is not None:
                return True if self.derives_from_class(own, cls) else None if self.derives_from_class(cls, own) else False
        yes = no = False
        for o in self.origins(expr):
            if o.kind is OriginKind.VALUE:
                c = self.callee(o.node) if isinstance(o.node, ast.Call) else None
                if isinstance(c, ast.ClassDef) and self.derives_from_class(c, cls):
                    yes = True
                else:
                    no = True
            elif o.kind in (OriginKind.IMPORT, OriginKind.DEFINITION):
                no = True
            else:
                return None
        if yes and not no:
            return True
        if no and not yes:
            return False
        return None

    def attribute_loads(self, cls: ast.ClassDef, attr: str) -> tuple[list, list]:
        """Reads of attribute ``attr`` of instances of same-file class ``cls``:
        ``(certain, possible)`` -- the ``X.attr`` loads whose receiver is certainly such
        an instance (``self`` in its methods, a value made by calling it), and those whose
        receiver may be one (a parameter, an unknown value)."""
        certain, possible = [], []
        for a in self.find_named((ast.Attribute,), (attr,)):
            if not isinstance(a.ctx, ast.Load):
                continue
            got = self.maybe_instance(a.value, cls)
            if got is True:
                certain.append(a)
            elif got is None:
                possible.append(a)
        return certain, possible

    def sources(self, expr, peel: Callable[[ast.Call], Optional[ast.AST]], callers: bool = False,
                _depth: int = 0) -> list[Origin]:
        """``origins(expr)``, continuing through calls that pass a value on: for a call
        origin ``c`` with ``peel(c)`` an expression, the sources of that expression
        (``model.to(device)`` is ``model`` when ``peel`` says that ``.to`` returns its
        receiver).  With ``callers``, a parameter whose call sites are not all known
        also gives the sources of what the known ones pass (the PARAMETER origin stays:
        other callers may pass anything)."""
        out = []
        for o in self.origins(expr):
            if _depth < _MAX_DEPTH:
                if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
                    inner = peel(o.node)
                    if inner is not None:
                        out.extend(self.sources(inner, peel, callers, _depth + 1))
                        continue
                elif callers and o.kind is OriginKind.PARAMETER and o.binding is not None:
                    fn = o.binding.scope.node
                    if isinstance(fn, _DEFS) and self.self_class_of_param(o.binding) is None:
                        for v, _, _ in self.param_values(fn, o.binding.name).values:
                            out.extend(self.sources(v, peel, callers, _depth + 1))
            out.append(o)
        return _dedup(out)

    def value_uses(self, expr, through: Optional[Callable[[ast.AST], Optional[ast.AST]]] = None,
                   limit: int = 400) -> "ValueUses":
        """Where the object that ``expr`` evaluates to is used: the forward counterpart of
        ``origins``.  Follows it into the names and ``self`` attributes it is stored in
        (every read of them), into the parameters of same-file functions, methods and
        constructors it is passed to (every read inside), out of functions that return it
        (to their call sites), through tuple packing and unpacking, and through the
        calls ``through(node)`` names (a call whose result is the same object, e.g.
        ``model.to(device)``).  ``uses`` are the expressions holding the object at each
        place where it is used otherwise (called, an attribute read, passed to a callee of
        another file, ...); ``escapes`` the places where it goes where the model cannot
        follow (into a container, an attribute of an unknown object, a function whose
        callers are not all known, ``*args``)."""
        uses: list = []
        escapes: list = []
        seen: set = set()
        work = [expr]
        while work:
            e = work.pop()
            if e in seen:
                continue
            seen.add(e)
            if len(seen) > limit:
                escapes.append(e)
                break
            nxt = through(e) if through is not None else None
            if nxt is not None:
                work.append(nxt)
                continue
            p = self.parent(e)
            if isinstance(p, (ast.Assign, ast.AnnAssign)) and p.value is e:
                for t in (p.targets if isinstance(p, ast.Assign) else [p.target]):
                    self._flow_store(t, e, work, escapes)
            elif isinstance(p, ast.NamedExpr) and p.value is e:
                self._flow_store(p.target, e, work, escapes)
                work.append(p)
            elif isinstance(p, ast.Return):
                fn = self.enclosing_function(p)
                if not isinstance(fn, _DEFS) or is_generator(fn):
                    escapes.append(e)
                    continue
                sites = self.call_sites(fn)
                if not sites.complete:
                    escapes.append(e)
                work.extend(sites.calls)
            elif isinstance(p, ast.Call) and p.func is not e and any(a is e for a in p.args):
                self._flow_argument(p, e, uses, work, escapes)
            elif isinstance(p, ast.keyword) and isinstance(self.parent(p), ast.Call):
                self._flow_argument(self.parent(p), e, uses, work, escapes)
            elif isinstance(p, ast.arguments):
                b = self._default_binding(p, e)
                if b is None:
                    escapes.append(e)
                else:
                    work.extend(self.references(b))
            elif isinstance(p, (ast.Tuple, ast.List)) and isinstance(p.ctx, ast.Load):
                self._flow_element(p, e, work, escapes)
            else:
                uses.append(e)
        uses.sort(key=lambda n: (n.lineno, n.col_offset))
        return ValueUses(uses, escapes)

    def _flow_store(self, t, e, work: list, escapes: list) -> None:
        if isinstance(t, ast.Name):
            scope = self.scope_of(t)
            b = None if t.id in scope.globals or t.id in scope.nonlocals else self.target_binding(t)
            if b is None:
                escapes.append(e)
            else:
                work.extend(self.references(b))
        elif isinstance(t, ast.Attribute):
            cls = self.instance_class(t.value)
            if cls is None:
                escapes.append(e)
                return
            certain, possible = self.attribute_loads(cls, t.attr)
            work.extend(certain)
            if possible:
                escapes.append(e)
        else:
            escapes.append(e)

    def _flow_argument(self, call, e, uses: list, work: list, escapes: list) -> None:
        b = self.bound_parameter(call, e)
        if b is None:
            uses.append(e)
        elif b is UNKNOWN_ARG:
            escapes.append(e)
        else:
            work.extend(self.references(b))

    def _default_binding(self, args: ast.arguments, e) -> Optional[Binding]:
        pos = [*args.posonlyargs, *args.args]
        for a, d in zip(pos[len(pos) - len(args.defaults):], args.defaults):
            if d is e:
                return self.target_binding(a)
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is e:
                return self.target_binding(a)
        return None

    def _flow_element(self, tup, e, work: list, escapes: list) -> None:
        """``e`` is element ``i`` of a tuple/list display: follow it when the display is
        unpacked (``a, b = e, x``; ``return e, x`` unpacked at every call site)."""
        if any(isinstance(x, ast.Starred) for x in tup.elts):
            escapes.append(e)
            return
        i = next(k for k, x in enumerate(tup.elts) if x is e)
        holders = [tup]
        p = self.parent(tup)
        if isinstance(p, ast.Return):
            fn = self.enclosing_function(p)
            if not isinstance(fn, _DEFS) or is_generator(fn):
                escapes.append(e)
                return
            sites = self.call_sites(fn)
            if not sites.complete:
                escapes.append(e)
            holders = sites.calls
        for h in holders:
            st = self.parent(h)
            if not (isinstance(st, ast.Assign) and st.value is h):
                escapes.append(e)
                continue
            for t in st.targets:
                if (isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == len(tup.elts)
                        and not any(isinstance(x, ast.Starred) for x in t.elts)):
                    self._flow_store(t.elts[i], e, work, escapes)
                else:
                    escapes.append(e)


    # ---- added for device (TM102)
    def find_named(self, types: tuple, names, words: Optional[tuple] = None, screen: Optional[Callable] = None,
                   keep: Optional[Callable] = None) -> list:
        """Nodes of ``types`` by the name they carry: a def/class named one of ``names``,
        a call whose callee is spelled ``name(...)``/``x.name(...)``, an attribute
        ``x.name``, a name ``name``.  Parses only the chunks whose text contains one of
        ``words`` (default: the names; a caller may ask for ``".zeros("``) and, when
        given, that ``screen(text, start, end, hits)`` accepts (``hits``: where the words
        start in the chunk; a rule's own text test of a
        chunk: it must accept every chunk where the rule could find a node); never
        searches node text (cheaper than ``find(containing=...)``); source order.
        ``keep(text, start, end, hits)``, instead of a screen: the hits of a chunk that may
        be where a node the caller keeps stands (a rule's own test of each hit; it must
        keep the hit of every node it could keep): a chunk with none is not parsed, and
        a statement or method holding none is not entered (nor parsed); a chunk some
        other query already indexed gives all its nodes of the name (a superset: the
        caller's own tests of a node decide)."""
        names = frozenset(names)
        whole = words is None  # the words are the names: only whole-word hits can be one
        words = tuple(words) if words is not None else tuple(names)
        if not words:
            return []
        # the same question asks for the same nodes (the chunks and their nodes never
        # change): a name many classes share (``forward``, ``_init_weights``) is looked
        # for once per file, not once per method of that name; a screen is a caller's
        # own test, so its answers are not kept
        key = (types, names, words) if screen is None and keep is None else None
        if key is not None:
            got = self._named.get(key)
            if got is not None:
                return list(got)
        out = []
        text = self.text
        chosen = []

        def choose(c, hits) -> None:  # the chunk and the hits to enter it by, if any
            if keep is not None:
                hits = keep(text, c.start, c.end, hits)
            elif screen is not None and not screen(text, c.start, c.end, hits):
                return
            if hits:
                chosen.append((c, hits))

        if len(words) == 1:  # one name (the model's own lookups): the chunks that hold it are remembered
            w = words[0]
            n = len(w)
            whole = whole and w.isidentifier()
            chunks = self.source.chunks
            for i in self.source.holding(w):
                c = chunks[i]
                hits = []
                j = text.find(w, c.start, c.end)
                while j >= 0:
                    # a name's node stands where the name is a word of its own (not a
                    # part of ``training`` for ``train``); a character around it that is
                    # no letter, digit or ``_`` ends it
                    if not whole or not (_word_char(text, j - 1) or _word_char(text, j + n)):
                        hits.append(j)
                    j = text.find(w, j + 1, c.end)
                if hits:
                    choose(c, hits)
        else:  # a rule's fixed set of words: one pattern for them all
            whole = whole and all(w.isidentifier() for w in words)
            pattern = find_words(words)
            # one scan of the whole text, its hits handed to the chunks they fall in
            # (the words hold no line break and chunks are whole lines, so no match
            # crosses a chunk's end; should one, each chunk is scanned on its own)
            chunks = self.source.chunks
            by_chunk: dict = {}
            for j, k in pattern.spans(text):
                if whole and (_word_char(text, j - 1) or _word_char(text, k)):
                    continue  # part of a longer name (a match cannot hide a whole one: names are words)
                i = self.source.chunk_at(j)
                if i < 0:
                    continue  # between chunks
                if k > chunks[i].end:
                    by_chunk = {i: hits for i, c in enumerate(chunks)
                                for hits in [[a for a, _ in pattern.spans(text, c.start, c.end)]] if hits}
                    break
                got = by_chunk.get(i)
                if got is None:
                    by_chunk[i] = [j]
                else:
                    got.append(j)
            for i, hits in sorted(by_chunk.items()):
                c = chunks[i]
                choose(c, hits)
        self.source.parse_all([c for c, _ in chosen])  # in one call of the parser
        for c, hits in chosen:
            stmts = self._parse(c)
            by_type = self._by_type.get(c)
            if by_type is not None:
                for t in types:
                    out.extend(n for n in by_type.get(t, ()) if _node_name(n) in names)
                continue
            # as in ``find``: statements holding none of the words (no hit between their
            # start and end) are not entered

            def enter(st, hits=hits):
                lz = pending(st)
                if lz is not None:
                    k = bisect.bisect_left(hits, lz[0])
                    if not (k < len(hits) and hits[k] < lz[1]):
                        return False  # a method not parsed yet with no hit in its text
                else:
                    pc = pending_class(st)
                    if pc is not None:  # (as in ``_contains``)
                        k = bisect.bisect_left(hits, self._start_offset(st))
                        if k < len(hits) and hits[k] < pc[0]:
                            return True
                        if bisect.bisect_left(hits, pc[0]) == len(hits):
                            return False
                a, b = self.offsets(st)
                k = bisect.bisect_left(hits, a)
                return k < len(hits) and hits[k] < b

            out.extend(n for n in self._pruned(stmts, enter) if node_type(n) in types and _node_name(n) in names)
        out.sort(key=lambda n: (n.lineno, n.col_offset))
        if key is not None:
            self._named[key] = out
            return list(out)
        return out

    def file_call_sites(self, fdef) -> CallSites:
        """The calls of ``fdef`` in this file that can be told without following values
        or asking the project (so it is answered in worker processes too): calls of a
        function by name, of a method on ``self`` (an instance of its class or of a
        derived one), of a constructor by the class name.  ``complete``: every
        reference in this file is one of these calls (other files may still call it)."""
        key = ("file", fdef)
        got = self._sites.get(key)
        if got is not None:
            return got
        parent = self.parent(fdef)
        if isinstance(parent, ast.ClassDef) and fdef.name != "__init__":
            calls, complete = [], not fdef.decorator_list or self._is_static(fdef)
            for a in self.find_named((ast.Attribute,), (fdef.name,)):
                p = self.parent(a)
                owner = self.self_class(a.value) if isinstance(a.value, ast.Name) else None
                if owner is not None and self.derives_from_class(owner, parent) and isinstance(p, ast.Call) and p.func is a:
                    calls.append(p)
                else:
                    complete = False
            got = CallSites(calls, complete, method=True)
        elif isinstance(parent, ast.ClassDef):
            got = self._function_sites(parent, ask_project=False)
            got.method = True
        else:
            got = self._function_sites(fdef, ask_project=False)
        self._sites[key] = got
        return got

    def file_calls(self, fdef) -> list:
        """``file_call_sites(fdef).calls``, not looked for when the text holds no call of
        ``fdef`` in the form those are: its name (a method's after a ``.``, a
        constructor's the class name) followed by ``(``, other than on its own
        ``def``/``class`` line.  A call the model finds is always such a text, so the
        answer is the same; most functions a text test lets through are called (a
        method of another class may share the name), and for them the lookup is made."""
        parent = self.parent(fdef)
        if isinstance(parent, ast.ClassDef) and fdef.name == "__init__":
            name, method = parent.name, False
        else:
            name, method = fdef.name, isinstance(parent, ast.ClassDef)
        _, after_dot, plain = callees(self.text).get(name)
        return self.file_call_sites(fdef).calls if (after_dot if method else plain) else []

    def reads_of(self, b: Binding) -> list[ast.Name]:
        """The reads of ``b`` that ``b`` may reach, in source order: those ``reaching``
        gives, less those after a later binding of the same name in ``b``'s own block
        (``x = a; x = x.to(d); use(x)``: ``use`` reads the second), when nothing between
        the two can jump past the second."""
        out = []
        kills = None
        for n in self.references(b):
            if b not in self.reaching(n):
                continue
            if kills is None:
                kills = self._killers(b)
            if any(n.lineno > k[0] or (n.lineno == k[0] and n.col_offset >= k[1]) for k in kills) and self._runs_inline(n, b.scope):
                continue
            out.append(n)
        out.sort(key=lambda n: (n.lineno, n.col_offset))
        return out

    def _runs_inline(self, n, scope) -> bool:
        """``n`` is evaluated where it stands in ``scope``'s code: in ``scope`` itself or
        in list/set/dict comprehensions inside it (not a nested function or a lazy
        generator expression)."""
        s = self.scope_of(n)
        while s is not scope:
            if s is None or s.kind is not ScopeKind.COMPREHENSION or isinstance(s.node, ast.GeneratorExp):
                return False
            s = s.parent
        return True

    _JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)

    def _killers(self, b: Binding) -> list[tuple]:
        """End positions of the later bindings of ``b``'s name that certainly run after
        ``b`` and before anything that follows them in ``b``'s block."""
        if b.kind is BindingKind.PARAMETER:
            fn = b.scope.node
            if not isinstance(fn, _DEFS):
                return []
            block, i = fn.body, -1
        else:
            stmt = b.stmt
            if stmt is None or b.kind not in (BindingKind.ASSIGNMENT, BindingKind.AUG_ASSIGNMENT, BindingKind.NAMED_EXPR):
                return []
            if isinstance(b.node, ast.NamedExpr) or self.parent(stmt) is self.module:
                return []
            block = self.block_of(stmt)
            owner = self.parent(stmt)
            if block is None or (isinstance(owner, TRY) and block is owner.body):
                return []  # an exception between the two reaches the handlers with ``b``
            i = next((k for k, s in enumerate(block) if s is stmt), None)
            if i is None:
                return []
        out = []
        for b2 in b.scope.get(b.name):
            if b2 is b or b2.kind not in (BindingKind.ASSIGNMENT, BindingKind.AUG_ASSIGNMENT):
                continue
            s2 = b2.stmt
            j = next((k for k, s in enumerate(block) if s is s2), None)
            if j is None or j <= i or not isinstance(s2, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                continue
            if any(isinstance(n, self._JUMPS) for s in block[i + 1 : j] for n in self.walk(s, scopes=False)):
                continue
            out.append((s2.end_lineno or s2.lineno, s2.end_col_offset or 0))
        return out

    def value_reads(self, expr) -> list[ast.Name]:
        """Where the value of ``expr`` is read next when the code binds it to names:
        ``n = expr`` (every plain-name target), ``n: T = expr``, ``(n := expr)``: the
        reads those bindings reach, in source order; [] when ``expr`` is not bound to
        a plain name (an attribute, a subscript, an unpacking)."""
        p = self.parent(expr)
        targets: list = []
        if isinstance(p, ast.Assign) and p.value is expr:
            targets = [t for t in p.targets if isinstance(t, ast.Name)]
        elif isinstance(p, ast.AnnAssign) and p.value is expr and isinstance(p.target, ast.Name):
            targets = [p.target]
        elif isinstance(p, ast.NamedExpr) and p.value is expr:
            targets = [p.target]
        out = []
        for t in targets:
            b = self.target_binding(t)
            if b is not None:
                out.extend(self.reads_of(b))
        out.sort(key=lambda n: (n.lineno, n.col_offset))
        return out

    def parameter_of(self, call: ast.Call, fdef, arg) -> Optional[str]:
        """The parameter of ``fdef`` (the function ``call`` runs) that ``arg`` binds:
        ``arg`` is one of ``call.args`` or the value of one of its keywords.  A method
        called on an instance (or a constructor, for ``__init__``) passes ``self``
        implicitly.  None when it cannot be told (after a ``*args``, into ``**kwargs``)."""
        if not isinstance(fdef, _DEFS):
            return None
        a = fdef.args
        pos = [x.arg for x in (*a.posonlyargs, *a.args)]
        kwonly = [x.arg for x in a.kwonlyargs]
        for kw in call.keywords:
            if kw.value is arg:
                if kw.arg is None:
                    return None
                return kw.arg if kw.arg in pos[len(a.posonlyargs):] or kw.arg in kwonly else None
        skip = 0
        if isinstance(self.parent(fdef), ast.ClassDef) and not self._is_static(fdef):
            f = call.func
            # ``Class.method(obj, ...)`` passes ``self`` explicitly
            explicit = isinstance(f, ast.Attribute) and self.class_def(f.value) is not None
            skip = 0 if explicit else 1
        for i, x in enumerate(call.args):
            if isinstance(x, ast.Starred):
                return None
            if x is arg:
                j = i + skip
                return pos[j] if j < len(pos) else None
        return None


class _Unknown:
    def __repr__(self) -> str:  # pragma: no cover
        return "<unknown argument>"


UNKNOWN_ARG = _Unknown()
_MISSING = object()


def _literal_strings(value) -> Optional[set]:
    """The strings of a literal list or tuple of strings (``__all__ = ["a", "b"]``)."""
    if isinstance(value, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return {e.value for e in value.elts}
    return None


def _passed(call: ast.Call, param: str, index: Optional[int]) -> tuple:
    """``(argument, unknown)``: what ``call`` passes for the parameter ``param`` (at
    position ``index`` of the call's arguments; None: keyword-only), and whether a
    ``*args``/``**kwargs`` it holds may pass it instead."""
    found, unknown = None, False
    for j, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            unknown = True
            break
        if j == index:
            found = a
    for kw in call.keywords:
        if kw.arg is None:
            unknown = unknown or found is None
        elif kw.arg == param:
            found = kw.value
    return found, unknown


def _dedup(origins: list[Origin]) -> list[Origin]:
    seen, out = set(), []
    for o in origins:
        key = (o.kind, id(o.node), o.path, o.qualname)
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _path_in_target(b: Binding) -> tuple:
    """Index path of ``b.target`` inside its for/comprehension target."""
    stmt = b.node
    target = getattr(stmt, "target", None)
    if target is None:
        return ()
    path = _find_path(target, b.target)
    return path if path is not None else ()


def _find_path(t, name, prefix=()) -> Optional[tuple]:
    if t is name:
        return prefix
    if isinstance(t, (ast.Tuple, ast.List)):
        for i, e in enumerate(t.elts):
            got = _find_path(e.value if isinstance(e, ast.Starred) else e, name, prefix + (i,))
            if got is not None:
                return got
    return None


def _spans(node, order) -> bool:
    return (node.lineno, node.col_offset) <= order <= (node.end_lineno, node.end_col_offset)


def _word_char(text: str, i: int) -> bool:
    """``text[i]`` exists and may continue an identifier (a letter, a digit or ``_``)."""
    return 0 <= i < len(text) and _word(text[i])


def _node_name(n) -> Optional[str]:
    """The name a node carries (see :meth:`SemanticModel.find_named`)."""
    t = type(n)
    if t is ast.Call:
        f = n.func
        return f.attr if type(f) is ast.Attribute else f.id if type(f) is ast.Name else None
    if t is ast.Attribute:
        return n.attr
    if t is ast.Name:
        return n.id
    return getattr(n, "name", None)


def _walk(node, scopes: bool, parent: Optional[dict] = None) -> Iterator[ast.AST]:
    """:meth:`SemanticModel.walk` (``parent``: the dict to record each child's parent in)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if not scopes and n is not node and isinstance(n, (*_DEFS, ast.ClassDef, ast.Lambda)):
            continue
        kids = child_nodes(n)
        if kids:
            if parent is not None:
                parent.update(dict.fromkeys(kids, n))
            kids.reverse()
            stack.extend(kids)


def is_generator(fdef) -> bool:
    """``fdef``'s own body (not a nested function's) yields: calling it runs none of it."""
    for n in _walk(fdef, False):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
    return False


def _target_values(t, value) -> Iterable[tuple]:
    """(target, value or None) pairs of an assignment target against its value."""
    if isinstance(t, (ast.Tuple, ast.List)):
        vals = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(t.elts) else None
        for i, e in enumerate(t.elts):
            yield from _target_values(e, vals[i] if vals is not None else None)
    else:
        yield t, value
