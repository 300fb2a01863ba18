"""The semantic model every rule queries (see model.py), the lazily parsed source under
it (source.py), scopes and bindings (scope.py) and the table of names (names.py)."""

from .model import (UNKNOWN_ARG, CallSites, ClassInfo, Origin, OriginKind, ParamValues, SemanticModel, ValueUses,
                    is_generator)
from .scope import Binding, BindingKind, Scope, ScopeKind
from .source import LazyParseError

__all__ = [
    "UNKNOWN_ARG", "Binding", "BindingKind", "CallSites", "ClassInfo", "LazyParseError", "Origin", "OriginKind",
    "ParamValues", "Scope", "ScopeKind", "SemanticModel", "ValueUses", "is_generator",
]
