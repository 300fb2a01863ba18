"""The engine: run the rules on one file, apply their fixes, check the result.

``process_file`` is the unit of work.  Detection runs on the stdlib ``ast``: each rule's
text gate (``needles``), then one :class:`~torchmend.semantic.SemanticModel` shared by
every rule, which parses only the parts of the file the rules reach.  LibCST is parsed
only when a fix is applied or shown (``diff``/``apply``), never for ``check`` and never
for a file without a fix.  The fixes chosen are applied in passes (non-overlapping edits
together, overlapping ones in the next pass, analysing the new text in between, like
Ruff's fix loop) until no applicable fix is left.  That fixpoint is the idempotence
check: a rule that keeps finding something to fix after it was applied is an internal
error, and so is output that does not parse.  Either way nothing is written.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from . import suppression
from .gitdiff import unified_diff
from .project import NeedsProject, Project
from .rule import Context, Finding, Fix, Rule, Safety
from .sourcefile import Skipped, Source, SourceError, decode_source, read_source, syntax_error

MAX_PASSES = 6


@dataclass(frozen=True)
class Options:
    """What to run and how; small, picklable (it travels to every worker) and hashable
    (files are grouped and results cached by it; vary it with ``dataclasses.replace``)."""

    select: frozenset[str] = frozenset()  # codes; empty = all
    unsafe_fixes: bool = False
    fix: bool = True  # compute fixes (diff/apply); False for check
    write: bool = False  # apply in place
    roots: tuple[str, ...] = ()
    max_bytes: int = 4 * 1024 * 1024
    # the text gate (needles) and parsing only what the rules reach (semantic/source.py);
    # False runs every rule on every file parsed whole: the reference tests compare with
    shortcuts: bool = True
    # files shorter than this are parsed whole (the tests set 0 to cut every file)
    lazy_min_chars: int = 2000
    fix_edits: bool = False  # also a Suggestion (the diff of that fix alone) for every fixable finding
    # the text is a notebook's code cells (set by the engine for ``.ipynb`` files): the
    # rules see ``Context.notebook`` (TM301 reports what a kernel makes of workers)
    notebook: bool = False
    # hash every file read (``FileResult.digest``: the cache's key for the content, and
    # what ``check --add-noqa`` compares before writing); False for a run without cache
    digest: bool = True


@dataclass
class Suggestion:
    finding: Finding
    diff: bytes


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # all findings on the original text
    applied: Counter = field(default_factory=Counter)  # code -> fixes applied
    diff: bytes = b""
    suggestions: list[Suggestion] = field(default_factory=list)  # unsafe fixes not applied
    error: Optional[str] = None
    skipped: Optional[str] = None
    parsed: bool = False  # False: the text gate ruled it out
    written: bool = False
    stage: str = ""  # STAGE_*: how far the file went ("" when it never started)
    needs_project: bool = False  # a rule needed the import index this process lacks
    needs_modules: tuple = ()  # the modules whose importers it asked for
    # for the cache: what was read (set by process_file), and whether the result depends
    # on other files (the project was consulted) or on something else than the content
    digest: str = ""
    size: int = -1
    mtime_ns: int = -1
    cacheable: bool = False
    tree_dependent: bool = False  # a rule consulted the whole tree (see torchmend.cache)
    deps: tuple = ()  # (path, size, mtime_ns) of other files a rule read
    warnings: list = field(default_factory=list)  # (line, message[, cell]): suppression comments naming no rule
    # the fixed bytes when they were not written (standard input; never cached or sent
    # back by a worker)
    new_raw: bytes = b""

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def unfixed(self) -> list[Finding]:
        """Findings left for a human: those whose fix is not applied."""
        return [f for f in self.findings if not f.applied]

    def stripped(self) -> "FileResult":
        """Without fix code: what a worker process sends back."""
        self.findings = [f.stripped() for f in self.findings]
        self.new_raw = b""
        self.suggestions = [Suggestion(s.finding.stripped(), s.diff) for s in self.suggestions]
        return self


# --------------------------------------------------------------------------- rules
_RULE_CACHE: dict[frozenset, list[Rule]] = {}


def rules_for(select: frozenset[str]) -> list[Rule]:
    rules = _RULE_CACHE.get(select)
    if rules is None:
        from .registry import all_rules

        rules = [r() for r in all_rules() if not select or r.code in select]
        _RULE_CACHE[select] = rules
    return rules


# How far a file went (FileResult.stage): no rule's text gate matched; analysed on the
# stdlib ast; LibCST parsed too (a fix was built).
STAGE_PREFILTER, STAGE_AST, STAGE_PARSED = "prefilter", "ast", "parsed"


def select_rules(text: str, rules: Iterable[Rule], seen: Optional[dict] = None, path: str = "",
                 project: Project | None = None) -> list[Rule]:
    """The rules whose text gate lets ``text`` through (each word looked for once;
    ``seen``: the memo of those searches, which the file's :class:`Context` goes on with);
    with ``project``, also those whose gate on the project's other files
    (``Rule.may_match_project``) lets the file at ``path`` through."""
    if seen is None:
        seen = {}

    def has(word: str) -> bool:
        got = seen.get(word)
        if got is None:
            got = seen[word] = word in text
        return got

    return [r for r in rules if r.may_match(text, has)
            or (project is not None and r.uses_project and r.may_match_project(path, text, has, project))]


def analyse(path: str, text: str, rules: Iterable[Rule], project: Project | None = None, trace: dict | None = None,
            shortcuts: bool = True, options: Options | None = None, tail: str = ""):
    """Run every rule whose gate lets ``text`` through on one shared semantic model;
    returns ``(ctx, findings)``, ``(None, [])`` when no rule applies.  Without
    ``shortcuts`` every rule runs and the file is parsed whole.  ``tail``: the trailing
    comment lines held back from ``text`` (sourcefile), read for suppression comments."""
    seen: dict = {}  # word -> whether the text holds it: the gate's searches, and the rules'
    if project is None:
        project = Project(standalone=True)
    active = select_rules(text, rules, seen, path, project) if shortcuts else list(rules)
    lazy = shortcuts
    if trace is not None:
        trace["stage"] = STAGE_PREFILTER if not active else STAGE_AST
    if not active:
        return None, []
    from .semantic import LazyParseError, SemanticModel

    while True:
        try:
            sem = SemanticModel(text, path, project, lazy=lazy,
                                lazy_min_chars=options.lazy_min_chars if options is not None else 2000)
            ctx = Context(path, text, sem, project, options, seen)
            findings: list[Finding] = []
            for rule in active:
                findings.extend(rule.check(ctx))
            # the analyses the rules shared hold the context: dropped, so that no cycle
            # keeps the file's model alive (it is freed without the garbage collector)
            ctx.cache.clear()
            break
        except LazyParseError:
            if not lazy:
                raise
            lazy = False  # a cut was wrong (or the file is invalid): parse it whole
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            # the stdlib parser refused it (or a rule's recursion did): say why
            msg = syntax_error(text)
            if msg is None and isinstance(e, (RecursionError, MemoryError)):
                msg = "too deeply nested to analyse (recursion limit reached)"
            if msg is None:
                raise
            raise SourceError(msg) from None
    findings = suppression.filter(findings, text + tail if tail else text)
    findings.sort(key=Finding.sort_key)
    return ctx, findings


# --------------------------------------------------------------------------- fixes
def _one_per_fix(findings: list[Finding]) -> list[Finding]:
    """The first finding of each distinct Fix object, in order."""
    seen: set[int] = set()
    out = []
    for f in findings:
        if id(f.fix) not in seen:
            seen.add(id(f.fix))
            out.append(f)
    return out


def _eligible(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and (f.fix.safety is Safety.SAFE or unsafe)


@dataclass
class _Built:
    fix: Fix
    replacements: dict
    spans: list


def _build_in(view, fix: Fix) -> _Built:
    """``fix`` built on ``view``, with the spans of the nodes it replaces (NodeNotFound
    when it asks for a node the view does not have)."""
    repl = dict(fix.build(view))
    spans = []
    for node in repl:
        r = view.range(node)
        spans.append(((r.start.line, r.start.column), (r.end.line, r.end.column)))
    return _Built(fix, repl, spans)


def _build(view, fix: Fix) -> _Built:
    from .cstview import NodeNotFound

    try:
        return _build_in(view, fix)
    except NodeNotFound as e:
        raise SourceError(f"internal error: a fix could not be built ({e}); nothing written") from None


def _overlaps(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1] or a == b


def _choose(built: list[_Built]) -> list[_Built]:
    """Fixes that can be applied together: no two touch overlapping code.  A whole-module
    fix goes alone and only once nothing else is left."""
    local = [b for b in built if not b.fix.whole_module]
    if not local:
        return built[:1]
    chosen, taken = [], []
    for b in local:
        if any(_overlaps(s, t) for s in b.spans for t in taken):
            continue
        chosen.append(b)
        taken.extend(b.spans)
    return chosen


def apply_fixes(view, built: Sequence[_Built], with_head: bool = True) -> str:
    """The code of ``view`` with the built fixes applied (they must not overlap), and
    the helpers and imports they need (unless ``with_head`` is false: the caller adds
    them by text, see :func:`_fix_in_chunk`)."""
    import libcst as cst

    repl: dict[int, object] = {}
    for b in built:
        for node, new in b.replacements.items():
            repl[id(node)] = new

    # statements that hold no replaced node are not entered (their offsets show it)
    spans = []
    for b in built:
        for node in b.replacements:
            o = view.offsets(node) if hasattr(view, "offsets") else None
            if o is None:
                spans = None
                break
            spans.append(o)
        if spans is None:
            break
    offsets_of = view.offsets if spans else None

    class _Apply(cst.CSTTransformer):
        def on_visit(self, node):
            # only statements are skipped: their text holds all of theirs (an expression's
            # range may leave a child out: a parameter's excludes its default)
            if offsets_of is None or not isinstance(node, cst.BaseStatement):
                return True
            o = offsets_of(node)
            if o is None:
                return True
            start, end = o
            for d in getattr(node, "decorators", ()):
                od = offsets_of(d)
                if od is None:
                    return True
                start = min(start, od[0])
            return any(start <= a and b <= end for a, b in spans)

        def on_leave(self, original_node, updated_node):
            new = repl.get(id(original_node))
            return updated_node if new is None else new

    module = view.module.visit(_Apply()) if repl else view.module
    helpers: dict[str, str] = {}
    imports: list[tuple[str, Optional[str]]] = []
    for b in built:
        helpers.update(b.fix.helpers)
        imports.extend(i for i in b.fix.imports if i not in imports)
    if (helpers or imports) and with_head:
        module = add_helpers_and_imports(module, helpers, imports)
    return module.code


def _defined_names(module) -> set[str]:
    import libcst as cst

    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Assign):
                    for t in s.targets:
                        if isinstance(t.target, cst.Name):
                            names.add(t.target.value)
    return names


def _is_import(stmt) -> bool:
    import libcst as cst

    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def add_helpers_and_imports(module, helpers: dict[str, str], imports: list[tuple[str, Optional[str]]]):
    """Add missing imports and helper definitions, each once: a helper goes after the
    leading block of docstring and top-level imports unless its name is defined; one
    plain ``import m`` goes at the end of that block too, before the helpers (the
    module's code below may call a helper at import time: an import placed after the
    last top-level import, which may stand below that call or in a later notebook cell,
    would not have run yet); other imports through LibCST's AddImportsVisitor, scheduled
    in a CodemodContext (the end of the first import block)."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    existing = _defined_names(module)
    body = list(module.body)
    lead = 0  # after the leading block of docstring and imports
    for i, stmt in enumerate(body):
        if _is_import(stmt) or (i == 0 and _is_docstring(stmt)):
            lead = i + 1
        else:
            break
    new_stmts = []
    for name, code in helpers.items():
        if name in existing:
            continue
        parsed = cst.parse_module(code.strip("\n") + "\n")
        helper = list(parsed.body)
        helper[0] = helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        new_stmts.extend(helper)
    if new_stmts:
        if lead < len(body):
            nxt = body[lead]
            blank = sum(1 for ln in nxt.leading_lines if ln.comment is None) if hasattr(nxt, "leading_lines") else 2
            if blank < 2 and hasattr(nxt, "leading_lines"):
                body[lead] = nxt.with_changes(leading_lines=[cst.EmptyLine()] * (2 - blank) + list(nxt.leading_lines))
        body[lead:lead] = new_stmts
    if imports:
        # (only the leading block's imports have run before the code that may need them)
        have = _top_level_imports(module.with_changes(body=body[:lead]))
        imports = [i for i in imports if i not in have]
    plain = [i for i in imports if i[1] is None]
    for mod, _ in plain:
        new = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.parse_expression(mod))])])
        body.insert(lead, new)
        lead += 1
    module = module.with_changes(body=body)
    rest = [i for i in imports if i[1] is not None]
    if rest:
        cctx = CodemodContext()
        for mod, obj in rest:
            AddImportsVisitor.add_needed_import(cctx, mod, obj)
        module = AddImportsVisitor(cctx).transform_module(module)
    return module


def _top_level_imports(module) -> set:
    """``(module, None)`` for each top-level ``import m`` and ``(module, name)`` for each
    ``from m import name`` (without ``as``): what AddImportsVisitor would find there."""
    import libcst as cst

    out: set = set()
    for stmt in module.body:
        if not _is_import(stmt):
            continue
        for s in stmt.body:
            if isinstance(s, cst.Import):
                for a in s.names:
                    if a.asname is None:
                        out.add((module.code_for_node(a.name), None))
            elif isinstance(s, cst.ImportFrom) and not s.relative and s.module is not None and not isinstance(s.names, cst.ImportStar):
                m = module.code_for_node(s.module)
                for a in s.names:
                    if a.asname is None:
                        out.add((m, module.code_for_node(a.name)))
    return out


def _is_docstring(stmt) -> bool:
    import libcst as cst

    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _view(text: str):
    import libcst as cst

    from .cstview import CstView

    try:
        return CstView(text)
    except cst.ParserSyntaxError as e:
        raise SourceError(f"LibCST cannot parse the file to fix it (line {e.raw_line}): {e.message.splitlines()[0]}") from None
    except RecursionError:
        raise SourceError("too deeply nested for LibCST to fix; nothing written") from None


# --------------------------------------------------------------------------- one file
class FixError(SourceError):
    """The findings are known but their fixes could not be made (LibCST cannot parse the
    file, a fix would produce invalid Python, the fixes do not converge): the findings
    are reported unfixed, with this one-line reason, and nothing is written."""

    def __init__(self, message: str, findings: list):
        super().__init__(message)
        self.findings = findings


def fix_text(path: str, text: str, opts: Options, project: Project | None = None, trace: dict | None = None,
             tail: str = ""):
    """Run the rules and apply eligible fixes to a fixpoint.

    Returns ``(findings, new_text, applied, ctx)``; raises :class:`FixError` (with the
    findings) when the fixes cannot be made, do not converge or produce invalid Python.
    """
    rules = rules_for(opts.select)
    ctx, findings = analyse(path, text, rules, project, trace, opts.shortcuts, opts, tail)
    applied: Counter = Counter()
    if not opts.fix or ctx is None:
        return findings, text, applied, ctx
    try:
        current = _fixpoint(path, text, findings, rules, project, trace, opts, applied, tail)
        if current != text:
            lost = sorted(_undefined_names(current) - _undefined_names(text))
            if lost:
                raise SourceError(f"internal error: a fix by {', '.join(sorted(applied))} left "
                                  f"{', '.join(f'`{n}`' for n in lost[:3])} undefined; nothing written")
    except FixError:
        raise
    except SourceError as e:
        raise FixError(str(e), findings) from None
    # which of the original findings were fixed: eligible ones are (applied, or deferred and
    # applied in a later pass: the loop only ends when no eligible finding is left)
    for f in findings:
        f.applied = _eligible(f, opts.unsafe_fixes)
    return findings, current, applied, ctx


def _undefined_names(text: str) -> frozenset:
    """The names ``text`` reads where no scope it can see binds them (its own, the
    functions around it, the module, a ``global`` anywhere) and that are no builtins:
    what a ``NameError`` would name; none when the module star-imports.  One walk,
    linear in the text (comprehensions count as their function's scope)."""
    import builtins

    from .semantic.nodes import child_nodes

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # (the fix loop parsed it already)
        return frozenset()
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    declared = set()  # ``global x`` anywhere binds a module name
    for n in ast.walk(tree):
        if isinstance(n, ast.alias) and n.name == "*":
            return frozenset()
        if isinstance(n, ast.Global):
            declared.update(n.names)

    def direct(node):
        """(bound, read, inner scopes) of ``node``'s own code: an inner scope's name, its
        decorators, defaults and bases belong to ``node`` (annotations are not read)."""
        bound, read, inner = set(), [], []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            bound.update(x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None)
        stack = list(node.body) if isinstance(node.body, list) else [node.body]
        while stack:
            n = stack.pop()
            t = type(n)
            if t in scopes:
                inner.append(n)
                if t is not ast.Lambda:
                    bound.add(n.name)
                outer = list(getattr(n, "decorator_list", ())) + list(getattr(n, "bases", ())) \
                    + [k.value for k in getattr(n, "keywords", ())]
                if t is not ast.ClassDef:
                    outer += [d for d in (*n.args.defaults, *n.args.kw_defaults) if d is not None]
                stack.extend(outer)
                continue
            if t is ast.Name:
                if isinstance(n.ctx, ast.Load):
                    read.append(n.id)
                else:
                    bound.add(n.id)
            elif t is ast.alias:
                bound.add(n.asname or n.name.split(".")[0])
            elif t in (ast.Global, ast.Nonlocal):
                bound.update(n.names)
            elif t is ast.ExceptHandler and n.name:
                bound.add(n.name)
            elif t in _MATCH_NAMES and getattr(n, "name", None):
                bound.add(n.name)
            elif t is _MATCH_MAPPING and n.rest:
                bound.add(n.rest)
            stack.extend(child_nodes(n))
        return bound, read, inner

    base = set(dir(builtins)) | {"__file__", "__builtins__", "__spec__", "__loader__", "__path__", "__cached__",
                                 "__name__", "__doc__", "__class__"} | declared
    out = set()
    work = [(tree, (base,))]  # a scope and the bound names of the scopes it sees (a chain, not copied)
    while work:
        node, chain = work.pop()
        bound, read, inner = direct(node)
        for r in read:
            if r not in bound and not any(r in names for names in chain):
                out.add(r)
        # a class's names are not seen by its methods
        seen = chain if isinstance(node, ast.ClassDef) else (bound, *chain)
        work.extend((c, seen) for c in inner)
    return frozenset(out)


# the match-statement patterns that bind a name (Python 3.10+)
_MATCH_NAMES = tuple(getattr(ast, n) for n in ("MatchAs", "MatchStar") if hasattr(ast, n))
_MATCH_MAPPING = getattr(ast, "MatchMapping", None)


def _fix_in_chunk(text: str, fixes: list[Finding], unique: list[Finding], min_chars: int = 2000):
    """The pass's fixes made on a LibCST parse of the one top-level chunk that holds every
    finding (see :mod:`torchmend.semantic.source`), spliced back into the text: ``(new
    text, built fixes, the new parts)``, each new part ``(line, code)``: code that
    stands at that line of the new text, whole top-level statements (what a check of
    the result parses: the rest of the text is the file's own statements, unchanged);
    None when that does not apply (fixes in several chunks, a whole-module fix, helpers
    or imports that :mod:`torchmend.head` cannot place by text, a node the fix needs
    outside the chunk), and the caller parses the whole file.
    ``tests/test_equivalence.py`` compares the two ways (``Options(shortcuts=False)``
    always parses the whole file), ``tests/test_head.py`` the placement of additions."""
    from .cstview import CstView, NodeNotFound
    from .semantic.source import ParsedSource

    if any(f.fix.whole_module for f in unique):
        return None
    chunks = ParsedSource._cut(text, min_chars)
    if not chunks:
        return None
    lines = set()
    for f in fixes:
        lines.update(x for x in (f.line, f.end_line, *f.stmt_lines) if x)
    if not lines:
        return None
    lo, hi = min(lines), max(lines)
    c = next((c for c in chunks if c.start_line <= lo and hi <= c.end_line), None)
    if c is None:
        return None
    import libcst as cst

    try:
        view = CstView(text[c.start : c.end], line_offset=c.start_line - 1)
        built = [_build_in(view, f.fix) for f in unique]
    except (NodeNotFound, cst.ParserSyntaxError):
        return None
    except Exception:  # a fix that needs the whole module: the reference path decides
        return None
    chosen = _choose(built)
    head: list = []
    helpers: dict[str, str] = {}
    imports: list[tuple[str, Optional[str]]] = []
    for b in chosen:
        helpers.update(b.fix.helpers)
        imports.extend(i for i in b.fix.imports if i not in imports)
    if helpers or imports:
        # added by text where the LibCST path puts them (head.py), when the fixes leave
        # the top-level statements as they are and the additions stand before the chunk
        top = {id(s) for s in view.module.body}
        if any(id(n) in top for b in chosen for n in b.replacements):
            return None
        from .head import head_edits

        head = head_edits(text, helpers, imports)
        if head is None or any(at > c.start for at, _ in head):
            return None
    out, pos, parts, added = [], 0, [], 0
    for at, add in head:
        out += [text[pos:at], add]
        parts.append((text.count("\n", 0, at) + added + 1, add))
        added += add.count("\n")
        pos = at
    code = apply_fixes(view, chosen, with_head=False)
    if not code.endswith("\n") and c.end < len(text):
        return None
    parts.append((c.start_line + added, code))
    out += [text[pos : c.start], code, text[c.end :]]
    return "".join(out), chosen, parts


def _fixpoint(path, text, findings, rules, project, trace, opts: Options, applied: Counter, tail: str = "") -> str:
    from .semantic.source import parse_at

    current, cur_findings = text, findings
    for _ in range(MAX_PASSES):
        fixes = [f for f in cur_findings if _eligible(f, opts.unsafe_fixes)]
        if not fixes:
            break
        if trace is not None:
            trace["stage"] = STAGE_PARSED
        # one Fix may be shared by several findings (a follow-on edit reported at its own
        # line): built and counted once
        unique = _one_per_fix(fixes)
        got = _fix_in_chunk(current, fixes, unique, opts.lazy_min_chars) if opts.shortcuts else None
        if got is None:
            view = _view(current)
            built = [_build(view, f.fix) for f in unique]
            chosen = _choose(built)
            new = apply_fixes(view, chosen)
            parts = [(1, new)]
        else:
            # only what the fixes wrote is parsed: the rest is the file's statements as they were
            new, chosen, parts = got
        chosen_ids = {id(b.fix) for b in chosen}
        for f in unique:
            if id(f.fix) in chosen_ids:
                applied[f.code] += 1
        try:
            for line, code in parts:
                parse_at(code, line)
        except SyntaxError as e:
            raise SourceError(f"internal error: a fix produced invalid Python ({e.msg}, line {e.lineno}); nothing written") from None
        if new == current:
            raise SourceError(f"internal error: fix by {', '.join(sorted(applied))} changed nothing; nothing written")
        current = new
        _, cur_findings = analyse(path, current, rules, project, None, opts.shortcuts, opts, tail)
    else:
        raise SourceError(
            f"internal error: fixes did not converge after {MAX_PASSES} passes (not idempotent); nothing written"
        )
    return current


def process_source(src: Source, opts: Options, project: Project | None = None, trace: dict | None = None) -> FileResult:
    from .notebook import is_notebook

    if is_notebook(src.path):
        return process_notebook(src, opts, project, trace)
    res = FileResult(path=src.path)
    trace = {} if trace is None else trace
    try:
        findings, new_text, applied, ctx = fix_text(src.path, src.text, opts, project, trace, src.hold)
    except FixError as e:  # findings without their fixes: reported, nothing written
        res.error = str(e)
        res.findings = e.findings
        for f in res.findings:
            f.applied = False
        res.stage = trace.get("stage", "")
        res.parsed = True
        return res
    res.stage = trace.get("stage", "")
    res.parsed = ctx is not None
    res.findings = findings
    res.applied = applied
    res.warnings = suppression.comment_warnings(src.text + src.hold)
    new_raw = src.encode(new_text) if new_text != src.text else None
    suggestions = []
    if (opts.fix or opts.fix_edits) and ctx is not None:
        # fixes not applied (unsafe ones) are shown as suggested diffs, each on its own;
        # with ``fix_edits`` every fix (for output formats that carry the edit)
        pending = [f for f in findings if f.fix is not None and (not f.applied or opts.fix_edits)]
        pending = _one_per_fix(pending)  # a Fix shared by several findings: one suggested diff
        if pending:
            res.stage = STAGE_PARSED
            try:
                view = None
                for f in pending:
                    # on a parse of the chunk that holds it, as a pass's fixes are (the whole
                    # file is parsed, once, only for those that need it)
                    got = None
                    if opts.shortcuts:
                        got = _fix_in_chunk(src.text, [g for g in findings if g.fix is f.fix], [f], opts.lazy_min_chars)
                    if got is not None:
                        text = got[0]
                    else:
                        if view is None:
                            view = _view(src.text)
                        text = apply_fixes(view, [_build(view, f.fix)])
                    suggestions.append(Suggestion(f, unified_diff(src.raw, src.encode(text), src.path, src.mode)))
            except SourceError as e:  # the findings stand; say why their suggested diffs are missing
                res.error = f"{e} (suggested fixes not shown)"
    # nothing is written before every part of the result is known
    if new_raw is not None:
        res.diff = unified_diff(src.raw, new_raw, src.path, src.mode)
        if opts.write:
            src.write(new_raw)
            res.written = True
    res.suggestions = suggestions
    return res


# ``line 12``, ``line(s) 12, 14`` in a message
_LINE_WORD = re.compile(r"\b(line(?:\(s\))? )(\d+(?:, \d+)*)\b")


def _cell_lines(nb, message: str) -> str:
    """A message's ``line N`` / ``line(s) N, M`` (lines of the virtual module) as
    ``line L of cell C``, outside the code it quotes in backticks."""

    def put(m) -> str:
        where = [nb.locate(int(n)) for n in m.group(2).split(", ")]
        if not all(cell for cell, _ in where):
            return m.group(0)
        return m.group(1) + ", ".join(f"{line} of cell {cell}" for cell, line in where)

    parts = message.split("`")
    return "`".join(_LINE_WORD.sub(put, p) if i % 2 == 0 else p for i, p in enumerate(parts))


def _to_cells(nb, f: Finding) -> Finding:
    """``f`` (positions in the virtual module of ``nb``) with positions in its cell, and
    the lines its message names too."""
    if "line " in f.message:
        f.message = _cell_lines(nb, f.message)
    if f.col:
        f.col += nb.column_shift(f.line)
    if f.end_line and f.end_col:
        f.end_col += nb.column_shift(f.end_line)
    f.cell, f.line = nb.locate(f.line)
    if f.end_line:
        _c, f.end_line = nb.locate(f.end_line)
    if f.stmt_lines != (0, 0):
        f.stmt_lines = (nb.locate(f.stmt_lines[0])[1], nb.locate(f.stmt_lines[1])[1])
    return f


def _in_cell(nb, msg: str) -> str:
    """``msg`` about the virtual module of ``nb``, its syntax error placed in the cell
    that has it (``syntax error in cell 12 at 3:5: invalid syntax``), as a kernel, which
    compiles each cell alone, would report it: the virtual module's lines mean nothing to
    the user, and a string a cell leaves open would be reported in the next one."""
    if not msg.startswith("syntax error"):
        return msg
    for cell, body in nb.masked_cells():
        got = syntax_error(body, cell)
        if got is not None:
            return got if got.startswith("syntax error") else msg
    return msg


def _other_cells(nb, src: Source, opts: Options, project, trace: dict, msg: str) -> Optional[FileResult]:
    """A notebook with cells that do not compile (an exercise's ``ps = ``): the error of
    each, and the findings in the rest, read as a kernel runs them (the failing lines
    blank: :meth:`Notebook.mended`), nothing written or suggested.  None (the error
    alone) when that cannot be done, or the blanked lines hold a word some rule's text
    gate looks for (a needle): the rules would read the other cells without code that
    may matter to them.  The findings' fixes are dropped (nothing is written)."""
    if not msg.startswith("syntax error"):
        return None
    got = nb.mended()
    if got is None:
        return None
    text, errors, removed, cells = got
    if any(not r.needles or any(n in removed for n in r.needles) for r in rules_for(opts.select)):
        return None
    from dataclasses import replace

    try:
        findings, _, _, ctx = fix_text(src.path, text, replace(opts, fix=False, fix_edits=False), project, trace)
    except SourceError:
        return None
    also = f"; also in cell{'s' if len(cells) > 2 else ''} {', '.join(map(str, cells[1:]))}" if len(cells) > 1 else ""
    res = FileResult(path=src.path, error=f"{errors[0]}{also} (the other cells were checked; nothing written)")
    res.findings = [_to_cells(nb, f) for f in findings]
    for f in res.findings:
        f.applied, f.fix = False, None
    res.stage = trace.get("stage", "")
    return res


def process_notebook(src: Source, opts: Options, project: Project | None = None, trace: dict | None = None) -> FileResult:
    """:func:`process_source` for a Jupyter notebook: the rules run on the virtual module
    of its code cells (``Options.notebook``), findings name the cell (``Finding.cell``,
    lines in that cell), the diff is one readable diff per edited cell, and only the
    ``source`` of edited cells changes in the file (see :mod:`torchmend.notebook`)."""
    from dataclasses import replace

    from .notebook import Notebook, notebook_diff

    nb = Notebook(src.raw, src.path)
    opts = replace(opts, notebook=True)
    res = FileResult(path=src.path)
    trace = {} if trace is None else trace
    try:
        findings, new_text, applied, ctx = fix_text(src.path, nb.text, opts, project, trace)
    except FixError as e:
        res.error = str(e)
        res.findings = [_to_cells(nb, f) for f in e.findings]
        for f in res.findings:
            f.applied = False
        res.stage = trace.get("stage", "")
        res.parsed = True
        return res
    except SourceError as e:  # (after FixError, one of them)
        got = _other_cells(nb, src, opts, project, trace, str(e))
        if got is None:
            raise SourceError(_in_cell(nb, str(e)), e.raw, e.st) from None
        return got
    res.stage = trace.get("stage", "")
    res.parsed = ctx is not None
    res.applied = applied
    res.warnings = [(ln, msg, cell) for (cell, ln), msg in
                    ((nb.locate(v), m) for v, m in suppression.comment_warnings(nb.text))]
    new_raw = None
    changed = nb.changed_cells(new_text) if new_text != nb.text else {}
    if changed:
        new_raw = nb.render(changed)
    suggestions = []
    if (opts.fix or opts.fix_edits) and ctx is not None:
        pending = _one_per_fix([f for f in findings if f.fix is not None and (not f.applied or opts.fix_edits)])
        if pending:
            res.stage = STAGE_PARSED
            try:
                view = _view(nb.text)
                for f in pending:
                    text = apply_fixes(view, [_build(view, f.fix)])
                    suggestions.append(Suggestion(f, notebook_diff(nb, src.path, nb.changed_cells(text))))
            except SourceError as e:
                res.error = f"{e} (suggested fixes not shown)"
    res.findings = [_to_cells(nb, f) for f in findings]
    if new_raw is not None:
        res.diff = notebook_diff(nb, src.path, changed)
        if opts.write:
            src.write(new_raw)
            res.written = True
        else:
            res.new_raw = new_raw
    res.suggestions = suggestions
    return res


# errors that depend only on the file's bytes (and the options): safe to cache
_CONTENT_ERRORS = (
    "syntax error", "not valid ", "binary file", "bad encoding", "unknown encoding", "too deeply nested",
    "the fix cannot be encoded", "encoding declaration", "UTF-16 or UTF-32", "LibCST cannot parse",
    "a fix crossed a notebook cell", "a fix moved IPython", "a fix removed IPython",
)


def content_digest(raw: bytes) -> str:
    """128 bits of the SHA-256 of a file's bytes (the cache's key for its content).
    Every file read is hashed: SHA-256 has instructions of its own in current x86 and
    ARM processors, which makes it about twice as fast as BLAKE2b there."""
    import hashlib

    return hashlib.sha256(raw).hexdigest()[:32]


def _stat(path: str) -> tuple[int, int]:
    import os

    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns
    except OSError:
        return -1, -1


def process_file(path: str, opts: Options, project: Project | None = None) -> FileResult:
    """Process one file; never raises.  The result says what was read (size, mtime,
    content digest) and whether it may be cached (it depends on the content only)."""
    from .errors import describe

    if project is None:
        project = Project(roots=opts.roots)
    project.start_file()
    raw = st = None  # what was read, and its fstat (set even for decode errors)
    trace: dict = {}
    try:
        src = read_source(path, opts.max_bytes)
        raw, st = src.raw, src.st
        res = process_source(src, opts, project, trace).stripped()
    except NeedsProject as e:
        res = FileResult(path=path, needs_project=True, needs_modules=e.modules)
    except SourceError as e:
        res = FileResult(path=path, error=str(e))
        raw, st = (e.raw, e.st) if raw is None else (raw, st)
    except Skipped as e:
        res = FileResult(path=path, skipped=str(e))
        raw, st = getattr(e, "raw", None), getattr(e, "st", None)
    except Exception as e:  # a rule bug must not abort the batch; RecursionError, MemoryError, OSError named
        res = FileResult(path=path, error=describe(e))
    res.stage = trace.get("stage", "")
    if raw is not None and st is not None and len(raw) == st.st_size and not res.needs_project:  # not changing under our feet
        res.size, res.mtime_ns = st.st_size, st.st_mtime_ns
        if opts.digest:
            res.digest = content_digest(raw)
        res.cacheable = not res.written and (res.error is None or res.error.startswith(_CONTENT_ERRORS))
        # a rule looked at other files: the result holds only while the tree is unchanged
        res.tree_dependent = project.used
        if project.deps:
            res.deps = tuple(sorted((d, *_stat(d)) for d in project.deps))
    return res


def process_text(path: str, text: str, opts: Options, project: Project | None = None) -> FileResult:
    """Process in-memory text (never written).  Without ``project`` nothing else
    exists: nothing imports it."""
    src = decode_source(path, text.encode("utf-8"))
    return process_source(src, Options(**{**opts.__dict__, "write": False}), project or Project(standalone=True))
