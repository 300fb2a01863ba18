"""Syntactic positions of every node, as LibCST's ``PositionProvider`` gives them.

The provider generates the module's code with a state that updates a line and a column
counter on every token (a regular-expression split per token).  Here the state only
counts characters; offsets become ``(line, column)`` through one table of line starts,
and only for the nodes a rule asks about.  The rules are the provider's own: a node's
range is recorded around its code generation unless the node recorded a narrower,
syntactic range itself (``record_syntactic_position``), exactly as in
``libcst.metadata.position_provider``.
"""

from __future__ import annotations

import bisect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

from libcst import CSTNode, Module

# The fast path reads LibCST's code generation state (private API); it is used only with
# the LibCST versions it was checked against (tests/test_cstview.py compares it with the
# public provider on every corpus node) and falls back to ``PositionProvider`` otherwise.
try:
    from importlib.metadata import version as _dist_version

    _VERSION = tuple(int(x) for x in _dist_version("libcst").split(".")[:2] if x.isdigit())
    if not (1, 1) <= _VERSION < (2, 0):
        raise ImportError(f"libcst {_VERSION} not checked")
    from libcst._nodes.internal import CodegenState
    from libcst._position import CodePosition, CodeRange
except (ImportError, AttributeError, ValueError):  # pragma: no cover - other LibCST versions
    CodegenState = None

_NEWLINE = re.compile(r"\r\n?|\n")  # libcst.metadata.position_provider.NEWLINE_RE


@dataclass(frozen=False)
class _OffsetState(CodegenState if CodegenState is not None else object):
    offset: int = 0
    computed: dict = field(default_factory=dict)
    stack: list = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for tok in self.indent_tokens:
            self.offset += len(tok)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        pass  # the code is only used for its line starts; offsets were taken already

    def before_codegen(self, node: CSTNode) -> None:
        self.stack.append(self.offset)

    def after_codegen(self, node: CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.computed:
            self.computed[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(
        self, node: CSTNode, *, start_node: Optional[CSTNode] = None, end_node: Optional[CSTNode] = None
    ) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.computed[start_node][0]
            if end_node is not None:
                end = self.computed[end_node][1]
            self.computed[node] = (start, end)


class Positions:
    """Mapping node -> ``CodeRange`` (1-based lines, 0-based columns)."""

    def __init__(self, module: Module):
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self._offsets = state.computed
        code = "".join(state.tokens)
        self._starts = [0] + [m.end() for m in _NEWLINE.finditer(code)]
        self._cache: dict = {}

    def _at(self, offset: int) -> CodePosition:
        line = bisect.bisect_right(self._starts, offset)
        return CodePosition(line, offset - self._starts[line - 1])

    def __getitem__(self, node: CSTNode) -> CodeRange:
        got = self._cache.get(node)
        if got is None:
            start, end = self._offsets[node]
            got = self._cache[node] = CodeRange(self._at(start), self._at(end))
        return got

    def get(self, node: CSTNode, default=None):
        return self[node] if node in self._offsets else default

    def __contains__(self, node: CSTNode) -> bool:
        return node in self._offsets

    def items(self):
        for node in self._offsets:
            yield node, self[node]


def positions(module: Module):
    """Node -> ``CodeRange`` for every node of ``module``."""
    if CodegenState is None:  # pragma: no cover - other LibCST versions
        return public_positions(module)
    return Positions(module)


def public_positions(module: Module):
    """The same mapping from LibCST's public ``PositionProvider``."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
