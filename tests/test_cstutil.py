"""``cstutil.children`` must be exactly LibCST's ``node.children`` (same nodes, same
order): the parent map, ``FileContext.nodes`` and every rule's walk are built on it."""

from __future__ import annotations

import glob
import os

import libcst as cst

from torchmend import cstutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sources():
    for path in sorted(glob.glob(os.path.join(ROOT, "corpus", "**", "*.py"), recursive=True)) + sorted(
        glob.glob(os.path.join(ROOT, "codemods", "**", "*.py"), recursive=True)
    ):
        with open(path, encoding="utf-8") as f:
            yield path, f.read()
    # syntax the corpus may lack: match, walrus, async, decorators, f-strings, star-args, type params
    yield "<extra>", (
        "import a.b as c\nfrom . import (x as y, z)\n@dec(1)\nasync def f(*a, b=1, **k) -> int:\n"
        "    async with g() as (h, i):\n        async for j in k:\n            await j\n"
        "    return [m async for m in n if (o := m)]\n"
        "match p:\n    case {'a': [1, *rest], **kw} if rest:\n        pass\n    case Point(x=0) | None:\n        pass\n"
        "class C[T](B, metaclass=M):\n    x: int = 1\n    def g(self, /, q, *, r): return f'{q!r:>{r}}' + rb'\\x'\n"
        "del a[1:2, ::3], b\nglobal g\nt = lambda *a, **k: (yield)\ntry:\n    raise E from e\nexcept* (A, B) as e:\n    pass\n"
        "finally:\n    assert x, 'm'\nwhile 1: break\nelse: continue\nu = {**d, 'k': v, **{}} | {1, *s}\nw = not -x ** ~y @ z\n"
    )


def test_children_equal_libcst_children_everywhere():
    seen_types = set()
    count = 0
    for path, text in _sources():
        module = cst.parse_module(text)
        stack = [module]
        while stack:
            node = stack.pop()
            expected = node.children
            got = cstutil.children(node)
            assert [id(c) for c in got] == [id(c) for c in expected], (path, type(node).__name__)
            seen_types.add(type(node))
            count += 1
            stack.extend(expected)
    assert count > 100_000 and len(seen_types) > 120, (count, len(seen_types))
    # the fast path is taken (an unreadable class falls back to node.children, still
    # correct but slow): every class seen has a field order
    assert not [t.__name__ for t in seen_types if cstutil._ORDER.get(t) is None]


def test_walk_is_source_order():
    module = cst.parse_module("a = b(c, d)\n")
    names = [n.value for n in cstutil.walk(module) if isinstance(n, cst.Name)]
    assert names == ["a", "b", "c", "d"]


class _Recorder(cst.CSTVisitor):
    def __init__(self):
        self.events = []

    def on_visit(self, node):
        self.events.append(("v", id(node)))
        return True

    def on_leave(self, node):
        self.events.append(("l", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.events.append(("va", id(node), attribute))

    def on_leave_attribute(self, node, attribute):
        self.events.append(("la", id(node), attribute))
