"""Pitfall: device mismatch (see shared/pitfalls.md section 1).

TM101 -- the model is moved to a device but the batch from a DataLoader loop reaches it
(or the loss, or its output) on the CPU; also a ``t.to(dev)`` on a tensor whose result
is dropped (``Tensor.to`` is not in-place).
TM102 -- a tensor created inside ``forward`` (or a method it calls) without ``device=``;
report-only: parameter-owning layers instantiated in ``forward`` and plain tensor
attributes read in ``forward``.

Everything here is local, conservative data flow: a finding needs positive evidence
(a DataLoader, a moved model, a known device expression) and any unknown callee that
receives the batch is assumed to move it.  Outcomes:

* safe fix (TM101): the device is a literal, ``"cuda" if torch.cuda.is_available() else
  "cpu"``, ``torch.device(<those>)`` or a name bound once to one of these (a parameter:
  at every call site); ``.cuda()`` when the model was moved that way, under the model
  move's own ``if`` condition copied verbatim;
* report (TM101): device unknown (``args.device``, ``local_rank``, a builder function),
  a move condition that cannot be copied, a batch whose structure is unknown;
* nothing: Accelerate/Lightning/DeepSpeed/HF Trainer files, ``device_map=``,
  ``nn.DataParallel``, helpers/prefetchers/collate functions that may move the batch,
  a batch moved anywhere in the loop, CPU-only scripts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator, Optional, Union

import libcst as cst

from .astfacts import COMPOUND, facts as _ast_facts
from .cstutil import children as _children, dotted as _dotted, method_name as _method, walk as _walk
from .rule import FileContext, Fix, Rule, Safety, Severity

# ----------------------------------------------------------------------------- basics

Scope = Union[cst.Module, cst.FunctionDef]

_LOADER_QN = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_MODULE_QN = {"torch.nn.Module", "torch.nn.modules.module.Module"}
_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter"}
_BUILTINS = {
    "print", "len", "range", "enumerate", "zip", "float", "int", "str", "bool", "isinstance",
    "list", "tuple", "dict", "min", "max", "sum", "abs", "round", "type", "repr", "format",
    "sorted", "any", "all", "set", "next", "iter", "hasattr", "getattr",
}
_FACTORIES = {
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace", "tensor",
}
_MOVE_METHODS = {"to", "cuda", "to_device", "type_as"}
# torch functions whose result is certainly a Tensor
_TENSOR_FUNCS = _FACTORIES | {f + "_like" for f in _FACTORIES} | {
    "cat", "stack", "from_numpy", "as_tensor", "randperm", "where", "matmul", "clone", "flatten", "cumsum",
    "exp", "log", "sigmoid", "tanh", "softmax", "log_softmax",
}
# torch functions that do not return a tensor (or not one worth guessing about)
_NOT_TENSOR_FUNCS = {
    "load", "device", "compile", "manual_seed", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
    "get_default_dtype", "set_default_dtype", "is_tensor", "save", "jit", "Generator", "Size", "dtype",
    "split", "chunk", "unbind", "broadcast_tensors", "meshgrid", "topk", "sort", "max", "min", "unique",
}


def _qn(ctx: FileContext, node: cst.CSTNode) -> set[str]:
    """Qualified names of a name or attribute (nothing for other expressions)."""
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return set()
    return ctx.qualnames(node)


def _walk_scope(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Like _walk but does not enter nested functions, classes or lambdas."""
    stack = list(reversed(_children(node)))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(_children(n)))


def _names(expr: cst.CSTNode) -> list[str]:
    """Variable names read in an expression (not attribute members, not keywords)."""
    out: list[str] = []
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.append(n.value)
            continue
        if isinstance(n, cst.Attribute):
            stack.append(n.value)
            continue
        if isinstance(n, cst.Arg):
            stack.append(n.value)
            continue
        if isinstance(n, cst.Lambda):
            continue
        stack.extend(_children(n))
    return out


# results that are not device tensors: Python numbers, shapes, CPU copies
_HOST_METHODS = {"item", "size", "tolist", "numel", "dim", "cpu", "numpy", "nelement", "element_size"}
_HOST_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda"}
_HOST_FUNCS = {"len", "isinstance", "str", "repr", "print", "type", "hasattr", "id"}


def _flow_nodes(expr: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Nodes of an expression whose value may flow on as a tensor (skips ``.item()``,
    ``.size()``, ``.shape``, ``len(...)``, ``.cpu()`` and the like)."""
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            if _method(n) in _HOST_METHODS:
                continue
            if isinstance(n.func, cst.Name) and n.func.value in _HOST_FUNCS:
                continue
        if isinstance(n, cst.Attribute) and n.attr.value in _HOST_ATTRS:
            continue
        if isinstance(n, cst.Lambda):
            continue
        yield n
        if isinstance(n, cst.Attribute):
            stack.append(n.value)
        elif isinstance(n, cst.Arg):
            stack.append(n.value)
        else:
            stack.extend(reversed(_children(n)))


def _flow_names(expr: cst.CSTNode) -> list[str]:
    return [n.value for n in _flow_nodes(expr) if isinstance(n, cst.Name)]


def _target_names(t: cst.BaseExpression) -> Optional[list[str]]:
    """Names of a (possibly nested) tuple/list target; None when not only names."""
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, (cst.Tuple, cst.List)):
        out: list[str] = []
        for el in t.elements:
            if isinstance(el, cst.StarredElement):
                return None
            sub = _target_names(el.value)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _kw(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def _is_str(e) -> bool:
    return isinstance(e, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _plain_str(e) -> bool:
    return isinstance(e, cst.SimpleString)


# ----------------------------------------------------------------------------- module facts


@dataclass
class Binding:
    stmt: cst.CSTNode  # the statement (Assign, For, ...) that binds
    value: Optional[cst.BaseExpression]  # the value for `name = value`, else None
    kind: str  # "assign" | "unpack" | "for" | "param" | "other"


@dataclass
class ModelInfo:
    moved: bool
    style: str = ""  # "to" | "cuda"
    device: Optional[str] = None  # code of the device expression, valid in the loop's scope
    device_known: bool = False
    guard: Optional[str] = None  # condition to copy, "" when none needed
    guard_ok: bool = True
    why: str = ""  # for report-only findings


class Facts:
    """Per-file facts shared by the device rules (computed once per FileContext)."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.module = ctx.module
        self.funcs: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        # every node of the module, once (the parent map already lists them all)
        parents = getattr(ctx, "_parent", None)
        self.nodes: list[cst.CSTNode] = list(parents.keys()) if parents else list(_walk(ctx.module))
        for n in self.nodes:
            if isinstance(n, cst.FunctionDef) and not isinstance(self._owner(n), cst.ClassDef):
                name = n.name.value
                # a name defined twice is ambiguous: None
                self.funcs[name] = n if name not in self.funcs else None
            elif isinstance(n, cst.ClassDef):
                self.classes.setdefault(n.name.value, n)
        self._bindings: dict[int, dict[str, list[Binding]]] = {}
        self._calls: Optional[list[cst.Call]] = None
        self.non_blocking = self._non_blocking()
        self.module_classes = self._module_classes()

    # -- scopes and bindings
    def _owner(self, node):
        for a in self.ctx.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return a
        return None

    def scope_of(self, node) -> Scope:
        for a in self.ctx.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Module)):
                return a
        return self.module

    def bindings(self, scope: Scope) -> dict[str, list[Binding]]:
        got = self._bindings.get(id(scope))
        if got is not None:
            return got
        b: dict[str, list[Binding]] = {}
        if isinstance(scope, cst.FunctionDef):
            for p in [*scope.params.posonly_params, *scope.params.params, *scope.params.kwonly_params]:
                b.setdefault(p.name.value, []).append(Binding(p, p.default, "param"))
        for n in _walk_scope(scope):
            if isinstance(n, cst.Assign):
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        b.setdefault(t.target.value, []).append(Binding(n, n.value, "assign"))
                    else:
                        for name in _target_names(t.target) or []:
                            b.setdefault(name, []).append(Binding(n, None, "unpack"))
            elif isinstance(n, (cst.AnnAssign, cst.AugAssign)) and isinstance(n.target, cst.Name):
                b.setdefault(n.target.value, []).append(
                    Binding(n, n.value if isinstance(n, cst.AnnAssign) else None, "other")
                )
            elif isinstance(n, cst.For):
                for name in _target_names(n.target) or []:
                    b.setdefault(name, []).append(Binding(n, None, "for"))
            elif isinstance(n, cst.WithItem) and n.asname is not None:
                for name in _target_names(n.asname.name) or []:
                    b.setdefault(name, []).append(Binding(n, None, "other"))
            elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
                b.setdefault(n.name.value, []).append(Binding(n, None, "other"))
            elif isinstance(n, (cst.Import, cst.ImportFrom)) and not isinstance(n.names, cst.ImportStar):
                for a in n.names:
                    nm = a.evaluated_alias or a.evaluated_name
                    b.setdefault(nm.split(".")[0], []).append(Binding(n, None, "other"))
        self._bindings[id(scope)] = b
        return b

    def lookup(self, scope: Scope, name: str) -> tuple[Scope, list[Binding]]:
        """Bindings of ``name`` as seen from ``scope`` (local, else module-level)."""
        local = self.bindings(scope).get(name)
        if local:
            return scope, local
        if isinstance(scope, cst.FunctionDef):
            # a nested function sees its enclosing function's names
            for a in self.ctx.ancestors(scope):
                if isinstance(a, cst.FunctionDef):
                    got = self.bindings(a).get(name)
                    if got:
                        return a, got
        return self.module, self.bindings(self.module).get(name, [])

    def calls(self) -> list[cst.Call]:
        if self._calls is None:
            self._calls = [n for n in self.nodes if isinstance(n, cst.Call)]
        return self._calls

    def call_site_args(self, fn: cst.FunctionDef, param: str) -> Optional[list[tuple[cst.BaseExpression, cst.Call]]]:
        """The expressions passed for ``param`` at every call of the top-level function
        ``fn`` in this file; None if a call site cannot be mapped (or there is none)."""
        if self.funcs.get(fn.name.value) is not fn:
            return None
        params = [p.name.value for p in [*fn.params.posonly_params, *fn.params.params]]
        kwonly = [p.name.value for p in fn.params.kwonly_params]
        if param not in params and param not in kwonly:
            return None
        out = []
        sites = [c for c in self.calls() if isinstance(c.func, cst.Name) and c.func.value == fn.name.value]
        # the function must be used only through direct calls (not passed around)
        uses = self._name_uses().get(fn.name.value, 0)
        if not sites or uses != len(sites) + 1:
            return None
        for c in sites:
            found = None
            for i, a in enumerate(c.args):
                if a.star:
                    return None
                if a.keyword is None and param in params and i == params.index(param):
                    found = a.value
                elif a.keyword is not None and a.keyword.value == param:
                    found = a.value
            if found is None:
                return None
            out.append((found, c))
        return out

    def _name_uses(self) -> dict[str, int]:
        got = getattr(self, "_uses", None)
        if got is None:
            got = {}
            for n in self.nodes:
                if isinstance(n, cst.Name):
                    p = self.ctx.parent(n)
                    if isinstance(p, cst.Attribute) and p.attr is n:
                        continue
                    if isinstance(p, cst.Arg) and p.keyword is n:
                        continue
                    got[n.value] = got.get(n.value, 0) + 1
            self._uses = got
        return got

    # -- textual style facts
    def _non_blocking(self) -> Optional[str]:
        for c in self.calls():
            if _method(c) in ("to", "cuda"):
                a = _kw(c, "non_blocking")
                if a is not None and isinstance(a.value, cst.Name) and a.value.value in ("True", "False"):
                    return a.value.value
        return None

    def _module_classes(self) -> set[str]:
        """Names of classes in this file that derive (transitively) from nn.Module."""
        out: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in self.classes.items():
                if name in out:
                    continue
                for base in cls.bases:
                    if _qn(self.ctx, base.value) & _MODULE_QN or (
                        isinstance(base.value, cst.Name) and base.value.value in out
                    ) or any(q.startswith("torch.nn.") and q[9:10].isupper() for q in _qn(self.ctx, base.value)):
                        out.add(name)
                        changed = True
                        break
        return out

    # -- expression facts
    def is_torch_call(self, call: cst.Call) -> bool:
        return any(q.startswith("torch.") for q in _qn(self.ctx, call.func))

    def is_module_ctor(self, call: cst.Call) -> bool:
        """``Net(...)``, ``nn.Linear(...)``, ``nn.Sequential(...)``: builds an nn.Module."""
        f = call.func
        if isinstance(f, cst.Name) and f.value in self.module_classes:
            return True
        return any(
            q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper() and "functional" not in q
            for q in _qn(self.ctx, f)
        )

    def single_value(self, scope: Scope, name: str) -> tuple[Optional[Scope], Optional[Binding]]:
        sc, bs = self.lookup(scope, name)
        if len(bs) == 1:
            return sc, bs[0]
        return sc, None

    def known_device(self, scope: Scope, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A device expression whose value is known locally: a string literal, the usual
        ``"cuda" if torch.cuda.is_available() else "cpu"``, ``torch.device(<those>)``, or a
        name bound once to one of these (a parameter: at every call site)."""
        if depth > 4:
            return False
        if _plain_str(expr):
            return True
        if isinstance(expr, cst.IfExp):
            return self.known_device(scope, expr.body, depth + 1) and self.known_device(scope, expr.orelse, depth + 1)
        if isinstance(expr, cst.Call) and "torch.device" in _qn(self.ctx, expr.func):
            pos = [a for a in expr.args if a.keyword is None]
            return len(expr.args) >= 1 and len(pos) >= 1 and self.known_device(scope, pos[0].value, depth + 1) and all(
                isinstance(a.value, cst.Integer) for a in expr.args[1:]
            )
        if isinstance(expr, cst.Name):
            sc, b = self.single_value(scope, expr.value)
            if b is None:
                return False
            if b.kind == "param":
                if not isinstance(sc, cst.FunctionDef):
                    return False
                sites = self.call_site_args(sc, expr.value)
                return bool(sites) and all(
                    self.known_device(self.scope_of(c), a, depth + 1) for a, c in sites
                )
            if b.kind == "assign" and b.value is not None:
                return self.known_device(sc, b.value, depth + 1)
        return False

    def is_loader(self, scope: Scope, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A plain ``torch.utils.data.DataLoader`` (no collate_fn, dataset not on a device)."""
        if depth > 4 or not isinstance(expr, cst.Name):
            return False
        sc, bs = self.lookup(scope, expr.value)
        if not bs:
            return False
        if len(bs) == 1 and bs[0].kind == "param":
            if not isinstance(sc, cst.FunctionDef):
                return False
            sites = self.call_site_args(sc, expr.value)
            return bool(sites) and all(self.is_loader(self.scope_of(c), a, depth + 1) for a, c in sites)
        for b in bs:  # every binding is a plain DataLoader
            v = b.value
            if b.kind != "assign" or not isinstance(v, cst.Call) or not (_qn(self.ctx, v.func) & _LOADER_QN):
                return False
            if any(a.star for a in v.args):
                return False
            cf = _kw(v, "collate_fn")
            if cf is not None and not self._plain_collate(sc, cf.value):
                return False
            # a dataset that already holds device tensors (or moves them itself)
            ds = v.args[0].value if v.args and v.args[0].keyword is None else _kw(v, "dataset")
            if isinstance(ds, cst.Arg):
                ds = ds.value
            if ds is not None and self._mentions_device(sc, ds, 2):
                return False
        return True

    def _plain_collate(self, scope: Scope, expr) -> bool:
        """A collate_fn known to leave tensors on the CPU: HF data collators, torch's
        default_collate, or a function of this file that never mentions a device."""
        if isinstance(expr, cst.Name) and expr.value not in self.funcs:
            sc, b = self.single_value(scope, expr.value)
            if b is not None and b.kind == "assign" and isinstance(b.value, cst.Call):
                return self._plain_collate(sc, b.value)
        qn = _qn(self.ctx, expr.func if isinstance(expr, cst.Call) else expr)
        if any(
            q.startswith("transformers.") and ("collator" in q.lower() or "Collator" in q) for q in qn
        ) or qn & {"torch.utils.data.default_collate", "torch.utils.data.dataloader.default_collate"}:
            return not (isinstance(expr, cst.Call) and self._mentions_device(scope, expr, 0))
        if isinstance(expr, cst.Name):
            fn = self.funcs.get(expr.value)
            sc, bs = self.lookup(scope, expr.value)
            if fn is not None and len(bs) == 1 and bs[0].stmt is fn:
                return not re.search(r"\.(to|cuda)\(|device|cuda|pin_memory", self.ctx.code(fn))
        return False

    def _mentions_device(self, scope: Scope, expr, depth: int) -> bool:
        code = self.ctx.code(expr)
        if re.search(r"\.(to|cuda)\(|device|cuda", code):
            return True
        for n in set(_names(expr)):
            # a class or function of this file that moves things itself
            for d in (self.classes.get(n), self.funcs.get(n)):
                if d is not None and re.search(r"\.(to|cuda)\(|device|cuda", self.ctx.code(d)):
                    return True
        if depth <= 0:
            return False
        for n in set(_names(expr)):
            sc, b = self.single_value(scope, n)
            if b is not None and b.value is not None and self._mentions_device(sc, b.value, depth - 1):
                return True
        return False

    # -- models
    def model_info(self, scope: Scope, name: str, ref: cst.CSTNode, depth: int = 0) -> Optional[ModelInfo]:
        """What is known about the model ``name`` used at ``ref`` in ``scope``: None when
        ``name`` is not (provably) an nn.Module."""
        if depth > 4:
            return None
        sc, bs = self.lookup(scope, name)
        if not bs:
            return None
        if len(bs) == 1 and bs[0].kind == "param":
            if not isinstance(sc, cst.FunctionDef):
                return None
            sites = self.call_site_args(sc, name)
            if not sites:
                return None
            infos = []
            for a, c in sites:
                if not isinstance(a, cst.Name):
                    return None
                i = self.model_info(self.scope_of(c), a.value, c, depth + 1)
                if i is None:
                    return None
                infos.append(i)
            first = infos[0]
            if first.guard and not all(
                self.visible(sc, self.scope_of(c), cst.parse_expression(first.guard)) for _, c in sites
            ):
                return ModelInfo(True, first.style, None, False, "", False, why=f"`{name}` is moved under a condition not visible here")
            for i in infos[1:]:
                if (i.moved, i.style, i.device_known, i.guard, i.guard_ok) != (
                    first.moved, first.style, first.device_known, first.guard, first.guard_ok
                ):
                    return ModelInfo(True, first.style, None, False, why="called with different models")
            if first.moved and first.style == "to" and first.device_known:
                dev = self._device_in(sc, first.device, [a for a, _ in sites])
                return ModelInfo(True, "to", dev, dev is not None, first.guard, first.guard_ok,
                                 why="" if dev else "the device is not known inside the function")
            return first
        # is it a model at all?  a value built by a module constructor, possibly moved
        is_model = False
        moves: list[tuple[cst.CSTNode, cst.Call]] = []
        helper = None
        for b in bs:
            v = b.value
            if b.kind == "assign" and isinstance(v, cst.Call):
                base = v
                chain = []
                while isinstance(base, cst.Call) and _method(base) in ("to", "cuda", "eval", "train", "float", "half", "double"):
                    chain.append(base)
                    base = base.func.value
                if isinstance(base, cst.Call) and self.is_module_ctor(base):
                    is_model = True
                elif isinstance(base, cst.Name) and base.value == name:
                    pass
                elif isinstance(base, cst.Call) and not self.is_torch_call(base):
                    helper = v  # built by an unknown function
                if any(_method(c) in ("to", "cuda") for c in chain):
                    moves.append((b.stmt, next(c for c in chain if _method(c) in ("to", "cuda"))))
            elif b.kind == "param":
                return None
        for n in _walk_scope(sc):
            if (
                isinstance(n, cst.Expr)
                and isinstance(n.value, cst.Call)
                and _method(n.value) in ("to", "cuda")
                and isinstance(n.value.func.value, cst.Name)
                and n.value.func.value.value == name
            ):
                moves.append((n, n.value))
        if helper is not None and not is_model:
            if not moves:
                if self._mentions_device(sc, helper, 0):
                    return ModelInfo(True, "", None, False, why=f"`{name}` is built and moved by a helper")
                return None
            is_model = True  # built by a helper, then moved here
        if not is_model:
            return None
        if not moves:
            return ModelInfo(False)
        if sc is scope and any(self.ctx.position(m)[0] > self.ctx.position(ref)[0] for m, _ in moves):
            return ModelInfo(True, "", None, False, why=f"`{name}` is moved after this loop")
        stmt, call = moves[0]
        style = _method(call) or "to"
        dev_expr = None
        if style == "cuda":
            known = not call.args
            why = "" if known else f"`{name}` is moved with `{self.ctx.code(call)}`"
        else:
            pos = [a for a in call.args if a.keyword is None] or [a for a in call.args if a.keyword and a.keyword.value == "device"]
            dev_expr = pos[0].value if pos else None
            known = dev_expr is not None and self.known_device(sc, dev_expr)
            why = "" if known else (
                f"`{name}` is moved to `{self.ctx.code(dev_expr)}`, which is not known locally" if dev_expr is not None else "unknown device"
            )
        if len({(_method(c), self.ctx.code(c.args[0].value) if c.args else "") for _, c in moves}) > 1:
            known, why = False, f"`{name}` is moved in more than one way"
        guard, ok = self._guard(stmt, ref)
        if ok and guard and not self.visible(scope, sc, cst.parse_expression(guard)):
            ok = False
        if known and dev_expr is not None and not self.visible(scope, sc, dev_expr):
            known, why = False, f"`{self.ctx.code(dev_expr)}` is not visible here"
        info = ModelInfo(True, style, self.ctx.code(dev_expr) if dev_expr is not None else None, known, guard, ok, why)
        if not ok:
            info.why = f"`{name}` is moved under a condition that cannot be copied"
        return info

    def visible(self, here: Scope, there: Scope, expr) -> bool:
        """Every name of ``expr`` (code from scope ``there``) means the same in ``here``."""
        if here is there:
            return True
        for n in set(_names(expr)):
            a_sc, a_b = self.lookup(here, n)
            b_sc, b_b = self.lookup(there, n)
            if a_sc is not b_sc or a_b != b_b:
                return False
        return True

    def _device_in(self, scope: cst.FunctionDef, dev_code: Optional[str], _model_args) -> Optional[str]:
        """A device expression valid inside ``scope`` equal to the model's device."""
        if dev_code is None:
            return None
        try:
            dev = cst.parse_expression(dev_code)
        except Exception:
            return None
        if _plain_str(dev):
            return dev_code
        if not isinstance(dev, cst.Name):
            # `"cuda" if torch.cuda.is_available() else "cpu"` inline: only if it reads nothing local
            return dev_code if self.visible(scope, self.module, dev) else None
        # a parameter receiving a known device at every call site
        params = [p.name.value for p in [*scope.params.posonly_params, *scope.params.params, *scope.params.kwonly_params]]
        cands = []
        for p in params:
            sites = self.call_site_args(scope, p)
            if sites and all(isinstance(a, cst.Name) and self.ctx.code(a) == dev_code for a, _ in sites):
                cands.append(p)
        if len(cands) == 1 and self.known_device(scope, cst.Name(cands[0])) is not False:
            sites = self.call_site_args(scope, cands[0])
            if sites and all(self.known_device(self.scope_of(c), a) for a, c in sites):
                return cands[0]
        # a module-level name that the function does not rebind
        if isinstance(dev, cst.Name) and dev.value not in self.bindings(scope):
            if self.known_device(self.module, dev):
                return dev_code
        return None

    def _guard(self, move_stmt: cst.CSTNode, ref: cst.CSTNode) -> tuple[Optional[str], bool]:
        """The condition under which the model move runs, relative to the use ``ref``:
        ("", True) unconditional, (code, True) one ``if`` to copy, (None, False) other."""
        ref_anc = {id(a) for a in self.ctx.ancestors(ref)}
        conds = []
        child = move_stmt
        for a in self.ctx.ancestors(move_stmt):
            if isinstance(a, (cst.FunctionDef, cst.Module)):
                break
            if id(a) in ref_anc:
                break
            if isinstance(a, cst.If):
                if child is not a.body:
                    return None, False
                if not re.fullmatch(r"__name__\s*==\s*['\"]__main__['\"]", self.ctx.code(a.test)):
                    conds.append(a)
            elif isinstance(a, (cst.For, cst.While, cst.Try, cst.Else, cst.ExceptHandler, cst.Finally)):
                return None, False
            child = a
        if not conds:
            return "", True
        if len(conds) > 1:
            return None, False
        return self.ctx.code(conds[0].test), True


# ----------------------------------------------------------------------------- TM101 analysis


@dataclass
class _Sink:
    node: cst.CSTNode
    model: str


class _LoopFlow:
    """Data flow of the batch through one loop body.  ``skip`` is set as soon as the
    batch might be moved (a move, a helper, an unknown callee receiving it)."""

    def __init__(self, facts: Facts, scope: Scope, loop: cst.For, targets: list[str], container: Optional[str]):
        self.f = facts
        self.ctx = facts.ctx
        self.scope = scope
        self.loop = loop
        self.src: dict[str, set[str]] = {n: {n} for n in targets}
        self.container = container
        self.container_use: set[str] = set()  # "dict" | "seq" | "direct"
        if container:
            self.src[container] = {container}
        self.out: set[str] = set()  # names derived from a model output
        self.needed: list[str] = []
        self.sinks: list[_Sink] = []
        self.models: dict[str, ModelInfo] = {}
        self.skip = False
        self.unpack: Optional[cst.SimpleStatementLine] = None
        self.noop: list[cst.Expr] = []

    def sources(self, expr) -> set[str]:
        s: set[str] = set()
        for n in _flow_names(expr):
            s |= self.src.get(n, set())
        return s

    def outish(self, expr) -> bool:
        if any(n in self.out for n in _flow_names(expr)):
            return True
        for c in _flow_nodes(expr):
            if isinstance(c, cst.Call) and self._model_of(c) and self.models[self._model_of(c)].moved:
                return True
        return False

    def _model_of(self, call: cst.Call) -> Optional[str]:
        if isinstance(call.func, cst.Name):
            name = call.func.value
            if name not in self.models:
                info = self.f.model_info(self.scope, name, self.loop)
                if info is None:
                    return None
                self.models[name] = info
            return name
        return None

    def need(self, srcs: set[str], node, model: str):
        for s in sorted(srcs, key=lambda s: list(self.src).index(s) if s in self.src else 99):
            if s not in self.needed:
                self.needed.append(s)
        self.sinks.append(_Sink(node, model))

    def _container_uses(self, node):
        c = self.container
        if not c:
            return
        for n in _walk(node):
            if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name) and n.value.value == c:
                sl = n.slice[0].slice if len(n.slice) == 1 else None
                if isinstance(sl, cst.Index) and _is_str(sl.value):
                    self.container_use.add("dict")
                elif isinstance(sl, cst.Index) and isinstance(sl.value, cst.Integer):
                    self.container_use.add("seq")
                else:
                    self.container_use.add("other")
            elif isinstance(n, cst.Arg) and n.star == "**" and isinstance(n.value, cst.Name) and n.value.value == c:
                self.container_use.add("dict")
            elif isinstance(n, cst.Arg) and not n.star and isinstance(n.value, cst.Name) and n.value.value == c:
                self.container_use.add("direct")
            elif isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == c:
                if n.attr.value not in ("items", "keys", "values", "get"):
                    self.container_use.add("other")

    def run(self):
        for stmt in self._statements(self.loop.body):
            self.statement(stmt)
            if self.skip:
                return

    def _statements(self, block) -> Iterator[cst.CSTNode]:
        for n in _walk_scope(block):
            if isinstance(n, cst.BaseSmallStatement):
                yield n
            elif isinstance(n, (cst.If, cst.While)):
                yield n.test
            elif isinstance(n, cst.For):
                yield n
            elif isinstance(n, cst.With):
                for it in n.items:
                    yield it.item

    def statement(self, stmt):
        if isinstance(stmt, cst.For):
            # a nested loop over a batch-derived iterable: its target carries the sources
            s = self.sources(stmt.iter)
            for name in _target_names(stmt.target) or []:
                self.src[name] = set(s)
            return
        expr_root = stmt
        # calls in the statement
        for node in _walk(expr_root):
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            if isinstance(node, cst.Call):
                self.call(node, stmt)
                if self.skip:
                    return
            elif isinstance(node, (cst.BinaryOperation, cst.Comparison)):
                parts = (
                    [node.left, node.right]
                    if isinstance(node, cst.BinaryOperation)
                    else [node.left, *[c.comparator for c in node.comparisons]]
                )
                outs = [p for p in parts if self.outish(p)]
                srcs = set().union(*(self.sources(p) for p in parts if not self.outish(p)))
                if outs and srcs:
                    self.need(srcs, node, "output")
        self._container_uses(stmt)
        # bindings
        if isinstance(stmt, cst.Assign):
            value = stmt.value
            srcs = self.sources(value)
            if srcs and any(isinstance(n, cst.Call) and _method(n) in _MOVE_METHODS for n in _walk(value)):
                # `batch = tuple(t.to(device) for t in batch)`, `{k: v.to(d) ...}`: moved
                self.skip = True
                return
            out = self.outish(value)
            for t in stmt.targets:
                names = _target_names(t.target) or []
                if (
                    self.container
                    and isinstance(value, cst.Name)
                    and value.value == self.container
                    and isinstance(t.target, (cst.Tuple, cst.List))
                    and len(names) > 1
                ):
                    # `x, y = batch`: the parts become batch names of their own
                    for n in names:
                        self.src[n] = {n}
                    parent = self.ctx.parent(stmt)
                    if self.unpack is None and isinstance(parent, cst.SimpleStatementLine) and self.ctx.parent(
                        self.ctx.parent(parent)
                    ) is self.loop:
                        self.unpack = parent
                    continue
                for n in names:
                    self.src[n] = set() if out else set(srcs)
                    if out:
                        self.out.add(n)
                    else:
                        self.out.discard(n)
        elif isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name):
            self.src[stmt.target.value] = self.src.get(stmt.target.value, set()) | self.sources(stmt.value)

    def call(self, c: cst.Call, stmt):
        arg_src = set()
        for a in c.args:
            arg_src |= self.sources(a.value)
        meth = _method(c)
        recv = c.func.value if isinstance(c.func, cst.Attribute) else None
        recv_src = self.sources(recv) if recv is not None else set()
        if meth in _MOVE_METHODS and recv_src:
            if isinstance(stmt, cst.Expr) and stmt.value is c and meth in ("to", "cuda") and isinstance(recv, cst.Name):
                self.noop.append(stmt)
            self.skip = True  # already moved (or a no-op move, reported on its own)
            return
        if not arg_src:
            if recv is not None and recv_src and isinstance(c.func, cst.Attribute):
                return  # a tensor method on the batch
            return
        # the batch (or something derived from it) is passed to a call
        model = self._model_of(c)
        if model is not None and self.models[model].moved:
            self.need(arg_src, c, model)
            return
        if any(self._devicey(a.value) for a in c.args):
            self.skip = True  # a helper that receives the batch and a device
            return
        if recv is not None and recv_src:
            return  # x.view_as(y), x.index_select(0, idx): tensor method
        if recv is not None and self.outish(recv):
            self.need(arg_src, c, "output")  # out.eq(y): a tensor method of the output
            return
        if isinstance(c.func, cst.Name) and c.func.value in _BUILTINS and not self.f.lookup(self.scope, c.func.value)[1]:
            return  # print(out, y), len(y): Python-side, no device involved
        if meth in ("append", "extend") and recv is not None and not self.outish(recv):
            return  # collecting batches in a list does not move them
        known = self.f.is_torch_call(c)  # F.cross_entropy(out, y), torch.cat(...)
        if not known and isinstance(c.func, cst.Name):
            sc, b = self.f.single_value(self.scope, c.func.value)
            known = b is not None and b.kind == "assign" and isinstance(b.value, cst.Call) and self.f.is_torch_call(
                b.value
            )  # criterion = nn.CrossEntropyLoss(): a torch object
        if known:
            outs = [a for a in c.args if self.outish(a.value)]
            if outs:
                srcs = set().union(*(self.sources(a.value) for a in c.args if not self.outish(a.value)))
                if srcs:
                    self.need(srcs, c, "output")
            return
        if model is not None:
            return  # a model left on the CPU
        self.skip = True  # an unknown callee receives the batch: assume it handles it

    def _devicey(self, e) -> bool:
        code = self.ctx.code(e)
        if re.search(r"device|cuda|gpu|local_rank", code, re.I):
            return True
        return isinstance(e, cst.Name) and self.f.known_device(self.scope, e)


def _loop_targets(loop: cst.For, facts: Facts, scope: Scope) -> Optional[tuple[list[str], Optional[str]]]:
    if loop.asynchronous is not None:
        return None
    it = loop.iter
    target = loop.target
    wrapped = False
    while isinstance(it, cst.Call) and (
        (isinstance(it.func, (cst.Name, cst.Attribute)) and (_dotted(it.func) in _WRAPPERS))
    ):
        if not it.args:
            return None
        if _dotted(it.func) == "enumerate":
            if wrapped or not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                return None
            if any(isinstance(e, cst.StarredElement) for e in target.elements):
                return None
            target = target.elements[1].value
            wrapped = True
        it = it.args[0].value
    if not facts.is_loader(scope, it):
        return None
    if isinstance(target, cst.Name):
        return [], target.value
    names = _target_names(target)
    if not names:
        return None
    return names, None


def _factory_classes_may_fire(f) -> bool:
    """TM102's gate on AstFacts (of a file or of one top-level definition)."""
    if not f.forward_class:
        return False
    # findings are torch.<factory>(...) calls without a device= keyword (in the methods
    # of a class defining forward(), __init__ included: plain tensor attributes) and
    # torch.nn.<Layer>(...) instantiations in the methods forward() reaches (never
    # __init__, unless something calls it explicitly)
    if not f.callee_names(f.fc_calls_nodevice).isdisjoint(_FACTORIES):
        return True
    layers = f.fc_calls | f.fc_init_calls if "__init__" in f.fc_calls else f.fc_calls
    return any(_PARAM_LAYERS.fullmatch(n) for n in f.callee_names(layers))


def _loader_loops(f, names: set[str]):
    """``for`` loops (stdlib ``ast``) over one of ``names``, through enumerate/tqdm/iter,
    as ``(loop, batch names)``: what ``_loop_targets`` may accept (AstFacts.fors)."""
    for loop, it, batch in f.fors:
        if it in names and batch is not None:
            yield loop, batch


def _moves_batch_first(item) -> bool:
    """The loop's first statement is a simple statement calling ``N.to(...)`` (or another
    of ``_MOVE_METHODS``) on a batch name ``N``: ``_LoopFlow.call`` then sets ``skip``
    before anything else in the loop runs, and the loop is silent whatever follows."""
    loop, names = item
    first = loop.body[0]
    if isinstance(first, COMPOUND):
        return False
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _MOVE_METHODS
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id in names
        for n in ast.walk(first)
        if not isinstance(n, ast.Lambda)
    )


def _move_expr(name: str, info: ModelInfo, nb: Optional[str]) -> str:
    nbs = f"non_blocking={nb}" if nb else ""
    if info.style == "cuda":
        return f"{name}.cuda({nbs})"
    return f"{name}.to({info.device}{', ' + nbs if nbs else ''})"


def _indent_of(ctx: FileContext) -> str:
    return ctx.module.default_indent


class DeviceBatchNotMoved(Rule):
    """## What it does
    Finds training/evaluation loops over a ``DataLoader`` whose batch reaches a model
    that was moved to a device (``model.to(device)``, ``model.cuda()``), or that model's
    output, while the batch itself is never moved.  Also finds ``t.to(device)`` on a
    tensor whose result is dropped: ``Tensor.to`` is not in-place.

    ## Why is this bad?
    The first forward pass fails with ``RuntimeError: Expected all tensors to be on the
    same device`` (or ``Input type (torch.FloatTensor) and weight type
    (torch.cuda.FloatTensor) should be the same``).

    ## Example
    ```python
    model = Net().to(device)
    for x, y in loader:
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```
    The fix is applied only when the device expression is known locally; batches handed
    to helpers, Accelerate, Lightning, ``device_map`` models and ``nn.DataParallel`` are
    left alone.
    """

    code = "TM101"
    name = "device-batch-not-moved"
    pitfall = "device"
    summary = "the model is moved to a device but the batch from the DataLoader is not"
    severity = Severity.BUG
    # a dropped ``t.to(...)``/``t.cuda(...)``, or a loop over a torch DataLoader (resolved
    # by qualified name, so the file spells ``DataLoader`` somewhere, if only in an import);
    # "loader" is not needed for soundness but keeps unparsable training scripts reported
    needles = ("DataLoader", "loader", ".to(", ".cuda(")

    @classmethod
    def ast_check(cls, tree) -> bool:
        f = _ast_facts(tree)
        # `N.to(...)` as a statement, N assigned in the file (a loop target or a value)
        if not f.noop_names.isdisjoint(f.stored):
            return True
        # `for ... in N` (through enumerate/tqdm/iter) where N is bound by `N = DataLoader(...)`
        # or is a parameter (then the call sites pass such names: Facts.is_loader)
        if not f.for_over_name:
            return False
        loaders = {n for n, callee in f.assigned_calls if "DataLoader" in f.callee_names({callee})}
        if not loaders or f.for_names.isdisjoint(loaders | f.params):
            return False
        # ... and one such loop does not move the batch in its first statement; a
        # parameter counts only if its function is called somewhere (Facts.is_loader
        # follows a parameter to the call sites)
        called_params = {
            a.arg
            for fn in f.functions
            if fn.name in f.called
            for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
        }
        return any(not _moves_batch_first(loop) for loop in _loader_loops(f, loaders | called_params))

    def check(self, ctx: FileContext):
        facts = _facts(ctx)
        yield from self._noop_moves(ctx, facts)
        if self._framework(ctx, facts):
            return
        for loop in [n for n in facts.nodes if isinstance(n, cst.For)]:
            scope = facts.scope_of(loop)
            got = _loop_targets(loop, facts, scope)
            if got is None:
                continue
            names, container = got
            flow = _LoopFlow(facts, scope, loop, names, container)
            flow.run()
            if flow.skip or not flow.needed:
                continue
            yield from self._finding(ctx, facts, flow)

    # -- framework context: leave the whole file alone
    def _framework(self, ctx: FileContext, facts: Facts) -> bool:
        for n in facts.nodes:
            if isinstance(n, cst.Call):
                qn = _qn(ctx, n.func)
                if any(q.startswith(("accelerate", "lightning", "pytorch_lightning", "deepspeed")) for q in qn):
                    return True
                if qn & {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}:
                    return True
                if any(q.startswith("transformers.") and q.endswith("Trainer") for q in qn):
                    return True
                if _method(n) == "prepare":
                    return True
                if _kw(n, "device_map") is not None:
                    return True
            elif isinstance(n, (cst.Import, cst.ImportFrom)):
                mod = ctx.code(n)
                if re.search(r"accelerate|lightning|deepspeed", mod):
                    return True
        return False

    def _finding(self, ctx: FileContext, facts: Facts, flow: _LoopFlow):
        models = [s.model for s in flow.sinks if s.model != "output"]
        if not models:
            return
        mname = models[0]
        info = flow.models[mname]
        for m in models[1:]:
            other = flow.models[m]
            if (other.style, other.device, other.guard) != (info.style, info.device, info.guard):
                info = ModelInfo(True, info.style, None, False, why="models on different devices")
        sink = next(s.node for s in flow.sinks if s.model == mname)
        order = list(flow.src)
        needed = sorted(flow.needed, key=order.index)
        c = flow.container
        uses = flow.container_use
        if c and c in needed:
            label = c
        else:
            label = ", ".join(needed)
        where = f"`{info.device}`" if info.style == "to" and info.device else ("cuda" if info.style == "cuda" else "a device")
        msg = f"batch `{label}` reaches `{mname}` on the CPU while the model is on {where}"
        known = info.style == "cuda" or (info.device_known and info.device is not None)
        if not known or not info.guard_ok:
            why = info.why or "the device is not known locally"
            yield ctx.finding(
                self, sink, f"{msg}; {why} (move the batch to `next({mname}.parameters()).device`)"
            )
            return
        body = flow.loop.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            yield ctx.finding(self, sink, msg)
            return
        nb = facts.non_blocking
        stmt_code = None
        if c and c in needed:
            # the container itself reaches the model
            if uses == {"dict"}:
                mv = _move_expr("v", info, nb)
                stmt_code = f"{c} = {{k: ({mv} if torch.is_tensor(v) else v) for k, v in {c}.items()}}"
            elif uses == {"seq"}:
                mv = _move_expr("t", info, nb)
                stmt_code = f"{c} = [({mv} if torch.is_tensor(t) else t) for t in {c}]"
            else:
                yield ctx.finding(self, sink, f"{msg}; the batch structure is not known, move it before use")
                return
        else:
            if c and flow.unpack is None:
                yield ctx.finding(self, sink, msg)
                return
            lhs = ", ".join(needed)
            rhs = ", ".join(_move_expr(n, info, nb) for n in needed)
            stmt_code = f"{lhs} = {rhs}"
        if info.guard:
            stmt_code = f"if {info.guard}:\n{_indent_of(ctx)}{stmt_code}\n"
        new = cst.parse_statement(stmt_code + "\n")
        if c and c not in needed and flow.unpack is not None:
            repl = ctx.insert_after(flow.unpack, new)
        else:
            repl = ctx.insert_before(body.body[0], new)
        imports = (("torch", None),) if "torch.is_tensor" in stmt_code else ()
        yield ctx.finding(self, sink, msg, Fix(repl, Safety.SAFE, message="move the batch", imports=imports))

    # -- `t.to(dev)` with the result dropped
    def _noop_moves(self, ctx: FileContext, facts: Facts):
        for n in facts.nodes:
            if not (isinstance(n, cst.Expr) and isinstance(n.value, cst.Call)):
                continue
            call = n.value
            if _method(call) not in ("to", "cuda") or not isinstance(call.func.value, cst.Name):
                continue
            name = call.func.value.value
            scope = facts.scope_of(n)
            kind = self._tensor_kind(facts, scope, name, n)
            if kind is None:
                continue
            msg = f"`{ctx.code(call)}` does nothing: `Tensor.{_method(call)}` is not in-place, assign the result"
            if kind == "tensor":
                new_stmt = cst.parse_statement(f"{name} = {ctx.code(call)}\n").body[0]
                fix = Fix({n: new_stmt}, Safety.SAFE, message="assign the moved tensor")
                yield ctx.finding(self, n, msg, fix)
            else:
                yield ctx.finding(self, n, msg)

    def _tensor_kind(self, facts: Facts, scope: Scope, name: str, at: cst.CSTNode) -> Optional[str]:
        """"tensor" when ``name`` is provably a Tensor where ``at`` runs, "likely" when
        derived from one by tensor operations, None otherwise."""
        # a loop target of a DataLoader loop that encloses `at`
        for a in facts.ctx.ancestors(at):
            if isinstance(a, cst.For):
                got = _loop_targets(a, facts, facts.scope_of(a))
                if got and name in got[0]:
                    if self._rebound_in(facts, a, name, at):
                        return None
                    return "tensor"
        sc, bs = facts.lookup(scope, name)
        if len(bs) != 1 or bs[0].kind != "assign" or not isinstance(bs[0].value, cst.Call):
            return None
        v = bs[0].value
        top = {q.rsplit(".", 1)[-1] for q in _qn(facts.ctx, v.func) if q.startswith("torch.") and q.count(".") == 1}
        if top & _TENSOR_FUNCS:
            return "tensor"
        if any(t[:1].islower() and t not in _NOT_TENSOR_FUNCS for t in top):
            return "likely"  # some other torch function: report, do not rewrite
        # `t = x.float()` on a DataLoader tensor: probably a tensor
        if isinstance(v.func, cst.Attribute) and isinstance(v.func.value, cst.Name) and v.func.value.value != name:
            if self._tensor_kind(facts, sc, v.func.value.value, bs[0].stmt) == "tensor":
                return "likely"
        return None

    @staticmethod
    def _rebound_in(facts: Facts, loop: cst.For, name: str, at) -> bool:
        for n in _walk(loop.body):
            if isinstance(n, cst.Assign):
                for t in n.targets:
                    if name in (_target_names(t.target) or []):
                        return True
        return False


# ----------------------------------------------------------------------------- TM102

# layers that own parameters: instantiating one inside forward leaves them on the CPU
_PARAM_LAYERS = re.compile(
    r"(Lazy)?(Linear|Bilinear|Conv\w*|BatchNorm\w*|LayerNorm|GroupNorm|InstanceNorm\w*|Embedding\w*"
    r"|LSTM\w*|GRU\w*|RNN\w*|MultiheadAttention|PReLU|Transformer\w*)"
)
_TENSOR_USE = {"size", "shape", "view", "device", "dim", "reshape", "unsqueeze", "dtype", "new_zeros", "permute", "transpose"}


class TensorCreatedWithoutDevice(Rule):
    """## What it does
    Finds ``torch.zeros/ones/empty/full/rand/randn/randint/arange/eye/linspace/tensor``
    calls inside ``nn.Module.forward`` (or a method it calls) with no ``device=`` and no
    move afterwards.  Also reports modules instantiated inside ``forward``.

    ## Why is this bad?
    The new tensor lives on the CPU, so once the model is moved to a GPU the forward
    pass fails with ``Expected all tensors to be on the same device``.

    ## Example
    ```python
    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden)
        return self.rnn(x, h0)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden, device=x.device)
        return self.rnn(x, h0)
    ```
    The fix is unsafe (it needs ``--unsafe-fixes``): the device comes from an input.
    ``new_zeros``/``*_like``, registered buffers, lengths for ``pack_padded_sequence``
    and 0-dim constants are left alone.
    """

    code = "TM102"
    name = "tensor-created-without-device"
    pitfall = "device"
    summary = "a tensor created in forward() without device= lands on the CPU"
    severity = Severity.BUG
    # a class defining forward(), in a file that mentions a device at all (``check``
    # skips files matching none of ``cuda|device|\.to\(``)
    needles = ("cuda", "device", ".to(")
    requires_all = ("forward",)

    @classmethod
    def ast_check(cls, tree) -> bool:
        return _factory_classes_may_fire(_ast_facts(tree))

    @classmethod
    def ast_focus(cls, tree) -> frozenset[str]:
        # each class is analysed on its own (its methods, its header's bases): the rule
        # reads only the top-level definitions where it may fire
        from .astfacts import AstFacts

        mod = _ast_facts(tree)
        aliases = mod.aliases
        # only top-level definitions holding a class that defines forward can matter
        lines = [c.lineno for c in mod.classes if c.bases and any(
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "forward" for s in c.body)]
        out = set()
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                node.lineno <= ln <= node.end_lineno for ln in lines
            ):
                f = AstFacts(node)
                f.aliases = aliases
                if _factory_classes_may_fire(f):
                    out.add(node.name)
        return frozenset(out)

    def check(self, ctx: FileContext):
        facts = _facts(ctx)
        if not facts.module_classes:
            return
        cpu_only = not re.search(r"cuda|device|\.to\(", ctx.full_source)
        for cname in sorted(facts.module_classes, key=lambda n: ctx.position(facts.classes[n])):
            cls = facts.classes[cname]
            if cpu_only:
                continue
            methods = {
                s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)
            } if isinstance(cls.body, cst.IndentedBlock) else {}
            if "forward" not in methods:
                continue
            reached = ["forward"]
            i = 0
            while i < len(reached):
                m = methods[reached[i]]
                for n in _walk_scope(m):
                    if (
                        isinstance(n, cst.Call)
                        and isinstance(n.func, cst.Attribute)
                        and isinstance(n.func.value, cst.Name)
                        and n.func.value.value == "self"
                        and n.func.attr.value in methods
                        and n.func.attr.value not in reached
                    ):
                        reached.append(n.func.attr.value)
                i += 1
            for mname in reached:
                yield from self._method(ctx, facts, methods[mname])
            if "__init__" in methods:
                yield from self._plain_attributes(ctx, methods["__init__"], [methods[m] for m in reached])

    def _plain_attributes(self, ctx: FileContext, init: cst.FunctionDef, used_in: list[cst.FunctionDef]):
        """``self.t = torch.zeros(...)`` in ``__init__``, read in forward: not a buffer,
        so ``model.to(device)`` leaves it behind.  Report only."""
        registered = set()
        for n in _walk_scope(init):
            if isinstance(n, cst.Call) and _method(n) == "register_buffer" and n.args and _plain_str(n.args[0].value):
                registered.add(n.args[0].value.evaluated_value)
        for n in _walk_scope(init):
            if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.value, cst.Call)):
                continue
            t = n.targets[0].target
            if not (isinstance(t, cst.Attribute) and _dotted(t.value) == "self"):
                continue
            attr = t.attr.value
            qn = _qn(ctx, n.value.func)
            fname = next((q.rsplit(".", 1)[-1] for q in qn if q.startswith("torch.") and q.count(".") == 1), None)
            if fname not in _FACTORIES or _kw(n.value, "device") is not None or attr in registered:
                continue
            if fname == "tensor" and not (n.value.args and isinstance(n.value.args[0].value, (cst.List, cst.Tuple, cst.ListComp))):
                continue
            reads, moved = False, False
            for fn in used_in:
                for m in _walk_scope(fn):
                    if isinstance(m, cst.Attribute) and _dotted(m.value) == "self" and m.attr.value == attr:
                        reads = True
                        p = ctx.parent(m)
                        if isinstance(p, cst.Attribute) and p.attr.value in _MOVE_METHODS:
                            moved = True
            if reads and not moved:
                yield ctx.finding(
                    self, n,
                    f"`self.{attr}` is a plain tensor attribute: `model.to(device)` leaves it on the CPU;"
                    f" use `self.register_buffer(\"{attr}\", ...)`",
                )

    def _method(self, ctx: FileContext, facts: Facts, fn: cst.FunctionDef):
        params = [p for p in fn.params.params if p.name.value != "self"]
        pnames = [p.name.value for p in params]
        for n in _walk_scope(fn):
            if not isinstance(n, cst.Call):
                continue
            qn = _qn(ctx, n.func)
            fname = next((q.rsplit(".", 1)[-1] for q in qn if q.startswith("torch.") and q.count(".") == 1), None)
            if fname is None:
                if any(
                    q.startswith("torch.nn.") and q.count(".") == 2 and _PARAM_LAYERS.fullmatch(q.rsplit(".", 1)[-1])
                    for q in qn
                ):
                    yield ctx.finding(
                        self, n,
                        f"`{ctx.code(n.func)}` is instantiated inside `{fn.name.value}`: its parameters stay on the CPU"
                        " and are never trained; create it in `__init__`",
                    )
                continue
            if fname not in _FACTORIES or _kw(n, "device") is not None or any(a.star for a in n.args):
                continue
            if fname == "tensor" and not (
                n.args and isinstance(n.args[0].value, (cst.List, cst.Tuple, cst.ListComp))
            ):
                continue  # a 0-dim constant mixes with device tensors; other data: unknown shape
            if self._moved_after(ctx, facts, fn, n) or self._to_lengths(ctx, facts, fn, n):
                continue
            dev_src = self._device_source(ctx, fn, n, pnames)
            msg = f"`{ctx.code(n.func)}(...)` in `{fn.name.value}` creates a tensor on the CPU (no `device=`)"
            if dev_src is None:
                yield ctx.finding(self, n, msg)
                continue
            args = list(n.args)
            new_arg = cst.Arg(
                keyword=cst.Name("device"),
                value=cst.parse_expression(f"{dev_src}.device"),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )
            if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
                # an explicit trailing comma: keep it after the new argument
                new_arg = new_arg.with_changes(comma=args[-1].comma)
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            new_call = n.with_changes(args=[*args, new_arg])
            yield ctx.finding(
                self, n, f"{msg}; add `device={dev_src}.device`", Fix({n: new_call}, Safety.UNSAFE, message="add device=")
            )

    def _device_source(self, ctx, fn, call, pnames) -> Optional[str]:
        """The name of a tensor whose device the new tensor should follow."""
        # a name used as `t.size()` / `t.shape` in the call itself
        for n in _walk(call):
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.attr.value in ("size", "shape"):
                nm = n.value.value
                if nm != "self" and nm in pnames + self._locals(fn):
                    return nm
        annotated = {
            p.name.value for p in fn.params.params
            if p.annotation is not None and ctx.code(p.annotation.annotation).strip("'\"").split(".")[-1] == "Tensor"
        }
        used: set[str] = set()
        for n in _walk_scope(fn):
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.attr.value in _TENSOR_USE:
                used.add(n.value.value)
            elif (
                isinstance(n, cst.Call)
                and isinstance(n.func, cst.Attribute)
                and isinstance(n.func.value, cst.Name)
                and n.func.value.value == "self"
            ):
                for a in n.args:
                    if isinstance(a.value, cst.Name):
                        used.add(a.value.value)
        for p in pnames:
            if p in annotated or p in used:
                return p
        return None

    @staticmethod
    def _locals(fn) -> list[str]:
        out = []
        for n in _walk_scope(fn):
            if isinstance(n, cst.Assign):
                for t in n.targets:
                    out.extend(_target_names(t.target) or [])
        return out

    def _assigned_name(self, ctx, call) -> Optional[str]:
        p = ctx.parent(call)
        if isinstance(p, cst.Assign) and len(p.targets) == 1 and isinstance(p.targets[0].target, cst.Name):
            return p.targets[0].target.value
        return None

    def _moved_after(self, ctx, facts, fn, call) -> bool:
        # torch.zeros(...).float().to(x) / .cuda() / .type_as(x) on the call's chain
        node = call
        p = ctx.parent(node)
        while isinstance(p, cst.Attribute) and p.value is node:
            if p.attr.value in _MOVE_METHODS:
                return True
            node = ctx.parent(p)
            if not isinstance(node, cst.Call):
                break
            p = ctx.parent(node)
        name = self._assigned_name(ctx, call)
        if name is None:
            return False
        for n in _walk_scope(fn):
            if (
                isinstance(n, cst.Call)
                and _method(n) in _MOVE_METHODS
                and isinstance(n.func.value, cst.Name)
                and n.func.value.value == name
            ):
                return True
            if isinstance(n, cst.Call) and ctx.code(n.func).endswith("register_buffer") and any(
                isinstance(a.value, cst.Name) and a.value.value == name for a in n.args
            ):
                return True
        return False

    def _to_lengths(self, ctx, facts, fn, call) -> bool:
        """The value flows (directly or through one name) into pack_padded_sequence's lengths."""
        targets: set[int] = {id(call)}
        name = self._assigned_name(ctx, call)
        for n in _walk_scope(fn):
            if isinstance(n, cst.Call) and any(q.endswith("pack_padded_sequence") for q in _qn(ctx, n.func)):
                lens = _kw(n, "lengths")
                if lens is None:
                    pos = [a for a in n.args if a.keyword is None]
                    lens = pos[1] if len(pos) > 1 else None
                if lens is None:
                    continue
                if any(id(x) in targets for x in _walk(lens.value)):
                    return True
                if name is not None and name in _names(lens.value):
                    return True
        return False


def _facts(ctx: FileContext) -> Facts:
    f = getattr(ctx, "_device_facts", None)
    if f is None:
        f = Facts(ctx)
        ctx._device_facts = f
    return f
