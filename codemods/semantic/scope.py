"""Scopes and bindings, from the stdlib ``ast`` (what Ruff's semantic model keeps).

A :class:`Scope` holds, per name, the :class:`Binding` objects that bind it in that scope:
the statement (or alias, parameter, definition) and, where the code says it, the value
bound.  Scopes are built lazily, one per module / class / function / lambda /
comprehension, when a query first enters them.  Python's rules are followed: class
scopes are skipped by the functions nested in them, ``global``/``nonlocal`` redirect a
name, comprehension targets are local to the comprehension, a walrus in a comprehension
binds in the enclosing function, decorators, defaults and annotations belong to the
enclosing scope.
"""

from __future__ import annotations

import ast
import enum
import weakref
from typing import Callable, Iterator, Optional

from .members import ClassDef as LazyClassDef
from .members import FunctionDef as LazyFunctionDef
from .members import pending
from .nodes import child_nodes

__all__ = ["Binding", "BindingKind", "Scope", "ScopeKind", "collect"]


class ScopeKind(enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    LAMBDA = "lambda"
    COMPREHENSION = "comprehension"


class BindingKind(enum.Enum):
    IMPORT = "import"  # import a.b as c
    FROM_IMPORT = "from-import"  # from a import b
    ASSIGNMENT = "assignment"  # x = v, x: T = v, a, b = v
    AUG_ASSIGNMENT = "aug-assignment"  # x += v
    ANNOTATION = "annotation"  # x: T (no value)
    FOR_TARGET = "for-target"
    WITH_TARGET = "with-target"
    PARAMETER = "parameter"
    FUNCTION = "function"
    CLASS = "class"
    EXCEPT_HANDLER = "except-handler"
    NAMED_EXPR = "named-expr"  # (x := v)
    COMPREHENSION_TARGET = "comprehension-target"
    MATCH_CAPTURE = "match-capture"
    DELETION = "deletion"
    STAR_IMPORT = "star-import"


class Binding:
    """One binding of ``name`` in ``scope``.

    * ``node``: what binds it (the ``Assign``/``For``/``With`` statement, the ``alias`` of
      an import, the ``arg`` of a parameter, the ``FunctionDef``/``ClassDef``; for a
      definition not parsed yet it is parsed on first access);
    * ``target``: the ``Name``/``arg`` node bound (None for imports and definitions);
    * ``value``: the expression assigned to exactly this name when the code says it
      (``x = v``; ``a, b = v1, v2`` gives ``a`` the value ``v1``; a parameter's default;
      a with-item's context expression; a for target's iterable is ``iterable``), else
      None; ``unpack``: ``(value, path)`` when the name is an element of an unpacked
      value that is not a literal (``a, (b, c) = f()``: ``b`` is ``(f(), (1, 0))``);
    * ``qualname``: for imports, the dotted name it refers to;
    * ``order``: (line, col) after which the binding holds (the end of its statement's
      value, loop header or import), for straight-line ordering.
    """

    __slots__ = ("name", "kind", "_scope", "_node", "_chunk", "target", "value", "unpack", "iterable", "qualname", "order", "stmt")

    def __init__(self, name, kind, scope, node, *, target=None, value=None, unpack=None, iterable=None,
                 qualname=None, order=(0, 0), stmt=None, chunk=None):
        self.name = name
        self.kind = kind
        # a scope holds its bindings; the way back is weak, so that a file's model (and
        # its syntax trees) is freed by reference counting once its caller drops it,
        # with no pass of the garbage collector
        self._scope = weakref.ref(scope)
        self._node = node
        self._chunk = chunk
        self.target = target
        self.value = value
        self.unpack = unpack
        self.iterable = iterable
        self.qualname = qualname
        self.order = order
        self.stmt = stmt  # the statement holding the binding (the node itself for statements)

    @property
    def scope(self) -> "Scope":
        return self._scope()

    @property
    def node(self):
        if self._node is None and self._chunk is not None:
            model = self.scope.model
            self._node = model._parse(self._chunk)[0]
            self.stmt = self._node
            if not self._chunk.members:  # (a class parsed from its spine: its methods stay unparsed)
                model._adopt_chunk(self._chunk)
        return self._node

    def __repr__(self) -> str:  # pragma: no cover
        return f"<Binding {self.name} {self.kind.value} at {self.order}>"


class Scope:
    __slots__ = ("kind", "node", "parent", "bindings", "globals", "nonlocals", "star_imports", "_model", "__weakref__")

    def __init__(self, kind: ScopeKind, node, parent: Optional["Scope"], model):
        self.kind = kind
        self.node = node
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.star_imports: list[str] = []
        self._model = None if model is None else weakref.ref(model)  # the model holds its scopes

    @property
    def model(self):
        return None if self._model is None else self._model()

    def add(self, b: Binding) -> None:
        self.bindings.setdefault(b.name, []).append(b)

    def get(self, name: str) -> list[Binding]:
        return self.bindings.get(name, [])

    def __repr__(self) -> str:  # pragma: no cover
        n = getattr(self.node, "name", "")
        return f"<Scope {self.kind.value} {n}>"


def _end(node) -> tuple[int, int]:
    lz = pending(node.body[-1] if type(node) is LazyClassDef else node)
    if lz is not None:
        # a method not parsed yet (or a class ending with one): the end of its text (no
        # code stands between its last statement and there, so every comparison with a
        # position comes out the same)
        return (lz[3], _FAR)
    return (getattr(node, "end_lineno", None) or node.lineno, getattr(node, "end_col_offset", None) or 0)


_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEF_TYPES = frozenset((*_DEFS, LazyFunctionDef))
_FAR = 1 << 30


def collect(scope: Scope, resolve_from: Callable[[ast.ImportFrom], Optional[str]]) -> None:
    """Fill ``scope`` with the bindings of its own code (not of nested scopes)."""
    node = scope.node
    c = _Collector(scope, resolve_from)
    if scope.kind is ScopeKind.MODULE:
        return  # the model fills the module scope chunk by chunk (see model.py)
    if scope.kind is ScopeKind.FUNCTION and c.declarations and node in getattr(c.model, "declaring", (node,)):
        for n in _walk_no_scopes(node):
            if isinstance(n, ast.Global):
                scope.globals.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                scope.nonlocals.update(n.names)
    if scope.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA):
        c.params(node.args)
        if scope.kind is ScopeKind.LAMBDA:
            c.visit(node.body)
        else:
            c.stmts(node.body)
    elif scope.kind is ScopeKind.CLASS:
        c.stmts(node.body)
    else:  # comprehension
        for i, gen in enumerate(node.generators):
            c.target(gen.target, BindingKind.COMPREHENSION_TARGET, gen, iterable=gen.iter, order=_end(gen.iter))
            if i:
                c.visit(gen.iter)
            for cond in gen.ifs:
                c.visit(cond)
        if isinstance(node, ast.DictComp):
            c.visit(node.key)
            c.visit(node.value)
        else:
            c.visit(node.elt)


def collect_module_stmts(scope: Scope, stmts: list, resolve_from) -> None:
    c = _Collector(scope, resolve_from)
    c.stmts(stmts)


class _Collector:
    """Walks one scope's own code and records its bindings."""

    def __init__(self, scope: Scope, resolve_from):
        self.scope = scope
        self.resolve_from = resolve_from
        self.stmt = None  # the statement being visited
        self.model = model = getattr(scope, "model", None)
        # no walrus in the file: an expression binds nothing (only ``:=`` binds inside one)
        self.walrus = model is None or model.has_walrus
        self.declarations = model is None or model.has_declarations

    def bind(self, name, kind, node, **kw) -> None:
        kw.setdefault("stmt", self.stmt)
        scope = self.scope
        if name in scope.globals:  # ``global x`` then ``x = ...``: a module binding
            scope = scope.model.module_scope
        elif name in scope.nonlocals:  # ``nonlocal x``: the enclosing function's
            s = scope.parent
            while s is not None and s.kind is not ScopeKind.FUNCTION:
                s = s.parent
            scope = s or scope
        scope.add(Binding(name, kind, scope, node, **kw))

    def params(self, args: ast.arguments) -> None:
        pos = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)
        for a, d in zip(pos, defaults):
            self.bind(a.arg, BindingKind.PARAMETER, a, target=a, value=d, order=(a.lineno, a.col_offset))
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            self.bind(a.arg, BindingKind.PARAMETER, a, target=a, value=d, order=(a.lineno, a.col_offset))
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self.bind(a.arg, BindingKind.PARAMETER, a, target=a, order=(a.lineno, a.col_offset))

    def stmts(self, stmts) -> None:
        for s in stmts:
            prev, self.stmt = self.stmt, s
            self.visit(s)
            self.stmt = prev

    def target(self, t, kind, node, *, value=None, path=(), iterable=None, order=(0, 0), whole=None) -> None:
        """Bind the names of assignment target ``t``.  ``whole`` is the value of the
        whole target (for unpacking), ``value`` the part for ``t`` when it is known."""
        if whole is None:
            whole = value
        if isinstance(t, ast.Name):
            unpack = (whole, path) if path and value is None and whole is not None else None
            self.bind(t.id, kind, node, target=t, value=value, unpack=unpack, iterable=iterable, order=order)
        elif isinstance(t, (ast.Tuple, ast.List)):
            starred = any(isinstance(e, ast.Starred) for e in t.elts)
            elts = None
            if value is not None and isinstance(value, (ast.Tuple, ast.List)) and not starred:
                if len(value.elts) == len(t.elts) and not any(isinstance(e, ast.Starred) for e in value.elts):
                    elts = value.elts
            for i, e in enumerate(t.elts):
                if isinstance(e, ast.Starred):
                    self.target(e.value, kind, node, iterable=iterable, order=order)
                    continue
                sub = elts[i] if elts is not None else None
                self.target(e, kind, node, value=sub, path=path + (i,) if not starred else (), iterable=iterable,
                            order=order, whole=whole if not starred else None)
        elif isinstance(t, ast.Starred):
            self.target(t.value, kind, node, iterable=iterable, order=order)
        else:  # attribute / subscript stores: visit their expressions
            self.visit(t)

    def visit(self, node) -> None:
        if node is None:
            return
        stack = [node]
        walrus = self.walrus
        expr = ast.expr
        while stack:
            n = stack.pop()
            t = type(n)
            if t is ast.Name:
                continue
            if not walrus and isinstance(n, expr):
                continue  # binds nothing without a ``:=``
            if t in _DEF_TYPES:
                for d in n.decorator_list:
                    stack.append(d)
                self._defaults(n.args, stack)
                if n.returns is not None:
                    stack.append(n.returns)
                self.bind(n.name, BindingKind.FUNCTION, n, order=_end(n))
                continue
            if t is ast.ClassDef or t is LazyClassDef:
                stack.extend(n.decorator_list)
                stack.extend(n.bases)
                stack.extend(k.value for k in n.keywords)
                self.bind(n.name, BindingKind.CLASS, n, order=_end(n))
                continue
            if t is ast.Lambda:
                self._defaults(n.args, stack, annotations=False)
                continue
            if t in _COMPS:
                stack.append(n.generators[0].iter)
                if self.walrus:
                    self._walrus_in(n)
                continue
            if t is ast.Assign:
                for tg in n.targets:
                    self.target(tg, BindingKind.ASSIGNMENT, n, value=n.value, order=_end(n))
                stack.append(n.value)
                continue
            if t is ast.AnnAssign:
                if isinstance(n.target, ast.Name):
                    kind = BindingKind.ASSIGNMENT if n.value is not None else BindingKind.ANNOTATION
                    self.bind(n.target.id, kind, n, target=n.target, value=n.value, order=_end(n))
                else:
                    stack.append(n.target)
                if n.value is not None:
                    stack.append(n.value)
                if self.scope.kind is not ScopeKind.FUNCTION:
                    stack.append(n.annotation)
                continue
            if t is ast.AugAssign:
                if isinstance(n.target, ast.Name):
                    self.bind(n.target.id, BindingKind.AUG_ASSIGNMENT, n, target=n.target, order=_end(n))
                else:
                    stack.append(n.target)
                stack.append(n.value)
                continue
            if t is ast.For or t is ast.AsyncFor:
                self.target(n.target, BindingKind.FOR_TARGET, n, iterable=n.iter, order=_end(n.iter))
                stack.append(n.iter)
                self._block(n.body, n.orelse)
                continue
            if t is ast.With or t is ast.AsyncWith:
                for item in n.items:
                    stack.append(item.context_expr)
                    if item.optional_vars is not None:
                        self.target(item.optional_vars, BindingKind.WITH_TARGET, n, value=item.context_expr,
                                    order=_end(item.context_expr))
                self._block(n.body)
                continue
            if t is ast.NamedExpr:
                self.bind(n.target.id, BindingKind.NAMED_EXPR, n, target=n.target, value=n.value, order=_end(n))
                stack.append(n.value)
                continue
            if t is ast.Import:
                for a in n.names:
                    if a.asname:
                        self.bind(a.asname, BindingKind.IMPORT, a, qualname=a.name, order=_end(n))
                    else:
                        top = a.name.split(".")[0]
                        self.bind(top, BindingKind.IMPORT, a, qualname=top, order=_end(n))
                continue
            if t is ast.ImportFrom:
                mod = self.resolve_from(n)
                for a in n.names:
                    if a.name == "*":
                        if mod:
                            self.scope.star_imports.append(mod)
                        continue
                    q = f"{mod}.{a.name}" if mod else None
                    self.bind(a.asname or a.name, BindingKind.FROM_IMPORT, a, qualname=q, order=_end(n))
                continue
            if t is ast.Global:
                self.scope.globals.update(n.names)
                continue
            if t is ast.Nonlocal:
                self.scope.nonlocals.update(n.names)
                continue
            if t is ast.ExceptHandler:
                if n.name:
                    self.bind(n.name, BindingKind.EXCEPT_HANDLER, n, order=(n.lineno, n.col_offset))
                if n.type is not None:
                    stack.append(n.type)
                self._block(n.body)
                continue
            if t is ast.Delete:
                for tg in n.targets:
                    if isinstance(tg, ast.Name):
                        self.bind(tg.id, BindingKind.DELETION, n, target=tg, order=_end(n))
                    else:
                        stack.append(tg)
                continue
            if t in (ast.MatchAs, ast.MatchStar):
                if n.name:
                    self.bind(n.name, BindingKind.MATCH_CAPTURE, n, order=(n.lineno, n.col_offset))
            elif t is ast.MatchMapping and n.rest:
                self.bind(n.rest, BindingKind.MATCH_CAPTURE, n, order=(n.lineno, n.col_offset))
            if isinstance(n, ast.stmt) and hasattr(n, "body"):
                # if / while / try / match: statements of their blocks are statements too
                for name in ("body", "orelse", "finalbody"):
                    block = getattr(n, name, None)
                    if block:
                        self._block(block)
                for h in getattr(n, "handlers", ()) or ():
                    stack.append(h)
                for case in getattr(n, "cases", ()) or ():
                    stack.append(case.pattern)
                    if case.guard is not None:
                        stack.append(case.guard)
                    self._block(case.body)
                for name in ("test", "subject"):
                    e = getattr(n, name, None)
                    if e is not None:
                        stack.append(e)
                continue
            stack.extend(child_nodes(n))

    def _block(self, *blocks) -> None:
        for b in blocks:
            if b:
                self.stmts(b)

    def _defaults(self, args: ast.arguments, stack: list, annotations: bool = True) -> None:
        stack.extend(args.defaults)
        stack.extend(d for d in args.kw_defaults if d is not None)
        if annotations:
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if a is not None and a.annotation is not None:
                    stack.append(a.annotation)

    def _walrus_in(self, comp) -> None:
        """A ``:=`` inside a comprehension binds in the enclosing (non-class) scope."""
        for n in _walk_no_scopes(comp):
            if isinstance(n, ast.NamedExpr):
                self.bind(n.target.id, BindingKind.NAMED_EXPR, n, target=n.target, value=n.value, order=_end(n))


def _walk_no_scopes(node) -> Iterator[ast.AST]:
    stack = child_nodes(node)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (*_DEFS, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(child_nodes(n))
