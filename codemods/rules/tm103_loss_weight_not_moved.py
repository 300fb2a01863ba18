"""TM103 loss-weight-not-moved."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic import OriginKind, SemanticModel
from ..semantic import names as N
from ..semantic.source import before_a_call, callee_hits
from ._device import (
    DEVICE_KEEP_METHODS as _KEEP, MISMATCH_EVIDENCE, Move, bound_before, device_move as _device_move, device_text_at,
    file_mentions_device, framework_in_file, moved_call,
)
from ._tensor_device import _short

# loss classes that register a class-weight tensor as a buffer: parameter -> position
_WEIGHTED = {
    "CrossEntropyLoss": {"weight": 0},
    "NLLLoss": {"weight": 0},
    "NLLLoss2d": {"weight": 0},
    "BCELoss": {"weight": 0},
    "BCEWithLogitsLoss": {"weight": 0, "pos_weight": 4},
    "MultiLabelSoftMarginLoss": {"weight": 0},
    "MultiMarginLoss": {"weight": 2},
}
_PREFIXES = ("torch.nn.", "torch.nn.modules.loss.")
# the functional losses (``torch.nn.functional.X``): parameter -> position
_FUNCTIONAL = {
    "cross_entropy": {"weight": 2},
    "nll_loss": {"weight": 2},
    "binary_cross_entropy": {"weight": 2},
    "binary_cross_entropy_with_logits": {"weight": 2, "pos_weight": 6},
    "multilabel_soft_margin_loss": {"weight": 2},
    "multi_margin_loss": {"weight": 4},
}
# factories that always make a CPU tensor without ``device=`` (the legacy typed
# constructors and ``from_numpy`` have no ``device=`` at all)
_ALWAYS_CPU = frozenset({
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace", "logspace",
    "randperm", "from_numpy", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "DoubleTensor", "HalfTensor",
    "BoolTensor", "ByteTensor",
})
# host libraries: what their functions return is no device tensor
_HOST = ("numpy.", "sklearn.", "builtins.", "math.", "collections.", "pandas.", "json.", "statistics.")
_MAX_DEPTH = 6


_NAMES = tuple(sorted(_WEIGHTED))
_FN_NAMES = tuple(sorted(_FUNCTIONAL))
_KEYWORD_FIRST = re.compile(r"[A-Za-z_]\w*\s*=(?!=)")


def _may_pass_weight(text: str, i: int, end: int) -> bool:
    """The call whose callee's name ends at ``i`` (written as a callee: ``before_a_call``)
    may pass a weight: a superset of what the ast shows (``sem.argument``).  Only a call
    whose first argument is a keyword and whose brackets hold no ``weight``
    (``CrossEntropyLoss()``, ``CrossEntropyLoss(ignore_index=-100, reduction="none")``)
    is ruled out; a comment, a string with a backslash or a triple quote in them keeps
    it (what they hold is not read here)."""
    j = _open_bracket(text, i, end)
    if j < 0:
        return True
    k = j + 1
    while k < end and text[k] in " \t\r\n\\":
        k += 1
    if k < end and text[k] == ")":
        return False  # no argument
    if not _KEYWORD_FIRST.match(text, k):
        return True  # a positional argument (or a comment, ``**kwargs``, ``*args``)
    return _brackets_may_hold_weight(text, j, end)


def _brackets_may_hold_weight(text: str, j: int, end: int) -> bool:
    """The brackets opening at ``j`` hold the word ``weight``, or what they hold cannot be
    told here (a comment, a string with a backslash or a triple quote, no closing one)."""
    depth, m = 1, j + 1
    while m < end:
        ch = text[m]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return "weight" in text[j:m]
        elif ch in "'\"":
            close = text.find(ch, m + 1)
            if text.startswith(ch * 3, m) or close < 0 or "\\" in text[m:close] or "\n" in text[m:close]:
                return True
            m = close
        elif ch == "#":
            return True
        m += 1
    return True


def _open_bracket(text: str, i: int, end: int) -> int:
    """Where the ``(`` of the call whose callee's name ends at ``i`` stands (spaces, line
    breaks, continuations and closing brackets between), or -1."""
    j = i
    while j < end and text[j] in " \t\r\n\\)":
        j += 1
    return j if j < end and text[j] == "(" else -1


def _fn_may_pass_weight(text: str, i: int, end: int) -> bool:
    """The call of a functional loss whose name ends at ``i`` names a weight in its
    brackets (``F.cross_entropy(out, y, weight=w)``; a weight passed by position is not
    looked for)."""
    j = _open_bracket(text, i, end)
    return j < 0 or _brackets_may_hold_weight(text, j, end)


def _hits(names: tuple, test):
    """A ``find_named`` ``keep``: the callee hits of ``names`` (the longest that stands
    there) whose call passes ``test(text, end of the name, end)``."""
    def keep(text: str, start: int, end: int, hits) -> list:
        out = []
        for h in callee_hits(names)(text, start, end, hits):
            w = max((n for n in names if text.startswith(n, h)), key=len)
            if test(text, h + len(w), end):
                out.append(h)
        return out

    return keep


def _text_may_pass_weight(text: str) -> bool:
    """:func:`_may_pass_weight` (a loss class) or :func:`_fn_may_pass_weight` (a functional
    loss) holds at some place where its name is written as a callee."""
    for names, test in ((_NAMES, _may_pass_weight), (_FN_NAMES, _fn_may_pass_weight)):
        for n in names:
            j = text.find(n)
            while j >= 0:
                e = j + len(n)
                if (j == 0 or not (text[j - 1].isalnum() or text[j - 1] == "_")) and before_a_call(text, e) \
                        and test(text, e, len(text)):
                    return True
                j = text.find(n, e)
    return False


_CTOR_HITS = _hits(_NAMES, _may_pass_weight)
_FN_HITS = _hits(_FN_NAMES, _fn_may_pass_weight)


def _entry(sem: SemanticModel, call: ast.Call, prefixes: tuple, table: dict) -> Optional[dict]:
    """The weight parameters of the loss ``call`` makes or computes (``table``'s entry for
    its qualified name under one of ``prefixes``), or None."""
    q = sem.call_qualname(call)
    for p in prefixes:
        if q and q.startswith(p) and q[len(p):] in table:
            return table[q[len(p):]]
    return None


def _cpu_weights(sem: SemanticModel, call: ast.Call, params: dict) -> Optional[list]:
    """``(parameter, argument, factory call)`` for each weight ``call`` passes, all made on
    the CPU; None when one may be made elsewhere, moved, of unknown origin or hidden in
    ``**kwargs`` (or when none is passed)."""
    weights = []
    for param, pos in params.items():
        w = sem.argument(call, param, pos)
        if w is None:
            continue
        if not isinstance(w, ast.AST) or isinstance(w, ast.Starred):
            return None  # (``**kwargs`` that may hold it)
        made = _cpu_made(sem, w)
        if made is None:
            return None  # made on a device, moved, or of unknown origin
        weights.append((param, w, made))
    return weights or None


def _cpu_made(sem: SemanticModel, expr, depth: int = 0) -> Optional[ast.AST]:
    """The factory call that makes the value of ``expr`` on the CPU on every way it can
    be made (through names, and methods and arithmetic that keep a tensor where it
    is), or None when some way may make it elsewhere or cannot be read."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, ast.BinOp):
        left = _cpu_made(sem, expr.left, depth + 1)
        right = _cpu_made(sem, expr.right, depth + 1)
        if left is not None and (right is not None or _host_value(sem, expr.right, depth + 1)):
            return left
        if right is not None and _host_value(sem, expr.left, depth + 1):
            return right
        return None
    origins = sem.origins(expr)
    if not origins:
        return None
    made = None
    for o in origins:
        n = o.node
        if o.kind is not OriginKind.VALUE:
            return None
        if isinstance(n, ast.BinOp):
            got = _cpu_made(sem, n, depth + 1)
        elif isinstance(n, ast.Call):
            got = _cpu_call(sem, n, depth)
        else:
            got = None
        if got is None:
            return None
        made = made or got
    return made


def _cpu_call(sem: SemanticModel, call: ast.Call, depth: int) -> Optional[ast.AST]:
    if any(k.arg in ("device", "out") or k.arg is None for k in call.keywords):
        return None
    name = N.factory_name(sem.call_qualname(call))
    if name in _ALWAYS_CPU:
        return call
    if name in ("tensor", "as_tensor"):
        data = call.args[0] if call.args else sem.keyword(call, "data")
        # of data that is no tensor (a tensor's copy stays on its device); a list or tuple
        # is read element by element into a new tensor on the default device, whatever
        # its elements are (``torch.tensor([n_neg / n_pos])`` of device tensors too)
        if isinstance(data, (ast.List, ast.Tuple)) and data.elts and not any(isinstance(x, ast.Starred) for x in data.elts):
            return call
        return call if data is not None and _host_value(sem, data, depth + 1) else None
    if isinstance(call.func, ast.Attribute) and call.func.attr in _KEEP and not sem.qualnames(call.func):
        if call.func.attr == "type" and (call.args and not _is_dtype(call.args[0])):
            return None  # ``t.type(torch.cuda.FloatTensor)`` may move it
        return _cpu_made(sem, call.func.value, depth + 1)
    return None


def _is_dtype(e) -> bool:
    return isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "torch" and (
        e.attr.startswith(("float", "int", "bool", "double", "half", "long", "bfloat", "uint", "complex"))
    )


def _host_value(sem: SemanticModel, e, depth: int) -> bool:
    """``e`` holds a Python or numpy value (no tensor) on every way it is made."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
    if isinstance(e, ast.UnaryOp):
        return _host_value(sem, e.operand, depth + 1)
    if isinstance(e, (ast.List, ast.Tuple)):
        return all(_host_value(sem, x, depth + 1) for x in e.elts)
    if isinstance(e, ast.BinOp):
        return _host_value(sem, e.left, depth + 1) and _host_value(sem, e.right, depth + 1)
    if isinstance(e, ast.Call):
        q = sem.call_qualname(e)
        if q:
            return q.startswith(_HOST)
        # a method of a host value (``counts.sum()``, ``series.to_numpy()``)
        return isinstance(e.func, ast.Attribute) and _host_value(sem, e.func.value, depth + 1)
    if isinstance(e, (ast.Subscript, ast.Attribute)):
        return _host_value(sem, e.value, depth + 1)  # ``counts[1:]``, ``df.values``
    if isinstance(e, ast.Name):
        origins = sem.origins(e)
        return bool(origins) and all(
            o.kind is OriginKind.VALUE and o.node is not e and _host_value(sem, o.node, depth + 1) for o in origins
        )
    return False


class LossWeightNotMoved(Rule):
    """## What it does
    Finds a loss module built with a class-weight tensor made on the CPU
    (`nn.CrossEntropyLoss(weight=torch.tensor([...]))`, `NLLLoss`, `BCELoss`,
    `BCEWithLogitsLoss` with `weight=` or `pos_weight=`, `MultiLabelSoftMarginLoss`,
    `MultiMarginLoss`) that is never moved, while it is called with tensors on a device:
    the output of a model moved with `model.to(device)`/`model.cuda()`, or a tensor
    moved so.  The weight is followed through names and through methods and arithmetic
    that keep a tensor where it is (`torch.tensor(w).float()`, `w / w.sum()`); the loss
    object through names, parameters of same-file functions it is passed to, and its
    call sites (`criterion(out, y)`, `criterion.forward(out, y)`).  The functional
    losses too (`F.cross_entropy(out, y, weight=w)`, `F.nll_loss`,
    `F.binary_cross_entropy[_with_logits]`, ...) when the input or the target is on a
    device and the call names its weight with `weight=`/`pos_weight=`.

    Not reported: a weight made with `device=` or moved (`.to(device)`, `.cuda()`), a
    weight of unknown origin (a parameter, another module's tensor), a loss moved
    anywhere (`criterion.to(device)`, `nn.CrossEntropyLoss(weight=w).cuda()`), stored
    in an attribute (a model's submodule moves with the model) or passed to code this
    file does not show, a loss called only with CPU tensors, files that use a training
    framework or set a default device.

    ## Why is this bad?
    The loss registers its weight as a buffer: it stays on the CPU until the loss
    module itself is moved.  The first call with inputs on the GPU fails with `Expected
    all tensors to be on the same device, but ... weight is on cpu` -- often after the
    whole data pipeline and the first forward pass ran, in a line that looks right.

    ## Example
    ```python
    model = Net().to(device)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 5.0]))
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 5.0])).to(device)
    ```

    ## Fix safety
    The fix moves the loss module where it is built, with the device its inputs were
    moved with: `.to(device)` when that device can be named there (the same variable,
    or the same known device value, bound before the loss is built: a parameter, an
    earlier statement of a block that holds it, a module name bound before the function
    that builds it), `.cuda()` when the model or the inputs were moved
    with an unconditional `.cuda()` at the top level of the script.  It is safe when
    every call of the loss gets a tensor on that device, unsafe otherwise (a call may
    get CPU tensors).  Without a device that can be named there, it is reported only.
    A functional loss gets its weight moved where it is passed, to the input's device
    (`weight=w.to(out.device)`, safe; when the input is no name, the device its
    tensors were moved with, if it can be named there).
    """

    code = "TM103"
    name = "loss-weight-not-moved"
    pitfall = "device"
    summary = "a loss built with a class weight made on the CPU is called with tensors on the GPU"
    severity = Severity.BUG
    # a loss class written before ``(``; then the screen of its calls (a weight may be
    # passed by position: ``nn.CrossEntropyLoss(w)``)
    needles = ("Loss(", "cross_entropy", "_loss(")  # (nll_loss, multi_margin_loss, ...)
    verify = Verify("device", MISMATCH_EVIDENCE)
    corpus_minimum = (2, 2)
    valid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2).to('cuda')\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0], device='cuda'))\n"
        "loss = criterion(model(x.to('cuda')), y.to('cuda'))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2).to('cuda')\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0])).to('cuda')\n"
        "loss = criterion(model(x.to('cuda')), y.to('cuda'))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\nloss = criterion(model(x), y)\n",
    )
    invalid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2).to('cuda')\n"
        "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0]))\n"
        "loss = criterion(model(x.to('cuda')), y.to('cuda'))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 1).cuda()\n"
        "pw = torch.FloatTensor([3.0])\ncriterion = nn.BCEWithLogitsLoss(pos_weight=pw)\n"
        "loss = criterion(model(x.cuda()), y.cuda())\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        has = has or text.__contains__
        return file_mentions_device(text, has) and super().may_match(text, has) and _text_may_pass_weight(text)

    def check(self, ctx: Context):
        # (the screens of the text gate are the ``keep`` of the lookups below: no call they
        # rule out is looked at, with or without the gate)
        if not super().may_match(ctx.text, ctx.has) or not file_mentions_device(ctx.text, ctx.has) \
                or ctx.has("set_default_device") or ctx.has("set_default_tensor_type"):
            return
        sem = ctx.sem
        ctors = [(c, e) for c in sem.find_named((ast.Call,), _NAMES, keep=_CTOR_HITS)
                 for e in [_entry(sem, c, _PREFIXES, _WEIGHTED)] if e is not None]
        calls = [(c, e) for c in sem.find_named((ast.Call,), _FN_NAMES, keep=_FN_HITS)
                 for e in [_entry(sem, c, ("torch.nn.functional.",), _FUNCTIONAL)] if e is not None]
        if not (ctors or calls) or framework_in_file(sem) is not None:
            return
        for ctor, params in ctors:
            f = self._check_ctor(ctx, ctor, params)
            if f is not None:
                yield f
        for call, params in calls:
            f = self._check_functional(ctx, call, params)
            if f is not None:
                yield f

    def _check_functional(self, ctx: Context, call: ast.Call, params: dict):
        """``F.cross_entropy(out, y, weight=w)`` with ``w`` made on the CPU and the input
        (or the target) on the device: the fix moves the weight to the input's device."""
        sem = ctx.sem
        weights = _cpu_weights(sem, call, params)
        if weights is None or len(call.args) < 1 or isinstance(call.args[0], ast.Starred):
            return None
        inp = call.args[0]
        move = next((m for m in (_device_move(sem, a) for a in call.args[:2] if not isinstance(a, ast.Starred))
                     if m is not None), None)
        if move is None:
            return None
        param, w, made = weights[0]
        msg = (
            f"`{sem.segment(call.func)}(..., {param}=...)`: its `{param}` is a tensor made on the CPU"
            f" (`{_short(sem.segment(made))}`, line {made.lineno}) while the input is on the device;"
            " on a GPU this fails with 'Expected all tensors to be on the same device'"
        )
        if isinstance(inp, ast.Name):
            where = f"{inp.id}.device"
        else:
            t = self._device_text(sem, move, call)
            where = t[3:-1] if t is not None and t.startswith("to(") else None
        if where is None or len(weights) > 1:
            return ctx.finding(self, call, msg + "; move it to the input's device")
        fix_text = f".to({where})"

        def build(view, w=w, fix_text=fix_text):
            import libcst as cst

            old = node = view.node(w)
            if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not node.lpar:
                node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return {old: moved_call(node, fix_text)}

        return ctx.finding(self, call, f"{msg}; move it: `{param}=...{fix_text}`",
                           Fix(build, Safety.SAFE, message=f"move the `{param}` with `{fix_text[1:]}`"))

    def _check_ctor(self, ctx: Context, ctor: ast.Call, params: dict):
        sem = ctx.sem
        weights = _cpu_weights(sem, ctor, params)
        if weights is None:
            return None
        flow = sem.value_uses(ctor)
        if flow.escapes:
            return None
        calls = []
        for e in flow.uses:
            if isinstance(e, ast.Attribute) and not (e is ctor):
                return None  # held in an attribute: a model's submodule moves with it
            p = sem.parent(e)
            if isinstance(p, ast.Call) and p.func is e:
                calls.append(p)
            elif isinstance(p, ast.Attribute) and p.value is e and p.attr == "forward" \
                    and isinstance(sem.parent(p), ast.Call) and sem.parent(p).func is p:
                calls.append(sem.parent(p))
            else:
                return None  # moved (``criterion.to(device)``), passed on, read otherwise
        if not calls:
            return None
        moves = []
        for c in calls:
            got = None
            for a in [*c.args, *(k.value for k in c.keywords)]:
                if isinstance(a, ast.Starred):
                    continue
                got = _device_move(sem, a)
                if got is not None:
                    break
            moves.append(got)
        known = [m for m in moves if m is not None]
        if not known:
            return None
        move = known[0]
        param, w, made = weights[0]
        loss = f"`{sem.segment(ctor.func)}({param}=...)`"
        msg = (
            f"{loss}: its `{param}` is a tensor made on the CPU (`{_short(sem.segment(made))}`, line {made.lineno})"
            f" and the loss is never moved, while it is called with tensors on the device (line {_call_line(calls, moves)});"
            " on a GPU this fails with 'Expected all tensors to be on the same device'"
        )
        text = self._device_text(sem, move, ctor)
        if text is None:
            return ctx.finding(self, ctor, msg + "; move the loss to the device its inputs are on")
        safety = Safety.SAFE if all(m is not None for m in moves) else Safety.UNSAFE
        fix_text = f".{text}"

        def build(view, ctor=ctor, fix_text=fix_text):
            node = view.node(ctor)
            return {node: moved_call(node, fix_text)}

        return ctx.finding(self, ctor, f"{msg}; move it: `{fix_text[1:]}`",
                           Fix(build, safety, message=f"move the loss with `{fix_text[1:]}`"))

    @staticmethod
    def _device_text(sem: SemanticModel, move: Move, at) -> Optional[str]:
        """``to(<device>)`` or ``cuda()`` for the loss built at ``at``: the device the
        inputs were moved with, named there and bound when ``at`` runs
        (:func:`bound_before`); None when it cannot be."""
        if move.style == "to":
            t = device_text_at(sem, move.device, at) if move.device is not None else None
            return f"to({t})" if t is not None and bound_before(sem, t, at) else None
        if move.style == "cuda" and move.device is None:
            stmt = sem.statement_of(move.call)
            if isinstance(sem.parent(stmt), ast.Module) and isinstance(sem.parent(sem.statement_of(at)), ast.Module):
                return "cuda()"  # the script needs CUDA whatever runs: the loss may too
        return None


def _call_line(calls, moves) -> int:
    return next(c.lineno for c, m in zip(calls, moves) if m is not None)
