"""The rule interface: what a rule declares and what it emits.

A rule is a class with its metadata as class attributes and a ``check`` method that
reads one file through a :class:`Context` (the file's text and its shared
:class:`~torchmend.semantic.SemanticModel`, both on the stdlib ``ast``) and yields
:class:`Finding` objects.  A finding may carry a :class:`Fix`: a function that, given a
:class:`~torchmend.cstview.CstView` of the file (LibCST, parsed only when a fix is
actually built), returns node replacements, plus helper code or imports to add once per
file.  The engine applies the fixes; rules never write files or build diffs themselves.

Everything a rule is, it declares beside its code (tests/test_registry.py checks each
declaration): ``code``, ``name``, ``pitfall`` (its package under ``codemods/rules/``),
``summary``, ``severity``, ``needles`` (the text gate: the file is analysed for the rule
only if it contains one of them, and every string of ``requires_all``), ``verify`` (how
``torchmend verify`` makes the failure visible and the text that shows it), the corpus
minimum of its pitfall, and Fixit-style ``valid``/``invalid`` examples.  The class
docstring is its documentation, in Ruff's sections: ``What it does`` / ``Why is this
bad?`` / ``Example`` / ``Use instead`` / ``Fix safety``.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable, Mapping, Optional, Union

if TYPE_CHECKING:  # libcst is imported only when a fix is built
    import ast

    import libcst as cst

    from .cstview import CstView
    from .semantic import SemanticModel


@functools.lru_cache(maxsize=None)
def common_part(words: tuple[str, ...]) -> Optional[str]:
    """The longest text of at least 4 characters that every one of ``words`` contains
    (``ntropy`` for ``cross_entropy`` and ``CrossEntropyLoss``), else None: a text
    without it holds none of the words."""
    if len(words) < 2:
        return None
    first = min(words, key=len)
    for n in range(len(first), 3, -1):
        for i in range(len(first) - n + 1):
            part = first[i : i + n]
            if all(part in w for w in words):
                return part
    return None


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
    """An edit of one file, built on demand.

    ``build(view)`` returns a mapping from nodes of the LibCST tree in ``view`` to what
    they become: a node, ``cst.RemoveFromParent()`` or a ``cst.FlattenSentinel`` (to
    insert statements around one; ``view.insert_before(stmt, new)``).  It is called only
    when the fix is applied or shown, on a LibCST parse of exactly the text the rule
    analysed.

    ``helpers`` are top-level statements (source text, e.g. a ``def``) that the fix needs
    once per file, each keyed by the name it defines: it is added after the imports
    unless the module already defines that name.  ``imports`` are ``(module, name)`` pairs
    (``name`` None for ``import module``) added unless already imported.
    """

    build: Callable[["CstView"], Mapping["cst.CSTNode", Replacement]]
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
    stmt_lines: tuple[int, int] = (0, 0)  # first and last line of the flagged statement
    cell: int = 0  # in a notebook: the cell (1-based, among all cells); lines are in that cell

    def sort_key(self) -> tuple:
        return (self.path, self.cell, self.line, self.col, self.code)

    def stripped(self) -> "Finding":
        """A copy without the fix's code, cheap to send between processes."""
        import dataclasses

        return dataclasses.replace(self, fix=None, safety=self.fix.safety if self.fix else self.safety)

    def format(self) -> str:
        from .gitdiff import display_path

        extra = ""
        if not self.applied and self.safety is Safety.UNSAFE:
            extra = " (unsafe fix available: --unsafe-fixes)"
        elif not self.applied and self.safety is Safety.SAFE:
            extra = " (fix available)"
        where = f"cell {self.cell}:" if self.cell else ""
        return f"{display_path(self.path)}:{where}{self.line}:{self.col}: {self.code} [{self.severity.value}] {self.message}{extra}"


@dataclass(frozen=True)
class Verify:
    """How ``torchmend verify`` makes the rule's failure visible: the harness ``mode``
    (``device``: a simulated GPU; ``zero_grad``/``softmax``: detectors; ``spawn``: the
    spawn start method; ``load``: a real load; ``plain``) and the texts one of which the
    unfixed script's failure shows (an error message, or a detector's code)."""

    mode: str
    evidence: tuple[str, ...]


class Rule:
    """Base class of every rule.  Subclasses set the class attributes below."""

    code: ClassVar[str]  # "TM101"
    name: ClassVar[str]  # kebab-case, "device-batch-not-moved"
    pitfall: ClassVar[str]  # its package under codemods/rules/ and its corpus directory
    summary: ClassVar[str]  # one line
    severity: ClassVar[Severity] = Severity.BUG
    # Text gate: the file is analysed for this rule only if it contains at least one of
    # these substrings (and, if set, every string of ``requires_all``).  A rule must not
    # be able to find anything in a file without them (tests/test_equivalence.py: the
    # same findings with the gates off).
    needles: ClassVar[tuple[str, ...]] = ()
    requires_all: ClassVar[tuple[str, ...]] = ()
    verify: ClassVar[Verify]
    # the smallest corpus its pitfall directory must hold: (bug cases, look-alikes)
    corpus_minimum: ClassVar[tuple[int, int]] = (8, 6)
    # Fixit-style examples: code the rule must leave silent / must report
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[str, ...]] = ()
    # the rule reads other files of the project (the import index, a sibling module):
    # its gate may go on with ``may_match_project``
    uses_project: ClassVar[bool] = False

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The text gate.  ``has(word)``: whether ``text`` contains ``word`` (the engine
        passes one that remembers, so a word shared by several rules is looked for once)."""
        has = has or text.__contains__
        if cls.requires_all and not all(has(n) for n in cls.requires_all):
            return False
        if not cls.needles:
            return True
        common = common_part(cls.needles)
        if common is not None and not has(common):
            return False  # (no needle can stand in the text: one search instead of one per needle)
        return any(has(n) for n in cls.needles)

    @classmethod
    def may_match_project(cls, path: str, text: str, has, project) -> bool:
        """The part of the gate that reads other files of the project (a rule with
        ``uses_project``), asked only for a file that ``may_match`` refused: it must let
        through every file in which the rule can find something only with their help.
        Default: none."""
        return False

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or cls.summary)

    def check(self, ctx: "Context") -> Iterable[Finding]:  # pragma: no cover
        raise NotImplementedError


class Context:
    """One file as the rules see it: its path and text, the shared semantic model, the
    project index and the run's options."""

    def __init__(self, path: str, text: str, sem: "SemanticModel", project=None, options=None, seen=None):
        self.path = path
        self.text = text
        self.sem = sem
        self.project = project
        self.options = options
        # the text is a notebook's code cells, run by a kernel (``__name__ == "__main__"``)
        self.notebook = bool(getattr(options, "notebook", False))
        self.cache: dict = {}  # per-file analyses shared by the rules of one pitfall
        self._seen: dict = {} if seen is None else seen  # word -> in the text (see ``has``)

    def has(self, word: str) -> bool:
        """``word in self.text``, each word looked for once per file; the engine's text
        gate fills the same memo, so what it looked for is not looked for again."""
        got = self._seen.get(word)
        if got is None:
            got = self._seen[word] = word in self.text
        return got

    def finding(
        self,
        rule: type[Rule] | Rule,
        node: "ast.AST",
        message: str,
        fix: Optional[Fix] = None,
        severity: Optional[Severity] = None,
    ) -> Finding:
        line, col = self.sem.position(node)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = self.sem._char_col(end_line, getattr(node, "end_col_offset", 0) or 0) + 1
        stmt = self.sem.statement_of(node)
        lines = (stmt.lineno, stmt.end_lineno or stmt.lineno) if stmt is not None else (line, end_line)
        return Finding(
            code=rule.code,
            message=message,
            line=line,
            col=col,
            severity=severity or rule.severity,
            fix=fix,
            path=self.path,
            end_line=end_line,
            end_col=end_col,
            stmt_lines=lines,
        )
