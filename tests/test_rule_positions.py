"""The fast positions (codemods/positions.py, LibCST's private code generation state)
equal LibCST's public ``PositionProvider`` on every node: the ``ast`` -> LibCST mapping
(cstview.py) and the engine's overlap test use them."""

from __future__ import annotations

import glob
import os

import libcst as cst
from hypothesis import given, settings, strategies as st
from libcst import metadata as md

from torchmend.positions import CodegenState, positions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _same(text: str) -> int:
    assert CodegenState is not None, "the installed LibCST is one the fast path was checked against"
    module = cst.parse_module(text)
    expected = md.MetadataWrapper(module, unsafe_skip_copy=True).resolve(md.PositionProvider)
    got = positions(module)
    for node, rng in expected.items():
        assert got[node] == rng, (type(node).__name__, got[node], rng)
    return len(expected)


def test_positions_equal_libcst_on_the_corpus_and_the_sources():
    files = sorted(glob.glob(os.path.join(ROOT, "corpus", "**", "*.py"), recursive=True))
    files += sorted(glob.glob(os.path.join(ROOT, "codemods", "**", "*.py"), recursive=True))
    total = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            total += _same(f.read())
    assert total > 100_000


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["x = 1", "def f(a,\n      b):\n    return (a +\n            b)", "if x:\n    pass", "  # c", "",
             "s = '''a\nb'''", "t = f(\n    1,\n)", "class A:\n\n    y: int = 2", "z = [i for i in y]  # k"]
        ),
        max_size=8,
    ),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_positions_equal_libcst_on_generated_text(lines, nl, final_newline):
    text = nl.join(lines)
    if final_newline and text:
        text += nl
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return
    _same(text)
