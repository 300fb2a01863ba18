"""Elide code that no rule can need before paying for LibCST ("focus").

LibCST's parse, and above all its scope analysis, cost time in proportion to the number
of nodes in the file, and a training script or a model file is often mostly code that
has nothing to do with torch (config parsing, logging, metrics, string handling).
Before the LibCST parse the engine replaces the *body* of each top-level ``def`` /
``class`` that provably cannot matter to any rule by an empty string literal spanning
the same lines.  Every other byte stays where it was (headers, decorators, every
top-level statement, the line count), so line and column numbers in findings are
unchanged.

A top-level definition ``D`` is elided only when all of these hold:

* its text (decorators and header included) mentions nothing a rule starts from
  (``relevant``: torch, device, model, loss, optimizer, loader, softmax, forward,
  state_dict, ... and the escape hatches ``exec``/``eval``/``globals``/``sys``/``setattr``)
  or, when every rule that runs declared the definitions it reads (``Rule.ast_focus``),
  it is not one of those; and it has no ``global``/``nonlocal`` statement;
* the module-level names its body reads (from the compiler's symbol tables, see
  ``_global_references``) include no variable bound by relevant module-level code
  (``_module_variables``: the rules follow those across scopes) and no kept definition;
* its own name is not read by kept code: module-level statements, every definition's
  header, the bodies of kept definitions (a kept caller could make a rule read it).
  Kept code grows to a fixpoint.

Hence an elided body reads only builtins, imports, harmless module constants, its own
locals and other elided definitions, and nothing kept refers to it: the rules, which
follow names from the kept code, cannot reach it.  ``tests/test_gates.py`` checks the
claim the way it checks the gates: on every corpus case (also padded with helpers) and
on a generated tree, findings, fixes and suggested diffs are the same with and without
focus.  Fixes are made on the focused text: each elided body carries a unique
placeholder, and ``Focused.restore`` puts the original bodies back after the fix passes
(the engine redoes the file unfocused if a placeholder is missing or doubled).
"""

from __future__ import annotations

import ast
import re
from typing import Optional

__all__ = ["PARTS", "RAW", "Focused", "focus", "focus_map", "relevant"]

# What makes a definition relevant.  Identifiers (also inside strings and comments) are
# split at underscores and camel-case humps and lower-cased (``CrossEntropyLoss`` ->
# cross, entropy, loss); a definition is kept if one part is in ``PARTS`` or its text
# contains one of ``RAW``.  Everyday ML words that are not entry points of a rule (step,
# grad, head, state, batch, input, label, output) are deliberately absent: what a rule
# starts from is a call spelled with one of these (``.backward()``, ``.to(device)``,
# ``cross_entropy``, ``load_state_dict``, ``DataLoader``, ``forward``), and from there it
# follows names, which the reference criteria below cover.  tests/test_focus.py checks
# that the call every rule starts from makes a definition relevant.
PARTS = frozenset(
    """
    torch tensor cuda device model module forward backward nn functional loss criterion
    optim optimizer sgd adam adamw scaler autocast loader dataloader dataset sampler collate
    worker workers spawn multiprocessing pickle load checkpoint ckpt pretrained linear
    classifier softmax logsoftmax entropy nll sequential accelerator accelerate lightning
    deepspeed trainer distributed ddp rank exec eval globals vars locals setattr sys importlib
    """.split()
)
RAW = (".to(", ".cuda(", "zero_grad", "state_dict", "num_workers", "last_linear", "__import__", "__dict__", "__globals__", "__builtins__")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# physical lines as ``ast`` numbers them (str.splitlines also splits at \f, \v, \x1c...)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def relevant(text: str) -> bool:
    """Does ``text`` mention anything a rule starts from (see ``PARTS``/``RAW``)?"""
    if any(r in text for r in RAW):
        return True
    for ident in set(_IDENT.findall(text)):
        if ident.lower() in PARTS:
            return True
        for piece in ident.split("_"):
            if piece.lower() in PARTS or any(h.lower() in PARTS for h in _HUMP.findall(piece)):
                return True
    return False


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


def _module_variables(tree: ast.Module, lines: list[str]) -> set[str]:
    """Names bound by relevant module-level code other than imports and definitions
    (targets of assignments, loops, ``with``, ``except``, walrus, ``match`` captures,
    ``del``, in top-level blocks too): the variables a rule may follow.  A name bound
    only by statements that mention nothing relevant (``logger = logging.getLogger()``,
    ``SEED = 0``) is not one: reading it from an elided body changes nothing a rule
    looks at, and no elided body can rebind it (no ``global`` there)."""
    out: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, _DEFS + _IMPORTS):
            continue
        if not relevant("".join(lines[stmt.lineno - 1 : stmt.end_lineno])):
            continue
        stack: list[ast.AST] = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, _DEFS + _IMPORTS + (ast.Lambda,)):
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                out.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                out.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                out.add(node.rest)
            stack.extend(ast.iter_child_nodes(node))
    return out


def _spelled(*nodes: ast.AST) -> set[str]:
    """Every identifier spelled as a name in ``nodes`` (loads and stores alike)."""
    Name, children = ast.Name, ast.iter_child_nodes
    out: set[str] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if type(n) is Name:
            out.add(n.id)
        else:
            stack.extend(children(n))
    return out


def _header(node) -> list:
    """The parts of a definition that stay when its body is elided."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    return [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]


def _global_references(text: str, tree: ast.Module) -> Optional[dict[int, set[str]]]:
    """For each top-level definition (by ``id`` of its ``ast`` node), the module-level
    names its body may read or call, from the compiler's own symbol tables (``symtable``:
    a local that happens to share a name with a function is not a reference to it).
    Class bodies count every name they read (a class body may read a global before
    binding the same name).  None when the symbol tables cannot be built."""
    import symtable

    try:
        top = symtable.symtable(text, "<focus>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    tables = {}
    for t in top.get_children():
        tables.setdefault((t.get_name(), t.get_lineno()), []).append(t)
    out: dict[int, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, _DEFS):
            continue
        found = tables.get((node.name, node.lineno))
        if not found or len(found) != 1:
            out[id(node)] = _spelled(node)  # cannot tell which table: every name spelled
            continue
        names: set[str] = set()
        stack = [found[0]]
        while stack:
            t = stack.pop()
            is_class = t.get_type() == "class"  # a str, or a StrEnum from Python 3.13
            for sym in t.get_symbols():
                if sym.is_global() or (is_class and sym.is_referenced()):
                    names.add(sym.get_name())
            stack.extend(t.get_children())
        out[id(node)] = names
    return out


class Focused:
    """A focused text and the way back: ``restore(code)`` puts the elided bodies back
    into ``code`` (the focused text after fixes that, by construction, never touch an
    elided definition: each body's placeholder is unique and must appear exactly once,
    byte for byte), or returns None when it cannot."""

    def __init__(self, text: str, blocks: list[tuple[str, str]]):
        self.text = text
        self._blocks = blocks  # (placeholder lines, original lines)

    def restore(self, code: str) -> Optional[str]:
        for placeholder, original in self._blocks:
            if code.count(placeholder) != 1:
                return None
            code = code.replace(placeholder, original, 1)
        return code


def focus(text: str, tree: ast.Module, needed: Optional[frozenset[str]] = None) -> Optional[str]:
    """The focused text (see ``focus_map``), or None when nothing is elided."""
    got = focus_map(text, tree, needed)
    return None if got is None else got.text


def focus_map(text: str, tree: ast.Module, needed: Optional[frozenset[str]] = None) -> Optional[Focused]:
    """``text`` with the bodies of the elidable top-level definitions replaced by a
    string literal over the same lines (same line count, kept lines byte-identical),
    with the way back; None when nothing is elided.  ``needed``: the definitions the
    rules declared they read (``Rule.ast_focus``); then any other definition is a
    candidate, relevant words or not (the reference criteria still apply)."""
    lines = _LINE.findall(text)
    if sum(map(len, lines)) != len(text):  # cannot happen; never risk a wrong text
        return None
    from .astfacts import facts

    decl_lines = facts(tree).scope_decl_lines
    cands = []  # (index in tree.body, node, first body line, last line)
    for i, node in enumerate(tree.body):
        if not isinstance(node, _DEFS) or not node.body:
            continue
        first = node.body[0]
        start, end = first.lineno, node.end_lineno
        if end is None or start <= node.lineno or end - start < 2 or end > len(lines):
            continue  # one-line or short bodies: nothing worth eliding
        indent = lines[start - 1][: first.col_offset]
        if indent.strip(" \t") or not indent:
            continue  # the body shares its first line with the header
        if any(node.lineno <= ln <= end for ln in decl_lines):
            continue  # a global / nonlocal statement inside
        if needed is not None:  # the rules said which definitions they read
            if node.name in needed:
                continue
        elif relevant("".join(lines[min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1 : end])):
            continue
        cands.append((i, node, start, end, indent))
    if not cands:
        return None
    cand_ids = {id(c[1]) for c in cands}
    module_vars = _module_variables(tree, lines)
    refs = _global_references(text, tree)
    if refs is None:
        return None
    # what kept code refers to at module level: every name spelled in kept top-level
    # statements that are not definitions, in every definition's header (decorators,
    # defaults, annotations, bases run at module level), and the global names the
    # bodies of kept definitions read
    kept_refs: set[str] = set()
    kept_defs: set[str] = set()  # names of kept top-level definitions
    for node in tree.body:
        if isinstance(node, _DEFS):
            kept_refs |= _spelled(*_header(node))
            if id(node) not in cand_ids:
                kept_refs |= refs[id(node)]
                kept_defs.add(node.name)
        else:
            kept_refs |= _spelled(node)
    elided = {id(c[1]): c for c in cands}
    changed = True
    while changed:
        changed = False
        for key, (_, node, *_rest) in list(elided.items()):
            names = refs[key]
            if node.name in kept_refs or names & module_vars or names & kept_defs:
                del elided[key]
                kept_refs |= names
                kept_defs.add(node.name)
                changed = True
    if not elided:
        return None
    # The body becomes one string literal spanning the same lines: one node for LibCST
    # where blank lines would each be an ``EmptyLine`` with its own children.  Its
    # first line names the body (a tag from the text's hash), so that it can be found
    # again after fixes and the original put back.
    import hashlib

    tag = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    if tag in text:
        return None
    blocks = []
    for n, (_, node, start, end, indent) in enumerate(sorted(elided.values(), key=lambda c: c[2])):
        original = "".join(lines[start - 1 : end])
        lines[start - 1] = f'{indent}"""torchmend-elided-{tag}-{n}{_newline(lines[start - 1])}'
        for k in range(start, end - 1):
            lines[k] = _newline(lines[k])
        lines[end - 1] = f'"""{_newline(lines[end - 1])}'
        blocks.append(("".join(lines[start - 1 : end]), original))
    return Focused("".join(lines), blocks)


def _newline(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""
