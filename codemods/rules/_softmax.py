"""What the softmax rules (TM501, TM502) share: the cross-entropy call sites of a file,
the (log-)softmax that feeds their input, and every other use of a model whose output is
(log-)probabilities.

``CrossEntropyLoss`` / ``F.cross_entropy`` apply ``log_softmax`` themselves and expect raw
logits.  A softmax in front of them is a real bug (TM501: the loss sees squashed scores,
gradients vanish); a log_softmax in front of them is redundant but exact (TM502).

The analysis starts from the cross-entropy call sites (``F.cross_entropy(...)``, and the
calls of every object a ``CrossEntropyLoss(...)`` constructor makes, followed through
names, ``self`` attributes, parameters and builders) and follows only their *first*
(input) argument backwards through the shared semantic model.  Three shapes:

* **inline**: ``ce(F.softmax(z, 1), y)``: the softmax is dropped (``ce(z, y)``);
* **variable**: ``p = z.softmax(-1); loss = ce(p, y)``: ``z`` replaces ``p`` at the
  loss and the ``p =`` line goes when nothing else reads ``p``;
* **model**: the input is the output of a model whose ``forward`` ends with a softmax
  (``return F.softmax(x, 1)``, ``x = self.softmax(x); return x``, ``return self.head(x)``
  with ``self.head = nn.Sequential(..., nn.Softmax(1))``) or an ``nn.Sequential(...,
  nn.Softmax(dim=1))``.  Every use of that model in the file is classified (value-flow
  through the semantic model): loss input, ``argmax``/``max``/``topk`` indices and
  shapes (unchanged by a softmax), harmless module methods (``eval()``,
  ``parameters()``, ``state_dict()``, ``.to()``), or a use of its probabilities.  Only
  the first kinds: the final softmax is removed (safe).  Probability uses: removed and
  re-applied at those uses (unsafe).  Anything the file cannot show (the model escapes to
  an unknown callee, is saved whole, the file is imported elsewhere, a skorch wrapper):
  report only.  A model class imported from a sibling module is read through the project
  (report only: that module has other users).

For TM502 with a model the model is left alone and the *loss* changes (its own finding at
the loss's line): ``CrossEntropyLoss(**kw)`` -> ``NLLLoss(**kw)`` and ``F.cross_entropy``
-> ``F.nll_loss`` when ``kw`` is within ``weight/ignore_index/reduction``, the target is
not a probability tensor and every input of that loss is log-probabilities; else report
only.  An attention softmax inside a network never reaches this analysis: only a model's
*returned* value is examined.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import weakref
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..rule import Fix, Safety, Severity
from ..semantic import UNKNOWN_ARG, BindingKind, OriginKind, SemanticModel
from ..semantic import names as N
from ..semantic.source import callee_hits

TM501, TM502 = "TM501", "TM502"

# shape-only tensor methods a loss input is often wrapped in (``p.view(-1, V)``)
VIEW = frozenset({"view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze", "float", "double", "to", "cpu", "cuda",
                  "resize", "view_as", "reshape_as"})
# module methods that return the module itself
MODULE_SELF = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16", "requires_grad_", "type"})
# module methods and attributes that neither call the model nor expose its outputs
NEUTRAL_ATTRS = frozenset({
    "to", "cuda", "cpu", "train", "eval", "parameters", "named_parameters", "zero_grad", "state_dict",
    "load_state_dict", "requires_grad_", "float", "double", "half", "bfloat16", "modules", "children",
    "named_modules", "named_children", "buffers", "named_buffers", "apply", "type", "training",
})
NEUTRAL_FUNCS = frozenset({
    "builtins.print", "builtins.repr", "builtins.str", "builtins.id", "builtins.isinstance", "builtins.type",
    "builtins.hasattr", "builtins.format",
})
# value-preserving tensor methods: a use of their result is a use of the output itself
PASSTHROUGH = frozenset({"detach", "cpu", "clone", "float", "double", "to", "cuda", "contiguous", "half"})
SHAPE = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "view_as", "reshape_as",
                   "resize"})
# tensor methods that move dims: a (log-)softmax under them feeds the loss only if its dim
# lands on the loss's class dim (1), which ``lands_on_class`` works out
DIM_MOVES = frozenset({"transpose", "permute", "movedim", "moveaxis", "swapaxes", "swapdims"})
# (``resize``: the deprecated ``Tensor.resize``, a reshape of a contiguous tensor)
RESHAPES = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "resize", "view_as", "reshape_as"})


_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad",
                      "torch.autograd.grad_mode.inference_mode"})


def _without_grad(sem: SemanticModel, node) -> bool:
    """``node`` runs under ``with torch.no_grad():`` (or ``inference_mode``), or in a
    function decorated with one of them."""
    for a in sem.ancestors(node):
        if isinstance(a, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.context_expr, ast.Call) and sem.call_qualname(i.context_expr) in _NO_GRAD for i in a.items):
            return True
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(sem.call_qualname(d) in _NO_GRAD if isinstance(d, ast.Call) else
                       bool(sem.qualnames(d) & _NO_GRAD) for d in a.decorator_list)
    return False


def _wraps_module(q: Optional[str]) -> bool:
    """A call that returns its module argument wrapped, running its ``forward`` when it
    is called: ``nn.DataParallel(m)`` and the like, ``torch.compile(m)``."""
    return N.is_parallel_wrapper(q) or q == "torch.compile"


# reads of a tensor that a softmax does not change
SHAPE_ATTRS = frozenset({"shape", "ndim", "device", "dtype", "is_cuda", "requires_grad", "grad_fn"})
SHAPE_METHODS = frozenset({"size", "dim", "numel", "nelement", "get_device", "ndimension"})
NLL_KW_CTOR = frozenset({"weight", "ignore_index", "reduction"})
NLL_KW_FN = frozenset({"input", "target", "weight", "ignore_index", "reduction"})
PROB_WORDS = frozenset({"softmax", "one_hot", "float", "double", "sigmoid", "half"})


# =========================================================================== facts
@dataclass(eq=False)
class Soft:
    """One (log-)softmax application."""

    node: ast.expr  # the expression whose value is the (log-)probabilities
    log: bool
    input: Optional[ast.expr]  # what it is applied to (None: a module object in a Sequential)
    dim: Optional[ast.expr]  # the dim argument, None when implicit


@dataclass(eq=False)
class Site:
    """A cross-entropy call: ``F.cross_entropy(x, y)`` (``fn``), ``nn.CrossEntropyLoss()(x,
    y)`` (``inline``), ``crit(x, y)`` with ``crit`` a CrossEntropyLoss object (``var``), or
    ``crit(x, y)`` with ``crit`` an instance of a same-file loss module whose ``forward``
    hands ``x`` as it is to one of those (``wrap``, report only)."""

    call: ast.Call
    input: ast.expr
    form: str
    ctors: list = field(default_factory=list)  # the CrossEntropyLoss(...) calls the callee may be
    label: str = ""
    complete: bool = True  # ``ctors`` are all the callee may be (not a parameter of unknown callers)


@dataclass(eq=False)
class Model:
    """A model of this file (or of a sibling module) whose output is (log-)probabilities."""

    key: ast.AST  # the ClassDef, or the nn.Sequential call
    name: str  # for messages
    soft: Soft
    anchor: ast.AST  # where the finding points (the softmax)
    removal: Optional[Callable]  # view -> replacements that remove the final softmax
    cls: Optional[ast.ClassDef] = None
    softmax_attrs: frozenset = frozenset()  # self attributes holding the final softmax
    where: str = ""  # a sibling module's file name (cross-file)
    base: Optional[str] = None  # a base class other than torch.nn.Module (LightningModule, ...): never fixed
    lines: tuple = ()  # lines the removal edits besides the anchor's
    built_by: frozenset = frozenset()  # ids of the ``seq.add_module`` attributes that build it (not uses)
    index: Optional[int] = None  # forward returns a tuple: the element that is the (log-)probabilities


@dataclass
class Use:
    kind: str  # "ce" | "rank" | "ok" | "prob" | "unknown"
    node: ast.AST
    site: Optional[Site] = None
    why: str = ""


@dataclass
class Proto:
    """A finding before the rule turns it into one (``ctx.finding``)."""

    code: str
    node: ast.AST
    message: str
    fix: Optional[Fix] = None
    severity: Optional[Severity] = None


# =========================================================================== small helpers
def int_code(node) -> Optional[str]:
    """``1`` / ``-1`` for an integer literal (``dim=1``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    if (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int
    ):
        return str(-node.operand.value)
    return None


def _ints(nodes) -> Optional[list[int]]:
    out = []
    for n in nodes:
        c = int_code(n)
        if c is None:
            return None
        out.append(int(c))
    return out


def _rows(index) -> bool:
    """A subscript's index that picks rows of a tensor and keeps its dims: a slice
    (``out[:n]``) or one index tensor or mask (``out[data.train_mask]``, ``out[idx]``),
    not a number (it drops the dim), a tuple (it may index the class dim) or ``None``/
    ``...``."""
    if isinstance(index, ast.Slice):
        return True
    return isinstance(index, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) and not (
        isinstance(index, ast.Call) and isinstance(index.func, ast.Name) and index.func.id == "slice")


def lands_on_class(sem: SemanticModel, dim, moves: list, reshaped: bool) -> bool:
    """Whether the dim ``dim`` (a softmax's argument node) of a tensor is dim 1 (the
    class dim of a cross-entropy) after the dim-moving calls ``moves`` (outermost
    first, as peeled from the loss input).  Only literal integers are followed; a
    negative dim needs the rank, which a ``permute`` gives (``transpose(1, 2)`` of a
    softmax over ``-1`` is dim 1 only for a 3-d tensor: not taken).  No moves: the loss
    input is the softmax's tensor: a view may bring its dim to 1 (``p.view(-1, V)``),
    and without one a literal 0 or one from 2 up is another dim than 1."""
    if not moves:
        c = int_code(dim) if dim is not None and not reshaped else None
        return c is None or not (int(c) == 0 or int(c) >= 2)
    if reshaped:
        return False  # a view between the moves: dims are regrouped
    c = int_code(dim) if dim is not None else None
    if c is None:
        return False  # implicit or not a literal
    d, ndim = int(c), None
    for call in reversed(moves):  # in the order they apply
        m = sem.method_name(call)
        if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        args = call.args[0].elts if m == "permute" and len(call.args) == 1 and isinstance(
            call.args[0], (ast.Tuple, ast.List)) else call.args
        xs = _ints(args)
        if xs is None:
            return False
        if m == "permute":
            if ndim is not None and ndim != len(xs):
                return False
            ndim = len(xs)
            xs = [x + ndim if x < 0 else x for x in xs]
            d = d + ndim if d < 0 else d
            if sorted(xs) != list(range(ndim)) or d not in xs:
                return False
            d = xs.index(d)
            continue
        if len(xs) != 2:
            return False
        a, b = xs
        if ndim is not None:
            a, b, d = (x + ndim if x < 0 else x for x in (a, b, d))
        if m == "movedim" or m == "moveaxis":
            if min(a, b, d) < 0:
                return False  # the rank decides where the others go
            order = list(range(max(a, b, d) + 1))
            order.insert(b, order.pop(a))
            d = order.index(d)
        elif d == a:  # the same literal: the same dim whatever the rank
            d = b
        elif d == b:
            d = a
        elif min(a, b, d) < 0 <= max(a, b, d):
            return False  # ``transpose(1, -1)`` of dim 2: the rank decides
    return d == 1 or (ndim is not None and d + ndim == 1)


def dim_code(sem: SemanticModel, node) -> Optional[str]:
    if node is None:
        return None
    return int_code(node) or sem.segment(node)


def arg_of(sem: SemanticModel, call: ast.Call, name: str, pos: Optional[int]):
    """The argument for ``name`` (keyword or position ``pos``); None when absent or hidden
    in ``*args``/``**kwargs``."""
    a = sem.argument(call, name, pos)
    return None if a is UNKNOWN_ARG else a


def is_atom(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple,
                             ast.Dict, ast.ListComp, ast.DictComp, ast.SetComp, ast.Set))


def alone_on_lines(sem: SemanticModel, stmt: ast.stmt) -> bool:
    """``stmt`` is the only statement on its lines (no ``;``, not after ``if x:``)."""
    a, b = sem.offsets(stmt)
    text = sem.text
    line_start = text.rfind("\n", 0, a) + 1
    if text[line_start:a].strip():
        return False
    end = text.find("\n", b)
    rest = text[b: end if end >= 0 else len(text)].strip()
    return not rest or rest.startswith("#")


def next_statement(sem: SemanticModel, stmt: ast.stmt):
    block = sem.block_of(stmt)
    if not block:
        return None
    for i, s in enumerate(block):
        if s is stmt:
            return block[i + 1] if i + 1 < len(block) else None
    return None


def trailing_comment(sem: SemanticModel, stmt: ast.stmt) -> bool:
    """A comment after the statement on its last line."""
    _, b = sem.offsets(stmt)
    end = sem.text.find("\n", b)
    return "#" in sem.text[b: end if end >= 0 else len(sem.text)]


def has_comment_lines(sem: SemanticModel, stmt: ast.stmt) -> bool:
    """A comment on the statement's lines or on the lines right above it."""
    a, b = sem.offsets(stmt)
    text = sem.text
    end = text.find("\n", b)
    if "#" in text[a: end if end >= 0 else len(text)]:
        return True
    start = text.rfind("\n", 0, a)
    while start > 0:
        prev = text.rfind("\n", 0, start) + 1
        line = text[prev:start].strip()
        if line.startswith("#"):
            return True
        if line:
            return False
        start = prev - 1
    return False


# =========================================================================== (log-)softmax
def module_kind(sem: SemanticModel, value) -> Optional[tuple[bool, Optional[ast.expr]]]:
    """``nn.Softmax(dim=1)`` -> (False, dim); ``nn.LogSoftmax(1)`` -> (True, dim)."""
    if not isinstance(value, ast.Call):
        return None
    q = sem.qualnames(value.func)
    sm, lsm = any(N.is_softmax_class(x) for x in q), any(N.is_log_softmax_class(x) for x in q)
    if sm or lsm:
        return lsm, arg_of(sem, value, "dim", 0)
    return None


def is_tensor_receiver(sem: SemanticModel, expr) -> bool:
    """``expr.softmax(...)`` may be ``Tensor.softmax``: not a module or object reached from
    ``self``, not an imported module (``scipy.special.softmax``)."""
    base = expr
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    if isinstance(base, ast.Name):
        if sem.self_class(base) is not None or base.id == "self":
            return False
        if sem.qualnames(base):
            return False  # an import or a builtin
    return True


_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _facts(sem: SemanticModel) -> dict:
    got = _FACTS.get(sem)
    if got is None:
        got = _FACTS[sem] = {"spelled": "oftmax" in sem.text}
    return got


# ``x = <dotted name ending in softmax>`` ending its line: a softmax function assigned, not called
_FUNCTION_HELD = re.compile(r"=[ \t]*[\w.]*softmax[ \t]*(?:#.*)?$", re.M)


def _is_softmax_module_class(q: str) -> bool:
    return N.is_softmax_class(q) or N.is_log_softmax_class(q)


def _module_level_aliases(sem: SemanticModel, test: Callable[[str], bool]) -> tuple[str, ...]:
    """The names bound at module level to what ``test`` accepts by qualified name: an
    import of it under another name, an assignment of it (``CE = nn.CrossEntropyLoss``)."""
    out = set()
    for name, bs in sem.module_scope.bindings.items():
        for b in bs:
            q = None
            if b.kind in (BindingKind.IMPORT, BindingKind.FROM_IMPORT):
                q = {b.qualname} if b.qualname else set()
            elif b.kind is BindingKind.ASSIGNMENT and isinstance(b.value, (ast.Name, ast.Attribute)):
                q = sem.qualnames(b.value)
            if q and any(test(x) for x in q):
                out.add(name)
    return tuple(sorted(out))


def softmax_holders(sem: SemanticModel) -> Optional[frozenset]:
    """The names (last part: ``sm`` for ``self.sm``) that may hold an ``nn.Softmax`` /
    ``nn.LogSoftmax`` module object, or None when a module object goes somewhere this
    cheap look cannot follow (then every callee is examined).  Only a shortcut: a callee
    whose name is not among them cannot be such a module (its origins never reach one)."""
    facts = _facts(sem)
    if "holders" in facts:
        return facts["holders"]
    holders: Optional[set] = set()
    if "Softmax" in sem.text:
        pending = []
        # the constructor calls: by the class's name, or a name bound to the class here
        # (``from torch.nn import Softmax as SM``, ``SM = nn.Softmax``)
        names = ("LogSoftmax", "Softmax") + _module_level_aliases(sem, _is_softmax_module_class)
        for c in sem.find_named((ast.Call,), names, keep=callee_hits(names)):
            if module_kind(sem, c) is None:
                continue
            p = sem.parent(c)
            if isinstance(p, ast.Call) and (p.func is c or any(N.is_sequential(q) for q in sem.qualnames(p.func))):
                continue  # applied at once, or an element of a Sequential
            pending.append(c)
        seen: set = set()
        while pending and holders is not None:
            v = pending.pop()
            if v in seen:
                continue
            seen.add(v)
            p = sem.parent(v)
            if isinstance(p, (ast.Assign, ast.AnnAssign)) and p.value is v:
                for t in (p.targets if isinstance(p, ast.Assign) else [p.target]):
                    if isinstance(t, ast.Name):
                        name = t.id
                    elif isinstance(t, ast.Attribute):
                        name = t.attr
                    else:
                        holders = None
                        break
                    if name not in holders:
                        holders.add(name)
                        # aliases: ``self.sm = self.act`` / ``sm = act``
                        for a in sem.find(ast.Assign, ast.AnnAssign, containing=(name,)):
                            val = a.value
                            last = val.id if isinstance(val, ast.Name) else val.attr if isinstance(val, ast.Attribute) else None
                            if last == name:
                                pending.append(val)
            else:
                holders = None
    text = sem.text
    if holders is not None and ("softmax\n" in text or "softmax\r" in text or "softmax  #" in text
                                or "softmax #" in text) and _FUNCTION_HELD.search(text):
        # ``self.softmax = nn.functional.softmax``: the function kept under a name (only
        # the statements where a line assigns a name ending in ``softmax`` are read)
        for a in sem.find(ast.Assign, containing=("softmax",)):
            if isinstance(a.value, (ast.Name, ast.Attribute)) and any(
                N.is_softmax(x) or N.is_log_softmax(x) for x in sem.qualnames(a.value)
            ):
                for t in a.targets:
                    if isinstance(t, ast.Name):
                        holders.add(t.id)
                    elif isinstance(t, ast.Attribute):
                        holders.add(t.attr)
    facts["holders"] = frozenset(holders) if holders is not None else None
    return facts["holders"]


def soft(sem: SemanticModel, node) -> Optional[Soft]:
    """``node`` as a (log-)softmax application, else None."""
    if not isinstance(node, ast.Call) or not _facts(sem)["spelled"]:
        return None
    func = node.func
    q = sem.qualnames(func)
    if any(N.is_softmax(x) or N.is_log_softmax(x) for x in q):
        inp, dim = arg_of(sem, node, "input", 0), arg_of(sem, node, "dim", 1)
        if inp is None:
            return None
        return Soft(node, any(N.is_log_softmax(x) for x in q), inp, dim)
    # ``torch.exp(F.log_softmax(z, 1))``, ``z.log_softmax(1).exp()``: the probabilities
    if "torch.exp" in q or (not q and isinstance(func, ast.Attribute) and func.attr == "exp"):
        inner = func.value if not q else node.args[0] if len(node.args) == 1 and not node.keywords else None
        s = soft(sem, inner) if q or (not node.args and not node.keywords) else None
        return Soft(node, False, s.input, s.dim) if s is not None and s.log and s.input is not None else None
    if isinstance(func, ast.Attribute) and func.attr in ("softmax", "log_softmax") and not q and is_tensor_receiver(
        sem, func.value
    ):
        dim = arg_of(sem, node, "dim", 0)
        # Tensor.softmax(dim): the dim is a literal int (``obj.softmax(x)`` may be any method)
        if dim is None or int_code(dim) is None:
            return None
        if len(node.args) > 2 or any(k.arg not in ("dim", "dtype") for k in node.keywords):
            return None
        return Soft(node, func.attr == "log_softmax", func.value, dim)
    # a Softmax module object applied: nn.Softmax(1)(z), self.sm(z), sm(z)
    kinds = []
    if isinstance(func, ast.Call):
        kinds = [module_kind(sem, func)]
    elif isinstance(func, (ast.Name, ast.Attribute)) and not q:
        holders = softmax_holders(sem)
        if holders is not None and (func.id if isinstance(func, ast.Name) else func.attr) not in holders:
            return None
        origins = sem.origins(func)
        fq = {o.qualname for o in origins if o.kind is OriginKind.IMPORT}
        if origins and len(fq) == len(origins) and all(N.is_softmax(x) or N.is_log_softmax(x) for x in fq) and (
            len({N.is_log_softmax(x) for x in fq}) == 1
        ):
            inp, dim = arg_of(sem, node, "input", 0), arg_of(sem, node, "dim", 1)
            if inp is None:
                return None
            return Soft(node, any(N.is_log_softmax(x) for x in fq), inp, dim)
        kinds = [module_kind(sem, o.node) if o.kind is OriginKind.VALUE else None for o in origins]
    if kinds and all(k is not None for k in kinds) and len({k[0] for k in kinds}) == 1:
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            return None
        dims = {dim_code(sem, k[1]) for k in kinds}
        return Soft(node, kinds[0][0], node.args[0], kinds[0][1] if len(dims) == 1 else None)
    return None


# =========================================================================== models
def class_model(sem: SemanticModel, cls: ast.ClassDef) -> Optional[Model]:
    """A same-file ``nn.Module`` subclass whose ``forward`` ends with a (log-)softmax: one
    ``return`` (the last statement, also of a ``with`` block that ends ``forward``, not
    inside a branch on ``self.training`` or a flag) of
    a softmax, of a name assigned a softmax right above it, or of ``self.X(...)`` where
    ``self.X`` is an ``nn.Sequential`` ending with ``nn.Softmax``."""
    bases = sem.base_qualnames(cls)
    if any(N.is_module_base(q) for q in bases):
        base = None
    elif bases and not any(N.is_torch(q) for q in bases):
        # a LightningModule, or a class of another module (a user's base model): a module
        # whose framework or base class may use the outputs where this file cannot see
        base = next((q for q in sorted(bases) if N.is_lightning_module(q)), sorted(bases)[0])
    elif _has_unresolved_base(sem, cls):
        base = sem.segment(cls.bases[0])
    else:
        return None
    forward = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    if forward is None or not forward.body:
        return None
    rets = sem.returns(forward)
    body = forward.body
    last = body[-1]
    while isinstance(last, ast.With) and last.body:
        body = last.body  # (``with g.local_scope(): ...; return F.softmax(...)``: a DGL model)
        last = body[-1]
    if len(rets) != 1 or not isinstance(last, ast.Return) or last.value is None:
        return None
    ret = last
    name = f"{cls.name}.forward"
    if isinstance(ret.value, ast.Tuple):
        got = _tuple_model(sem, cls, forward, ret, name)
        return _based(got, base) if got is not None else None
    s = soft(sem, ret.value)
    if s is not None and s.input is not None:
        def removal(view, ret=ret, s=s):
            return replace_expr(view, ret, s.node, view.node(s.input))

        return _based(Model(cls, name, s, s.node, removal, cls, _softmax_attrs(sem, cls, s)), base)
    # x = F.softmax(h, 1); return x
    if isinstance(ret.value, ast.Name) and len(body) >= 2:
        prev = body[-2]
        if (
            isinstance(prev, ast.Assign) and len(prev.targets) == 1 and isinstance(prev.targets[0], ast.Name)
            and prev.targets[0].id == ret.value.id and alone_on_lines(sem, prev)
        ):
            s = soft(sem, prev.value)
            if s is not None and s.input is not None:
                same = isinstance(s.input, ast.Name) and s.input.id == ret.value.id

                def removal(view, prev=prev, ret=ret, s=s, same=same):
                    inner = None if same else (ret.value, view.node(s.input))
                    return remove_statement(view, prev, ret, inner)

                edits = () if same and not trailing_comment(sem, prev) else (ret.lineno,)
                return _based(Model(cls, name, s, s.node, removal, cls, _softmax_attrs(sem, cls, s), lines=edits), base)
    # return self.net(h) where self.net = nn.Sequential(..., nn.Softmax(1)); also h = self.net(h); return h
    v = ret.value
    if isinstance(v, ast.Name) and len(body) >= 2:
        prev = body[-2]
        if (isinstance(prev, ast.Assign) and len(prev.targets) == 1 and isinstance(prev.targets[0], ast.Name)
                and prev.targets[0].id == v.id):
            v = prev.value
    seq = _head_seq(sem, cls, v)
    return _based(seq, base) if seq is not None else None


def _head_seq(sem, cls, v) -> Optional[Model]:
    """``self.net(h)`` (or ``self.net.forward(h)``) where ``self.net =
    nn.Sequential(..., nn.Softmax(1))``, the one read of that attribute (besides the
    ``self.net.add_module(...)`` statements that build it): the Sequential's model."""
    f = v.func if isinstance(v, ast.Call) else None
    if isinstance(f, ast.Attribute) and f.attr == "forward" and isinstance(f.value, ast.Attribute):
        f = f.value
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and sem.self_class(f.value) is cls:
        attr = f.attr
        vals = sem.class_info(cls).attrs.get(attr) or []
        if len(vals) == 1 and vals[0][1] is not None:
            seq = seq_model(sem, vals[0][1])
            if seq is not None and _self_attr_reads(sem, cls, attr) != 1 + len(seq.built_by):
                seq = None
            if seq is not None:
                seq.name = f"{cls.name}.{attr}"
                seq.key, seq.cls = cls, cls
                seq.softmax_attrs = frozenset({attr})
                return seq
    return None


def _tuple_model(sem, cls, forward, ret, name) -> Optional[Model]:
    """``return probs, classes``: the one element that is a (log-)softmax (directly, a
    name assigned one once in forward's own block, or a Sequential head).  Report only."""
    elts = ret.value.elts
    if any(isinstance(e, ast.Starred) for e in elts):
        return None
    found = []
    for i, e in enumerate(elts):
        v = e
        if isinstance(e, ast.Name):
            bs = sem.reaching(e)
            if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or bs[0].value is None:
                continue
            if not any(s is bs[0].stmt for s in forward.body):
                continue
            v = bs[0].value
        s = soft(sem, v)
        if s is not None and s.input is not None:
            found.append((i, Model(cls, name, s, s.node, None, cls, _softmax_attrs(sem, cls, s), index=i)))
            continue
        m = _head_seq(sem, cls, v)
        if m is not None:
            m.removal, m.index = None, i
            found.append((i, m))
    if len(found) != 1:
        return None
    return found[0][1]


def _peel_module_in(sem: SemanticModel, call: ast.Call):
    """The module a call returns itself (``net.to(device)``, ``DataParallel(net)``) or a
    copy of (``copy.deepcopy(net)``: the same class), else None."""
    if sem.method_name(call) in MODULE_SELF:
        return sem.receiver(call)
    if call.args and any(_wraps_module(q) or q == "copy.deepcopy" for q in sem.qualnames(call.func)):
        return call.args[0]
    return None


def _module_peel(sem: SemanticModel) -> Callable:
    return lambda call: _peel_module_in(sem, call)


def _foreign(m: Model, other: SemanticModel, via: str = "") -> Model:
    """``m``, a model of the file ``other``, as seen from another file (report only)."""
    import os

    return Model(m.key, m.name, Soft(m.soft.node, m.soft.log, None, None), m.anchor, None,
                 where=os.path.basename(other.path) + via, lines=(other.segment(m.soft.node),), index=m.index)


def _foreign_model(sem: SemanticModel, call: ast.Call, via: str = "") -> Optional[Model]:
    """The model ``call`` builds when its callee is a class (or a builder function) that
    ``sem``'s file imports from a sibling module and whose ``forward`` ends with a
    (log-)softmax."""
    other, bs = sem.sibling_definitions(call.func)
    if len(bs) != 1 or bs[0].kind not in (BindingKind.CLASS, BindingKind.FUNCTION):
        return None
    if bs[0].kind is BindingKind.CLASS:
        m = class_model(other, bs[0].node)
    else:
        m = _built_model(other, bs[0].node)
    return None if m is None else _foreign(m, other, via)


def _built_model(sem: SemanticModel, fdef) -> Optional[Model]:
    """The model a builder function returns on every path (a same-file class whose
    forward ends with a softmax, each class of a registry it calls, or an
    ``nn.Sequential`` ending with one), else None."""
    found = None
    rets = sem.returns(fdef)
    if not rets:
        return None
    for r in rets:
        got = None
        for o in (sem.origins(r) if r is not None else []):
            if o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call):
                return None
            # a class, or each class of a registry (``__factory[name](num_classes)`` of
            # ``__factory = {'cnn': ConvNet}``); else an ``nn.Sequential``
            cs = sem.callees(o.node)
            for m in [class_model(sem, c) if isinstance(c, ast.ClassDef) else None for c in cs] if cs \
                    else [seq_model(sem, o.node)]:
                if m is None or (got is not None and got.soft.log != m.soft.log):
                    return None
                got = m
        if got is None or (found is not None and found.soft.log != got.soft.log):
            return None
        found = got
    if found is not None and found.name == "nn.Sequential":
        found.name = f"{fdef.name}()"
    return found


def _based(m: Model, base: Optional[str]) -> Model:
    m.base = base
    return m


def _has_unresolved_base(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    """A base that is neither a same-file class nor a known name (``class Net(Base)``
    with ``Base`` from ``from .base import *``)."""
    for b in cls.bases:
        if sem.class_def(b) is None and not sem.qualnames(b):
            return True
    return False


def _softmax_attrs(sem: SemanticModel, cls: ast.ClassDef, s: Soft) -> frozenset:
    """``self`` attributes of ``cls`` that hold a softmax module (``self.softmax``)."""
    out = set()
    for attr, vals in sem.class_info(cls).attrs.items():
        if any(v is not None and module_kind(sem, v) is not None for _, v, _ in vals):
            out.add(attr)
    f = s.node.func if isinstance(s.node, ast.Call) else None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and sem.self_class(f.value) is cls:
        out.add(f.attr)
    return frozenset(out)


def _self_attr_reads(sem: SemanticModel, cls: ast.ClassDef, attr: str) -> int:
    n = 0
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Name) and sem.self_class(node.value) is cls:
                n += 1
    return n


def seq_model(sem: SemanticModel, call) -> Optional[Model]:
    """``nn.Sequential(..., nn.Softmax(dim=1))`` (positional modules only), or an
    ``nn.Sequential`` whose last module is added so: ``seq.add_module("sm", nn.Softmax(1))``
    (see :func:`_added_modules`)."""
    if not (isinstance(call, ast.Call) and any(N.is_sequential(q) for q in sem.qualnames(call.func))):
        return None
    if not call.keywords and len(call.args) == 1 and isinstance(call.args[0], ast.Starred):
        got = _last_appended(sem, call)
        if got is None:
            return None
        stmt, add = got
        return _removable_last(sem, call, stmt, add.args[0])
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if len(call.args) == 1 and isinstance(call.args[0], ast.Call) \
            and sem.call_qualname(call.args[0]) in ("collections.OrderedDict", "typing.OrderedDict"):
        return _ordered_dict_model(sem, call)
    added = _added_modules(sem, call)
    if added is None:
        return None
    if added:
        stmt, add = added[-1]
        m = _removable_last(sem, call, stmt, add.args[1])
        return None if m is None else dataclasses.replace(m, built_by=frozenset(id(a.func) for _, a in added))
    if len(call.args) < 2:
        return None
    k = module_kind(sem, call.args[-1])
    if k is None:
        return None
    log, dim = k
    last = call.args[-1]

    def removal(view, call=call):
        return drop_last_argument(view, call)

    return Model(call, "nn.Sequential", Soft(last, log, None, dim), last, removal)


def _ordered_dict_model(sem: SemanticModel, call: ast.Call) -> Optional[Model]:
    """``nn.Sequential(OrderedDict([("fc", nn.Linear(...)), ("out", nn.LogSoftmax(dim=1))]))``:
    the last named module of the literal list (report only: no removal is offered)."""
    od = call.args[0]
    if od.keywords or len(od.args) != 1 or not isinstance(od.args[0], (ast.List, ast.Tuple)):
        return None
    items = od.args[0].elts
    if len(items) < 2 or not all(isinstance(e, ast.Tuple) and len(e.elts) == 2 and isinstance(e.elts[0], ast.Constant)
                                 and isinstance(e.elts[0].value, str) for e in items):
        return None
    if len({e.elts[0].value for e in items}) != len(items):
        return None  # (a repeated key keeps its first place: the last entry is not the last module)
    last = items[-1].elts[1]
    k = module_kind(sem, last)
    if k is None:
        return None
    log, dim = k
    return Model(call, "nn.Sequential", Soft(last, log, None, dim), last, None)


def _removable_last(sem: SemanticModel, call: ast.Call, stmt: ast.stmt, module) -> Optional[Model]:
    """The Sequential built by ``call`` whose last module ``module`` is added by the
    statement ``stmt`` alone (``seq.add_module("sm", nn.Softmax(1))``,
    ``layers.append(nn.Softmax(1))``): the fix removes that statement, and the statement
    after it gets the removed line's trailing comment (the last statement of its block
    is removed only when it has no comment: else report only)."""
    k = module_kind(sem, module)
    nxt = next_statement(sem, stmt)
    if k is None:
        return None
    log, dim = k

    def removal(view, stmt=stmt, nxt=nxt):
        if nxt is None:  # (the block keeps the statement that built the Sequential)
            return {view.statement(stmt): _cst().RemoveFromParent()}
        return remove_statement(view, stmt, nxt)

    if nxt is None and has_comment_lines(sem, stmt):
        removal = None  # the last statement of its block: its comments would have nowhere to go (report only)

    edits = (nxt.lineno,) if nxt is not None and trailing_comment(sem, stmt) else ()
    return Model(call, "nn.Sequential", Soft(module, log, None, dim), module, removal, lines=edits)


def _last_appended(sem: SemanticModel, call: ast.Call) -> Optional[tuple]:
    """``layers = [...]``, ``layers.append(m)`` statements, ``nn.Sequential(*layers)``: the
    ``(statement, call)`` of the last ``append``, a statement of the block that binds the
    list and builds the Sequential, after every other append (those may be in loops
    between them): its module ends the Sequential.  None when the list may hold anything
    else: bound more than once, read or changed in any other way (anywhere, before or
    after), or not ended by such a statement."""
    name = call.args[0].value
    if not isinstance(name, ast.Name):
        return None
    bs = sem.reaching(name)
    if len(bs) != 1:
        return None
    b = bs[0]
    if b.kind is not BindingKind.ASSIGNMENT or not isinstance(b.value, ast.List) or len(b.scope.get(name.id)) != 1:
        return None
    assign, built = b.stmt, sem.statement_of(call)
    block = sem.block_of(assign) if assign is not None else None
    if block is None or not any(s is built for s in block):
        return None
    at = {id(s): i for i, s in enumerate(block)}
    appends = []  # (index in the block of the statement that holds it, statement, call)
    for ref in sem.references(b):
        if ref is name:
            continue
        a = sem.parent(ref)
        c = sem.parent(a)
        st = sem.parent(c)
        if not (isinstance(a, ast.Attribute) and a.value is ref and a.attr == "append" and isinstance(c, ast.Call)
                and c.func is a and len(c.args) == 1 and not isinstance(c.args[0], ast.Starred) and not c.keywords
                and isinstance(st, ast.Expr) and st.value is c):
            return None
        top = st  # the statement of the block that holds it (a loop that appends, say)
        while top is not None and id(top) not in at:
            top = sem.parent(top)
        if top is None or not at[id(assign)] < at[id(top)] < at[id(built)]:
            return None
        appends.append((at[id(top)], st, c))
    if not appends:
        return None
    i, st, c = max(appends, key=lambda t: t[0])
    # the last one appended: a statement of the block itself, after every other
    return (st, c) if block[i] is st else None


# torchvision classifiers whose forward returns the output of this attribute as is
_TV_HEADS = (("resnet", "fc"), ("resnext", "fc"), ("wide_resnet", "fc"), ("regnet_", "fc"), ("shufflenet_v2", "fc"),
             ("densenet", "classifier"), ("mobilenet_v", "classifier"), ("efficientnet_", "classifier"),
             ("vgg", "classifier"), ("alexnet", "classifier"), ("mnasnet", "classifier"))

_MUTATORS = frozenset({"add_module", "register_module", "append", "extend", "insert", "pop", "__setitem__",
                       "__delitem__", "__iadd__"})


def _rebinds_itself(sem: SemanticModel, b) -> bool:
    """``b`` binds its name to the same module under it: ``model = model.to(device)``,
    or wrapped: ``model = torch.compile(model)``."""
    v = b.value if b.kind is BindingKind.ASSIGNMENT else None
    if not isinstance(v, ast.Call):
        return False
    if sem.method_name(v) in MODULE_SELF:
        inner = sem.receiver(v)
    elif v.args and any(_wraps_module(q) for q in sem.qualnames(v.func)):
        inner = v.args[0]
    else:
        return False
    return isinstance(inner, ast.Name) and inner.id == b.name


def _added_modules(sem: SemanticModel, call: ast.Call) -> Optional[list]:
    """The ``(statement, call)`` of each ``seq.add_module(name, module)`` that adds to the
    ``nn.Sequential`` built by ``call`` (``seq = nn.Sequential(...)``), in order: [] when
    nothing is added, None when the modules cannot be told this way (the sequence is
    changed otherwise, an addition is not a statement of the block that builds it, or
    the name is bound again).  Only a name bound once, in the block of its additions."""
    p = sem.parent(call)
    if isinstance(p, ast.Assign) and p.value is call and len(p.targets) == 1 and isinstance(p.targets[0], ast.Attribute):
        return _added_to_attribute(sem, p)
    if not (isinstance(p, ast.Assign) and p.value is call and len(p.targets) == 1 and isinstance(p.targets[0], ast.Name)):
        return []  # not kept in a name: nothing can add to it by name
    b = sem.target_binding(p.targets[0])
    if b is None:
        return None
    others = [x for x in b.scope.get(p.targets[0].id) if x is not b]
    if others:
        # ``model = model.to(device)``: the same module under the same name; then nothing
        # may be added to it, under any of them
        if not all(_rebinds_itself(sem, x) for x in others) or any(
                isinstance(sem.parent(r), ast.Attribute) and sem.parent(r).attr in _MUTATORS
                for x in [b, *others] for r in sem.references(x)):
            return None
        return []
    return _additions(sem, sem.references(b), p, sem.block_of(p))


def _additions(sem: SemanticModel, refs, assign: ast.stmt, block: Optional[list]) -> Optional[list]:
    """The ``(statement, call)`` of each ``<ref>.add_module(name, module)`` among
    ``refs`` (the reads of the Sequential ``assign`` builds), in the order of ``block``
    (``assign``'s): each a statement of that block after ``assign``; None when the
    sequence is changed any other way (another mutator, ``seq[1] = ...``, ``del
    seq[1]``) or an addition stands anywhere else."""
    at = {id(s): i for i, s in enumerate(block)} if block is not None else {}
    out = []
    for ref in refs:
        a = sem.parent(ref)
        if isinstance(a, ast.Subscript) and a.value is ref and not isinstance(a.ctx, ast.Load):
            return None  # ``seq[1] = ...``, ``del seq[1]``
        if not (isinstance(a, ast.Attribute) and a.value is ref and a.attr in _MUTATORS):
            continue
        c = sem.parent(a)
        stmt = sem.parent(c)
        if a.attr not in ("add_module", "register_module") or not (
            isinstance(c, ast.Call) and c.func is a and len(c.args) == 2 and not c.keywords
            and isinstance(stmt, ast.Expr) and stmt.value is c and id(stmt) in at and at[id(stmt)] > at[id(assign)]
        ):
            return None
        out.append((stmt, c))
    out.sort(key=lambda t: at[id(t[0])])
    return out


def _added_to_attribute(sem: SemanticModel, assign: ast.Assign) -> Optional[list]:
    """:func:`_added_modules` of ``self.fc = nn.Sequential()`` in a method of a class,
    followed by ``self.fc.add_module(name, module)`` statements of the same block: the
    class stores that attribute only there, and changes it nowhere else (every
    ``self.fc.<mutator>`` of the class is one of those statements)."""
    t = assign.targets[0]
    if not (isinstance(t.value, ast.Name) and sem.self_class(t.value) is not None):
        return []  # (an attribute of something else: nothing known adds to it)
    cls = sem.self_class(t.value)
    stores = sem.class_info(cls).attrs.get(t.attr, ())
    if len(stores) != 1 or stores[0][0] is not assign:
        return None
    block = sem.block_of(assign)
    if block is None:
        return None
    refs = [node for node in ast.walk(cls)
            if isinstance(node, ast.Attribute) and node.attr == t.attr and node is not t
            and isinstance(node.value, ast.Name) and sem.self_class(node.value) is cls]
    return _additions(sem, refs, assign, block)


# =========================================================================== LibCST side of the fixes
def _cst():
    import libcst as cst

    return cst


def cst_paren(node):
    cst = _cst()
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString, cst.List,
             cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp, cst.SetComp, cst.Set, cst.ConcatenatedString,
             cst.FormattedString)
    if node.lpar or isinstance(node, atoms):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def comments_in(node) -> list:
    cst = _cst()
    from ..cstutil import walk

    return [n for n in walk(node) if isinstance(n, cst.Comment)]


def replace_inside(node, mapping: dict):
    """``node`` with the nodes of ``mapping`` (by identity) replaced."""
    cst = _cst()
    ids = {id(k): v for k, v in mapping.items()}

    class T(cst.CSTTransformer):
        def on_leave(self, original, updated):
            return ids.get(id(original), updated)

    return node.visit(T())


def _comment_lines(comments) -> list:
    cst = _cst()
    return [cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(c.value)) for c in comments]


def replace_expr(view, stmt: ast.stmt, old: ast.AST, new) -> dict:
    """Replace the expression ``old`` (inside statement ``stmt``) by the LibCST node
    ``new``.  Comments inside ``old`` that ``new`` does not hold are kept: they move to
    the lines above the statement."""
    old_c = view.node(old)
    kept = {id(c) for c in comments_in(new)}
    lost = [c for c in comments_in(old_c) if id(c) not in kept]
    if not lost:
        return {old_c: new}
    line = view.statement(stmt)
    updated = replace_inside(line, {old_c: new})
    return {line: updated.with_changes(leading_lines=[*line.leading_lines, *_comment_lines(lost)])}


def remove_statement(view, stmt: ast.stmt, nxt: ast.stmt, inner=None) -> dict:
    """Remove simple statement ``stmt``; its blank and comment lines, and its trailing
    comment, move to the statement after it, ``nxt`` (in which ``inner`` = (ast node,
    LibCST replacement) is replaced too, if given)."""
    cst = _cst()
    line = view.statement(stmt)
    after = view.statement(nxt)
    new_after = after
    if inner is not None:
        new_after = replace_inside(after, {view.node(inner[0]): inner[1]})
    carried = list(line.leading_lines)
    trailing = line.trailing_whitespace.comment if isinstance(line, cst.SimpleStatementLine) else None
    kept = {id(c) for c in comments_in(new_after)}
    lost = [c for st in getattr(line, "body", ()) for c in comments_in(st) if id(c) not in kept]
    extra = _comment_lines(lost)
    if trailing is not None:
        tw = getattr(new_after, "trailing_whitespace", None)
        if isinstance(new_after, cst.SimpleStatementLine) and tw is not None and tw.comment is None:
            new_after = new_after.with_changes(
                trailing_whitespace=tw.with_changes(whitespace=line.trailing_whitespace.whitespace, comment=trailing)
            )
        else:
            extra.extend(_comment_lines([trailing]))
    new_after = new_after.with_changes(leading_lines=[*carried, *extra, *new_after.leading_lines])
    return {line: cst.RemoveFromParent(), after: new_after}


def drop_last_argument(view, call_ast: ast.Call) -> dict:
    """``nn.Sequential(a, b, nn.Softmax(1))`` -> ``nn.Sequential(a, b)``; the layout around
    the last argument (trailing comma, closing line) is kept, and so is every comment: a
    comment on the removed element's line moves to the line that now ends the list."""
    cst = _cst()
    call = view.node(call_ast)
    args = list(call.args)
    last, prev = args[-1], args[-2]
    comma = last.comma if isinstance(last.comma, cst.Comma) else None
    ws_last = comma.whitespace_after if comma is not None else last.whitespace_after_arg
    pws = prev.comma.whitespace_after if isinstance(prev.comma, cst.Comma) else None
    P = cst.ParenthesizedWhitespace
    if isinstance(pws, P) or isinstance(ws_last, P):
        pf = pws.first_line if isinstance(pws, P) else None
        lf = ws_last.first_line if isinstance(ws_last, P) else None
        p_empty = list(pws.empty_lines) if isinstance(pws, P) else []
        l_empty = list(ws_last.empty_lines) if isinstance(ws_last, P) else []
        extra = []
        if pf is not None and pf.comment is not None:
            first = pf
            if lf is not None and lf.comment is not None:
                indent = pws.last_line if isinstance(pws, P) else cst.SimpleWhitespace("")
                extra = [cst.EmptyLine(indent=True, whitespace=indent, comment=lf.comment)]
        elif lf is not None and lf.comment is not None:
            first = lf
        else:
            first = pf or lf
        has_comments = any(ln.comment is not None for ln in [*p_empty, *l_empty, *extra]) or first.comment is not None
        if isinstance(ws_last, P):
            ws = P(first_line=first, empty_lines=[*p_empty, *extra, *l_empty], indent=ws_last.indent,
                   last_line=ws_last.last_line)
        elif has_comments:
            ws = P(first_line=first, empty_lines=[*p_empty, *extra], indent=True, last_line=cst.SimpleWhitespace(""))
        else:
            ws = ws_last
    else:
        ws = ws_last
    if comma is not None:
        base = prev.comma if isinstance(prev.comma, cst.Comma) else comma
        new_prev = prev.with_changes(comma=base.with_changes(whitespace_after=ws))
    else:
        new_prev = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=ws)
    new_call = call.with_changes(args=[*args[:-2], new_prev])
    kept = {c.value for c in comments_in(new_call)}
    lost = [c for c in comments_in(call) if c.value not in kept]
    if lost:  # comments inside the removed element itself
        ws2 = new_prev.comma.whitespace_after if comma is not None else new_prev.whitespace_after_arg
        if isinstance(ws2, P):
            ws2 = ws2.with_changes(empty_lines=[*ws2.empty_lines, *(
                cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(c.value)) for c in lost)])
        else:
            ws2 = P(first_line=cst.TrailingWhitespace(comment=cst.Comment(lost[0].value)), empty_lines=[
                cst.EmptyLine(indent=True, comment=cst.Comment(c.value)) for c in lost[1:]],
                indent=True, last_line=cst.SimpleWhitespace(""))
        if comma is not None:
            new_prev = new_prev.with_changes(comma=new_prev.comma.with_changes(whitespace_after=ws2))
        else:
            new_prev = new_prev.with_changes(whitespace_after_arg=ws2)
        new_call = call.with_changes(args=[*args[:-2], new_prev])
    return {call: new_call}


def add_softmax(view, use: ast.AST, dim: ast.AST):
    """``use`` -> ``use.softmax(dim=D)`` (LibCST node and replacement)."""
    cst = _cst()
    node = view.node(use)
    new = cst.Call(
        func=cst.Attribute(value=cst_paren(node), attr=cst.Name("softmax")),
        args=[cst.Arg(keyword=cst.Name("dim"), value=view.node(dim) if not isinstance(dim, str) else cst.parse_expression(dim),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))],
    )
    return node, new


def rename_callee(view, func: ast.AST, new_name: str) -> dict:
    """``nn.CrossEntropyLoss`` -> ``nn.NLLLoss`` in the user's own spelling."""
    cst = _cst()
    node = view.node(func)
    if isinstance(node, cst.Attribute):
        return {node.attr: cst.Name(new_name)}
    return {node: cst.Name(new_name)}


# callees that take a model and a loss without computing that loss on its output
_NOT_TRAINERS = ("builtins.", "torch.", "logging.", "wandb.", "mlflow.", "tensorboard", "copy.", "pickle.", "json.")


_PASSED_HITS: dict = {}


def _passed_hits(words: tuple):
    """A ``find_named`` ``keep``: the hits where a name stands as an argument of its own
    (``f(Net, criterion=nn.CrossEntropyLoss)``): after ``(``, ``,`` or ``=`` (past its
    dotted prefix) and before ``,`` or ``)``; not an annotation, a call or an import."""
    got = _PASSED_HITS.get(words)
    if got is None:
        def got(text: str, start: int, end: int, hits) -> list:
            out = []
            for h in hits:
                w = next((w for w in words if text.startswith(w, h)), None)
                if w is None:
                    continue
                k = h + len(w)
                while k < end and text[k] in " \t\r\n\\#":
                    if text[k] == "#":  # a comment before the line break
                        nl = text.find("\n", k, end)
                        k = end if nl < 0 else nl
                    k += 1
                if k >= end or text[k] not in ",)":
                    continue
                j = h
                while j > start and (text[j - 1].isalnum() or text[j - 1] in "._"):
                    j -= 1
                while j > start and text[j - 1] in " \t\r\n\\":
                    j -= 1
                if j > start and text[j - 1] in "(,=" and not text.startswith("==", j - 2):
                    out.append(h)
            return out

        _PASSED_HITS[words] = got
    return got


def _argument_of(sem: SemanticModel, e) -> Optional[ast.Call]:
    """The call ``e`` is an argument of (positional or keyword), if any."""
    p = sem.parent(e)
    if isinstance(p, ast.keyword):
        p = sem.parent(p)
        return p if isinstance(p, ast.Call) else None
    if isinstance(p, ast.Call) and any(a is e for a in p.args):
        return p
    return None


# =========================================================================== the analysis
# the spellings of the negative log-likelihood losses (``F.nll_loss``, ``nn.NLLLoss``)
_NLL_WORDS = ("nll_loss", "NLLLoss")


# what gives the same tensor's storage (a change to it changes the tensor)
_VIEWS = frozenset({"data", "T", "mT", "H", "mH", "real", "detach", "view", "view_as", "reshape", "reshape_as",
                    "expand", "expand_as", "squeeze", "unsqueeze", "transpose", "permute", "narrow", "select",
                    "flatten", "contiguous", "unflatten", "as_strided", "unbind", "split", "chunk", "diagonal"})
# torch.nn.functional activations whose ``inplace`` may come by position
_INPLACE_BY_POSITION = frozenset({"relu", "relu6", "elu", "selu", "celu", "leaky_relu", "hardtanh", "rrelu",
                                  "threshold", "hardswish", "hardsigmoid", "silu", "mish", "alpha_dropout",
                                  "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"})


class Analysis:
    """Per-file facts shared by both rules (one per Context); ``protos`` is computed once."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.sem: SemanticModel = ctx.sem
        self._protos: Optional[list[Proto]] = None
        self._class_models: dict = {}
        self._seq_models: dict = {}
        self._importer_models: dict = {}  # a parameter's function and name -> importer_models
        self._sites_by_call: dict = {}
        self._ctors: list = []  # the CrossEntropyLoss(...) calls that are not called on the spot
        self._uses: dict = {}  # such a call -> its value_uses
        self._moves: dict = {}  # site call -> (dim-moving calls peeled from its input, a view among them)
        self._dim: Optional[str] = None
        self._sites: Optional[list[Site]] = None

    @classmethod
    def of(cls, ctx) -> "Analysis":
        a = ctx.cache.get("softmax")
        if a is None:
            a = ctx.cache["softmax"] = cls(ctx)
        return a

    def protos(self) -> list[Proto]:
        if self._protos is None:
            self._protos = self._run()
        return self._protos

    # ----------------------------------------------------------------- framework
    def probability_framework(self) -> bool:
        """skorch-like frameworks train modules that output probabilities by design."""
        for bs in self.sem.module_scope.bindings.values():
            for b in bs:
                if b.kind in (BindingKind.IMPORT, BindingKind.FROM_IMPORT) and N.framework_of(b.qualname) == "skorch":
                    return True
        return False

    # ----------------------------------------------------------------- cross-entropy sites
    def sites(self) -> list[Site]:
        if self._sites is None:
            self._sites = self._find_sites()
        return self._sites

    def _find_sites(self) -> list[Site]:
        sem = self.sem
        out: list[Site] = []
        ctors = []
        # the calls of a callee spelled with one of the words (``F.cross_entropy(...)``,
        # ``CE(...)``); an inline loss (``nn.CrossEntropyLoss()(x, y)``) is the call of
        # such a call; only the chunks where a word stands before a ``(`` are parsed
        words = self._ce_words()
        for call in sem.find_named((ast.Call,), words, keep=callee_hits(words)):
            q = sem.qualnames(call.func)
            if any(N.is_cross_entropy_function(x) for x in q):
                self._add_site(out, call, "fn", [], sem.segment(call.func))
            elif any(N.is_cross_entropy_class(x) for x in q):
                p = sem.parent(call)
                if isinstance(p, ast.Call) and p.func is call:
                    self._add_site(out, p, "inline", [call], sem.segment(call.func) + "()")
                else:
                    ctors.append(call)
        self._ctors = ctors
        for ctor in ctors:
            flow = self._uses[ctor] = sem.value_uses(ctor, through=self._loss_through)
            for e in flow.uses:
                p = sem.parent(e)
                label = sem.segment(e)
                if isinstance(p, ast.Attribute) and p.value is e and p.attr == "forward":
                    label, p = sem.segment(p), sem.parent(p)  # ``criterion.forward(out, y)``
                    if not (isinstance(p, ast.Call) and p.func is sem.parent(e)):
                        continue
                elif not (isinstance(p, ast.Call) and p.func is e):
                    continue
                if p not in self._sites_by_call:
                    got, complete = self.loss_ctors(e)
                    if got:
                        self._add_site(out, p, "var", got, label, complete)
        out.extend(self._wrapper_sites(list(out)))
        out.sort(key=lambda s: (s.call.lineno, s.call.col_offset))
        return out

    def _wrapper_sites(self, sites: list[Site]) -> list[Site]:
        """A same-file loss module whose ``forward`` hands one of its parameters, as it is,
        to a cross-entropy (``class FocalLoss(nn.Module): def forward(self, inputs,
        targets): ce = F.cross_entropy(inputs, targets, reduction="none"); ...``): each
        call of an instance of it is a site too, its input the argument for that
        parameter (form ``wrap``: report only, what else the wrapper does with its input
        is not read)."""
        sem = self.sem
        out: list[Site] = []
        done = set()
        for s in sites:
            fn = sem.enclosing_function(s.call)
            if not isinstance(fn, ast.FunctionDef) or fn.name != "forward" or fn in done:
                continue
            cls = sem.parent(fn)
            if not isinstance(cls, ast.ClassDef):
                continue
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
            e = s.input
            while isinstance(e, ast.Call) and (inner := self._peel_passthrough(e)) is not None:
                e = inner
            if not (isinstance(e, ast.Name) and e.id in params[1:]):
                continue  # (a head's ``logits.view(-1, n)``: not its input as it is, not followed)
            origins = sem.sources(s.input, self._peel_passthrough)
            if not origins or any(o.kind is not OriginKind.PARAMETER or o.binding is None
                                  or o.binding.scope.node is not fn for o in origins):
                continue
            names = {o.binding.name for o in origins}
            name = names.pop() if len(names) == 1 else None
            if name not in params or params.index(name) == 0:
                continue  # (``self``, ``*args``, a keyword-only parameter: not followed)
            done.add(fn)
            k = params.index(name) - 1  # its position in a call of the instance
            for ctor in sem.find_named((ast.Call,), (cls.name,)):
                if sem.callee(ctor) is not cls:
                    continue
                for e in sem.value_uses(ctor, through=self._loss_through).uses:
                    call = sem.parent(e)
                    if not (isinstance(call, ast.Call) and call.func is e) or call in self._sites_by_call:
                        continue
                    if any(isinstance(a, ast.Starred) for a in call.args[: k + 1]):
                        continue
                    inp = call.args[k] if k < len(call.args) else sem.keyword(call, name)
                    if inp is None:
                        continue
                    site = Site(call, inp, "wrap", [], sem.segment(e))
                    self._sites_by_call[call] = site
                    out.append(site)
        return out

    def _peel_passthrough(self, call: ast.Call):
        """``x.detach()``, ``x.float()``, ``x.to(...)``: the same values, the same shape."""
        return self.sem.receiver(call) if self.sem.method_name(call) in PASSTHROUGH else None

    def _ce_words(self) -> tuple[str, ...]:
        """The spellings a cross-entropy callee may have here: its own names, and names
        bound at module level to them (``from torch.nn import CrossEntropyLoss as CE``,
        ``CE = nn.CrossEntropyLoss``)."""
        words = {"cross_entropy", "CrossEntropyLoss"}
        words.update(_module_level_aliases(self.sem, lambda x: N.is_cross_entropy_class(x) or N.is_cross_entropy_function(x)))
        return tuple(sorted(words))

    def _add_site(self, out, call, form, ctors, label, complete=True) -> None:
        inp = arg_of(self.sem, call, "input", 0)
        if inp is None or isinstance(inp, ast.Starred):
            return
        site = Site(call, inp, form, ctors, label, complete)
        self._sites_by_call[call] = site
        out.append(site)

    def _loss_through(self, e):
        """``nn.CrossEntropyLoss().to(device)`` is the same loss object."""
        p = self.sem.parent(e)
        if isinstance(p, ast.Attribute) and p.value is e and p.attr in ("to", "cuda", "cpu"):
            gp = self.sem.parent(p)
            if isinstance(gp, ast.Call) and gp.func is p:
                return gp
        return None

    def _peel_loss(self, call: ast.Call):
        if self.sem.method_name(call) in ("to", "cuda", "cpu"):
            return self.sem.receiver(call)
        return None

    def loss_ctors(self, expr) -> tuple[list, bool]:
        """The CrossEntropyLoss constructor calls ``expr`` may hold, and whether those are
        all it may hold (False: a parameter whose other callers are not known); ([],
        False) when it may hold something else."""
        out = []
        complete = True
        for o in self.sem.sources(expr, self._peel_loss, callers=True):
            if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call) and any(
                N.is_cross_entropy_class(q) for q in self.sem.qualnames(o.node.func)
            ):
                out.append(o.node)
            elif o.kind is OriginKind.PARAMETER:
                complete = False  # the known callers' values are among the origins
            else:
                return [], False
        return out, complete and bool(out)

    def peel_input(self, site: Site):
        """The CE input with shape-only wrappers and dim moves peeled: (expr, peeled?);
        the moves are kept for ``lands`` (``crit(out.transpose(1, 2), y)``)."""
        e = site.input
        peeled = False
        moves, reshaped = [], False
        while True:
            if isinstance(e, ast.Subscript) and _rows(e.slice):
                e, peeled = e.value, True  # ``out[train_mask]``, ``out[idx]``, ``out[:n]``: rows, the dims kept
                continue
            if not (isinstance(e, ast.Call) and soft(self.sem, e) is None):
                break
            m = self.sem.method_name(e)
            if m in DIM_MOVES:
                moves.append(e)
            elif m in VIEW:
                reshaped = reshaped or m in RESHAPES
            else:
                break
            e, peeled = self.sem.receiver(e), True
        self._moves[site.call] = (moves, reshaped)
        return e, peeled

    def lands(self, site: Site, s: Soft, ce: bool = False) -> bool:
        """The softmax ``s``'s dim is the loss's class dim once the site's dim moves apply;
        with ``ce`` (a cross-entropy site, whose fix drops the softmax), also a softmax
        (not a log_softmax) over dim 0 of the loss's very input: the class dim of an
        unbatched input, else the batch (``nn.Softmax(dim=0)`` ending a classifier): the
        loss gets no logits either way, and the logits are what it needs."""
        moves, reshaped = self._moves.get(site.call, ((), False))
        if ce and not s.log and not moves and not reshaped and s.dim is not None:
            c = int_code(s.dim)
            if c is not None and int(c) == 0:
                return True
        return lands_on_class(self.sem, s.dim, list(moves), reshaped)

    # ----------------------------------------------------------------- run
    def _run(self) -> list[Proto]:
        out: list[Proto] = []
        sites = self.sites()
        if sites:
            out = self._run_sites(sites)
        return out + self.handed({id(p.node) for p in out}) + self.nll_of_probabilities()

    # ----------------------------------------------------------------- softmax into NLLLoss
    def nll_of_probabilities(self) -> list[Proto]:
        """A softmax (not a log_softmax) fed to ``F.nll_loss`` / an ``NLLLoss``, which
        expect log-probabilities: the loss of probabilities is no negative
        log-likelihood (it goes negative, training stalls).  Right in the call: the fix
        makes it the log_softmax (``F.softmax`` -> ``F.log_softmax``, ``x.softmax(1)`` ->
        ``x.log_softmax(1)``); through a name, or a module object: report only."""
        sem = self.sem
        if not any(self.ctx.has(w) for w in _NLL_WORDS):
            return []
        sites: list[Site] = []
        ctors = []
        for call in sem.find_named((ast.Call,), _NLL_WORDS, keep=callee_hits(_NLL_WORDS)):
            q = sem.qualnames(call.func)
            if q & N.LOSS_NLL_FUNC:
                self._nll_site(sites, call, "fn", sem.segment(call.func))
            elif q & N.LOSS_NLL:
                p = sem.parent(call)
                if isinstance(p, ast.Call) and p.func is call:
                    self._nll_site(sites, p, "inline", sem.segment(call.func) + "()")
                else:
                    ctors.append(call)
        for ctor in ctors:
            for e in sem.value_uses(ctor, through=self._loss_through).uses:
                p = sem.parent(e)
                if isinstance(p, ast.Call) and p.func is e:
                    self._nll_site(sites, p, "var", sem.segment(e))
        out: list[Proto] = []
        models_done: set = set()
        for site in sites:
            e, peeled = self.peel_input(site)
            if isinstance(e, ast.Name):
                bs = sem.reaching(e)
                if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or bs[0].value is None:
                    out.extend(self._nll_of_model(site, models_done))
                    continue
                e, via = bs[0].value, f" (through `{sem.segment(site.input)}`)"
            else:
                via = ""
            s = soft(sem, e)
            if s is None:
                out.extend(self._nll_of_model(site, models_done))
                continue
            if s.log or s.input is None or not self.lands(site, s):
                continue
            msg = (f"`{sem.segment(s.node)}` feeds `{site.label}`{via}, which expects log-probabilities: the loss of"
                   " probabilities is not the negative log-likelihood (it goes negative and training stalls);"
                   " use log_softmax")
            fix = None
            f = s.node.func
            if not via and isinstance(f, ast.Attribute) and f.attr == "softmax":
                def build(view, f=f):
                    return rename_callee(view, f, "log_softmax")

                fix = Fix(build, Safety.SAFE, "make it a log_softmax")
            out.append(Proto(TM501, s.node, msg, fix))
        return out

    def _nll_of_model(self, site: Site, done: set) -> list[Proto]:
        """The models whose output reaches the NLL site ``site`` and that end with a
        softmax (not a log_softmax) over its class dim (``return F.softmax(x, dim=1)``
        in ``forward``, ``nn.Sequential(..., nn.Softmax(dim=1))``): report only (the
        model's other users may want the probabilities; a log_softmax in the model is
        the likely fix).  Once per model."""
        sem = self.sem
        out: list[Proto] = []
        if self.probability_framework():
            return out  # (skorch's classifier takes the log of the probabilities itself)
        for m in self.input_models(site):
            if m is None or m.soft.log or id(m.anchor) in done or not self.lands(site, m.soft):
                continue
            done.add(id(m.anchor))
            where = f" (from {m.where})" if m.where else ""
            code = f"`{m.lines[0]}`" if m.where and m.lines else f"`{sem.segment(m.soft.node)}`"
            out.append(Proto(TM501, site.input if m.where else m.anchor, (
                f"`{m.name}`{where} ends with {code} and its output feeds `{site.label}` (line {site.call.lineno}),"
                " which expects log-probabilities: the loss of probabilities is not the negative log-likelihood"
                " (it goes negative and training stalls); end the model with log_softmax (where its output is"
                " also used as probabilities, take `.exp()` there)")))
        return out

    def _nll_site(self, out: list, call: ast.Call, form: str, label: str) -> None:
        inp = arg_of(self.sem, call, "input", 0)
        if inp is not None and not isinstance(inp, ast.Starred):
            out.append(Site(call, inp, form, [], label))

    def _run_sites(self, sites: list[Site]) -> list[Proto]:
        out: list[Proto] = []
        framework = self.probability_framework()
        taken = set()
        for site in sites:
            p = self.direct(site)
            if p is not None:
                if site.form == "wrap":
                    p.fix = None  # (a loss module of this file: what it does besides is not read)
                out.append(p)
                taken.add(site.call)
        by_model: dict = {}
        foreign: list = []
        crossed = set()  # models one of whose sites gets the softmax's dim moved off the class dim
        for site in sites:
            if site.call in taken or framework:
                continue
            models = [m for m in self.input_models(site) if m is not None]
            for m in models:
                if not self.lands(site, m.soft, ce=True):
                    crossed.add(m)
                elif m.where:
                    foreign.append((site, m))
                else:
                    by_model.setdefault(m, []).append(site)
        said: dict = {}  # the node of an NLLLoss finding -> (its Proto, the other models it receives)
        for model, msites in by_model.items():
            if model in crossed:
                continue
            wrapped = [t for t in msites if t.form == "wrap"]
            msites = [t for t in msites if t.form != "wrap"]
            if wrapped and not msites:
                out.append(self.wrapped_finding(model, wrapped[0]))
                continue
            if model.soft.log:
                for p in self.nll_findings(model, msites, by_model):
                    first = said.get(p.node)
                    if first is None:
                        said[p.node] = (p, [])
                        out.append(p)
                    else:  # the same loss receives another model's log-probabilities: said once
                        first[1].append(model.name)
            else:
                out.extend(self.model_findings(model, msites))
        for p, others in said.values():
            if others:
                p.message += " (it also receives those of " + ", ".join(f"`{n}`" for n in others) + ")"
        seen = set()
        for site, m in foreign:
            if site.call not in seen and m not in crossed:
                seen.add(site.call)
                out.append(self.foreign_finding(site, m))  # (report only, whatever the site)
        return out

    def wrapped_finding(self, model: Model, site: Site) -> Proto:
        """``model``'s (log-)softmax fed only to same-file loss modules that apply a
        cross-entropy to it: report only."""
        soft_code = self.sem.segment(model.soft.node)
        what = "applies log_softmax again: redundant" if model.soft.log else "expects logits"
        return Proto(TM502 if model.soft.log else TM501, model.anchor, (
            f"`{model.name}` ends with `{soft_code}` and its output feeds `{site.label}` (line {site.call.lineno}),"
            f" a loss module whose `forward` hands it to a cross-entropy, which {what}; remove the"
            f" {'log_softmax' if model.soft.log else 'softmax'} by hand (what else the loss module does with its"
            " input is not read)"))

    # ----------------------------------------------------------------- handed to a trainer
    def handed(self, reported: set) -> list[Proto]:
        """A model of this file that ends with a (log-)softmax, handed to code of another
        file together with a cross-entropy loss (``NeuralNetClassifier(Net,
        criterion=nn.CrossEntropyLoss)``, ``create_supervised_trainer(model, opt,
        nn.CrossEntropyLoss())``, ``Trainer(model, criterion)``): that code computes the
        loss on the model's output.  Report only (the loss is not visible here)."""
        sem = self.sem
        out: list[Proto] = []
        done = set(reported)
        for ref in self._ce_refs():
            flow = self._uses.get(ref)
            if flow is None:
                flow = sem.value_uses(ref, through=self._loss_through)
            for e in flow.uses:
                call = _argument_of(sem, e)
                if call is None or id(call) in done or not self._trainer_call(call):
                    continue
                done.add(id(call))
                for a in [*call.args, *(k.value for k in call.keywords)]:
                    if a is e or isinstance(a, ast.Starred):
                        continue
                    for m in self._handed_models(a):
                        if m is None or m.index is not None or id(m.anchor) in done:
                            continue
                        done.add(id(m.anchor))
                        code = TM502 if m.soft.log else TM501
                        callee = sem.segment(call.func)
                        what, fix = (("applies log_softmax again (redundant)", "use NLLLoss or drop the final log_softmax")
                                     if m.soft.log else ("expects logits", "remove the final softmax"))
                        if m.where:  # a model of another file: said where both are handed over
                            out.append(Proto(code, a, (
                                f"`{m.name}` (from {m.where}) ends with `{m.lines[0]}` and the model goes to `{callee}`"
                                f" here with the cross-entropy `{sem.segment(e)}`, which {what}: if `{callee}` computes"
                                f" that loss on the model's output, {fix} in {m.where}")))
                            continue
                        out.append(Proto(code, m.anchor, (
                            f"`{m.name}` ends with `{sem.segment(m.soft.node)}` and goes to `{callee}` (line {call.lineno})"
                            f" with the cross-entropy `{sem.segment(e)}`, which {what}: if `{callee}` computes that loss on"
                            f" the model's output, {fix}")))
        return out

    def _ce_refs(self) -> list:
        """The cross-entropy losses of the file as values: each ``CrossEntropyLoss(...)``
        call, and the class itself where it is not called (``criterion=nn.CrossEntropyLoss``)."""
        sem = self.sem
        self.sites()
        out = list(self._ctors)
        words = tuple(sorted(set(self._ce_words()) - {"cross_entropy"}))
        for n in sem.find_named((ast.Name, ast.Attribute), words, keep=_passed_hits(words)):
            if isinstance(getattr(n, "ctx", None), ast.Load) and any(N.is_cross_entropy_class(q) for q in sem.qualnames(n)):
                if _argument_of(sem, n) is not None:  # passed itself (the screen keeps only such places)
                    out.append(n)
        return out

    def _trainer_call(self, call: ast.Call) -> bool:
        """A call of code this file does not hold that may train: not a builtin, torch,
        logging or an experiment tracker's function, not a same-file function (whose
        body the sites already read)."""
        sem = self.sem
        if sem.callee(call) is not None:
            return False
        qs = sem.qualnames(call.func)
        return not any(q.startswith(_NOT_TRAINERS) for q in qs)

    def _handed_models(self, a) -> list:
        """The models an argument may be: an instance (``models_of``), or a same-file
        module class passed itself (``NeuralNetClassifier(Net, ...)``)."""
        sem = self.sem
        if isinstance(a, ast.Name):
            bs = sem.reaching(a)
            if len(bs) == 1 and bs[0].kind is BindingKind.CLASS and isinstance(bs[0].node, ast.ClassDef):
                return [self.class_model(bs[0].node)]
        return self.models_of(a) if isinstance(a, (ast.Name, ast.Attribute, ast.Call)) else []

    # ----------------------------------------------------------------- direct
    def direct(self, site: Site) -> Optional[Proto]:
        sem = self.sem
        e, peeled = self.peel_input(site)
        s = soft(sem, e)
        if s is not None:
            if s.input is None or not self.lands(site, s, ce=True):
                return None
            stmt = sem.statement_of(site.call)
            inp = s.input

            def build(view, stmt=stmt, s=s, inp=inp, peeled=peeled):
                new = view.node(inp)
                return replace_expr(view, stmt, s.node, cst_paren(new) if peeled else new)

            fix = Fix(build, Safety.SAFE, "drop the softmax before the loss")
            code = TM502 if s.log else TM501
            return Proto(code, s.node, self._msg(s, f"`{sem.segment(s.node)}`", site), fix)
        if isinstance(e, ast.Name):
            return self.variable(site, e, peeled) or self.item(site, e)
        if isinstance(e, ast.Subscript):
            return self.item(site, e)
        return None

    def item(self, site: Site, e) -> Optional[Proto]:
        """The site's input is an element of a (log-)softmax's result along its first dim:
        ``for out in outputs:`` or ``outputs[0]`` with ``outputs = torch.softmax(scores,
        -1)`` (mlelarge/graph_neural_net's triplet loss).  Each element is a
        distribution over the softmax's dim less one; it lands on the loss's class dim
        when that dim is ``-1`` or ``2`` (the element's dim 1).  Report only (the
        softmax's result may have other uses)."""
        sem = self.sem
        moves, reshaped = self._moves.get(site.call, ((), False))
        if moves or reshaped:
            return None
        if isinstance(e, ast.Subscript):
            idx = e.slice
            if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub):
                idx = idx.operand
            if not (isinstance(idx, ast.Constant) and type(idx.value) is int):
                return None  # (a slice or a tensor index keeps the softmax's dims: not an element)
            whole = e.value
        else:
            bs = sem.reaching(e)
            loop = bs[0].stmt if len(bs) == 1 and bs[0].kind is BindingKind.FOR_TARGET else None
            if not isinstance(loop, ast.For) or loop.target is not bs[0].target:
                return None
            whole = loop.iter
        s = soft(sem, whole)
        if s is None and isinstance(whole, ast.Name):
            bs = sem.reaching(whole)
            if len(bs) == 1 and bs[0].kind is BindingKind.ASSIGNMENT and bs[0].value is not None and bs[0].unpack is None:
                s = soft(sem, bs[0].value)
        c = int_code(s.dim) if s is not None and s.input is not None and s.dim is not None else None
        if c is None or int(c) == 0 or int(c) - (int(c) > 0) not in (1, -1):
            return None
        label = f"`{sem.segment(e)}`, an element of `{sem.segment(s.node)}` (line {s.node.lineno}),"
        return Proto(TM502 if s.log else TM501, e, self._msg(s, label, site))

    def variable(self, site: Site, e: ast.Name, peeled: bool) -> Optional[Proto]:
        sem = self.sem
        bs = sem.reaching(e)
        if len(bs) > 1:
            return self._variables(site, e, bs)
        if len(bs) != 1:
            return None
        b = bs[0]
        if b.kind is not BindingKind.ASSIGNMENT or b.value is None or b.unpack is not None:
            return None
        if b.scope is not sem.scope_of(e):
            return None  # defined in an enclosing scope: the use may run at another time
        def_stmt = b.stmt
        if not (isinstance(def_stmt, ast.Assign) and len(def_stmt.targets) == 1 and def_stmt.targets[0] is b.target):
            return None
        s = soft(sem, b.value)
        if s is None or s.input is None or not self.lands(site, s, ce=True):
            return None
        inp = s.input
        self_assign = isinstance(inp, ast.Name) and inp.id == e.id  # out = F.softmax(out, 1)
        # ``x = F.softmax(self.fc(x), dim=1)``: the name rebound from a value that reads it
        rebound = not self_assign and any(isinstance(n, ast.Name) and n.id == e.id for n in ast.walk(inp))
        use_stmt = sem.statement_of(site.call)
        block_parent = sem.parent(def_stmt)
        if not any(a is block_parent for a in sem.ancestors(site.call)) or use_stmt is def_stmt:
            return None
        if (def_stmt.end_lineno, def_stmt.end_col_offset) > (use_stmt.lineno, use_stmt.col_offset):
            return None
        if not alone_on_lines(sem, def_stmt):
            return None
        label = f"`{e.id}` = `{sem.segment(b.value)}` (line {def_stmt.lineno})"
        code = TM502 if s.log else TM501
        msg = self._msg(s, label, site)
        others = [r for r in sem.references(b) if r is not e and any(x is b for x in sem.reaching(r))]
        # (``out *= 100``, ``del out``: they read the value too, as bindings or deletions)
        others += self._changed_in_place(e.id, b.scope)
        nxt = next_statement(sem, def_stmt)
        adjacent = nxt is use_stmt
        if self_assign or rebound:
            if others or sem.reaching(e) != [b]:
                return Proto(code, e, msg)
            # (rebound: what the logits read is the name's earlier value, which the use
            # reads again only right after, once the statement is gone)
            stable = self_assign
        else:
            stable = self.stable(inp, def_stmt, use_stmt, site.call)
        commented = has_comment_lines(sem, def_stmt)
        if self._mutated(inp, def_stmt, use_stmt):
            # (``out.clamp_(-1, 1)`` in between: the softmax had taken the logits before it)
            return Proto(code, e, msg)

        def sub(view, inp=inp, peeled=peeled):
            new = view.node(inp)
            return cst_paren(new) if peeled else new

        if not others and (stable or adjacent) and nxt is not None and (adjacent or not commented):
            inner_e = None if self_assign else e
            # (the use is in the statement after the definition, or further on: there the
            # name is replaced on its own, apart from the statement that takes the comments)
            in_nxt = any(a is nxt for a in sem.ancestors(e)) or use_stmt.lineno <= (nxt.end_lineno or nxt.lineno)

            def build(view, def_stmt=def_stmt, nxt=nxt, inner_e=inner_e, in_nxt=in_nxt, use_stmt=use_stmt):
                if inner_e is None or in_nxt:
                    inner = (inner_e, sub(view)) if inner_e is not None else None
                    return remove_statement(view, def_stmt, nxt, inner)
                return {**remove_statement(view, def_stmt, nxt), **replace_expr(view, use_stmt, inner_e, sub(view))}

            fix = Fix(build, Safety.SAFE, "feed the logits to the loss")
        elif not others:
            def build(view, def_stmt=def_stmt, b=b, inp=inp):
                return replace_expr(view, def_stmt, b.value, view.node(inp))

            fix = Fix(build, Safety.SAFE, "keep the logits in the variable")
        elif stable:
            def build(view, e=e, use_stmt=use_stmt):
                return replace_expr(view, use_stmt, e, sub(view))

            fix = Fix(build, Safety.SAFE, "feed the logits to the loss")
        else:
            fix = None
        return Proto(code, e, msg, fix)

    def stable(self, expr, def_stmt, use_stmt, use_node) -> bool:
        """``expr`` (a name) reads the same value at the use as at the definition."""
        sem = self.sem
        if not isinstance(expr, ast.Name):
            return False
        bs = sem.resolve(expr)
        if not bs:
            return False
        d = (def_stmt.lineno, def_stmt.col_offset)
        u = (use_stmt.lineno, use_stmt.col_offset)
        loops_def = {id(a) for a in sem.ancestors(def_stmt) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))}
        loop_between = any(
            isinstance(a, (ast.For, ast.AsyncFor, ast.While)) and id(a) not in loops_def for a in sem.ancestors(use_node)
        )
        for x in bs[0].scope.get(expr.id):
            p = x.order
            if loop_between and p > d:
                return False
            if d < p <= u:
                return False
        return True

    def _changed_in_place(self, name: str, scope) -> list:
        """The ``name += ...`` targets and ``del name`` deletions of ``name`` in ``scope``:
        reads of its value too (``out *= 100`` changes the tensor itself)."""
        sem = self.sem
        return [n for n in sem.find_named((ast.Name,), (name,)) if n.id == name and sem.scope_of(n) is scope
                and (isinstance(n.ctx, ast.Del) or isinstance(sem.parent(n), ast.AugAssign) and sem.parent(n).target is n)]

    def _mutated(self, expr, def_stmt, use_stmt) -> bool:
        """The tensor ``expr`` names may be changed in place between ``def_stmt`` and
        ``use_stmt`` (to the end of a loop around the use that the definition is outside
        of: the next pass reads it again): an in-place method on it or on a part of it
        (``x.clamp_(...)``, ``x[:, 0].fill_(0)``, ``x.data.mul_(2)``), a store into it
        (``x[i] = v``, ``x *= 0.5``), another name bound to it (an alias), or the name
        handed to a call other than a torch function or a builtin that is not told to work
        in place (``F.relu(x, inplace=True)``, ``F.relu(x, True)``, ``torch.relu_(x)``)."""
        sem = self.sem
        if not isinstance(expr, ast.Name):
            return False
        d = (def_stmt.end_lineno or def_stmt.lineno, def_stmt.end_col_offset or 0)
        u = (use_stmt.lineno, use_stmt.col_offset)
        outside = {id(a) for a in sem.ancestors(def_stmt)}
        for a in sem.ancestors(use_stmt):
            if isinstance(a, (ast.For, ast.AsyncFor, ast.While)) and id(a) not in outside:
                u = max(u, (a.end_lineno or a.lineno, a.end_col_offset or 0))
        for n in sem.find_named((ast.Name,), (expr.id,)):
            if n.id != expr.id or not (d <= (n.lineno, n.col_offset) < u):
                continue
            p = sem.parent(n)
            if isinstance(p, ast.AugAssign) and p.target is n:
                return True
            if not isinstance(n.ctx, ast.Load):
                continue
            # up through its parts and views: ``x[:, 0]``, ``x.data``, ``x.detach()``, ``x.view(-1)``
            node, plain = n, True
            while isinstance(p, (ast.Subscript, ast.Attribute)) and p.value is node:
                if not isinstance(p.ctx, ast.Load):
                    return True  # ``x[i] = v``, ``x.data = ...``
                c = sem.parent(p)
                if isinstance(p, ast.Attribute) and isinstance(c, ast.Call) and c.func is p:
                    if p.attr.endswith("_"):
                        return True
                    if p.attr not in _VIEWS:
                        plain = False
                        break  # (a method's new value: ``x.argmax(1)``, ``x.size(0)``)
                    node, p = c, sem.parent(c)
                    continue
                if isinstance(p, ast.Attribute) and p.attr not in _VIEWS:
                    plain = False
                    break  # ``x.shape``, ``x.device``: no tensor of its
                if isinstance(c, ast.AugAssign) and c.target is p:
                    return True
                node, p = p, c
            if not plain:
                continue
            if isinstance(p, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Tuple, ast.List, ast.For)):
                return True  # another name (or a container) for the same tensor
            if isinstance(p, (ast.Call, ast.keyword, ast.Starred)):
                call = p if isinstance(p, ast.Call) else sem.parent(p)
                q = sem.call_qualname(call) if isinstance(call, ast.Call) else None
                if not q or not q.startswith(("torch.", "builtins.")) or q.endswith("_") \
                        or any(k.arg in ("inplace", "out") for k in call.keywords) \
                        or q.rsplit(".", 1)[-1] in _INPLACE_BY_POSITION \
                        and any(isinstance(a, ast.Constant) and a.value is True for a in call.args[1:]):
                    return True  # (a callee that may change it in place; torch's own do so only when told)
        return False

    def _variables(self, site: Site, e: ast.Name, bs: list) -> Optional[Proto]:
        """``if a: out = F.softmax(h1, 1) else: out = F.softmax(h2, 1)`` then ``loss =
        ce(out, y)``: every binding that reaches the use is a (log-)softmax of one kind,
        each a statement of its own in the use's function.  Fixed when nothing else reads
        the name: each binding keeps the logits; reported only otherwise."""
        sem = self.sem
        softs = []
        for b in bs:
            st = b.stmt
            if b.kind is not BindingKind.ASSIGNMENT or b.value is None or b.unpack is not None \
                    or b.scope is not sem.scope_of(e) or not (isinstance(st, ast.Assign) and len(st.targets) == 1
                                                             and st.targets[0] is b.target and alone_on_lines(sem, st)):
                return None
            s = soft(sem, b.value)
            if s is None or s.input is None or not self.lands(site, s, ce=True):
                return None
            softs.append(s)
        if len({s.log for s in softs}) != 1:
            return None
        lines = ", ".join(str(b.stmt.lineno) for b in sorted(bs, key=lambda b: b.stmt.lineno))
        label = f"`{e.id}` = a {'log_softmax' if softs[0].log else 'softmax'} on every path (lines {lines})"
        code = TM502 if softs[0].log else TM501
        msg = self._msg(softs[0], label, site)
        others = any(r is not e for b in bs for r in sem.references(b) if any(x is b for x in sem.reaching(r)))
        others = others or bool(self._changed_in_place(e.id, bs[0].scope))
        use_stmt = sem.statement_of(site.call)
        if others or any(self._mutated(s.input, b.stmt, use_stmt) for b, s in zip(bs, softs)):
            return Proto(code, e, msg)

        def build(view, pairs=tuple((b.stmt, b.value, s.input) for b, s in zip(bs, softs))):
            edits: dict = {}
            for st, value, inp in pairs:
                edits.update(replace_expr(view, st, value, view.node(inp)))
            return edits

        return Proto(code, e, msg, Fix(build, Safety.SAFE, "keep the logits in the variable"))

    def _msg(self, s: Soft, label: str, site: Site) -> str:
        loss = f"`{site.label}`"
        if s.log:
            return f"{label} feeds {loss}, which applies log_softmax itself: the extra log_softmax is redundant"
        if _without_grad(self.sem, site.call):
            # (an evaluation: no gradient is taken, the value is what is wrong)
            return (f"{label} feeds {loss}, which expects logits: the value computed from probabilities is not the"
                    " cross-entropy of the predictions")
        return f"{label} feeds {loss}, which expects logits: the loss sees probabilities and its gradient vanishes"

    # ----------------------------------------------------------------- which models feed a site
    def _peel_tensor(self, call: ast.Call):
        if self.sem.method_name(call) in VIEW or self.sem.method_name(call) in PASSTHROUGH:
            return self.sem.receiver(call)
        return None

    def _peel_module(self, call: ast.Call):
        return _peel_module_in(self.sem, call)

    def input_models(self, site: Site) -> list:
        """The models whose output the site's input may be (None for other values)."""
        sem = self.sem
        e, _ = self.peel_input(site)
        out = []
        for o in sem.sources(e, self._peel_tensor, callers=True):
            if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
                m = self._returned_by_forward(o.node)
                if m is not None:  # ``self.forward(x)``: the model followed into its forward
                    out.append(m)
                    continue
                f = o.node.func
                if isinstance(f, ast.Attribute) and f.attr == "forward":
                    f = f.value
                out.extend(None if m is not None and m.index is not None else m for m in self.models_of(f))
            elif (o.kind is OriginKind.PART and isinstance(o.node, ast.Call) and len(o.path) == 1
                    and isinstance(o.path[0], int)):
                f = o.node.func
                if isinstance(f, ast.Attribute) and f.attr == "forward":
                    f = f.value
                out.extend(m if m is not None and m.index == o.path[0] else None for m in self.models_of(f))
            else:
                out.append(None)
        return out

    def _returned_by_forward(self, node) -> Optional[Model]:
        """The model whose ``forward`` ends with the softmax ``node``."""
        sem = self.sem
        fn = sem.enclosing_function(node)
        cls = sem.parent(fn) if isinstance(fn, ast.FunctionDef) and fn.name == "forward" else None
        if isinstance(cls, ast.ClassDef):
            m = self.class_model(cls)
            if m is not None and m.soft.node is node:
                return m
        return None

    def models_of(self, expr) -> list:
        """The models ``expr`` (a callee) may be: Model objects, None for anything else."""
        sem = self.sem
        out = []
        for o in sem.sources(expr, self._peel_module, callers=True):
            if o.kind is OriginKind.PARAMETER and o.binding is not None:
                cls = sem.self_class_of_param(o.binding)
                if cls is None:
                    out.extend(self.importer_models(o.binding))
                out.append(self.class_model(cls) if cls is not None else None)
            elif o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
                cs = sem.callees(o.node)
                if cs and all(isinstance(c, ast.ClassDef) for c in cs):
                    # (a class, or each class a registry ``models[name](...)`` may give)
                    out.extend(self.class_model(c) for c in cs)
                elif cs:
                    out.extend(None for _ in cs)
                elif any(N.is_sequential(q) for q in sem.qualnames(o.node.func)):
                    out.append(self.seq_model(o.node))
                else:
                    out.append(self.replaced_head(o.node) or self.foreign_model(o.node))
            else:
                out.append(None)
        return out

    def class_model(self, cls) -> Optional[Model]:
        if cls not in self._class_models:
            self._class_models[cls] = class_model(self.sem, cls)
        return self._class_models[cls]

    def seq_model(self, call) -> Optional[Model]:
        if call not in self._seq_models:
            self._seq_models[call] = seq_model(self.sem, call)
        return self._seq_models[call]

    def replaced_head(self, call: ast.Call) -> Optional[Model]:
        """``m = torchvision.models.resnet18(...); m.fc = nn.Sequential(..., nn.Softmax(1))``:
        the architecture's output layer replaced by a Sequential ending with a softmax
        (the one store of that attribute on an object made by ``call``).  Report only."""
        sem = self.sem
        q = sem.qualname(call.func) or ""
        if not q.startswith("torchvision.models."):
            return None
        arch = q.rsplit(".", 1)[1]
        head = next((h for pre, h in _TV_HEADS if arch.startswith(pre)), None)
        if head is None:
            return None
        found = []
        for a in sem.find(ast.Assign, containing=(head,)):
            for t in a.targets:
                if isinstance(t, ast.Attribute) and t.attr == head and any(
                    o.kind is OriginKind.VALUE and o.node is call for o in sem.origins(t.value)
                ):
                    found.append(a)
        if len(found) != 1:
            return None
        m = self.seq_model(found[0].value)
        if m is None:
            return None
        # (a copy: the Sequential's own model is kept for its other lookups)
        # its uses through the torchvision model are not followed: report only
        return dataclasses.replace(m, name=sem.segment(found[0].targets[0]), removal=None, base=q)

    def foreign_model(self, call: ast.Call) -> Optional[Model]:
        """``Net()`` with ``Net`` imported from a sibling module whose ``forward`` ends with
        a (log-)softmax (read through the project; report only)."""
        return _foreign_model(self.sem, call)

    def importer_models(self, param) -> list:
        """The models the files of this file's directory that import it pass for
        ``param`` (the binding of a parameter of a module-level function) where they call
        that function: ``main.py`` builds ``Classifier()`` and calls ``train.fit(classifier,
        ...)``, whose cross-entropy is here (report only)."""
        import os

        sem = self.sem
        fn = param.scope.node
        key = (fn, param.name)
        got = self._importer_models.get(key)
        if got is not None:
            return got
        out = self._importer_models[key] = []
        if not isinstance(fn, ast.FunctionDef) or sem.call_sites(fn).complete:
            return out
        for other, arg, call in sem.importer_arguments(fn, param.name):
            via = f", passed by {os.path.basename(other.path)} line {call.lineno}"
            for o in other.sources(arg, _module_peel(other), callers=True):
                if not (o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)):
                    continue
                cs = other.callees(o.node)
                if cs:
                    ms = [class_model(other, c) if isinstance(c, ast.ClassDef) else None for c in cs]
                    out.extend(None if m is None else _foreign(m, other, via) for m in ms)
                elif any(N.is_sequential(q) for q in other.qualnames(o.node.func)):
                    m = seq_model(other, o.node)
                    out.append(None if m is None else _foreign(m, other, via))
                else:
                    out.append(_foreign_model(other, o.node, via))
        return out

    def foreign_finding(self, site: Site, m: Model) -> Proto:
        code = f"`{m.lines[0]}`"
        ends = f"ends with {code}" if m.index is None else f"returns {code} as element {m.index} of a tuple,"
        if m.soft.log:
            msg = (
                f"`{m.name}` (from {m.where}) {ends} and its output feeds `{site.label}` here, which "
                "applies log_softmax again: redundant; use NLLLoss here or drop it in the model"
            )
            return Proto(TM502, site.input, msg)
        msg = (
            f"`{m.name}` (from {m.where}) {ends} and its output feeds `{site.label}` here, which expects "
            "logits; remove the softmax in the model and re-apply it where its other users need probabilities"
        )
        return Proto(TM501, site.input, msg)

    # ----------------------------------------------------------------- uses of a model
    def model_uses(self, model: Model) -> list[Use]:
        """Every use of ``model`` in the file; 'unknown' for anything that escapes."""
        sem = self.sem
        uses: list[Use] = []
        self._dim = int_code(model.soft.dim)
        if model.base is not None:
            uses.append(Use("unknown", model.anchor, why=f"it derives from `{model.base}`, whose code may use its outputs"))
        if model.cls is not None:
            cls = model.cls
            if self._calls_itself(cls):
                uses.append(Use("unknown", model.anchor, why=f"`{cls.name}` calls itself"))
            b = sem.binding_of_def(cls)
            if b is None or len(b.scope.get(cls.name)) != 1 or b.scope is not sem.module_scope:
                uses.append(Use("unknown", cls, why=f"`{cls.name}` is bound more than once"))
                return uses + self._imported_uses(model)
            for ref in sem.references(b):
                p = sem.parent(ref)
                if isinstance(p, ast.Call) and p.func is ref:
                    self.instance_uses(p, model, uses)
                elif self._harmless_class_ref(ref, p):
                    continue
                else:
                    uses.append(Use("unknown", ref, why=f"`{cls.name}` is used at line {ref.lineno}"))
        else:
            self.instance_uses(model.key, model, uses)
        uses.extend(self._imported_uses(model))
        return uses

    def _imported_uses(self, model: Model) -> list[Use]:
        """Another file may use the model: a module of a package, or a script that
        another file imports."""
        project = self.ctx.project
        if project is None or not self.ctx.path:
            return []
        if project.package_of(self.ctx.path) is not None:
            return [Use("unknown", model.anchor, why="this module of a package may be imported by any other")]
        if project.is_imported(self.ctx.path):
            return [Use("unknown", model.anchor, why="another file imports this one and may use the model")]
        return []

    def _harmless_class_ref(self, ref, p) -> bool:
        """``super(Net, self)``, ``isinstance(x, Net)``, an annotation."""
        sem = self.sem
        if isinstance(p, ast.Call) and p.args and p.args[0] is ref and sem.qualname(p.func) == "builtins.super":
            return True
        if isinstance(p, ast.Call) and len(p.args) == 2 and p.args[1] is ref and sem.qualname(p.func) in (
            "builtins.isinstance", "builtins.issubclass"
        ):
            return True
        for a in sem.ancestors(ref):
            if isinstance(a, ast.arg) and a.annotation is not None:
                return any(n is ref for n in ast.walk(a.annotation))
            if isinstance(a, ast.AnnAssign):
                return any(n is ref for n in ast.walk(a.annotation))
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return a.returns is not None and any(n is ref for n in ast.walk(a.returns))
            if isinstance(a, ast.stmt):
                return False
        return False

    def _calls_itself(self, cls: ast.ClassDef) -> bool:
        """``self(x)`` or ``self.forward(x)`` in a method of ``cls``."""
        sem = self.sem
        for n in ast.walk(cls):
            if isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Attribute) and f.attr == "forward":
                    f = f.value
                if isinstance(f, ast.Name) and sem.self_class(f) is cls:
                    return True
        return False

    def _module_through(self, e):
        """A call whose result is the module itself: ``m.to(device)``, ``m.eval()``,
        ``nn.DataParallel(m)``."""
        sem = self.sem
        p = sem.parent(e)
        if isinstance(p, ast.Attribute) and p.value is e and p.attr in MODULE_SELF:
            gp = sem.parent(p)
            if isinstance(gp, ast.Call) and gp.func is p:
                return gp
        if isinstance(p, ast.Call) and p.args and p.args[0] is e and any(_wraps_module(q) for q in sem.qualnames(p.func)):
            return p
        return None

    def instance_uses(self, ctor: ast.Call, model: Model, uses: list) -> None:
        sem = self.sem
        flow = sem.value_uses(ctor, through=self._module_through)
        for e in flow.escapes:
            uses.append(Use("unknown", e, why=f"the model is stored or passed where this file cannot follow it (line {e.lineno})"))
        for e in flow.uses:
            self.access_use(e, model, uses)

    def _shared(self, e, model: Model) -> bool:
        """The expression may hold something other than ``model``."""
        return any(m is not model for m in self.models_of(e))

    def access_use(self, e, model: Model, uses: list) -> None:
        sem = self.sem
        p = sem.parent(e)
        if isinstance(p, ast.Call) and p.func is e:
            self._output(p, model, uses, e)
            return
        if isinstance(p, ast.Attribute) and p.value is e:
            gp = sem.parent(p)
            if p.attr == "forward" and isinstance(gp, ast.Call) and gp.func is p:
                self._output(gp, model, uses, e)
                return
            if p.attr in NEUTRAL_ATTRS or id(p) in model.built_by:
                return
            if model.cls is not None and self._submodule(model, p.attr):
                return  # a layer before the softmax: cannot see the model's output
            uses.append(Use("unknown", e, why=f"`{sem.segment(p)}` (line {p.lineno})"))
            return
        if isinstance(p, ast.Expr):
            return
        if isinstance(p, ast.Call) and any(a is e for a in p.args) and sem.qualname(p.func) in NEUTRAL_FUNCS:
            return
        what = sem.segment(p) if p is not None and isinstance(p, ast.expr) else sem.segment(e)
        if len(what) > 60:
            what = what[:57] + "..."
        uses.append(Use("unknown", e, why=f"`{what}` (line {e.lineno})"))

    def _output(self, call: ast.Call, model: Model, uses: list, callee) -> None:
        sub: list[Use] = []
        self.classify(call, sub)
        if self._shared(callee, model):
            sub = [u if u.kind in ("ce", "rank", "ok") else Use("unknown", u.node, why=(
                f"`{self.sem.segment(callee)}` may also be another model (line {call.lineno})")) for u in sub]
        uses.extend(sub)

    def _submodule(self, model: Model, attr: str) -> bool:
        """``model.<attr>`` is a layer of the model other than its final softmax."""
        return attr in self.sem.class_info(model.cls).attrs and attr not in model.softmax_attrs

    # ----------------------------------------------------------------- uses of a model's output
    def classify(self, expr, out: list, depth: int = 0) -> None:
        """How the value of ``expr`` (a model output) is used; appends Use records.
        Ranking uses (``argmax``/``max``/``topk``/``sort`` indices) count as unaffected by
        the softmax only along the softmax's own ``dim``."""
        sem = self.sem
        if depth > 8:
            out.append(Use("unknown", expr, why="followed too far"))
            return
        p = sem.parent(expr)
        call = p if isinstance(p, ast.Call) and p.func is not expr else None
        if isinstance(p, ast.keyword):
            call = sem.parent(p)
        if call is not None and (any(a is expr for a in call.args) or isinstance(p, ast.keyword)):
            site = self._sites_by_call.get(call)
            if site is not None and site.input is expr:
                out.append(Use("ce", expr, site))
                return
            q = sem.qualnames(call.func)
            first = arg_of(sem, call, "input", 0) is expr
            if first and q & N.ARGMAX and self._same_dim(arg_of(sem, call, "dim", 1), None):
                out.append(Use("rank", expr))
                return
            if first and q & N.MAX and self._same_dim(arg_of(sem, call, "dim", 1), None) and self.indices_only(call):
                out.append(Use("rank", expr))
                return
            if first and q & (N.TOPK | N.SORT) and self._same_dim(arg_of(sem, call, "dim", 2 if q & N.TOPK else 1), "-1") and self.indices_only(call):
                out.append(Use("rank", expr))
                return
            if first and "builtins.len" in q:
                out.append(Use("ok", expr))
                return
            out.append(Use("prob", expr))
            return
        if isinstance(p, ast.Attribute) and p.value is expr:
            gp = sem.parent(p)
            attr = p.attr
            if isinstance(gp, ast.Call) and gp.func is p:
                if attr == "argmax" and self._same_dim(arg_of(sem, gp, "dim", 0), None):
                    out.append(Use("rank", expr))
                    return
                if attr == "max" and self._same_dim(arg_of(sem, gp, "dim", 0), None) and self.indices_only(gp):
                    out.append(Use("rank", expr))
                    return
                if attr in ("topk", "sort") and self._same_dim(arg_of(sem, gp, "dim", 1 if attr == "topk" else 0), "-1") and self.indices_only(gp):
                    out.append(Use("rank", expr))
                    return
                if attr in SHAPE_METHODS:
                    out.append(Use("ok", expr))
                    return
                if attr.endswith("_") and not attr.endswith("__"):
                    out.append(Use("unknown", expr, why=f"in-place `{attr}()` (line {gp.lineno})"))
                    return
                if attr in PASSTHROUGH:
                    self._through(gp, expr, out, depth)
                    return
                if attr in SHAPE:  # reshaped: still fine as a loss input; ranking dims moved
                    self._through(gp, expr, out, depth, keep_rank=False)
                    return
            elif attr == "data":
                self._through(p, expr, out, depth)
                return
            elif attr in SHAPE_ATTRS:
                out.append(Use("ok", expr))
                return
        if isinstance(p, ast.Subscript) and p.value is expr and not isinstance(p.ctx, ast.Load):
            out.append(Use("unknown", expr, why=f"written into (line {p.lineno})"))
            return
        if isinstance(p, ast.Assign) and p.value is expr:
            if len(p.targets) == 1 and isinstance(p.targets[0], ast.Name):
                self.classify_name(p.targets[0], out, depth)
                return
            out.append(Use("unknown", expr, why=f"unpacked (line {p.lineno})"))
            return
        if isinstance(p, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            out.append(Use("unknown", expr, why=f"line {p.lineno}"))
            return
        if isinstance(p, ast.Expr):
            out.append(Use("ok", expr))
            return
        if isinstance(p, ast.Return):
            self._returned(p, expr, out, depth)
            return
        if isinstance(p, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Starred, ast.Yield, ast.YieldFrom, ast.Lambda)):
            out.append(Use("unknown", expr, why=f"stored in a container or returned with other values (line {p.lineno})"))
            return
        out.append(Use("prob", expr))

    def _returned(self, ret: ast.Return, expr, out: list, depth: int) -> None:
        """``return model(x)`` in a function of this file: the uses at its call sites;
        a probability use there is re-applied at this return."""
        sem = self.sem
        fn = sem.enclosing_function(ret)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "forward":
            out.append(Use("unknown", expr, why=f"returned (line {ret.lineno})"))
            return
        sites = sem.call_sites(fn)
        if not sites.complete or len(sem.returns(fn)) != 1:
            out.append(Use("unknown", expr, why=f"returned by `{fn.name}` (line {ret.lineno})"))
            return
        for c in sites.calls:
            sub: list[Use] = []
            self.classify(c, sub, depth + 1)
            for u in sub:
                out.append(Use("prob", expr) if u.kind == "prob" else u)

    def _through(self, outer, inner, out: list, depth: int, keep_rank: bool = True) -> None:
        """``inner.detach()`` etc.: same values; a probability use of ``outer`` is re-applied at ``inner``."""
        sub: list[Use] = []
        self.classify(outer, sub, depth + 1)
        for u in sub:
            if u.kind == "prob" or (u.kind == "rank" and not keep_rank):
                out.append(Use("prob", inner))
            else:
                out.append(u)

    def _same_dim(self, arg, default: Optional[str]) -> bool:
        """Along the softmax's dim: both literal integers (a name means different things
        in the model and at the use)."""
        got = int_code(arg) if arg is not None else default
        return got is not None and self._dim is not None and got == self._dim

    def classify_name(self, target: ast.Name, out: list, depth: int) -> None:
        sem = self.sem
        b = sem.target_binding(target)
        if b is None:
            out.append(Use("unknown", target, why=f"line {target.lineno}"))
            return
        for ref in sem.references(b):
            reaching = sem.reaching(ref)
            if reaching and not any(x is b for x in reaching):
                continue  # the name holds another value there (``out = out.argmax(1)`` above it)
            sub: list[Use] = []
            self.classify(ref, sub, depth + 1)
            if len(reaching) > 1:  # also reads another value: only loss/index uses are fine
                sub = [u if u.kind in ("ce", "rank", "ok") else Use("unknown", u.node, why=(
                    f"`{ref.id}` may hold other values (line {ref.lineno})")) for u in sub]
            out.extend(sub)

    def indices_only(self, call: ast.Call) -> bool:
        """``x.max(1)`` / ``torch.topk(x, k)`` whose result is used only for its indices."""
        sem = self.sem
        p = sem.parent(call)
        if isinstance(p, ast.Subscript) and p.value is call:
            return isinstance(p.slice, ast.Constant) and p.slice.value == 1 and type(p.slice.value) is int
        if isinstance(p, ast.Attribute) and p.value is call:
            return p.attr == "indices"
        if isinstance(p, ast.Assign) and len(p.targets) == 1:
            t = p.targets[0]
            if isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == 2 and isinstance(t.elts[0], ast.Name):
                first = t.elts[0]
                if first.id == "_":
                    return True
                b = sem.target_binding(first)
                return b is not None and not sem.references(b)
        return False

    # ----------------------------------------------------------------- TM501 model findings
    def model_findings(self, model: Model, msites: list[Site]) -> list[Proto]:
        sem = self.sem
        uses = self.model_uses(model)
        first = msites[0]
        where = f"`{first.label}` (line {first.call.lineno})"
        soft_code = sem.segment(model.soft.node)
        msg = f"`{model.name}` ends with `{soft_code}` and its output feeds {where}, which expects logits"
        if model.index is not None:
            uses.insert(0, Use("unknown", model.anchor, why=f"`forward` returns it as element {model.index} of a tuple"))
        unknown = [u for u in uses if u.kind == "unknown"]
        if unknown:
            why = unknown[0].why
            return [Proto(TM501, model.anchor, msg + f"; other uses of the model are not visible here ({why}): remove the softmax by hand")]
        if model.removal is None:
            return [Proto(TM501, model.anchor, msg + "; remove the softmax by hand")]
        probs = []
        for u in uses:
            if u.kind == "prob" and all(u.node is not x.node for x in probs):
                probs.append(u)
        lines = "".join(f", line {n}" for n in model.lines)
        if probs:
            if int_code(model.soft.dim) is None:
                what = "has no dim" if model.soft.dim is None else "dim is not a literal"
                return [Proto(TM501, model.anchor, msg + f"; its probabilities are also used (and the softmax {what}): remove it by hand")]
            dim = model.soft.dim
            nodes = [u.node for u in probs]
            removal = model.removal

            def build(view, removal=removal, nodes=nodes, dim=dim):
                repl = dict(removal(view))
                for n in nodes:
                    k, v = add_softmax(view, n, dim)
                    repl[k] = v
                return repl

            at = ", ".join(str(n.lineno) for n in nodes)
            fix = Fix(build, Safety.UNSAFE, "move the softmax from the model to the probability uses")
            line = model.anchor.lineno
            out = [Proto(TM501, model.anchor, msg + f"; the probabilities used at line(s) {at} need the softmax re-applied there", fix)]
            for n in nodes:
                out.append(Proto(
                    TM501, n, f"the probabilities of `{model.name}` are used here: the fix for line {line} removes its "
                    f"final softmax and re-applies it here", fix, Severity.INFO,
                ))
            return out
        return [Proto(
            TM501, model.anchor, msg + (f" (the fix also edits{lines[1:]})" if lines else ""),
            Fix(lambda view, r=model.removal: r(view), Safety.SAFE,
                "remove the final softmax (the model's outputs only feed the loss, argmax and shapes)"),
        )]

    # ----------------------------------------------------------------- TM502 model findings: the loss becomes NLLLoss
    def nll_findings(self, model: Model, msites: list[Site], by_model: dict) -> list[Proto]:
        sem = self.sem
        out = []
        soft_code = sem.segment(model.soft.node)
        done = set()
        for site in msites:
            if site.form == "var" and (len(site.ctors) != 1 or not site.complete):
                why = "may hold several losses" if len(site.ctors) != 1 else "may also be another loss: its callers are not all known"
                out.append(Proto(TM502, site.input, (
                    f"`{model.name}` ends with `{soft_code}` (line {model.anchor.lineno}) and its output feeds "
                    f"`{site.label}`, which applies log_softmax again: redundant, use NLLLoss "
                    f"(`{site.label}` {why})")))
                continue
            key = site.call if site.form == "fn" else site.ctors[0]
            if key in done:
                continue
            done.add(key)
            targets = [site] if site.form == "fn" else [s for s in self._sites_by_call.values() if key in s.ctors]
            targets.sort(key=lambda s: (s.call.lineno, s.call.col_offset))
            node = site.call.func if site.form == "fn" else key
            fed = ", ".join(str(s.call.lineno) for s in targets)
            msg = (
                f"`{sem.segment(node) if site.form != 'fn' else site.label}` receives the log-probabilities of "
                f"`{model.name}` (`{soft_code}`, line {model.anchor.lineno}) at line(s) {fed} and applies "
                "log_softmax again: redundant, use NLLLoss"
            )
            why = self.nll_blocker(site, key, targets, by_model)
            if why:
                out.append(Proto(TM502, node, msg + f" ({why})"))
                continue
            if site.form == "fn":
                func = site.call.func
                new = "nll_loss"
                imports = (("torch.nn.functional", "nll_loss"),) if isinstance(func, ast.Name) else ()
            else:
                func = key.func
                new = "NLLLoss"
                imports = (("torch.nn", "NLLLoss"),) if isinstance(func, ast.Name) else ()
            fix = Fix(lambda view, func=func, new=new: rename_callee(view, func, new), Safety.SAFE,
                      "use NLLLoss on the log-probabilities", imports=imports)
            out.append(Proto(TM502, node, msg, fix))
        return out

    def nll_blocker(self, site: Site, key, targets: list[Site], by_model: dict) -> Optional[str]:
        sem = self.sem
        call = site.call if site.form == "fn" else key
        allowed = NLL_KW_FN if site.form == "fn" else NLL_KW_CTOR
        npos = 3 if site.form == "fn" else 1
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return "the loss takes *args or **kwargs"
        for k in call.keywords:
            if k.arg not in allowed:
                return f"`{k.arg}=` has no NLLLoss equivalent"
        if len(call.args) > npos:
            return "positional loss options"
        for t in targets:
            if not t.complete or len(t.ctors) > 1:
                return f"`{t.label}` may also be another loss (line {t.call.lineno})"
            models = self.input_models(t)
            if not models or any(m is None or not m.soft.log or m.where for m in models):
                return f"`{t.label}` also receives other values (line {t.call.lineno})"
        if site.form == "var":
            flow = sem.value_uses(key, through=self._loss_through)
            if flow.escapes:
                return f"`{site.label}` is also used where this file cannot follow it (line {flow.escapes[0].lineno})"
            for e in flow.uses:
                p = sem.parent(e)
                if not (isinstance(p, ast.Call) and p.func is e and p in self._sites_by_call):
                    if isinstance(p, ast.Attribute) and p.value is e and p.attr in ("to", "cuda", "cpu"):
                        continue
                    return f"`{site.label}` is also used at line {e.lineno}"
        for t in targets:
            tgt = arg_of(sem, t.call, "target", 1)
            if tgt is not None and self._prob_like(tgt):
                return "the target looks like probabilities, which NLLLoss does not accept"
        return None

    def _prob_like(self, e) -> bool:
        sem = self.sem

        def hit(x) -> bool:
            for n in ast.walk(x):
                if isinstance(n, ast.Call):
                    f = n.func
                    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                    if name in PROB_WORDS:
                        return True
            return False

        if hit(e):
            return True
        if isinstance(e, ast.Name):
            return any(o.kind is OriginKind.VALUE and o.node is not None and hit(o.node) for o in sem.origins(e))
        return False


def protos_for(ctx, code: str) -> list[Proto]:
    try:
        got = Analysis.of(ctx).protos()
    except RecursionError:
        got = []
    return [p for p in got if p.code == code]
