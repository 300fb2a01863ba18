"""Small LibCST helpers shared by the rules."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (itself first), in source order, without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


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
