"""Small LibCST helpers shared by the rules."""

from __future__ import annotations

import inspect
import re
from typing import Iterator, Optional

import libcst as cst

# LibCST's ``node.children`` runs the node's ``_visit_and_replace_children`` with a
# collecting visitor, which rebuilds (and validates) a copy of the node on every call:
# building a parent map that way costs as much as the parse.  ``children`` below reads
# the same fields directly, in the order that method visits them (scraped once per node
# class from its source), and checks itself against ``node.children`` on the first node
# of each class it meets: a class whose order cannot be read or does not match uses
# ``node.children``.  tests/test_cstutil.py compares the two on every node of the corpus.
_VISITED_FIELD = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
_ORDER: dict[type, Optional[tuple[str, ...]]] = {}
_NODE = cst.CSTNode


def _fields_in_visit_order(node: cst.CSTNode) -> Optional[tuple[str, ...]]:
    cls = type(node)
    try:
        order: Optional[tuple[str, ...]] = tuple(
            dict.fromkeys(_VISITED_FIELD.findall(inspect.getsource(cls._visit_and_replace_children)))
        )
    except (OSError, TypeError):
        order = None
    if order is not None and [id(c) for c in _read(node, order)] != [id(c) for c in node.children]:
        order = None
    _ORDER[cls] = order
    return order


def _read(node: cst.CSTNode, order: tuple[str, ...]) -> list:
    out = []
    for name in order:
        v = getattr(node, name)
        if isinstance(v, _NODE):
            out.append(v)
        elif type(v) is tuple or type(v) is list:
            out.extend(x for x in v if isinstance(x, _NODE))
    return out


def children(node: cst.CSTNode) -> list:
    """``node.children`` (same nodes, same order), several times faster."""
    try:
        order = _ORDER[type(node)]
    except KeyError:
        order = _fields_in_visit_order(node)
    if order is None:
        return list(node.children)
    return _read(node, order)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (itself first), in source order, without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None (spelling only: for names that
    must resolve to a library object use ``FileContext.qualnames``)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def method_name(call: cst.Call) -> Optional[str]:
    """``step`` for ``x.step(...)``, None for a call of a plain name."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


# --------------------------------------------------------------------------- visiting
# ``CSTNode.visit`` rebuilds every node it passes through (``_visit_and_replace_children``
# constructs and validates a copy even for a read-only ``CSTVisitor``); metadata
# providers (scopes, expression contexts) walk whole modules that way.  ``fast_visits``
# swaps in a traversal that makes the same calls on a ``CSTVisitor`` (on_visit,
# on_visit_attribute / on_leave_attribute for every field the original visits, children
# in the same order, on_leave) without building anything; transformers keep the
# original.  Each node class is checked once against the original (the shallow sequence
# of callbacks) before the fast path is used for it; tests/test_cstutil.py compares
# the full callback sequences on the corpus.
_ORIGINAL_VISIT = cst.CSTNode.visit
_VISIT_OK: dict[type, bool] = {}


class _Shallow(cst.CSTVisitor):
    """Records the callbacks the original makes for one node, without descending."""

    def __init__(self):
        self.events: list = []

    def on_visit(self, node):
        self.events.append(("visit", id(node)))
        return False

    def on_leave(self, node):
        self.events.append(("leave", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.events.append(("va", attribute))

    def on_leave_attribute(self, node, attribute):
        self.events.append(("la", attribute))


def _fast_path_ok(node: cst.CSTNode) -> bool:
    cls = type(node)
    ok = _VISIT_OK.get(cls)
    if ok is None:
        try:
            order = _ORDER[cls]
        except KeyError:
            order = _fields_in_visit_order(node)
        ok = order is not None and not _conditional(cls)
        if ok:
            expected = _Shallow()
            node._visit_and_replace_children(expected)
            got: list = []
            for name in order:
                got.append(("va", name))
                v = getattr(node, name)
                if isinstance(v, _NODE):
                    got += [("visit", id(v)), ("leave", id(v))]
                elif type(v) is tuple or type(v) is list:
                    for x in v:
                        got += [("visit", id(x)), ("leave", id(x))]
                got.append(("la", name))
            ok = got == expected.events
        _VISIT_OK[cls] = ok
    return ok


def _conditional(cls) -> bool:
    """Whether the class visits some field only under a condition (``if``/``else``):
    the one-node check could not vouch for every instance, so the original is used."""
    try:
        src = inspect.getsource(cls._visit_and_replace_children)
    except (OSError, TypeError):
        return True
    return re.search(r"\b(if|else)\b", src.split(":", 1)[1].split('"""')[-1]) is not None


def _fast_visit(self, visitor):
    if not isinstance(visitor, cst.CSTVisitor) or not _fast_path_ok(self):
        return _ORIGINAL_VISIT(self, visitor)
    if visitor.on_visit(self):
        for name in _ORDER[type(self)]:
            v = getattr(self, name)
            visitor.on_visit_attribute(self, name)
            if isinstance(v, _NODE):
                v.visit(visitor)
            elif type(v) is tuple or type(v) is list:
                for x in v:
                    x.visit(visitor)
            visitor.on_leave_attribute(self, name)
    visitor.on_leave(self)
    return self


class fast_visits:
    """Context manager: read-only visits inside it use the fast traversal."""

    def __enter__(self):
        cst.CSTNode.visit = _fast_visit
        return self

    def __exit__(self, *exc):
        cst.CSTNode.visit = _ORIGINAL_VISIT
        return False
