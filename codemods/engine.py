"""The engine: run the rules on one file, apply their fixes, check the result.

``process_file`` is the unit of work.  One LibCST parse and one metadata resolution
serve every rule on the file; the fixes chosen are applied in passes (non-overlapping
edits together, overlapping ones in the next pass, re-parsing in between, like Ruff's
fix loop) until no applicable fix is left.  That fixpoint is the idempotence check: a
rule that keeps finding something to fix after it was applied is an internal error,
and so is output that does not parse.  Either way nothing is written.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from .rule import FileContext, Finding, Fix, ProjectInfo, Rule, Safety
from .sourcefile import Skipped, Source, SourceError, decode_source, read_source, syntax_error
from .gitdiff import unified_diff

MAX_PASSES = 6
_SUPPRESS = re.compile(r"#\s*torchmend:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]+)\])?", re.I)


@dataclass
class Options:
    """What to run and how; small and picklable (it travels to every worker)."""

    select: frozenset[str] = frozenset()  # codes; empty = all
    unsafe_fixes: bool = False
    fix: bool = True  # compute fixes (diff/apply); False for check
    write: bool = False  # apply in place
    roots: tuple[str, ...] = ()
    max_bytes: int = 4 * 1024 * 1024


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
    parsed: bool = False  # False: the pre-filter ruled it out
    written: bool = False
    stage: str = ""  # STAGE_*: where the analysis stopped ("" when it never started)
    # for the cache: what was read (set by process_file), and whether the result depends
    # on other files (ProjectInfo was consulted) or on something else than the content
    digest: str = ""
    size: int = -1
    mtime_ns: int = -1
    cacheable: bool = False
    tree_dependent: bool = False  # a rule consulted the whole tree (see codemods.cache)
    deps: tuple = ()  # (path, size, mtime_ns) of other files a rule read

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def unfixed(self) -> list[Finding]:
        """Findings left for a human: those whose fix is not applied."""
        return [f for f in self.findings if not f.applied]

    def stripped(self) -> "FileResult":
        """Without syntax trees: what a worker process sends back."""
        self.findings = [f.stripped() for f in self.findings]
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


def _suppressed(f: Finding, lines: Sequence[str]) -> bool:
    if not 1 <= f.line <= len(lines):
        return False
    m = _SUPPRESS.search(lines[f.line - 1])
    if not m:
        return False
    codes = m.group("codes")
    if not codes:
        return True
    wanted = {c.strip().upper() for c in codes.split(",")}
    return f.code.upper() in wanted or any(f.code.startswith(c) for c in wanted if c)


# Stages a file can stop at, cheapest first (FileResult.stage): no rule's needles in the
# text; the stdlib-ast gate (Rule.ast_check) ruled every remaining rule out; LibCST parse.
STAGE_PREFILTER, STAGE_AST, STAGE_PARSED = "prefilter", "ast", "parsed"


def _overrides_ast_check(rule: Rule) -> bool:
    return getattr(type(rule).ast_check, "__func__", None) is not Rule.ast_check.__func__


def select_rules(text: str, rules: Iterable[Rule], trace: dict | None = None) -> list[Rule]:
    """The rules worth a LibCST parse of ``text``: textual pre-filter (needles), then,
    if some of them define one, the stdlib-``ast`` gate (one ``ast.parse`` shared by all)."""
    return _gate(text, rules, trace)[0]


def _gate(text: str, rules: Iterable[Rule], trace: dict | None):
    """(rules that may match, the ``ast`` tree or None)."""
    active = [r for r in rules if r.may_match(text)]
    if not active:
        if trace is not None:
            trace["stage"] = STAGE_PREFILTER
        return active, None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return active, None  # LibCST parses it and reports the error in its own words
    if any(_overrides_ast_check(r) for r in active):
        active = [r for r in active if not _overrides_ast_check(r) or r.ast_check(tree)]
        if not active and trace is not None:
            trace["stage"] = STAGE_AST
    return active, tree


# Elide the code no rule can reach before the LibCST parse (codemods/focus.py); the
# tests switch it off to check that it changes no finding.
FOCUS = True


def run_rules(
    path: str, text: str, rules: Iterable[Rule], project: ProjectInfo | None = None, trace: dict | None = None,
    focused: bool = True, full_text: str | None = None,
):
    """Parse once, run every rule that may match; returns (ctx, findings) or (None, []).
    With ``focused`` the rules see ``text`` with unreachable definitions elided
    (``ctx.focus`` is the ``focus.Focused`` map back, or None when nothing was).
    ``full_text``: when ``text`` is already a focused text, the whole file it stands for."""
    active, tree = _gate(text, rules, trace)
    if not active:
        return None, []
    if tree is None:  # the stdlib parser refused it: say why (LibCST's native parser may crash on it)
        msg = syntax_error(text, path)
        if msg:
            raise SourceError(msg)
    import libcst as cst

    if trace is not None:
        trace["stage"] = STAGE_PARSED
    fz = None
    if focused and FOCUS and tree is not None:
        from .focus import focus_map

        needs = [r.ast_focus(tree) for r in active]
        fz = focus_map(text, tree, None if any(n is None for n in needs) else frozenset().union(*needs))
    seen = None if fz is None else fz.text
    try:
        module = cst.parse_module(text if seen is None else seen)
    except cst.ParserSyntaxError as e:
        raise SourceError(
            syntax_error(text, path) or f"LibCST cannot parse this file at {e.raw_line}:{e.raw_column + 1} (Python can): {e.message.splitlines()[0]}"
        ) from None
    except RecursionError:
        raise SourceError("too deeply nested to parse") from None
    ctx = FileContext(path, text if seen is None else seen, module, project)
    ctx.focus, ctx.full_source = fz, full_text if full_text is not None else text
    findings: list[Finding] = []
    for rule in active:
        for f in rule.check(ctx):
            if not _suppressed(f, ctx.lines):
                findings.append(f)
    findings.sort(key=Finding.sort_key)
    return ctx, findings


# --------------------------------------------------------------------------- fixes
def _eligible(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and (f.fix.safety is Safety.SAFE or unsafe)


def _spans(ctx: FileContext, fix: Fix):
    for node in fix.replacements:
        r = ctx._pos[node]
        yield (r.start.line, r.start.column), (r.end.line, r.end.column)


def _overlaps(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1] or a == b


def _choose(ctx: FileContext, fixes: list[Fix]) -> list[Fix]:
    """Fixes that can be applied together: no two touch overlapping code.  A whole-module
    fix goes alone and only once nothing else is left."""
    local = [f for f in fixes if not f.whole_module]
    if not local:
        return fixes[:1]
    chosen, taken = [], []
    for fix in local:
        spans = list(_spans(ctx, fix))
        if any(_overlaps(s, t) for s in spans for t in taken):
            continue
        chosen.append(fix)
        taken.extend(spans)
    return chosen


def apply_fixes(ctx: FileContext, fixes: Sequence[Fix]) -> str:
    """The module's code with ``fixes`` applied (they must not overlap)."""
    import libcst as cst

    repl: dict[int, object] = {}
    for fix in fixes:
        for node, new in fix.replacements.items():
            repl[id(node)] = new

    class _Apply(cst.CSTTransformer):
        def on_leave(self, original_node, updated_node):
            new = repl.get(id(original_node))
            return updated_node if new is None else new

    module = ctx.module.visit(_Apply()) if repl else ctx.module
    helpers: dict[str, str] = {}
    imports: list[tuple[str, Optional[str]]] = []
    for fix in fixes:
        helpers.update(fix.helpers)
        imports.extend(i for i in fix.imports if i not in imports)
    if helpers or imports:
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
    """Add missing imports (LibCST's AddImportsVisitor) and helper definitions, each
    once: a helper goes after the last top-level import unless its name is defined."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    existing = _defined_names(module)
    new_stmts = []
    for name, code in helpers.items():
        if name in existing:
            continue
        parsed = cst.parse_module(code.strip("\n") + "\n")
        body = list(parsed.body)
        body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        new_stmts.extend(body)
    if new_stmts:
        body = list(module.body)
        at = 0  # after the leading block of docstring and imports
        for i, stmt in enumerate(body):
            if _is_import(stmt) or (i == 0 and _is_docstring(stmt)):
                at = i + 1
            else:
                break
        if at < len(body):
            nxt = body[at]
            blank = sum(1 for ln in nxt.leading_lines if ln.comment is None) if hasattr(nxt, "leading_lines") else 2
            if blank < 2 and hasattr(nxt, "leading_lines"):
                body[at] = nxt.with_changes(leading_lines=[cst.EmptyLine()] * (2 - blank) + list(nxt.leading_lines))
        body[at:at] = new_stmts
        module = module.with_changes(body=body)
    if imports:
        cctx = CodemodContext()
        for mod, obj in imports:
            AddImportsVisitor.add_needed_import(cctx, mod, obj)
        module = AddImportsVisitor(cctx).transform_module(module)
    return module


def _is_docstring(stmt) -> bool:
    import libcst as cst

    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


# --------------------------------------------------------------------------- one file
class _Unfocus(Exception):
    """Fixes made on the focused text could not be carried back to the whole file."""


def fix_text(path: str, text: str, opts: Options, project: ProjectInfo | None = None, trace: dict | None = None):
    """Run the rules and apply eligible fixes to a fixpoint.

    Returns ``(findings, new_text, applied, original_ctx)``; raises SourceError when the
    fixes do not converge or produce invalid Python.
    """
    try:
        return _fix_text(path, text, opts, project, trace, focused=True)
    except _Unfocus:
        return _fix_text(path, text, opts, project, trace, focused=False)


def _fix_text(path: str, text: str, opts: Options, project: ProjectInfo | None, trace: dict | None, focused: bool):
    """``fix_text``; with ``focused`` the passes run on the focused text
    (codemods/focus.py) and the elided bodies are put back at the end, ``_Unfocus``
    when they cannot be (the caller then starts over unfocused)."""
    rules = rules_for(opts.select)
    ctx, findings = run_rules(path, text, rules, project, trace, focused=focused)
    first_ctx = ctx
    applied: Counter = Counter()
    if not opts.fix or ctx is None:
        return findings, text, applied, first_ctx
    fz = ctx.focus

    def whole(code: str) -> str:
        if fz is None:
            return code
        got = fz.restore(code)
        if got is None:
            raise _Unfocus()
        return got

    current, cur_findings = ctx.source, findings
    for _ in range(MAX_PASSES):
        fixes = [f for f in cur_findings if _eligible(f, opts.unsafe_fixes)]
        if not fixes:
            break
        chosen = _choose(ctx, [f.fix for f in fixes])
        chosen_ids = {id(c) for c in chosen}
        for f in fixes:
            if id(f.fix) in chosen_ids:
                applied[f.code] += 1
        new = apply_fixes(ctx, chosen)
        try:
            ast.parse(new)
        except SyntaxError as e:
            raise SourceError(f"internal error: a fix produced invalid Python ({e.msg}, line {e.lineno}); nothing written") from None
        if new == current:
            raise SourceError(f"internal error: fix by {', '.join(sorted(applied))} changed nothing; nothing written")
        current = new
        ctx, cur_findings = run_rules(path, current, rules, project, focused=False, full_text=whole(current))
        if ctx is None:
            break
    else:
        raise SourceError(
            f"internal error: fixes did not converge after {MAX_PASSES} passes (not idempotent); nothing written"
        )
    new_text = whole(current)
    if fz is not None and new_text != text:
        try:
            ast.parse(new_text)
        except SyntaxError:
            raise _Unfocus() from None
    # which of the original findings were fixed: eligible ones are (applied, or deferred and
    # applied in a later pass: the loop only ends when no eligible finding is left)
    for f in findings:
        f.applied = _eligible(f, opts.unsafe_fixes)
    return findings, new_text, applied, first_ctx


def process_source(src: Source, opts: Options, project: ProjectInfo | None = None, trace: dict | None = None) -> FileResult:
    try:
        return _process_source(src, opts, project, trace, focused=True)
    except _Unfocus:
        return _process_source(src, opts, project, trace, focused=False)


def _process_source(src: Source, opts: Options, project, trace, focused: bool) -> FileResult:
    res = FileResult(path=src.path)
    trace = {} if trace is None else trace
    findings, new_text, applied, ctx = _fix_text(src.path, src.text, opts, project, trace, focused)
    res.stage = trace.get("stage", "")
    res.parsed = ctx is not None
    res.findings = findings
    res.applied = applied
    new_raw = src.encode(new_text) if new_text != src.text else None
    suggestions = []
    if opts.fix and ctx is not None:
        # unsafe fixes not applied are shown as suggested diffs, each on its own
        for f in findings:
            if f.fix is not None and not f.applied:
                try:
                    text = apply_fixes(ctx, [f.fix])
                except Exception:  # a suggestion is best-effort; the finding is still reported
                    continue
                if ctx.focus is not None:
                    text = ctx.focus.restore(text)
                    if text is None:
                        raise _Unfocus()
                try:
                    suggestions.append(Suggestion(f, unified_diff(src.raw, src.encode(text), src.path, src.mode)))
                except Exception:
                    pass
    # nothing is written before every part of the result is known
    if new_raw is not None:
        res.diff = unified_diff(src.raw, new_raw, src.path, src.mode)
        if opts.write:
            src.write(new_raw)
            res.written = True
    res.suggestions = suggestions
    return res


# errors that depend only on the file's bytes (and the options): safe to cache
_CONTENT_ERRORS = (
    "syntax error", "not valid ", "binary file", "bad encoding", "unknown encoding", "too deeply nested",
    "the fix cannot be encoded", "encoding declaration", "UTF-16 or UTF-32", "LibCST cannot parse",
)


def content_digest(raw: bytes) -> str:
    import hashlib

    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _stat(path: str) -> tuple[int, int]:
    import os

    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns
    except OSError:
        return -1, -1


def process_file(path: str, opts: Options, project: ProjectInfo | None = None) -> FileResult:
    """Process one file; never raises.  The result says what was read (size, mtime,
    content digest) and whether it may be cached (it depends on the content only)."""
    from .errors import describe

    if project is not None:
        project.used = False
        project.deps = set()
    raw = st = None  # what was read, and its fstat (set even for decode errors)
    trace: dict = {}
    try:
        src = read_source(path, opts.max_bytes)
        raw, st = src.raw, src.st
        res = process_source(src, opts, project, trace).stripped()
    except SourceError as e:
        res = FileResult(path=path, error=str(e))
        raw, st = (e.raw, e.st) if raw is None else (raw, st)
    except Skipped as e:
        res = FileResult(path=path, skipped=str(e))
        raw, st = getattr(e, "raw", None), getattr(e, "st", None)
    except Exception as e:  # a rule bug must not abort the batch; RecursionError, MemoryError, OSError named
        res = FileResult(path=path, error=describe(e))
    res.stage = trace.get("stage", "")
    if raw is not None and st is not None and len(raw) == st.st_size:  # not changing under our feet
        res.digest, res.size, res.mtime_ns = content_digest(raw), st.st_size, st.st_mtime_ns
        res.cacheable = not res.written and (res.error is None or res.error.startswith(_CONTENT_ERRORS))
        # a rule looked at other files: the result holds only while the tree is unchanged
        res.tree_dependent = project is not None and project.used
        if project is not None and project.deps:
            res.deps = tuple(sorted((d, *_stat(d)) for d in project.deps))
    return res


def process_text(path: str, text: str, opts: Options) -> FileResult:
    """Convenience for tests: process in-memory text (never written)."""
    src = decode_source(path, text.encode("utf-8"))
    return process_source(src, Options(**{**opts.__dict__, "write": False}))
