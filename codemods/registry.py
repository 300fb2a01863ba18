"""The one registry: the rules, collected from the modules of ``torchmend.rules``.

Each rule is a :class:`~torchmend.rule.Rule` subclass in a module of its own
(``rules/tm201_missing_zero_grad.py``); what the rules of one pitfall share lives in
``rules/_<pitfall>.py``.  Nothing lists codes or pitfalls by hand: adding a rule is adding
a module (and its corpus cases under ``corpus/<pitfall>/``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
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


_MODULE_CODE = re.compile(r"(tm\d+)_")
_CODE_LIKE = re.compile(r"TM\d*", re.I)  # a code or a code prefix: never a rule name or pitfall (tested)


def is_code_like(selector: str) -> bool:
    """``TM201``, ``tm2``, ``TM``: a code or a code prefix, which no rule's name or
    pitfall can be (tested), so the codes alone resolve it."""
    return _CODE_LIKE.fullmatch(selector.strip()) is not None


@lru_cache(maxsize=None)
def names() -> dict[str, str]:
    """Each rule's code and name, read from its module's name (``tm201_missing_zero_grad``:
    ``TM201``, ``missing-zero-grad``) without importing it: what the settings of a run
    and its output need, which a run served from the cache needs nothing else of the
    rules for.  The test suite checks that each module is named after its rule so."""
    from . import rules as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        m = _MODULE_CODE.match(info.name)
        if m is not None and not info.ispkg:
            found[m.group(1).upper()] = info.name[m.end():].replace("_", "-")
    return dict(sorted(found.items()))


def codes() -> tuple[str, ...]:
    """The rules' codes, sorted (from :func:`names`: no rule imported)."""
    return tuple(names())


@lru_cache(maxsize=None)
def pitfalls() -> tuple[str, ...]:
    """The pitfall packages that define rules, sorted."""
    return tuple(sorted({r.pitfall for r in all_rules()}))


def resolve(selectors: list[str] | tuple[str, ...]) -> set[str]:
    """Codes named by selectors: a code (TM201), a code prefix (TM2), a rule name
    (missing-zero-grad), a pitfall (zero_grad) or ALL.  Unknown selectors raise
    ValueError."""
    if all(is_code_like(s) or s.strip().upper() in ("ALL", "") for s in selectors):
        # codes and code prefixes: the codes alone answer (no rule imported)
        rules = [(c, None, None) for c in codes()]
    else:
        rules = [(r.code, r.name, r.pitfall) for r in all_rules()]
    out: set[str] = set()
    for sel in selectors:
        s = sel.strip()
        if not s:
            continue
        hit = {
            code
            for code, name, pitfall in rules
            if s.upper() == "ALL" or code.startswith(s.upper()) or name == s or pitfall == s.replace("-", "_")
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
