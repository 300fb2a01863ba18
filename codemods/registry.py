"""The one registry: the rules, collected from the modules of ``torchmend.rules``.

Each rule is a :class:`~torchmend.rule.Rule` subclass in a module of its own
(``rules/tm201_missing_zero_grad.py``); what the rules of one pitfall share lives in
``rules/_<pitfall>.py``.  Nothing lists codes or pitfalls by hand: adding a rule is adding
a module (and its corpus cases under ``corpus/<pitfall>/``).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .rule import Rule


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    from . import rules as package

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        mod = importlib.import_module(f"{package.__name__}.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == mod.__name__ and "code" in vars(obj):
                found.append(obj)
    return tuple(sorted(found, key=lambda r: r.code))


@lru_cache(maxsize=None)
def pitfalls() -> tuple[str, ...]:
    """The pitfall packages that define rules, sorted."""
    return tuple(sorted({r.pitfall for r in all_rules()}))


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
