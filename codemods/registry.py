"""The one registry: the pitfall modules, and the rules collected from them.

Each module in ``PITFALLS`` defines its rules as :class:`~torchmend.rule.Rule` subclasses;
nothing else lists codes by hand.  ``corpus/<pitfall>/`` holds each module's fixtures.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from .rule import Rule

PITFALLS = ("device", "zero_grad", "main_guard", "filtered_load", "softmax")


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    found: list[type[Rule]] = []
    for name in PITFALLS:
        mod = importlib.import_module(f"{__package__}.{name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == mod.__name__ and "code" in vars(obj):
                found.append(obj)
    return tuple(sorted(found, key=lambda r: r.code))


def resolve(selectors: list[str] | tuple[str, ...]) -> set[str]:
    """Codes named by selectors: a code (TM201), a code prefix (TM2), a rule name
    (missing-zero-grad), a pitfall (zero_grad) or ALL.  Unknown selectors raise
    ValueError."""
    rules = all_rules()
    out: set[str] = set()
    for sel in selectors:
        s = sel.strip()
        if not s:
            continue
        hit = {
            r.code
            for r in rules
            if s.upper() == "ALL"
            or r.code.startswith(s.upper())
            or r.name == s
            or r.pitfall == s.replace("-", "_")
        }
        if not hit:
            raise ValueError(f"unknown rule selector {sel!r} (see `torchmend rules`)")
        out |= hit
    return out


def by_code(code: str) -> type[Rule]:
    for r in all_rules():
        if r.code == code.upper() or r.name == code:
            return r
    raise KeyError(code)
