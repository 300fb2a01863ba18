"""Fast generic walks of the stdlib ``ast``.

``ast.iter_child_nodes`` is a generator over another generator (``ast.iter_fields``) and
yields the ``Load``/``Store`` context objects too; the semantic model walks millions of
nodes per run, so it asks for a node's children here instead: the fields that can hold
nodes are read once per node type, and the children come back as one list, in the order
``ast.iter_child_nodes`` gives them (without the contexts, which no query asks for)."""

from __future__ import annotations

import ast

__all__ = ["FIELDS", "adopt_children", "child_fields", "child_nodes"]

_AST = ast.AST

# node type -> the names of its fields that may hold nodes (not ``ctx``)
FIELDS: dict = {ast.Name: (), ast.Constant: (), ast.alias: (), ast.Load: (), ast.Store: (), ast.Del: ()}


def child_fields(t) -> tuple:
    got = FIELDS.get(t)
    if got is None:
        got = FIELDS[t] = tuple(f for f in t._fields if f != "ctx")
    return got


def child_nodes(n) -> list:
    """The child nodes of ``n``, in ``ast.iter_child_nodes`` order (contexts left out)."""
    fields = FIELDS.get(type(n))
    if fields is None:
        fields = child_fields(type(n))
    out: list = []
    for f in fields:
        v = getattr(n, f, None)
        if type(v) is list:
            for x in v:
                if isinstance(x, _AST):
                    out.append(x)
        elif isinstance(v, _AST):
            out.append(v)
    return out


def adopt_children(n, parent: dict) -> list:
    """``child_nodes(n)``, each recorded with ``n`` as its parent in ``parent`` (the
    semantic model's walks record parents as they descend)."""
    out = child_nodes(n)
    for x in out:
        parent[x] = n
    return out
