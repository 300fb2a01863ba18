"""The rule interface: what a rule declares and what it emits.

A rule is a class with its metadata as class attributes and a ``check`` method that
reads one parsed file (a :class:`FileContext`, shared by every rule that runs on the
file) and yields :class:`Finding` objects.  A finding may carry a :class:`Fix`: a set of
node replacements on the *original* tree, plus helper code or imports to add once per
file.  The engine applies the fixes; rules never write files or build diffs themselves.

The class docstring is the rule's documentation, written the way Ruff documents its
rules: ``What it does`` / ``Why is this bad?`` / ``Example`` / ``Use instead``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Iterable, Iterator, Mapping, Optional, Union

if TYPE_CHECKING:  # libcst is imported lazily so that cached runs start fast
    import ast

    import libcst as cst


class Severity(str, enum.Enum):
    BUG = "bug"
    WARNING = "warning"
    INFO = "info"


class Safety(str, enum.Enum):
    """Fix-safety classes, after Ruff: safe fixes are applied by default, unsafe ones
    only with ``--unsafe-fixes`` (and always shown as a suggested diff)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


Replacement = Union["cst.CSTNode", "cst.RemovalSentinel", "cst.FlattenSentinel"]


@dataclass
class Fix:
    """An edit of one file.

    ``replacements`` maps nodes of the *original* tree (as the rule saw them in the
    :class:`FileContext`) to what they become: a node, ``cst.RemoveFromParent()`` or a
    ``cst.FlattenSentinel`` (to insert statements around one).  To insert a statement
    before ``stmt`` use ``ctx.insert_before(stmt, new_stmt)``.

    ``helpers`` are top-level statements (source text, e.g. a ``def``) that the fix needs
    once per file, each keyed by the name it defines: it is added after the imports
    unless the module already defines that name.  ``imports`` are ``(module, name)`` pairs
    (``name`` None for ``import module``) added unless already imported.
    """

    replacements: Mapping["cst.CSTNode", Replacement]
    safety: Safety = Safety.SAFE
    message: str = ""
    helpers: Mapping[str, str] = field(default_factory=dict)
    imports: tuple[tuple[str, Optional[str]], ...] = ()
    # A whole-module rewrite (main_guard) conflicts with every other edit: the engine
    # applies it alone, in a pass of its own.
    whole_module: bool = False


@dataclass
class Finding:
    code: str
    message: str
    line: int
    col: int  # 1-based, like Ruff and flake8
    severity: Severity
    fix: Optional[Fix] = None
    path: str = ""
    applied: bool = False  # set by the engine: the fix is in the output
    safety: Optional[Safety] = None  # the fix's class, kept when the fix itself is dropped
    end_line: int = 0  # where the flagged node ends (0: unknown); end_col 1-based, exclusive
    end_col: int = 0

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code)

    def stripped(self) -> "Finding":
        """A copy without the fix's syntax trees, cheap to send between processes."""
        import dataclasses

        return dataclasses.replace(self, fix=None, safety=self.fix.safety if self.fix else self.safety)

    def format(self) -> str:
        from .gitdiff import display_path

        extra = ""
        if not self.applied and self.safety is Safety.UNSAFE:
            extra = " (unsafe fix available: --unsafe-fixes)"
        elif not self.applied and self.safety is Safety.SAFE:
            extra = " (fix available)"
        return f"{display_path(self.path)}:{self.line}:{self.col}: {self.code} [{self.severity.value}] {self.message}{extra}"


class Rule:
    """Base class of every rule.  Subclasses set the class attributes below."""

    code: ClassVar[str]  # "TM101"
    name: ClassVar[str]  # kebab-case, "device-batch-not-moved"
    pitfall: ClassVar[str]  # module / corpus directory name, "device"
    summary: ClassVar[str]  # one line
    severity: ClassVar[Severity] = Severity.BUG
    # Textual pre-filter: the file is parsed for this rule only if it contains at
    # least one of these substrings (and, if set, every string of ``requires_all``).
    needles: ClassVar[tuple[str, ...]] = ()
    requires_all: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def may_match(cls, text: str) -> bool:
        if cls.requires_all and not all(n in text for n in cls.requires_all):
            return False
        return not cls.needles or any(n in text for n in cls.needles)

    @classmethod
    def ast_check(cls, tree: "ast.Module") -> bool:
        """Optional second gate, after ``needles``: may this rule fire on ``tree`` (the
        file parsed with the stdlib ``ast``, which is several times cheaper than a LibCST
        parse plus metadata)?  The default says yes.  A rule that overrides it must only
        answer False when it certainly finds nothing in the file (e.g. no call named
        ``load_state_dict`` at all, no ``forward`` method creating tensors): a wrong False
        is a missed finding.  The ``ast`` tree is parsed once per file and shared by every
        rule; the engine calls this only when at least one rule overrides it, and when
        ``ast`` cannot parse the file it skips the gate (LibCST then reports the error)."""
        return True

    @classmethod
    def ast_focus(cls, tree: "ast.Module") -> Optional[frozenset[str]]:
        """Optional: the names of the top-level definitions this rule reads in ``tree``
        (``None``, the default: any definition that mentions something relevant, see
        codemods/focus.py).  When every rule that runs on a file declares its set, the
        engine elides the bodies of all other top-level definitions before the LibCST
        parse (still keeping whatever the kept code refers to).  A rule that declares a
        set must find exactly the same with the other bodies elided."""
        return None

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or cls.summary)

    def check(self, ctx: "FileContext") -> Iterable[Finding]:  # pragma: no cover
        raise NotImplementedError


class FileContext:
    """One parsed file with its metadata, shared by all rules.

    Metadata is resolved lazily, once per file and provider, on first use: positions
    when a finding is made, parents on the first ``parent``/``ancestors``, scopes on the
    first ``qualnames``/``scope`` (qualified names then per node asked about).  A rule that looks at the tree
    and finds no candidate pays for the parse only (metadata costs several parses).
    """

    def __init__(self, path: str, source: str, module: "cst.Module", project: "ProjectInfo | None" = None):
        from libcst import metadata as md

        self.path = path
        self.source = source
        self.lines = source.splitlines()
        self.project = project or ProjectInfo()
        self.wrapper = md.MetadataWrapper(module, unsafe_skip_copy=True)
        self.module: cst.Module = self.wrapper.module
        self._resolved: dict = {}
        # set when ``source`` is the file with unreachable definitions elided
        # (codemods/focus.py): the ``Focused`` map back to the whole file, which fixes
        # made on it go through; ``full_source`` is the whole file
        self.focus = None
        self.full_source = source

    def _resolve(self, provider):
        got = self._resolved.get(provider)
        if got is None:
            from .cstutil import fast_visits

            with fast_visits():  # the providers only read the tree (see cstutil)
                got = self._resolved[provider] = self.wrapper.resolve(provider)
        return got

    @property
    def _md(self):
        """Mapping provider -> resolved metadata (resolved on access)."""
        ctx = self

        class _Lazy:
            def __getitem__(self, provider):
                from libcst import metadata as md

                return ctx._parent if provider is md.ParentNodeProvider else ctx._resolve(provider)

        return _Lazy()

    @cached_property
    def _pos(self):
        """Node -> ``CodeRange``, what LibCST's ``PositionProvider`` computes (syntactic
        positions), from one plain code generation that records character offsets; the
        provider tracks line and column on every token instead, which costs ~3x more.
        tests/test_rule_positions.py compares the two on every node of the corpus."""
        from .positions import positions

        return positions(self.module)

    @property
    def _scope(self):
        from libcst import metadata as md

        return self._resolve(md.ScopeProvider)

    @cached_property
    def _parent(self) -> dict:
        # what ParentNodeProvider computes (each node's parent through ``children``),
        # with an explicit stack and cstutil's field reader: ~10x faster than the provider
        from .cstutil import children

        parent: dict = {}
        stack = [self.module]
        while stack:
            node = stack.pop()
            for child in children(node):
                parent[child] = node
                stack.append(child)
        return parent

    # --- metadata helpers -------------------------------------------------------------
    def nodes(self, *types: type) -> list:
        """Every node of the given types in the file, from the parent map (much cheaper
        than walking the tree); cached per set of types."""
        cache = self.__dict__.setdefault("_nodes_by_type", {})
        got = cache.get(types)
        if got is None:
            got = cache[types] = [n for n in self._parent if isinstance(n, types)]
        return got

    def qualnames(self, node: "cst.CSTNode") -> set[str]:
        """Qualified names of an expression (``{"torch.nn.CrossEntropyLoss"}``), through
        imports and aliases; empty when it cannot be resolved.

        What LibCST's ``QualifiedNameProvider`` gives (``Scope.get_qualified_names_for``
        of the node's scope), asked only for the nodes a rule looks at: the provider
        itself walks the whole tree to attach a lazy value to every node, which cost
        as much as the scope analysis."""
        cache = self.__dict__.setdefault("_qn_cache", {})
        got = cache.get(node)
        if got is None:
            scope = self._scope.get(node)
            got = cache[node] = frozenset(q.name for q in scope.get_qualified_names_for(node)) if scope else frozenset()
        return set(got)

    def is_qualname(self, node: "cst.CSTNode", *names: str) -> bool:
        return bool(self.qualnames(node) & set(names))

    def position(self, node: "cst.CSTNode") -> tuple[int, int]:
        """(line, col) of a node, 1-based."""
        r = self._pos[node]
        return r.start.line, r.start.column + 1

    def end_line(self, node: "cst.CSTNode") -> int:
        return self._pos[node].end.line

    def parent(self, node: "cst.CSTNode") -> Optional["cst.CSTNode"]:
        return self._parent.get(node)

    def ancestors(self, node: "cst.CSTNode") -> Iterator["cst.CSTNode"]:
        p = self._parent.get(node)
        while p is not None:
            yield p
            p = self._parent.get(p)

    def scope(self, node: "cst.CSTNode"):
        return self._scope.get(node)

    def code(self, node: "cst.CSTNode") -> str:
        return self.module.code_for_node(node)

    # --- building findings and fixes ----------------------------------------------------
    def finding(
        self,
        rule: type[Rule] | Rule,
        node: "cst.CSTNode",
        message: str,
        fix: Optional[Fix] = None,
        severity: Optional[Severity] = None,
    ) -> Finding:
        r = self._pos[node]
        return Finding(
            code=rule.code,
            message=message,
            line=r.start.line,
            col=r.start.column + 1,
            severity=severity or rule.severity,
            fix=fix,
            path=self.path,
            end_line=r.end.line,
            end_col=r.end.column + 1,
        )

    @staticmethod
    def insert_before(stmt: "cst.CSTNode", *new: "cst.CSTNode") -> dict:
        """Replacement that inserts statements ``new`` right before ``stmt`` (whose
        leading comments stay attached to it)."""
        import libcst as cst

        return {stmt: cst.FlattenSentinel([*new, stmt])}

    @staticmethod
    def insert_after(stmt: "cst.CSTNode", *new: "cst.CSTNode") -> dict:
        import libcst as cst

        return {stmt: cst.FlattenSentinel([stmt, *new])}


@dataclass
class ProjectInfo:
    """Facts about the whole run that a rule may need (main_guard asks whether a
    script is imported by another file of the tree).  Computed lazily, per process."""

    roots: tuple[str, ...] = ()
    # what a rule consulted beyond the file itself (the engine resets both per file):
    # ``used``, the whole tree (the import index); ``deps``, single files it read.  The
    # cache keeps such a result only while those are unchanged.
    used: bool = False
    deps: set = field(default_factory=set)

    def read_dependency(self, path: str) -> None:
        """Declare that the current file's result depends on the file at ``path``."""
        self.deps.add(path)

    def is_imported_elsewhere(self, path: str) -> bool:
        self.used = True
        from .project import imported_module_names

        import os

        stem = os.path.splitext(os.path.basename(path))[0]
        return stem in imported_module_names(self.roots, exclude=path)
