"""The LibCST side of a fix: the file parsed with LibCST, and the way from a stdlib
``ast`` node (what the rules analysed) to the LibCST node with the same source span.

Detection runs on the stdlib ``ast``; LibCST is parsed only when a fix is applied or
shown.  ``CstView.node(ast_node)`` finds the LibCST node of the matching type whose
syntactic range (LibCST's ``PositionProvider`` semantics) equals the ``ast`` node's span
(``ast`` columns are UTF-8 byte offsets; they are converted to characters).
tests/test_cstview.py checks the mapping on every node of the corpus.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from .semantic.nodes import node_type
from .semantic.source import char_col, line_starts

__all__ = ["CstView", "NodeNotFound"]


class NodeNotFound(LookupError):
    """No LibCST node has the span of the ``ast`` node (a rule asked for a node of a
    type that has no LibCST counterpart with the same range)."""


_TYPES: dict = {
    ast.Call: (cst.Call,), ast.Name: (cst.Name,), ast.Attribute: (cst.Attribute,), ast.Assign: (cst.Assign,),
    ast.Expr: (cst.Expr,), ast.For: (cst.For,), ast.AsyncFor: (cst.For,), ast.While: (cst.While,), ast.If: (cst.If,),
    ast.With: (cst.With,), ast.AsyncWith: (cst.With,), ast.FunctionDef: (cst.FunctionDef,),
    ast.AsyncFunctionDef: (cst.FunctionDef,), ast.ClassDef: (cst.ClassDef,), ast.Return: (cst.Return,),
    ast.Subscript: (cst.Subscript,), ast.keyword: (cst.Arg,), ast.Import: (cst.Import,),
    ast.ImportFrom: (cst.ImportFrom,), ast.AugAssign: (cst.AugAssign,), ast.AnnAssign: (cst.AnnAssign,),
    ast.BinOp: (cst.BinaryOperation,), ast.Compare: (cst.Comparison,), ast.UnaryOp: (cst.UnaryOperation,),
    ast.BoolOp: (cst.BooleanOperation,), ast.IfExp: (cst.IfExp,), ast.List: (cst.List,), ast.Dict: (cst.Dict,),
    ast.ListComp: (cst.ListComp,), ast.DictComp: (cst.DictComp,), ast.Lambda: (cst.Lambda,),
    ast.Try: (cst.Try,), ast.Pass: (cst.Pass,), ast.Raise: (cst.Raise,), ast.Assert: (cst.Assert,),
    ast.Delete: (cst.Del,), ast.Global: (cst.Global,), ast.Nonlocal: (cst.Nonlocal,),
    ast.Constant: (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Name, cst.ConcatenatedString, cst.Ellipsis),
    ast.JoinedStr: (cst.FormattedString, cst.ConcatenatedString), ast.Starred: (cst.StarredElement, cst.Arg),
    ast.Tuple: (cst.Tuple,), ast.GeneratorExp: (cst.GeneratorExp,), ast.SetComp: (cst.SetComp,), ast.Set: (cst.Set,),
    ast.Slice: (cst.Slice,), ast.NamedExpr: (cst.NamedExpr,), ast.Await: (cst.Await,),
}
if hasattr(ast, "TryStar"):
    _TYPES[ast.TryStar] = (cst.TryStar,)


class CstView:
    """``text`` parsed with LibCST, with positions and the ``ast`` -> LibCST mapping."""

    def __init__(self, text: str, line_offset: int = 0):
        """``text``: the file, or one top-level chunk of it that starts at line
        ``line_offset + 1`` (``ast`` nodes keep the file's line numbers; a node outside
        the chunk is :class:`NodeNotFound`)."""
        self.text = text
        self.line_offset = line_offset
        self.module = cst.parse_module(text)
        from .positions import positions

        self._pos = positions(self.module)
        self._by_start: Optional[dict] = None
        self._by_offset: Optional[dict] = None
        self._parent: Optional[dict] = None
        self._path_parent: dict = {}
        self._lines = None

    # ------------------------------------------------------------------ mapping
    def _index(self) -> dict:
        if self._by_start is None:
            idx: dict = {}
            for node, r in self._pos.items():
                idx.setdefault((r.start.line, r.start.column), []).append((node, r))
            self._by_start = idx
        return self._by_start

    def _offset_index(self) -> Optional[dict]:
        """Start offset -> nodes, straight from the offsets the positions were computed
        from (no line/column conversion of every node); None with the public fallback."""
        if self._by_offset is None:
            offsets = getattr(self._pos, "_offsets", None)
            if offsets is None:
                return None
            idx: dict = {}
            for node, (a, b) in offsets.items():
                idx.setdefault(a, []).append((node, b))
            self._by_offset = idx
        return self._by_offset

    def offsets(self, node) -> Optional[tuple[int, int]]:
        """Character offsets of a LibCST node (None with the public fallback)."""
        offsets = getattr(self._pos, "_offsets", None)
        return None if offsets is None else offsets.get(node)

    def _text_offset(self, line: int, col: int) -> int:
        self._char_col(1, 0)
        return self._lines[line - 1] + col

    def _char_col(self, line: int, col: int) -> int:
        if self._lines is None:
            self._lines = line_starts(self.text)
        return char_col(self.text, self._lines, line, col)

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """(line, col, end line, end col) of an ``ast`` node, columns in characters."""
        off = self.line_offset
        line = node.lineno - off
        end = (node.end_lineno or node.lineno) - off
        if off:
            self._char_col(1, 0)
            if line < 1 or end > len(self._lines):
                raise NodeNotFound(f"line {node.lineno} lies outside the parsed chunk")
        return (line, self._char_col(line, node.col_offset), end, self._char_col(end, node.end_col_offset or 0))

    def node(self, node: ast.AST, *types: type):
        """The LibCST node for ``node`` (of one of ``types``, default: the counterpart of
        ``node``'s type)."""
        want = types or _TYPES.get(node_type(node))
        if want is None:
            raise NodeNotFound(f"no LibCST counterpart for {type(node).__name__}")
        line, col, eline, ecol = self.span(node)
        by_offset = self._offset_index()
        if by_offset is not None:
            a, b = self._text_offset(line, col), self._text_offset(eline, ecol)
            exact = [n for n, end in by_offset.get(a, ()) if end == b and isinstance(n, want)]
        else:
            cands = [n for n, r in self._index().get((line, col), ()) if isinstance(n, want)]
            exact = [n for n in cands if (self._pos[n].end.line, self._pos[n].end.column) == (eline, ecol)]
        if len(exact) == 1:
            return exact[0]
        if exact:
            return exact[-1] if isinstance(node, ast.stmt) else exact[0]
        # parenthesised tuples and generators: LibCST's range excludes the parentheses
        inner = [
            n for (ln, c), lst in self._index().items() for n, r in lst
            if isinstance(n, want) and (line, col) <= (ln, c) and (r.end.line, r.end.column) <= (eline, ecol)
        ] if isinstance(node, (ast.Tuple, ast.GeneratorExp)) else []
        if inner:
            return max(inner, key=lambda n: (self._pos[n].end.line - self._pos[n].start.line, self._pos[n].end.column - self._pos[n].start.column))
        raise NodeNotFound(f"no LibCST {want[0].__name__} at {line}:{col + 1}")

    def statement(self, stmt: ast.stmt):
        """The statement-level LibCST node for an ``ast`` statement: the compound
        statement itself, or the ``SimpleStatementLine`` of a simple statement."""
        n = self.node(stmt)
        if isinstance(n, cst.BaseCompoundStatement):
            return n
        p = self.parent(n)
        while p is not None and not isinstance(p, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            p = self.parent(p)
        if p is None:
            raise NodeNotFound(f"no statement line for {type(stmt).__name__} at line {stmt.lineno}")
        return p

    def parent(self, node):
        if node is self.module:
            return None
        if self._parent is None and node not in self._path_parent:
            self._descend_to(node)
            if node in self._path_parent:
                return self._path_parent[node]
        if self._parent is None and node in self._path_parent:
            return self._path_parent[node]
        if self._parent is None:
            from .cstutil import children

            parent: dict = {}
            stack = [self.module]
            while stack:
                n = stack.pop()
                for c in children(n):
                    parent[c] = n
                    stack.append(c)
            self._parent = parent
        return self._parent.get(node)

    def _descend_to(self, node) -> None:
        """Record the parents on the way from the module down to ``node``, through the
        children whose offsets hold its offsets (not a map of the whole tree)."""
        offsets = getattr(self._pos, "_offsets", None)
        want = offsets.get(node) if offsets is not None else None
        if want is None:
            return
        from .cstutil import children

        a, b = want
        cur = self.module
        while cur is not node:
            nxt = None
            for c in children(cur):
                self._path_parent.setdefault(c, cur)
                if c is node:
                    return
                r = offsets.get(c)
                if nxt is None and r is not None and r[0] <= a and b <= r[1]:
                    nxt = c
            if nxt is None:
                return
            cur = nxt

    def ancestors(self, node):
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def code(self, node) -> str:
        return self.module.code_for_node(node)

    def range(self, node):
        return self._pos[node]

    # ------------------------------------------------------------------ edits
    @staticmethod
    def insert_before(stmt, *new) -> dict:
        """Replacement that inserts statements ``new`` right before ``stmt`` (whose
        leading comments stay attached to it)."""
        return {stmt: cst.FlattenSentinel([*new, stmt])}

    @staticmethod
    def insert_after(stmt, *new) -> dict:
        return {stmt: cst.FlattenSentinel([stmt, *new])}

    def indent_of(self, stmt) -> str:
        """The indentation of the block holding ``stmt`` (what LibCST generates there)."""
        line = self._pos[stmt].start.line
        self._char_col(1, 0)  # (builds the line starts)
        a = self._lines[line - 1]
        text = self.text[a: self._lines[line] if line < len(self._lines) else len(self.text)]
        return text[: len(text) - len(text.lstrip(" \t"))]
