"""The helpers and imports a fix adds at the top of a file, placed by text.

``engine.add_helpers_and_imports`` places them on a LibCST parse of the whole file: a
helper definition goes after the leading block of docstring and top-level imports (two
blank lines before it, and at least two before the statement that follows), one plain
``import m`` at the end of that block too, before the helpers.  A LibCST parse of a whole
file costs several times what the fix itself does, and a fix that adds a helper (TM401's
``load_matching_state_dict``) otherwise needs only the top-level chunk that holds it.
:func:`head_edits` finds the same places from the stdlib ``ast`` and the text, for the
shapes where that can be told exactly; for any other shape it answers None and the
engine parses the whole file as before.  ``tests/test_head.py`` compares the two ways on
every shape this handles and on the corpus's helper fixes (``tests/test_equivalence.py``).
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Optional

from .semantic.source import line_starts

__all__ = ["head_edits"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HELPER_CODE: dict = {}


def _first_indent(text: str) -> Optional[str]:
    """LibCST's default indent: the first INDENT token's whitespace (the first one is
    always at depth 1), four spaces when there is none; None for an indent with anything
    but spaces (tabs: left to LibCST) or text the tokenizer refuses."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.INDENT:
                ind = tok.string
                return ind if ind and ind.strip(" ") == "" else None
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return "    "


def _helper_code(code: str, indent: str) -> str:
    """What the LibCST path generates for one helper: its statements, the first with two
    blank lines before it, in a module whose default indent is ``indent``."""
    key = (code, indent)
    got = _HELPER_CODE.get(key)
    if got is None:
        import libcst as cst

        parsed = cst.parse_module(code.strip("\n") + "\n")
        body = list(parsed.body)
        body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        mod = cst.Module(body=body, default_indent=indent, default_newline="\n")
        got = _HELPER_CODE[key] = "".join(mod.code_for_node(s) for s in body)
    return got


def _docstring(stmt: ast.stmt) -> Optional[bool]:
    """``stmt`` is what ``engine._is_docstring`` calls a docstring (a string or bytes
    literal, implicitly concatenated or not); None when the ``ast`` cannot tell (an
    f-string: LibCST calls it one only when it is concatenated with a plain string)."""
    if not isinstance(stmt, ast.Expr):
        return False
    v = stmt.value
    if isinstance(v, ast.JoinedStr):
        return None
    return isinstance(v, ast.Constant) and isinstance(v.value, (str, bytes))


def _top_names(body: list) -> set:
    """``engine._defined_names``: top-level defs, classes and names assigned with ``=``."""
    out = set()
    for st in body:
        if isinstance(st, _DEFS):
            out.add(st.name)
        elif isinstance(st, ast.Assign):
            out.update(t.id for t in st.targets if isinstance(t, ast.Name))
    return out


def head_edits(text: str, helpers: dict, imports: list) -> Optional[list[tuple[int, str]]]:
    """``[(offset, text to insert there), ...]`` in text order (at one offset, in the
    order given) that add ``helpers`` and ``imports`` exactly as
    ``engine.add_helpers_and_imports`` does on a LibCST parse of ``text``; None when
    this shape is not one read here (the caller takes the LibCST path).  The fixes of
    the same pass must not replace a top-level statement (the caller checks): the
    top-level statements this reads are then those of the fixed module."""
    if "\r" in text or "\f" in text or not text.endswith("\n"):
        return None  # (LibCST's newline would be another; a form feed is whitespace to it)
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not body:
        return None
    for a, b in zip(body, body[1:]):
        if b.lineno <= a.end_lineno:
            return None  # two statements on one line: one LibCST statement line
    starts = line_starts(text)
    edits: list[tuple[int, str]] = []
    existing = _top_names(body)
    new = [code for name, code in helpers.items() if name not in existing]
    lead = 0  # after the leading block of docstring and imports
    for i, st in enumerate(body):
        doc = _docstring(st) if i == 0 else False
        if doc is None:
            return None
        if isinstance(st, (ast.Import, ast.ImportFrom)) or doc:
            lead = i + 1
        else:
            break
    have = set()
    for st in body[:lead]:
        if isinstance(st, ast.Import):
            have.update((a.name, None) for a in st.names if a.asname is None)
    todo = [i for i in imports if not (i[1] is None and i in have)]
    if any(i[1] is not None for i in todo):
        return None  # ``from m import n``: AddImportsVisitor's placement
    if not all(p.isidentifier() for m, _ in todo for p in m.split(".")):
        return None
    if (new or todo) and (lead == 0 or lead == len(body)):
        return None  # (the module's header or footer lines: left to LibCST)
    ins = starts[body[lead - 1].end_lineno] if lead else 0  # the line after the leading block
    # the imports first, at the end of the leading block, then the helpers
    if todo:
        edits.append((ins, "".join(f"import {m}\n" for m, _ in todo)))
    if new:
        nxt = body[lead]
        first = min([nxt.lineno] + [d.lineno for d in getattr(nxt, "decorator_list", ())])
        lead_text = text[ins : starts[first - 1]]
        lines = lead_text.split("\n")[:-1]
        if any(ln.strip(" \t") and not ln.lstrip(" \t").startswith("#") for ln in lines):
            return None  # (only blank and comment lines are the next statement's leading lines)
        blank = sum(1 for ln in lines if not ln.strip(" \t"))
        indent = _first_indent(text)
        if indent is None:
            return None
        edits.append((ins, "".join(_helper_code(c, indent) for c in new) + "\n" * max(0, 2 - blank)))
    return edits
