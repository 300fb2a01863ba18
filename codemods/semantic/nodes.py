"""Fast generic walks of the stdlib ``ast``.

``ast.iter_child_nodes`` is a generator over another generator (``ast.iter_fields``) and
yields the ``Load``/``Store`` context objects too; the semantic model walks millions of
nodes per run, so it asks for a node's children here instead: the fields that can hold
nodes are read once per node type, and the children come back as one list, in the order
``ast.iter_child_nodes`` gives them (without the contexts, which no query asks for)."""

from __future__ import annotations

import ast
from typing import Iterator

__all__ = ["BASE", "FIELDS", "TRY", "child_fields", "child_nodes", "descend", "node_type"]

_AST = ast.AST

# the ``try`` statements (``try ... except*`` from Python 3.11)
TRY = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())

# node type -> the names of its fields that may hold nodes (not ``ctx``)
FIELDS: dict = {ast.Name: (), ast.Constant: (), ast.alias: (), ast.Load: (), ast.Store: (), ast.Del: ()}


# a subclass that stands for a stdlib node type (``members.FunctionDef``, a method parsed
# on first access) -> that type: what type tests and indexes by type see
BASE: dict = {}


def node_type(n) -> type:
    """The stdlib type of ``n`` (``type(n)``, but a lazily parsed method is a FunctionDef)."""
    t = type(n)
    return BASE.get(t, t)


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


def descend(roots, parent: dict, enter=None) -> Iterator:
    """Every node under ``roots`` and the roots, depth first (each node's children
    in reverse order: a stack), the parent of each child recorded in ``parent`` once
    its parent has been yielded; a statement for which ``enter(stmt)`` is false is
    neither yielded nor entered.  The semantic model's walks over whole chunks and
    statements: the field loop is the one of ``child_nodes``, written out here because
    a call and a list per node were most of such a walk's time."""
    stack = list(roots)
    pop, push = stack.pop, stack.append
    fields_of = FIELDS.get
    stmt = ast.stmt
    while stack:
        n = pop()
        if enter is not None and isinstance(n, stmt) and not enter(n):
            continue
        yield n
        t = type(n)
        fields = fields_of(t)
        if fields is None:
            fields = child_fields(t)
        for f in fields:
            v = getattr(n, f, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, _AST):
                        parent[x] = n
                        push(x)
            elif isinstance(v, _AST):
                parent[v] = n
                push(v)
