"""Pitfall: (log-)softmax fed into cross-entropy (see ../shared/pitfalls.md, section 5).

``CrossEntropyLoss`` / ``F.cross_entropy`` apply ``log_softmax`` themselves and expect raw
logits.  A softmax in front of them is a real bug (TM501: the loss sees squashed scores,
gradients vanish); a log_softmax in front of them is redundant but exact (TM502).

The analysis (shared by both rules, computed once per file) looks only at the *first*
(input) argument of each cross-entropy call, and resolves every name through LibCST's
qualified names and scopes, never by spelling.  Three shapes are handled:

* **inline**: ``ce(F.softmax(z, 1), y)``: the softmax is dropped (``ce(z, y)``);
* **variable**: ``p = z.softmax(-1); loss = ce(p, y)``: ``z`` replaces ``p`` at the
  loss and the ``p =`` line goes when nothing else reads ``p``;
* **model**: ``nn.Sequential(..., nn.Softmax(dim=1))`` or a ``forward`` that returns a
  softmax, whose output reaches cross-entropy.  Every use of that model in the file is
  classified: loss input, ``argmax``/``max``/``topk`` indices (invariant under softmax),
  or a probability use.  Only loss/indices uses: the final softmax is removed (safe).
  Probability uses: removed and re-added at those uses (unsafe fix).  Anything the file
  cannot show (the model escapes to an unknown callee, is exported, is imported by
  another file, a skorch wrapper): report only.

For TM502 the model is left alone and the *loss* changes: ``CrossEntropyLoss(**kw)`` ->
``NLLLoss(**kw)`` and ``F.cross_entropy`` -> ``F.nll_loss`` (exactly equivalent on
log-probabilities) when ``kw`` is within ``weight/ignore_index/reduction`` and the target
is not a probability tensor; else report only.  A log_softmax written *inline* (or via a
single-use variable) right before the loss is simply dropped: ``log_softmax`` is
idempotent, so ``cross_entropy(log_softmax(z), ...) == cross_entropy(z, ...)`` for every
keyword, ``label_smoothing`` and probability targets included.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Optional

import libcst as cst
from libcst import metadata as md

from . import astfacts
from .rule import FileContext, Finding, Fix, Rule, Safety, Severity

# --------------------------------------------------------------------------- names
_SM_FN = {"torch.nn.functional.softmax", "torch.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
_LSM_FN = {"torch.nn.functional.log_softmax", "torch.log_softmax", "torch.special.log_softmax", "torch.Tensor.log_softmax"}
_SM_MOD = {"torch.nn.Softmax", "torch.nn.modules.activation.Softmax", "torch.nn.modules.Softmax"}
_LSM_MOD = {"torch.nn.LogSoftmax", "torch.nn.modules.activation.LogSoftmax", "torch.nn.modules.LogSoftmax"}
_CE_FN = {"torch.nn.functional.cross_entropy"}
_CE_MOD = {"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.modules.CrossEntropyLoss"}
_SEQ = {"torch.nn.Sequential", "torch.nn.modules.container.Sequential", "torch.nn.modules.Sequential"}
_MODULE = {"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.modules.Module"}
_ARGMAX = {"torch.argmax"}
_MAXLIKE = {"torch.max", "torch.topk", "torch.sort"}

# shape-only tensor methods a loss input is often wrapped in (``p.view(-1, V)``)
_VIEW = {"view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze", "float", "double", "to", "cpu", "cuda"}
# module methods that neither call the model nor expose its outputs
_NEUTRAL_ATTRS = {
    "to", "cuda", "cpu", "train", "eval", "parameters", "named_parameters", "zero_grad", "state_dict",
    "load_state_dict", "requires_grad_", "float", "double", "half", "modules", "children", "named_modules",
    "buffers", "named_buffers", "apply", "type",
}
_NEUTRAL_FUNCS = {"builtins.print", "builtins.len", "builtins.isinstance", "builtins.repr", "builtins.str", "builtins.id"}
# value-preserving tensor methods: a use of their result is a use of the output itself
_PASSTHROUGH = {"detach", "cpu", "clone", "float", "double", "to", "cuda", "contiguous"}
_SHAPE = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose"}
_NLL_KW_CTOR = {"weight", "ignore_index", "reduction"}
_NLL_KW_FN = {"input", "target", "weight", "ignore_index", "reduction"}


def _arg(call: cst.Call, pos: int, kw: str) -> Optional[cst.Arg]:
    """The argument at position ``pos`` or named ``kw`` (None if absent or starred)."""
    positional = [a for a in call.args if a.keyword is None]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == kw:
            return a
    if any(a.star for a in positional[: pos + 1]):
        return None
    return positional[pos] if pos < len(positional) else None


def _dim_code(node) -> Optional[str]:
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        return str(int(node.value, 0))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return str(-int(node.expression.value, 0))
    return cst.Module([]).code_for_node(node)


def _is_atom(node: cst.BaseExpression) -> bool:
    return bool(node.lpar) or isinstance(
        node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)
    )


def _paren(node: cst.BaseExpression) -> cst.BaseExpression:
    return node if _is_atom(node) else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


# --------------------------------------------------------------------------- facts
@dataclass(eq=False, repr=False)
class Soft:
    """One (log-)softmax application."""

    node: cst.BaseExpression  # the expression whose value is the (log-)probabilities
    log: bool
    input: Optional[cst.BaseExpression]  # what it is applied to (None: a module object)
    dim: Optional[cst.BaseExpression]  # the dim argument, None when implicit


@dataclass(eq=False, repr=False)
class Model:
    """A model defined in this file whose output is (log-)probabilities."""

    key: cst.CSTNode  # the ClassDef, or the nn.Sequential call
    name: str  # for messages
    soft: Soft
    anchor: cst.CSTNode  # where the finding points
    removal: dict  # replacements that remove the final softmax (None: cannot)
    cls: Optional[cst.ClassDef] = None


@dataclass(frozen=True)
class _Foreign:
    name: str
    soft_code: str
    log: bool


@dataclass(eq=False, repr=False)
class CESite:
    call: cst.Call
    arg: cst.Arg  # the input argument
    form: str  # "fn" | "inline" | "var"
    ctor: Optional[cst.Call] = None  # the CrossEntropyLoss(...) call for inline/var
    label: str = ""


@dataclass
class Use:
    kind: str  # "ce" | "rank" | "prob" | "unknown"
    node: cst.CSTNode
    site: Optional[CESite] = None


_CACHE: "weakref.WeakKeyDictionary[FileContext, list[Finding]]" = weakref.WeakKeyDictionary()


class _Analysis:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.calls: list[cst.Call] = []
        self.classes: dict[str, cst.ClassDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.names: list[cst.Name] = []
        self.imports: set[str] = set()
        self._attr_cache: dict[int, dict[str, list]] = {}
        self._values_memo: dict[int, Optional[list]] = {}
        self._calls_memo: dict[int, Optional[list]] = {}
        self._by_name: dict[str, list[cst.Name]] = {}
        self._dim: Optional[str] = None
        self._ce_memo: dict[int, Optional[CESite]] = {}
        self._collect()

    # ----------------------------------------------------------------- collection
    def _collect(self):
        outer = self

        class V(cst.CSTVisitor):
            def visit_Call(self, node):
                outer.calls.append(node)

            def visit_Name(self, node):
                outer.names.append(node)

            def visit_Import(self, node):
                for a in node.names:
                    outer.imports.add(cst.helpers.get_full_name_for_node(a.name) or "")

            def visit_ImportFrom(self, node):
                if node.module is not None:
                    outer.imports.add(cst.helpers.get_full_name_for_node(node.module) or "")

        self.ctx.module.visit(V())
        for n in self.names:
            self._by_name.setdefault(n.value, []).append(n)
        for stmt in self.ctx.module.body:
            if isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = stmt
            elif isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt

    def uses_framework(self) -> bool:
        return any(i.split(".")[0] in ("skorch",) for i in self.imports)

    # ----------------------------------------------------------------- helpers
    def stmt_of(self, node) -> Optional[cst.CSTNode]:
        for a in [node, *self.ctx.ancestors(node)]:
            if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return a
        return None

    def enclosing(self, node, kind):
        for a in self.ctx.ancestors(node):
            if isinstance(a, kind):
                return a
        return None

    def pos(self, node) -> tuple[int, int]:
        return self.ctx.position(node)

    def class_attrs(self, cls: cst.ClassDef) -> dict[str, list]:
        """``self.X = value`` in every method of ``cls``: X -> [value, ...] (None: not a plain assign)."""
        got = self._attr_cache.get(id(cls))
        if got is not None:
            return got
        out: dict[str, list] = {}

        class V(cst.CSTVisitor):
            def visit_Assign(self, node):
                for t in node.targets:
                    e = t.target
                    if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
                        out.setdefault(e.attr.value, []).append(node.value if len(node.targets) == 1 else None)

            def visit_AugAssign(self, node):
                e = node.target
                if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
                    out.setdefault(e.attr.value, []).append(None)

            def visit_AnnAssign(self, node):
                e = node.target
                if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
                    out.setdefault(e.attr.value, []).append(node.value)

            def visit_ClassDef(self, node):
                return node is cls

        cls.visit(V())
        self._attr_cache[id(cls)] = out
        return out

    def assignments(self, name: cst.Name):
        scope = self.ctx.scope(name)
        if scope is None:
            return None
        try:
            return set(scope[name.value])
        except Exception:
            return None

    def access_referents(self, name: cst.Name):
        """The assignments a load of ``name`` may read (None: unknown)."""
        scope = self.ctx.scope(name)
        if scope is None:
            return None
        for acc in scope.accesses[name.value] if name.value in scope.accesses else ():
            if acc.node is name:
                return set(acc.referents)
        return self.assignments(name)

    def values(self, expr, depth: int = 0) -> Optional[list]:
        key = id(expr)
        if key in self._values_memo:
            return self._values_memo[key]
        self._values_memo[key] = None  # cycles read as unknown
        got = self._values(expr, depth)
        self._values_memo[key] = got
        return got

    def _values(self, expr, depth: int) -> Optional[list]:
        """What ``expr`` (a Name or ``self.attr``) may hold: the right-hand sides of its
        assignments, following parameters of this file's functions to their call sites.
        None when any binding is not a plain assignment."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.enclosing(expr, cst.ClassDef)
            if cls is None:
                return None
            vals = self.class_attrs(cls).get(expr.attr.value)
            if not vals or any(v is None for v in vals):
                return None
            return list(vals)
        if not isinstance(expr, cst.Name):
            return None
        refs = self.access_referents(expr)
        if not refs:
            return None
        out = []
        for a in refs:
            if not isinstance(a, md.Assignment):
                return None
            node = a.node
            parent = self.ctx.parent(node)
            if isinstance(node, cst.Param):
                node, parent = node.name, node
            if isinstance(parent, cst.AssignTarget):
                assign = self.ctx.parent(parent)
                if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
                    return None
                out.append(assign.value)
            elif isinstance(parent, cst.AnnAssign) and parent.value is not None:
                out.append(parent.value)
            elif isinstance(parent, cst.Param):
                vals = self.param_values(parent, depth)
                if vals is None:
                    return None
                out.extend(vals)
            else:
                return None
        return out

    def function_calls(self, fn: cst.FunctionDef) -> Optional[list[cst.Call]]:
        """Every call of a top-level function of this file (None: it escapes)."""
        if id(fn) not in self._calls_memo:
            self._calls_memo[id(fn)] = self._function_calls(fn)
        return self._calls_memo[id(fn)]

    def _function_calls(self, fn: cst.FunctionDef) -> Optional[list[cst.Call]]:
        if self.functions.get(fn.name.value) is not fn:
            return None
        calls = []
        for n in self._by_name.get(fn.name.value, ()):
            if n is fn.name:
                continue
            p = self.ctx.parent(n)
            if isinstance(p, cst.Call) and p.func is n and fn.name.value in self.ctx.qualnames(n):
                calls.append(p)
            elif isinstance(p, (cst.Attribute,)) and p.attr is n:
                continue
            elif isinstance(p, cst.Arg) and p.keyword is n:
                continue
            else:
                return None
        return calls

    def param_values(self, param: cst.Param, depth: int) -> Optional[list]:
        fn = self.enclosing(param, cst.FunctionDef)
        if fn is None:
            return None
        params = fn.params
        if param not in params.params and param not in params.posonly_params and param not in params.kwonly_params:
            return None
        positional = [*params.posonly_params, *params.params]
        idx = positional.index(param) if param in positional else None
        calls = self.function_calls(fn)
        if not calls:
            return None
        out = []
        for call in calls:
            if any(a.star for a in call.args):
                return None
            arg = _arg(call, idx, param.name.value) if idx is not None else _arg(call, 10**6, param.name.value)
            if arg is None:
                if param.default is None:
                    return None
                out.append(param.default)
                continue
            v = arg.value
            if isinstance(v, cst.Name):
                sub = self.values(v, depth + 1)
                if sub is None:
                    return None
                out.extend(sub)
            else:
                out.append(v)
        return out

    # ----------------------------------------------------------------- softmax
    def is_tensor_receiver(self, expr) -> bool:
        base = expr
        while isinstance(base, (cst.Attribute, cst.Subscript)):
            base = base.value
        if isinstance(base, cst.Name) and base.value == "self":
            return False  # self.softmax(x), self.head.softmax(...): methods or modules, not tensors
        if isinstance(base, cst.Name):
            refs = self.assignments(base)
            if refs and any(isinstance(a, md.ImportAssignment) for a in refs):
                return False
            if refs and any(isinstance(a, md.BuiltinAssignment) for a in refs):
                return False
        return True

    def module_kind(self, value) -> Optional[tuple[bool, Optional[cst.BaseExpression]]]:
        """``nn.Softmax(dim=1)`` -> (False, dim); ``nn.LogSoftmax(1)`` -> (True, dim)."""
        if not isinstance(value, cst.Call):
            return None
        q = self.ctx.qualnames(value.func)
        if q & (_SM_MOD | _LSM_MOD):
            a = _arg(value, 0, "dim")
            return bool(q & _LSM_MOD), (a.value if a else None)
        return None

    def soft(self, node) -> Optional[Soft]:
        """``node`` as a (log-)softmax call, else None."""
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        q = self.ctx.qualnames(func)
        if q & (_SM_FN | _LSM_FN):
            inp, dim = _arg(node, 0, "input"), _arg(node, 1, "dim")
            if inp is None:
                return None
            return Soft(node, bool(q & _LSM_FN), inp.value, dim.value if dim else None)
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("softmax", "log_softmax")
            and not (q & {n for n in q if n.split(".")[0] in self.imports and not n.startswith("torch")})
            and self.is_tensor_receiver(func.value)
        ):
            dim = _arg(node, 0, "dim")
            # Tensor.softmax(dim): the dim is a literal int (``obj.softmax(x)`` may be any method)
            if dim is None or _dim_code(dim.value) is None or not _dim_code(dim.value).lstrip("-").isdigit():
                return None
            if len(node.args) > 2 or any(a.keyword is not None and a.keyword.value not in ("dim", "dtype") for a in node.args):
                return None
            return Soft(node, func.attr.value == "log_softmax", func.value, dim.value)
        # a Softmax module object applied: nn.Softmax(1)(z), self.sm(z), sm(z)
        kinds = []
        if isinstance(func, cst.Call):
            kinds = [self.module_kind(func)]
        elif isinstance(func, (cst.Name, cst.Attribute)):
            vals = self.values(func)
            if vals:
                kinds = [self.module_kind(v) for v in vals]
        if kinds and all(k is not None for k in kinds) and len({k[0] for k in kinds}) == 1:
            inp = _arg(node, 0, "input")
            if inp is None or len(node.args) != 1:
                return None
            dims = {self.ctx.code(k[1]) if k[1] is not None else None for k in kinds}
            return Soft(node, kinds[0][0], inp.value, kinds[0][1] if len(dims) == 1 else None)
        return None

    # ----------------------------------------------------------------- cross-entropy
    def ce_ctor(self, v) -> Optional[cst.Call]:
        """``nn.CrossEntropyLoss(...)`` (possibly ``.to(device)`` / ``.cuda()``): that call."""
        while (
            isinstance(v, cst.Call)
            and isinstance(v.func, cst.Attribute)
            and v.func.attr.value in ("to", "cuda", "cpu")
        ):
            v = v.func.value
        if isinstance(v, cst.Call) and self.ctx.qualnames(v.func) & _CE_MOD:
            return v
        return None

    def ce_site(self, call: cst.Call) -> Optional[CESite]:
        key = id(call)
        if key not in self._ce_memo:
            self._ce_memo[key] = self._ce_site(call)
        return self._ce_memo[key]

    def _ce_site(self, call: cst.Call) -> Optional[CESite]:
        func = call.func
        q = self.ctx.qualnames(func)
        arg = _arg(call, 0, "input")
        if arg is None:
            return None
        if q & _CE_FN:
            return CESite(call, arg, "fn", None, self.ctx.code(func))
        if isinstance(func, cst.Call) and self.ctx.qualnames(func.func) & _CE_MOD:
            return CESite(call, arg, "inline", func, self.ctx.code(func.func) + "()")
        if isinstance(func, (cst.Name, cst.Attribute)):
            vals = self.values(func)
            ctors = [self.ce_ctor(v) for v in vals or ()]
            if ctors and all(c is not None for c in ctors):
                return CESite(call, arg, "var", ctors[0] if len(ctors) == 1 else None, self.ctx.code(func))
        return None

    # ----------------------------------------------------------------- models
    def class_model(self, cls: cst.ClassDef) -> Optional[Model]:
        if not any(self.ctx.qualnames(b.value) & _MODULE for b in cls.bases):
            return None
        forward = next(
            (s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None
        )
        if forward is None or not isinstance(forward.body, cst.IndentedBlock):
            return None
        returns = []

        class V(cst.CSTVisitor):
            def visit_Return(self, node):
                returns.append(node)

            def visit_FunctionDef(self, node):
                return node is forward

            def visit_Lambda(self, node):
                return False

        forward.visit(V())
        body = forward.body.body
        if len(returns) != 1 or not body:
            return None
        last = body[-1]
        if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and last.body[0] is returns[0]):
            return None  # a return inside a branch (self.training, return_probs, ...)
        ret = returns[0]
        if ret.value is None:
            return None
        name = f"{cls.name.value}.forward"
        s = self.soft(ret.value)
        if s is not None and s.input is not None:
            return Model(cls, name, s, ret.value, {ret.value: s.input}, cls)
        # x = F.softmax(h, 1); return x
        if isinstance(ret.value, cst.Name) and len(body) >= 2:
            prev = body[-2]
            if (
                isinstance(prev, cst.SimpleStatementLine)
                and len(prev.body) == 1
                and isinstance(prev.body[0], cst.Assign)
                and len(prev.body[0].targets) == 1
                and isinstance(prev.body[0].targets[0].target, cst.Name)
                and prev.body[0].targets[0].target.value == ret.value.value
            ):
                # the return reads the assignment right above it (adjacent statements)
                s = self.soft(prev.body[0].value)
                if s is not None and s.input is not None and not any(ln.comment for ln in prev.leading_lines):
                    removal = {prev: cst.RemoveFromParent()}
                    if not (isinstance(s.input, cst.Name) and s.input.value == ret.value.value):
                        removal[ret.value] = s.input
                    return Model(cls, name, s, prev.body[0].value, removal, cls)
        # return self.net(h) where self.net = nn.Sequential(..., nn.Softmax(1))
        if (
            isinstance(ret.value, cst.Call)
            and isinstance(ret.value.func, cst.Attribute)
            and isinstance(ret.value.func.value, cst.Name)
            and ret.value.func.value.value == "self"
        ):
            attr = ret.value.func.attr.value
            vals = self.class_attrs(cls).get(attr) or []
            if len(vals) == 1 and self._attr_refs(cls, attr) == 1:
                seq = self.seq_model(vals[0])
                if seq is not None:
                    seq.name = f"{cls.name.value}.{attr}"
                    seq.key, seq.cls = cls, cls
                    return seq
        return None

    def _attr_refs(self, cls, attr: str) -> int:
        n = 0

        class V(cst.CSTVisitor):
            def visit_Attribute(self, node):
                nonlocal n
                if isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value == attr:
                    n += 1

        cls.visit(V())
        return n - 1  # minus the assignment

    def seq_model(self, call) -> Optional[Model]:
        if not (isinstance(call, cst.Call) and self.ctx.qualnames(call.func) & _SEQ) or len(call.args) < 2:
            return None
        if any(a.star or a.keyword for a in call.args):
            return None
        last, prev = call.args[-1], call.args[-2]
        k = self.module_kind(last.value)
        if k is None:
            return None
        log, dim = k
        if isinstance(last.comma, cst.Comma):
            ws = last.comma.whitespace_after
            if isinstance(prev.comma, cst.Comma):
                pws = prev.comma.whitespace_after
                if isinstance(pws, cst.ParenthesizedWhitespace) and isinstance(ws, cst.ParenthesizedWhitespace):
                    ws = ws.with_changes(first_line=pws.first_line)
                new_prev = prev.with_changes(comma=prev.comma.with_changes(whitespace_after=ws))
            else:
                new_prev = prev.with_changes(comma=last.comma)
        else:
            ws = last.whitespace_after_arg
            if isinstance(prev.comma, cst.Comma):
                pws = prev.comma.whitespace_after
                if isinstance(pws, cst.ParenthesizedWhitespace) and isinstance(ws, cst.ParenthesizedWhitespace):
                    ws = ws.with_changes(first_line=pws.first_line)
            new_prev = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=ws)
        new_call = call.with_changes(args=[*call.args[:-2], new_prev])
        return Model(call, "nn.Sequential", Soft(last.value, log, None, dim), last.value, {call: new_call})

    def model_of(self, value, depth: int = 0, seen=None) -> set:
        """The models an expression may hold: Model objects, or None for unknown."""
        seen = seen if seen is not None else set()
        if depth > 6:
            return {None}
        while (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("to", "cuda", "cpu", "train", "float", "double", "half")
        ):
            value = value.func.value
        if isinstance(value, (cst.Name, cst.Attribute)):
            if id(value) in seen:
                return set()
            seen.add(id(value))
            vals = self.values(value)
            if vals is None:
                return {None}
            out = set()
            for v in vals:
                out |= self.model_of(v, depth + 1, seen)
            return out
        if isinstance(value, cst.Call):
            m = self.model_for_ctor(value)
            return {m}
        return {None}

    def model_for_ctor(self, call: cst.Call):
        q = self.ctx.qualnames(call.func)
        if q & _SEQ:
            return self._models.get(id(call))
        if isinstance(call.func, cst.Name) and call.func.value in self.classes and call.func.value in q:
            return self._models.get(id(self.classes[call.func.value]))
        return None

    # ----------------------------------------------------------------- use analysis
    def classify(self, expr, out: list, depth: int = 0):
        """How the value of ``expr`` (a model output) is used; appends Use records.

        Ranking uses (``argmax``/``max``/``topk``/``sort`` indices) count as unaffected by
        the softmax only along the softmax's own ``dim`` (``self._dim``)."""
        if depth > 6:
            out.append(Use("unknown", expr))
            return
        p = self.ctx.parent(expr)
        if isinstance(p, cst.Arg):
            call = self.ctx.parent(p)
            if isinstance(call, cst.Call):
                site = self.ce_site(call)
                if site is not None and site.arg is p:
                    out.append(Use("ce", expr, site))
                    return
                q = self.ctx.qualnames(call.func)
                if _arg(call, 0, "input") is p:
                    if q & _ARGMAX and self._same_dim(_arg(call, 1, "dim"), None):
                        out.append(Use("rank", expr))
                        return
                    if q & {"torch.max"} and self._same_dim(_arg(call, 1, "dim"), None) and self.indices_only(call):
                        out.append(Use("rank", expr))
                        return
                    if q & {"torch.topk"} and self._same_dim(_arg(call, 2, "dim"), "-1") and self.indices_only(call):
                        out.append(Use("rank", expr))
                        return
                    if q & {"torch.sort"} and self._same_dim(_arg(call, 1, "dim"), "-1") and self.indices_only(call):
                        out.append(Use("rank", expr))
                        return
        if isinstance(p, cst.Attribute) and p.value is expr:
            call = self.ctx.parent(p)
            attr = p.attr.value
            if isinstance(call, cst.Call) and call.func is p:
                if attr == "argmax" and self._same_dim(_arg(call, 0, "dim"), None):
                    out.append(Use("rank", expr))
                    return
                if attr == "max" and self._same_dim(_arg(call, 0, "dim"), None) and self.indices_only(call):
                    out.append(Use("rank", expr))
                    return
                if attr == "topk" and self._same_dim(_arg(call, 1, "dim"), "-1") and self.indices_only(call):
                    out.append(Use("rank", expr))
                    return
                if attr == "sort" and self._same_dim(_arg(call, 0, "dim"), "-1") and self.indices_only(call):
                    out.append(Use("rank", expr))
                    return
                if attr.endswith("_") and not attr.endswith("__"):
                    out.append(Use("unknown", expr))  # in-place update of the output
                    return
                if attr in _PASSTHROUGH:
                    self._through(call, expr, out, depth)
                    return
                if attr in _SHAPE:  # reshaped: still fine as a loss input; ranking dims moved
                    self._through(call, expr, out, depth, keep_rank=False)
                    return
            elif attr == "data":
                self._through(p, expr, out, depth)
                return
        if isinstance(p, cst.Subscript) and p.value is expr:
            gp = self.ctx.parent(p)
            if isinstance(gp, (cst.AssignTarget, cst.AugAssign)) or isinstance(gp, cst.Del):
                out.append(Use("unknown", expr))
                return
        if isinstance(p, cst.Assign) and p.value is expr:
            if len(p.targets) == 1 and isinstance(p.targets[0].target, cst.Name):
                self.classify_name(p.targets[0].target, out, depth)
                return
            out.append(Use("unknown", expr))
            return
        if isinstance(p, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            out.append(Use("unknown", expr))
            return
        out.append(Use("prob", expr))

    def _through(self, outer, inner, out: list, depth: int, keep_rank: bool = True):
        """``inner.detach()`` etc.: same values; a probability use of ``outer`` is wrapped at ``inner``."""
        sub: list = []
        self.classify(outer, sub, depth + 1)
        for u in sub:
            if u.kind == "prob" or (u.kind == "rank" and not keep_rank):
                out.append(Use("prob", inner))
            else:
                out.append(u)

    def _same_dim(self, arg: Optional[cst.Arg], default: Optional[str]) -> bool:
        got = _dim_code(arg.value) if arg is not None else default
        return got is not None and self._dim is not None and got == self._dim

    def classify_name(self, target: cst.Name, out: list, depth: int):
        scope = self.ctx.scope(target)
        assignment = None
        if scope is not None and target.value in scope.assignments:
            for a in scope.assignments[target.value]:
                if isinstance(a, md.Assignment) and a.node is target:
                    assignment = a
        if assignment is None:
            out.append(Use("unknown", target))
            return
        for acc in assignment.references:
            if acc.is_type_hint or not isinstance(acc.node, cst.Name):
                out.append(Use("unknown", target))
                continue
            sub: list = []
            self.classify(acc.node, sub, depth + 1)
            if len(acc.referents) > 1:  # also reads another assignment: only loss/index uses are fine
                sub = [u if u.kind in ("ce", "rank") else Use("unknown", u.node) for u in sub]
            out.extend(sub)

    def indices_only(self, call: cst.Call) -> bool:
        """``x.max(1)`` / ``torch.topk(x, k)`` whose result is used only for its indices."""
        p = self.ctx.parent(call)
        if isinstance(p, cst.Subscript) and p.value is call and len(p.slice) == 1:
            idx = p.slice[0].slice
            return isinstance(idx, cst.Index) and isinstance(idx.value, cst.Integer) and idx.value.value == "1"
        if isinstance(p, cst.Attribute) and p.value is call:
            return p.attr.value == "indices"
        if isinstance(p, cst.Assign) and len(p.targets) == 1:
            t = p.targets[0].target
            if isinstance(t, (cst.Tuple, cst.List)) and len(t.elements) == 2:
                first = t.elements[0].value
                return isinstance(first, cst.Name) and first.value == "_"
        return False

    def model_uses(self, model: Model) -> list[Use]:
        """Every use of ``model`` in the file; 'unknown' for anything that escapes."""
        uses: list[Use] = []
        self._dim = _dim_code(model.soft.dim)
        if self.ctx.project.roots and self.ctx.project.is_imported_elsewhere(self.ctx.path):
            uses.append(Use("unknown", model.anchor))  # another file may use the model
        if model.cls is not None:
            if self._calls_itself(model.cls):
                uses.append(Use("unknown", model.anchor))  # self(x) in its own methods
            # the class itself must only be instantiated here
            for n in self._by_name.get(model.cls.name.value, ()):
                if n is model.cls.name:
                    continue
                p = self.ctx.parent(n)
                if isinstance(p, cst.Call) and p.func is n:
                    self.instance_use(p, model, uses)
                else:
                    uses.append(Use("unknown", n))
        else:
            self.instance_use(model.key, model, uses)
        self.follow_binding(model, uses)
        return uses

    def instance_use(self, ctor: cst.Call, model: Model, uses: list):
        """Follow a freshly built model object."""
        node = ctor
        while True:
            p = self.ctx.parent(node)
            if isinstance(p, cst.Attribute) and p.value is node and p.attr.value in ("to", "cuda", "cpu", "train", "float"):
                gp = self.ctx.parent(p)
                if isinstance(gp, cst.Call) and gp.func is p:
                    node = gp
                    continue
            break
        p = self.ctx.parent(node)
        if isinstance(p, cst.Call) and p.func is node:
            self.classify(p, uses)
            return
        if isinstance(p, cst.Assign) and p.value is node and len(p.targets) == 1:
            t = p.targets[0].target
            if isinstance(t, cst.Name) or (
                isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
            ):
                return  # followed through the name (every load resolving to the model is visited)
        if isinstance(p, cst.Arg):
            call = self.ctx.parent(p)
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Name)
                and call.func.value in self.functions
                and self.function_calls(self.functions[call.func.value]) is not None
            ):
                return  # followed through the parameter
        uses.append(Use("unknown", node))

    def follow_binding(self, model: Model, uses: list):
        """All loads that may read ``model`` through names."""
        for expr, ms in self.holders():
            if model in ms:
                self.access_use(expr, uses, shared=ms != {model}, model=model)

    def holders(self) -> list:
        """Every load of a name (or ``self.attr``) that may hold one of this file's models,
        with the models it may hold; computed once per file."""
        got = getattr(self, "_holders", None)
        if got is not None:
            return got
        got = []
        if self._models:
            for n in self.names:
                p = self.ctx.parent(n)
                if isinstance(p, cst.Attribute) and p.attr is n:
                    continue
                if isinstance(p, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName)):
                    continue
                if isinstance(p, cst.Arg) and p.keyword is n:
                    continue
                expr = n
                if n.value == "self":
                    if not (isinstance(p, cst.Attribute) and p.value is n):
                        continue
                    expr = p
                    if isinstance(self.ctx.parent(expr), cst.AssignTarget):
                        continue
                try:
                    ms = self.model_of(expr)
                except RecursionError:
                    ms = {None}
                if ms - {None}:
                    got.append((expr, ms))
        self._holders = got
        return got

    def _calls_itself(self, cls: cst.ClassDef) -> bool:
        found = False

        class V(cst.CSTVisitor):
            def visit_Call(self, node):
                nonlocal found
                f = node.func
                if isinstance(f, cst.Name) and f.value == "self":
                    found = True
                if (
                    isinstance(f, cst.Attribute)
                    and f.attr.value == "forward"
                    and isinstance(f.value, cst.Name)
                    and f.value.value == "self"
                ):
                    found = True

        cls.visit(V())
        return found

    def _submodule(self, model: Model, attr: str) -> bool:
        """``model.<attr>`` is a layer of the model other than its final softmax."""
        if model.cls is None:
            return False
        if attr not in self.class_attrs(model.cls):
            return False
        f = model.soft.node.func if isinstance(model.soft.node, cst.Call) else None
        return not (isinstance(f, cst.Attribute) and f.attr.value == attr) and attr not in self._softmax_attrs(model)

    def _softmax_attrs(self, model: Model) -> set:
        return {
            k for k, vals in self.class_attrs(model.cls).items()
            if any(v is not None and (self.module_kind(v) is not None or self.seq_model(v) is not None) for v in vals)
        }

    def access_use(self, expr, uses: list, shared: bool, model: Optional[Model] = None):
        p = self.ctx.parent(expr)
        if isinstance(p, cst.Call) and p.func is expr:
            sub: list = []
            self.classify(p, sub)
            if shared:
                sub = [u if u.kind in ("ce", "rank") else Use("unknown", u.node) for u in sub]
            uses.extend(sub)
            return
        if isinstance(p, cst.Attribute) and p.value is expr:
            gp = self.ctx.parent(p)
            if p.attr.value == "forward" and isinstance(gp, cst.Call) and gp.func is p:
                self.classify(gp, uses)
                return
            if p.attr.value in _NEUTRAL_ATTRS:
                return
            if model is not None and self._submodule(model, p.attr.value):
                return  # a layer before the softmax: cannot see the model's output
            uses.append(Use("unknown", expr))
            return
        if isinstance(p, cst.Arg):
            call = self.ctx.parent(p)
            if isinstance(call, cst.Call):
                if isinstance(call.func, cst.Name) and call.func.value in self.functions and self.function_calls(
                    self.functions[call.func.value]
                ) is not None:
                    return  # its parameter is followed
                if self.ctx.qualnames(call.func) & _NEUTRAL_FUNCS:
                    return
        if isinstance(p, cst.Assign) and p.value is expr:
            return  # the new name is followed itself
        uses.append(Use("unknown", expr))

    # ----------------------------------------------------------------- findings
    def run(self) -> list[Finding]:
        findings: list[Finding] = []
        self._models: dict[int, Model] = {}
        framework = self.uses_framework()
        if not framework:
            for cls in self.classes.values():
                m = self.class_model(cls)
                if m is not None:
                    self._models[id(cls)] = m
            for call in self.calls:
                if self.ctx.qualnames(call.func) & _SEQ:
                    m = self.seq_model(call)
                    if m is not None:
                        self._models[id(call)] = m
        sites = [s for s in (self.ce_site(c) for c in self.calls) if s is not None]
        taken: set[int] = set()
        for site in sites:
            f = self.direct(site)
            if f is not None:
                findings.append(f)
                taken.add(id(site.call))
        for model in self._models.values():
            f = self.model_finding(model, taken)
            if f is not None:
                findings.append(f)
        if not framework:
            for site in sites:
                if id(site.call) not in taken:
                    f = self.foreign_finding(site)
                    if f is not None:
                        findings.append(f)
        return findings

    # ----------------------------------------------------------------- models of other files
    def foreign_finding(self, site: CESite) -> Optional[Finding]:
        """The loss input comes from a model class imported from a sibling file whose
        forward ends in a (log-)softmax: report only (that file has other consumers)."""
        e, _ = self._input(site)
        if isinstance(e, cst.Name):
            vals = self.values(e)
            if not vals or len(vals) != 1:
                return None
            e = vals[0]
        if not isinstance(e, cst.Call) or not isinstance(e.func, (cst.Name, cst.Attribute)):
            return None
        ctors = self.values(e.func)
        if not ctors:
            return None
        found = set()
        for v in ctors:
            while (
                isinstance(v, cst.Call)
                and isinstance(v.func, cst.Attribute)
                and v.func.attr.value in ("to", "cuda", "cpu", "train", "float")
            ):
                v = v.func.value
            if not (isinstance(v, cst.Call) and isinstance(v.func, cst.Name)):
                return None
            found.add(self.imported_model(v.func))
        if len(found) != 1 or None in found:
            return None
        (hit,) = found
        model, where = hit
        code = f"`{model.soft_code}`"
        if model.log:
            msg = (
                f"`{model.name}` (from {where}) ends with {code} and its output feeds `{site.label}` here, which "
                "applies log_softmax again: redundant; use NLLLoss here or drop it in the model"
            )
            return self.ctx.finding(LogSoftmaxBeforeCrossEntropy, site.arg, msg)
        msg = (
            f"`{model.name}` (from {where}) ends with {code} and its output feeds `{site.label}` here, which expects "
            "logits; remove the softmax in the model and re-apply it where its other users need probabilities"
        )
        return self.ctx.finding(SoftmaxBeforeCrossEntropy, site.arg, msg)

    def imported_model(self, name: cst.Name):
        import os

        refs = self.assignments(name)
        if not refs or len(refs) != 1:
            return None
        (a,) = refs
        if not isinstance(a, md.ImportAssignment) or not isinstance(a.node, cst.ImportFrom):
            return None
        node = a.node
        if node.module is None or isinstance(node.names, cst.ImportStar):
            return None
        original = None
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname else alias.name.value
            if bound == name.value and isinstance(alias.name, cst.Name):
                original = alias.name.value
        if original is None:
            return None
        mod = cst.helpers.get_full_name_for_node(node.module) or ""
        base = os.path.dirname(os.path.abspath(self.ctx.path))
        for _ in range(max(len(node.relative) - 1, 0)):
            base = os.path.dirname(base)
        path = os.path.join(base, *mod.split(".")) + ".py"
        self.ctx.project.read_dependency(path)  # the result now depends on that file (see the cache)
        if not os.path.isfile(path) or os.path.getsize(path) > 1_000_000:
            return None
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            other = _Analysis(FileContext(path, text, cst.parse_module(text), self.ctx.project))
        except Exception:  # unreadable or unparsable: nothing known
            return None
        other._models = {}
        cls = other.classes.get(original)
        if cls is None:
            return None
        m = other.class_model(cls)
        if m is None:
            return None
        return _Foreign(m.name, other.ctx.code(m.soft.node), m.soft.log), os.path.basename(path)

    def _input(self, site: CESite):
        """The CE input with shape-only wrappers peeled: (expr, peeled?)."""
        e = site.arg.value
        peeled = False
        while (
            isinstance(e, cst.Call)
            and isinstance(e.func, cst.Attribute)
            and e.func.attr.value in _VIEW
            and self.soft(e) is None
        ):
            e, peeled = e.func.value, True
        return e, peeled

    def _rule(self, log: bool):
        return LogSoftmaxBeforeCrossEntropy if log else SoftmaxBeforeCrossEntropy

    def direct(self, site: CESite) -> Optional[Finding]:
        ctx = self.ctx
        e, peeled = self._input(site)
        s = self.soft(e)
        if s is not None:
            if s.input is None:
                return None
            new = _paren(s.input) if peeled else s.input
            fix = Fix({s.node: new}, Safety.SAFE, "drop the softmax before the loss")
            return ctx.finding(self._rule(s.log), s.node, self._msg(s, f"`{ctx.code(s.node)}`", site), fix)
        if not isinstance(e, cst.Name):
            return None
        refs = self.access_referents(e)
        if not refs or len(refs) != 1:
            return None
        (a,) = refs
        if not isinstance(a, md.Assignment):
            return None
        all_assigns = self.assignments(e) or set()
        if len({x for x in all_assigns if x.name == e.value and x.scope is a.scope}) != 1:
            return None
        target = a.node
        if ctx.scope(target) is not ctx.scope(e):
            return None  # defined in an enclosing scope: the use may run at another time
        assign = ctx.parent(ctx.parent(target)) if isinstance(ctx.parent(target), cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        s = self.soft(assign.value)
        if s is None or s.input is None:
            return None
        def_stmt = ctx.parent(assign)
        use_stmt = self.stmt_of(site.call)
        if not isinstance(def_stmt, cst.SimpleStatementLine) or len(def_stmt.body) != 1 or use_stmt is None:
            return None
        block = ctx.parent(def_stmt)
        if block not in set(ctx.ancestors(site.call)) or self.pos(def_stmt) >= self.pos(use_stmt):
            return None
        label = f"`{e.value}` = `{ctx.code(assign.value)}` (line {self.pos(def_stmt)[0]})"
        msg = self._msg(s, label, site)
        others = [r for r in a.references if r.node is not e]
        new = _paren(s.input) if peeled else s.input
        stable = self.stable(s.input, def_stmt, use_stmt, site.call)
        adjacent = self._next_stmt(def_stmt) is use_stmt
        if not others and (stable or adjacent):
            repl = {e: new, def_stmt: cst.RemoveFromParent()}
            if any(ln.comment for ln in def_stmt.leading_lines):
                if not adjacent:
                    repl = {assign.value: s.input}
                else:  # keep the comment: it moves onto the loss line
                    new_use = _replace_inside(use_stmt, {e: new})
                    new_use = new_use.with_changes(leading_lines=[*def_stmt.leading_lines, *use_stmt.leading_lines])
                    repl = {use_stmt: new_use, def_stmt: cst.RemoveFromParent()}
            fix = Fix(repl, Safety.SAFE, "feed the logits to the loss")
        elif not others:
            fix = Fix({assign.value: s.input}, Safety.SAFE, "keep the logits in the variable")
        elif stable:
            fix = Fix({e: new}, Safety.SAFE, "feed the logits to the loss")
        else:
            fix = None
        return ctx.finding(self._rule(s.log), e, msg, fix)

    def _next_stmt(self, stmt):
        block = self.ctx.parent(stmt)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)):
            return None
        for i, s in enumerate(body):
            if s is stmt:
                return body[i + 1] if i + 1 < len(body) else None
        return None

    def stable(self, expr, def_stmt, use_stmt, use_node) -> bool:
        """``expr`` (a name or attribute chain) reads the same value at the use as at the def."""
        base = expr
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return False
        if isinstance(expr, cst.Attribute):
            return False  # attributes can change under us (out.logits = ...): not followed
        return self._names_stable(base, def_stmt, use_stmt, use_node)

    def _names_stable(self, name, def_stmt, use_stmt, use_node) -> bool:
        assigns = self.assignments(name)
        if assigns is None:
            return False
        d, u = self.pos(def_stmt), self.pos(use_stmt)
        loops_def = {id(a) for a in self.ctx.ancestors(def_stmt) if isinstance(a, (cst.For, cst.While))}
        loop_between = any(
            isinstance(a, (cst.For, cst.While)) and id(a) not in loops_def for a in self.ctx.ancestors(use_node)
        )
        for a in assigns:
            if not isinstance(a, md.Assignment):
                continue
            try:
                p = self.pos(a.node)
            except KeyError:
                return False
            if loop_between and p > d:
                return False
            if d < p <= u:
                return False
        return True

    def _msg(self, s: Soft, label: str, site: CESite) -> str:
        loss = f"`{site.label}`"
        if s.log:
            return f"{label} feeds {loss}, which applies log_softmax itself: the extra log_softmax is redundant"
        return f"{label} feeds {loss}, which expects logits: the loss sees probabilities and its gradient vanishes"

    # ----------------------------------------------------------------- model findings
    def model_finding(self, model: Model, taken: set) -> Optional[Finding]:
        ctx = self.ctx
        uses = self.model_uses(model)
        ce = [u for u in uses if u.kind == "ce" and id(u.site.call) not in taken]
        if not ce:
            return None
        first = ce[0].site
        where = f"`{first.label}` (line {self.pos(first.call)[0]})"
        soft_code = ctx.code(model.soft.node)
        if model.soft.log:
            return self.nll_finding(model, ce, where, soft_code)
        msg = f"`{model.name}` ends with `{soft_code}` and its output feeds {where}, which expects logits"
        kinds = {u.kind for u in uses}
        if "unknown" in kinds:
            return ctx.finding(SoftmaxBeforeCrossEntropy, model.anchor, msg + "; other uses of the model are not visible here, remove the softmax by hand")
        probs = [u for u in uses if u.kind == "prob"]
        repl = dict(model.removal)
        if probs:
            if model.soft.dim is None:
                return ctx.finding(SoftmaxBeforeCrossEntropy, model.anchor, msg + "; its probabilities are also used (and the softmax has no dim)")
            for u in probs:
                repl[u.node] = cst.Call(
                    func=cst.Attribute(value=_paren(u.node), attr=cst.Name("softmax")),
                    args=[cst.Arg(keyword=cst.Name("dim"), value=model.soft.dim, equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))],
                )
            lines = ", ".join(str(self.pos(u.node)[0]) for u in probs)
            return ctx.finding(
                SoftmaxBeforeCrossEntropy, model.anchor,
                msg + f"; the probabilities used at line(s) {lines} need the softmax re-applied there",
                Fix(repl, Safety.UNSAFE, "move the softmax from the model to the probability uses"),
            )
        return ctx.finding(
            SoftmaxBeforeCrossEntropy, model.anchor, msg,
            Fix(repl, Safety.SAFE, "remove the final softmax (the model's outputs only feed the loss and argmax)"),
        )

    def nll_finding(self, model: Model, ce: list[Use], where: str, soft_code: str) -> Optional[Finding]:
        ctx = self.ctx
        msg = f"`{model.name}` ends with `{soft_code}` and its output feeds {where}, which applies log_softmax again: redundant, use NLLLoss"
        repl: dict = {}
        imports: list = []
        problem = None
        for u in ce:
            site = u.site
            why = self.nll_blocker(site, model)
            if why:
                problem = why
                break
            if site.form == "fn":
                r = _rename(site.call.func, "nll_loss", ctx)
            else:
                r = _rename(site.ctor.func, "NLLLoss", ctx)
            if r is None:
                problem = "the loss is spelled in a way the tool cannot rename"
                break
            node, new, imp = r
            repl[node] = new
            if imp:
                imports.append(imp)
        if problem:
            return ctx.finding(LogSoftmaxBeforeCrossEntropy, model.anchor, msg + f" ({problem})")
        return ctx.finding(
            LogSoftmaxBeforeCrossEntropy, model.anchor, msg,
            Fix(repl, Safety.SAFE, "use NLLLoss on the log-probabilities", imports=tuple(imports)),
        )

    def nll_blocker(self, site: CESite, model: Model) -> Optional[str]:
        call = site.call if site.form == "fn" else site.ctor
        if call is None:
            return "the loss object has several definitions"
        allowed = _NLL_KW_FN if site.form == "fn" else _NLL_KW_CTOR
        npos = 3 if site.form == "fn" else 1
        if any(a.star for a in call.args):
            return "the loss takes **kwargs"
        for a in call.args:
            if a.keyword is not None and a.keyword.value not in allowed:
                return f"`{a.keyword.value}=` has no NLLLoss equivalent"
        if sum(1 for a in call.args if a.keyword is None) > npos:
            return "positional loss options"
        targets = [site.call]
        if site.form == "var":
            # every call of this loss object must receive this model's log-probabilities
            targets = []
            for other in self.calls:
                s2 = self.ce_site(other)
                if s2 is None or s2.form != "var":
                    continue
                vals = [self.ce_ctor(v) for v in self.values(other.func) or []]
                if not any(v is site.ctor for v in vals):
                    continue
                if len(vals) != 1:
                    return f"`{s2.label}` may hold other losses (line {self.pos(other)[0]})"
                targets.append(other)
                e, _ = self._input(s2)
                if self._sources(e) != {model}:
                    return f"`{site.label}` is also used on other inputs (line {self.pos(other)[0]})"
            top = site.ctor
            while isinstance(self.ctx.parent(top), cst.Attribute) and isinstance(self.ctx.parent(self.ctx.parent(top)), cst.Call):
                top = self.ctx.parent(self.ctx.parent(top))  # nn.CrossEntropyLoss().to(device)
            holder = self.ctx.parent(top)
            passed = isinstance(holder, cst.Arg) and self._local_call_arg(holder)
            if not (isinstance(holder, cst.Assign) and holder.value is top) and not passed:
                return "the loss object is not a plain assignment"
            if self._escapes(top):
                return f"`{site.label}` is also used where this file cannot follow it"
        for c in targets:
            t = _arg(c, 1, "target")
            if t is not None and self._prob_like(t.value):
                return "the target looks like probabilities, which NLLLoss does not accept"
        if site.form == "fn":
            return None
        return None

    def _sources(self, e) -> set:
        """The models whose output ``e`` may be (None: something else)."""
        if isinstance(e, cst.Call):
            return self.model_of(e.func)
        if isinstance(e, cst.Name):
            vals = self.values(e)
            if not vals:
                return {None}
            out = set()
            for v in vals:
                out |= self.model_of(v.func) if isinstance(v, cst.Call) else {None}
            return out
        return {None}

    def _escapes(self, obj) -> bool:
        """Some load of a name holding ``obj`` is neither a call nor an argument of a
        function of this file (whose parameter is then followed the same way)."""
        for n in self.names:
            p = self.ctx.parent(n)
            expr = n
            if n.value == "self" and isinstance(p, cst.Attribute) and p.value is n:
                expr, p = p, self.ctx.parent(p)
            elif isinstance(p, cst.Attribute) and p.attr is n:
                continue
            if isinstance(p, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName)):
                continue
            if isinstance(p, cst.Arg) and p.keyword is n:
                continue
            vals = self.values(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
            if not vals or not any(v is obj for v in vals):
                continue
            if isinstance(p, cst.Call) and p.func is expr:
                continue
            if isinstance(p, cst.Arg) and self._local_call_arg(p):
                continue
            return True
        return False

    def _local_call_arg(self, arg: cst.Arg) -> bool:
        """``arg`` is passed to a function of this file whose every call is visible."""
        call = self.ctx.parent(arg)
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value in self.functions
            and self.function_calls(self.functions[call.func.value]) is not None
        )

    def _prob_like(self, e) -> bool:
        names = {"softmax", "one_hot", "float", "double", "sigmoid", "half"}

        def hit(x) -> bool:
            found = False

            class V(cst.CSTVisitor):
                def visit_Call(self, node):
                    nonlocal found
                    f = node.func
                    if isinstance(f, cst.Attribute) and f.attr.value in names:
                        found = True
                    if isinstance(f, cst.Name) and f.value in names:
                        found = True

            x.visit(V())
            return found

        if hit(e):
            return True
        if isinstance(e, cst.Name):
            vals = self.values(e)
            return bool(vals) and any(hit(v) for v in vals)
        return False


def _rename(func, new_name: str, ctx: FileContext):
    """``nn.CrossEntropyLoss`` -> ``nn.NLLLoss`` in the user's own spelling: (node, new, import)."""
    if isinstance(func, cst.Attribute):
        return func.attr, cst.Name(new_name), None
    if isinstance(func, cst.Name):
        module = "torch.nn" if new_name == "NLLLoss" else "torch.nn.functional"
        return func, cst.Name(new_name), (module, new_name)
    return None


def _replace_inside(stmt, repl: dict):
    class T(cst.CSTTransformer):
        def on_leave(self, original, updated):
            return repl.get(original, updated) if any(original is k for k in repl) else updated

    return stmt.visit(T())


def _findings(ctx: FileContext) -> list[Finding]:
    got = _CACHE.get(ctx)
    if got is None:
        try:
            got = _Analysis(ctx).run()
        except RecursionError:
            got = []
        _CACHE[ctx] = got
    return got


def _may_fire(tree) -> bool:
    """The ``ast`` gate of both rules: a cross-entropy (function or module) is named, a
    softmax-like name is spelled (or a model may come from a sibling file), and then
    ``_flow_may_fire``: one of the three shapes the analysis knows can be there."""
    f = astfacts.facts(tree)
    if f.names.isdisjoint(("cross_entropy", "CrossEntropyLoss")):
        return False
    if not (f.import_from or any("softmax" in n.lower() for n in f.names)):
        return False
    got = getattr(tree, "_torchmend_softmax_gate", None)
    if got is None:
        got = tree._torchmend_softmax_gate = _flow_may_fire(tree, f)
    return got


def _tokens(node) -> set[str]:
    """Name ids and attribute names spelled in ``node``."""
    import ast

    Name, Attribute, Call, iter_children = ast.Name, ast.Attribute, ast.Call, ast.iter_child_nodes
    out = set()
    n = node
    while type(n) is Attribute:  # the common case: a dotted name
        out.add(n.attr)
        n = n.value
    if type(n) is Name:
        out.add(n.id)
        return out
    stack = [n]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is Name:
            out.add(n.id)
        elif t is Attribute:
            out.add(n.attr)
            stack.append(n.value)
        elif t is Call:
            stack.append(n.func)
            stack.extend(n.args)
            stack.extend(k.value for k in n.keywords)
        else:
            stack.extend(iter_children(n))
    return out


def _last_name(func) -> Optional[str]:
    import ast

    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _flow_may_fire(tree, f) -> bool:
    """Over-approximates, on the stdlib ``ast``, what ``_Analysis.run`` needs to find
    anything; spelling stands in for qualified names (an ``as`` alias counts as what it
    imports), and every binding the analysis follows is taken as possible:

    * a cross-entropy call: the callee spells ``cross_entropy``/``CrossEntropyLoss``, or
      is a name or attribute assigned from such a spelling, or a parameter;
    * and one of: (direct) its input, peeled of ``.view()``-like calls, is a softmax-like
      call or a name assigned from one; (model) a ``forward`` whose last statement
      returns a softmax-like call (also through the assignment right above it, or
      ``self.X(...)`` with a ``Sequential`` ending in a softmax in the file), or such a
      ``Sequential``; (foreign) a name imported ``from`` a non-torch module is called.

    A softmax-like call: the callee spells a name containing ``softmax``, or, when the
    file spells ``Softmax``/``LogSoftmax``, is a name or attribute assigned from such a
    spelling, or a parameter (``values`` follows parameters to their call sites)."""
    import ast

    def orig(t):
        return f.aliases.get(t, t)

    sm_tokens = {t for t in f.names if "softmax" in orig(t).lower()}
    mod_tokens = {t for t in f.names if orig(t) in ("Softmax", "LogSoftmax")}
    ce_tokens = {t for t in f.names if orig(t) in ("cross_entropy", "CrossEntropyLoss")}
    seq_tokens = {t for t in f.names if orig(t) == "Sequential"}
    holders_sm, holders_ce = set(), set()
    for n in f.assigns:
        if n.value is not None:
            toks = _tokens(n.value)
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = {_last_name(t) for t in targets} - {None}
            if toks & mod_tokens:
                holders_sm |= names
            if toks & ce_tokens:
                holders_ce |= names
    params = f.params

    def softish(e) -> bool:
        if not isinstance(e, ast.Call):
            return False
        if _tokens(e.func) & sm_tokens:
            return True
        return bool(mod_tokens) and _last_name(e.func) in (holders_sm | params)

    def ce_call(c) -> bool:
        return bool(_tokens(c.func) & ce_tokens) or _last_name(c.func) in (holders_ce | params)

    calls = f.calls
    ce_calls = [c for c in calls if ce_call(c)]
    if not ce_calls:
        return False
    soft_assigned = {
        n.targets[0].id
        for n in f.assigns
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and softish(n.value)
    }
    for c in ce_calls:
        arg = next((k.value for k in c.keywords if k.arg == "input"), None)
        if arg is None and c.args and not isinstance(c.args[0], ast.Starred):
            arg = c.args[0]
        while arg is not None and isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in _VIEW and not softish(arg):
            arg = arg.func.value
        if arg is not None and (softish(arg) or (isinstance(arg, ast.Name) and arg.id in soft_assigned)):
            return True
    seq_soft = any(
        _tokens(c.func) & seq_tokens and len(c.args) >= 2 and _tokens(c.args[-1]) & sm_tokens for c in calls
    )
    if seq_soft:
        return True
    for n in f.classes:
        if n.bases:
            for fn in n.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward" and fn.body:
                    last = fn.body[-1]
                    if not isinstance(last, ast.Return) or last.value is None:
                        continue
                    v = last.value
                    if softish(v):
                        return True
                    if isinstance(v, ast.Name) and len(fn.body) >= 2:
                        prev = fn.body[-2]
                        if isinstance(prev, ast.Assign) and softish(prev.value):
                            return True
    imported = {
        (a.asname or a.name)
        for n in f.from_imports
        if (n.level or (n.module or "").split(".")[0] not in ("torch", "__future__"))
        for a in n.names
    }
    return any(isinstance(c.func, ast.Name) and c.func.id in imported for c in calls)


# --------------------------------------------------------------------------- rules
class SoftmaxBeforeCrossEntropy(Rule):
    """## What it does
    Finds a softmax whose output is the *input* of `nn.CrossEntropyLoss` /
    `F.cross_entropy`: applied inline, through a variable, or as the last step of a model
    (`nn.Sequential(..., nn.Softmax(dim=1))`, `return F.softmax(x, dim=1)` in `forward`).

    ## Why is this bad?
    Cross-entropy applies `log_softmax` to its input itself and expects raw logits.  Fed
    probabilities, it computes `log_softmax(softmax(z))`: the loss is squashed into a narrow
    range and its gradient nearly vanishes, so the model trains slowly or not at all.

    The fix drops the softmax.  When the model's softmax is removed, every other use of its
    output in the file is checked: `argmax` / `max(..., 1)` indices do not change; uses that
    need probabilities get `.softmax(dim=...)` added (an unsafe fix).  When the model is used
    where the file cannot show how (imported by another file, passed to an unknown function,
    a skorch wrapper), the rule only reports.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(model(x), y)
    ```
    """

    code = "TM501"
    name = "softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = "softmax output fed into CrossEntropyLoss / F.cross_entropy, which expects logits"
    severity = Severity.BUG
    # "cross_entropy"/"CrossEntropyLoss": the model may come from another file (5.8)
    needles = ("cross_entropy", "CrossEntropyLoss")
    ast_check = classmethod(lambda cls, tree: _may_fire(tree))

    def check(self, ctx: FileContext):
        return [f for f in _findings(ctx) if f.code == self.code]


class LogSoftmaxBeforeCrossEntropy(Rule):
    """## What it does
    Finds a `log_softmax` whose output is the input of `nn.CrossEntropyLoss` /
    `F.cross_entropy`.

    ## Why is this bad?
    Cross-entropy is `log_softmax` followed by `NLLLoss`; applying `log_softmax` first is
    redundant (it is idempotent, so the value is unchanged) and hides the intent.

    Fixes: a `log_softmax` written right before the loss (inline or in a single-use
    variable) is dropped, which is exact for every loss option.  When a model ends with
    `log_softmax` / `nn.LogSoftmax`, the model is kept and the loss becomes `NLLLoss`
    (`F.cross_entropy` -> `F.nll_loss`), exactly equivalent; with `label_smoothing`, other
    options NLLLoss lacks, or probability targets, the rule only reports.

    ## Example
    ```python
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)  # model.forward returns F.log_softmax(x, dim=1)
    ```

    ## Use instead
    ```python
    criterion = nn.NLLLoss()
    loss = criterion(model(x), y)
    ```
    """

    code = "TM502"
    name = "log-softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = "log_softmax output fed into cross-entropy: redundant (use NLLLoss)"
    severity = Severity.WARNING
    needles = ("cross_entropy", "CrossEntropyLoss")
    ast_check = classmethod(lambda cls, tree: _may_fire(tree))

    def check(self, ctx: FileContext):
        return [f for f in _findings(ctx) if f.code == self.code]
