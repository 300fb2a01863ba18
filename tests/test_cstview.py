"""The way from a stdlib ``ast`` node (what the rules analysed) to the LibCST node a fix
edits (codemods/cstview.py): on every corpus file and a large source of the package, every
``ast`` node of the types fixes use maps to exactly one LibCST node of its counterpart
type whose code is the node's source text."""

from __future__ import annotations

import ast
import glob
import os

import libcst as cst
import pytest

from torchmend.cstview import CstView, NodeNotFound

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXACT = (
    ast.Call, ast.Name, ast.Attribute, ast.Assign, ast.Expr, ast.For, ast.While, ast.If, ast.With,
    ast.FunctionDef, ast.ClassDef, ast.Return, ast.Subscript, ast.keyword, ast.Import, ast.ImportFrom,
    ast.AugAssign, ast.AnnAssign, ast.BinOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.List, ast.Dict,
    ast.ListComp, ast.DictComp, ast.Lambda, ast.Try, ast.Pass, ast.Raise, ast.Assert,
)


def _counterparts(node):
    from torchmend.cstview import _TYPES

    return _TYPES[type(node)]


def _files():
    files = sorted(glob.glob(os.path.join(ROOT, "corpus", "**", "*.py"), recursive=True))
    return files + [os.path.join(ROOT, "codemods", "semantic", "model.py")]


def test_every_node_maps_to_its_libcst_counterpart():
    total = 0
    for path in _files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        view = CstView(text)
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if not isinstance(node, EXACT):
                continue
            got = view.node(node)
            assert type(got).__name__ in {c.__name__ for c in _counterparts(node)}
            total += 1
            if isinstance(node, (ast.Name, ast.Attribute)) or node.lineno % 3:
                r = view.range(got)  # same span (code generation is checked on a third of the rest)
                assert (r.start.line, r.start.column, r.end.line, r.end.column) == view.span(node)
                continue
            seg = ast.get_source_segment(text, node)
            code = view.code(got)  # LibCST re-indents nested blocks: compare without whitespace
            if isinstance(got, cst.If) and seg.startswith("elif"):
                code = "el" + code  # an elif is an If in LibCST's orelse, printed as ``if``
            assert "".join(seg.split()) in "".join(code.split()), (path, node.lineno, type(node).__name__, seg, code)
    assert total > 15_000


def test_statements_map_to_statement_lines():
    text = "import torch\nx = 1; y = 2\nif x:\n    y = 3  # c\n"
    view = CstView(text)
    tree = ast.parse(text)
    assign_y = tree.body[1].__class__  # noqa: F841
    line = view.statement(tree.body[2])  # y = 2 (second small statement on the line)
    assert isinstance(line, cst.SimpleStatementLine) and len(line.body) == 2
    if_stmt = view.statement(tree.body[3])
    assert isinstance(if_stmt, cst.If)
    inner = view.statement(tree.body[3].body[0])
    assert isinstance(inner, cst.SimpleStatementLine) and view.code(inner).strip().startswith("y = 3")


def test_non_ascii_columns():
    text = "s = 'ééé'; t = f(s)\n"
    view = CstView(text)
    call = ast.parse(text).body[1].value
    assert view.code(view.node(call)) == "f(s)"


def test_unknown_node_type_is_an_error():
    tree = ast.parse("x = 1\n")
    with pytest.raises(NodeNotFound):
        CstView("x = 1\n").node(tree.body[0].targets[0].ctx)
