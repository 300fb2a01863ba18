"""Pitfall: filtered_load (see ../shared/pitfalls.md section 4).

TM401: in one scope, the model's classification head is replaced (``model.fc = ...``,
``model.classifier[-1] = ...``, ``model.heads.head = ...``) and *afterwards* a checkpoint
from ``torch.load`` is loaded into the same model with ``load_state_dict``.  The
checkpoint's head has the old shape, so the load raises "size mismatch" (``strict=False``
does not help: it only relaxes missing/unexpected keys).

The fix loads only the entries whose name and shape match, through a small helper added
once per file, and warns about what it skipped.  It is safe only when the checkpoint is
recognisably a foreign/pretrained one (hub download, or a path naming pretrain/imagenet/an
architecture); otherwise the checkpoint may have been saved from the modified model, and
the fix is offered as unsafe.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .astfacts import facts as _ast_facts
from .cstutil import dotted as _dotted, walk as _walk
from .rule import FileContext, Fix, Rule, Safety, Severity

HELPER = "load_matching_state_dict"
HELPER_SOURCE = '''
def load_matching_state_dict(model, state_dict):
    """Load the entries of `state_dict` whose name and shape match `model`; warn about the rest."""
    own = model.state_dict()
    keep = {
        k: v
        for k, v in state_dict.items()
        if k in own and getattr(v, "shape", None) == getattr(own[k], "shape", None)
    }
    result = model.load_state_dict(keep, strict=False)
    skipped = sorted(set(state_dict) - set(keep))
    if skipped or result.missing_keys:
        warnings.warn(
            f"partial load: skipped {len(skipped)} checkpoint keys (e.g. {skipped[:5]}), "
            f"{len(result.missing_keys)} parameters left at init (e.g. {result.missing_keys[:5]})"
        )
    return result
'''

TORCH_LOAD = ("torch.load", "torch.serialization.load")
HUB_LOAD = (
    "torch.hub.load_state_dict_from_url",
    "torch.utils.model_zoo.load_url",
    "torch.hub.load_url",
)
HEADS = ("fc", "classifier", "head", "heads", "last_linear")
STATE_KEYS = ("state_dict", "model", "model_state_dict", "net")
RESUME_KEYS = ("optimizer", "optimizer_state_dict", "optim", "epoch", "scheduler", "lr_scheduler", "step")
_FOREIGN = re.compile(
    r"pre-?train|imagenet|resnet|resnext|vgg|vit|bert|densenet|mobilenet|efficientnet|alexnet|inception|"
    r"convnext|swin|deit|regnet|squeezenet|shufflenet|googlenet|mnasnet|roberta",
    re.I,
)
_OWN = re.compile(r"fine-?tun|fine_tun|best|epoch|resume|last|finetun", re.I)
# methods that read a dict without changing it
_READ_ONLY = ("keys", "items", "values", "get", "copy", "__contains__")


def _string_index(node: cst.Subscript) -> Optional[str]:
    if len(node.slice) != 1:
        return None
    idx = node.slice[0].slice
    if isinstance(idx, cst.Index) and isinstance(idx.value, cst.SimpleString):
        v = idx.value.evaluated_value
        return v if isinstance(v, str) else None
    return None


class StrictLoadAfterHeadChange(Rule):
    """Strict load_state_dict(torch.load(...)) after the model's head was replaced.

    ## What it does
    Finds `model.load_state_dict(torch.load(path))` (also through a variable, or
    `ckpt["state_dict"]`) that comes after the same model's head was replaced in the same
    scope (`model.fc = nn.Linear(...)`, `model.classifier[-1] = ...`, `model.head = ...`,
    `model.heads.head = ...`).

    ## Why is this bad?
    A checkpoint of the original architecture has a head of a different shape, so the
    load raises `RuntimeError: Error(s) in loading state_dict ... size mismatch for
    fc.weight`. `strict=False` does not help: it relaxes only missing and unexpected
    keys, not shapes.

    The fix loads the entries whose name and shape match and warns about the skipped
    ones, through a helper `load_matching_state_dict(model, state_dict)` added once per
    file; the user's `torch.load` call (`map_location`, `weights_only`) is kept as it is.
    It is safe when the checkpoint is clearly a pretrained one (a hub download, or a path
    naming `pretrain`, `imagenet` or an architecture); otherwise it is unsafe: if the
    checkpoint was saved from the modified model, the load is correct as written, and if
    it is a pretrained one, loading it before replacing the head keeps the load strict.

    ## Example
    ```python
    model = Backbone()
    model.fc = nn.Linear(512, 3)
    model.load_state_dict(torch.load("resnet_imagenet.pth", map_location="cpu"))
    ```

    ## Use instead
    ```python
    model = Backbone()
    model.load_state_dict(torch.load("resnet_imagenet.pth", map_location="cpu"))
    model.fc = nn.Linear(512, 3)
    ```
    or `load_matching_state_dict(model, torch.load("resnet_imagenet.pth", map_location="cpu"))`.
    """

    code = "TM401"
    name = "strict-load-after-head-change"
    pitfall = "filtered_load"
    summary = "strict load_state_dict(torch.load(...)) after the model's head was replaced"
    severity = Severity.BUG
    needles = HEADS
    requires_all = ("load_state_dict",)

    @classmethod
    def ast_check(cls, tree) -> bool:
        # x.load_state_dict(...) of a torch.load / hub checkpoint, after `x.<head> = ...`
        f = _ast_facts(tree)
        return (
            f.head_assign
            and "load_state_dict" in f.methods
            and not f.names.isdisjoint(("load", "load_state_dict_from_url", "load_url"))
        )

    def check(self, ctx: FileContext):
        for call in ctx.nodes(cst.Call):
            if (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "load_state_dict"
            ):
                f = _check_load(self, ctx, call)
                if f is not None:
                    yield f


def _check_load(rule, ctx: FileContext, call: cst.Call):
    recv = call.func.value
    recv_code = _dotted(recv)
    if recv_code is None:
        return None
    state_arg, strict_false, others = None, False, []
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None and i == 0 or arg.keyword is not None and arg.keyword.value == "state_dict":
            state_arg = arg
        elif (arg.keyword is None and i == 1) or (arg.keyword is not None and arg.keyword.value == "strict"):
            strict_false = isinstance(arg.value, cst.Name) and arg.value.value == "False"
        else:
            others.append(arg)
    if state_arg is None:
        return None
    scope = ctx.scope(call)
    src = _load_source(ctx, state_arg.value, call, scope, 0)
    if src is None:
        return None
    load_call, ckpt_var = src
    head = _head_assignment(ctx, recv_code, call, scope)
    if head is None:
        return None
    if ckpt_var is not None and _is_resume(ctx, ckpt_var, scope):
        return None
    path = _path_expr(ctx, load_call)
    path_code = ctx.code(path) if path is not None else ctx.code(load_call)
    head_code = ctx.code(head.targets[0].target)
    head_line = ctx.position(head)[0]
    foreign = ctx.is_qualname(load_call.func, *HUB_LOAD) or (path is not None and _names_pretrained(ctx, path, 0))
    base = (
        f"`{recv_code}.load_state_dict` loads `{path_code}` after `{head_code}` was replaced (line {head_line}): "
        "a checkpoint of the original head does not fit the new one (\"size mismatch\" or unexpected keys)"
    )
    if strict_false:
        base += " (strict=False does not skip shape mismatches)"
    if foreign:
        msg = base + "; load the matching weights only"
    else:
        msg = (
            base + "; if this is a pretrained checkpoint, move the load above the head replacement "
            "(or load the matching weights only), if it was saved from the modified model, keep it"
        )
    if others:
        extra = ", ".join(ctx.code(a.value) if a.keyword is None else a.keyword.value for a in others)
        return ctx.finding(rule, call, f"{msg} (not fixed: load_state_dict also gets {extra})")
    new_call = cst.Call(
        func=cst.Name(HELPER),
        args=[
            cst.Arg(value=recv, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(value=state_arg.value),
        ],
    )
    fix = Fix(
        {call: new_call},
        safety=Safety.SAFE if foreign else Safety.UNSAFE,
        message=f"load only the entries of the checkpoint that match `{recv_code}`, warn about the rest",
        helpers={HELPER: HELPER_SOURCE},
        imports=(("warnings", None),),
    )
    return ctx.finding(rule, call, msg, fix)


def _single_binding(ctx: FileContext, name: cst.Name, scope, before: cst.CSTNode):
    """The value of the last assignment ``name = value`` in ``scope`` before ``before``,
    or None (several candidates, tuple targets, loops, parameters...)."""
    if scope is None:
        return None
    pos = ctx.position(before)
    cands = []
    for asg in scope.assignments[name.value]:
        node = getattr(asg, "node", None)
        if node is None:
            return None
        try:
            p = ctx.position(node)
        except KeyError:
            return None
        if p < pos:
            cands.append((p, asg))
    if not cands:
        # not bound in this scope: a module-level name bound exactly once
        gl = getattr(scope, "globals", None)
        if gl is None or gl is scope:
            return None
        asgs = list(gl.assignments[name.value])
        if len(asgs) != 1:
            return None
        cands = [(None, asgs[0])]
    cands.sort(key=lambda c: c[0] or (0, 0))
    node = getattr(cands[-1][1], "node", None)
    target = ctx.parent(node) if node is not None else None
    assign = ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and target.target is node:
        return assign
    return None


def _load_source(ctx: FileContext, expr: cst.CSTNode, at: cst.CSTNode, scope, depth: int):
    """(torch.load call, checkpoint variable or None) when ``expr`` is the loaded state."""
    if depth > 3:
        return None
    if isinstance(expr, cst.Call) and ctx.is_qualname(expr.func, *TORCH_LOAD, *HUB_LOAD):
        return expr, None
    if isinstance(expr, cst.Subscript) and _string_index(expr) in STATE_KEYS:
        inner = _load_source(ctx, expr.value, at, scope, depth + 1)
        if inner is not None:
            ckpt = expr.value if isinstance(expr.value, cst.Name) else inner[1]
            return inner[0], ckpt
        return None
    if isinstance(expr, cst.Name):
        assign = _single_binding(ctx, expr, scope, at)
        if assign is None or _mutated_between(ctx, expr.value, assign, at, scope):
            return None
        inner = _load_source(ctx, assign.value, assign, scope, depth + 1)
        if inner is None:
            return None
        return inner[0], inner[1] or expr
    return None


def _mutated_between(ctx: FileContext, name: str, assign: cst.Assign, at: cst.CSTNode, scope) -> bool:
    """Whether ``name`` is changed or handed to an unknown call between its assignment and
    the load: ``sd.pop(k)``, ``del sd[k]``, ``sd[k] = v``, ``filter_keys(sd)``..."""
    start, end = ctx.position(assign), ctx.position(at)
    for acc in scope.accesses[name]:
        n = acc.node
        p = ctx.position(n)
        if not start < p < end:
            continue
        parent = ctx.parent(n)
        if isinstance(parent, cst.Attribute) and parent.value is n:
            if parent.attr.value not in _READ_ONLY:
                return True
        elif isinstance(parent, cst.Subscript):
            grand = ctx.parent(parent)
            if isinstance(grand, (cst.AssignTarget, cst.Del)) or isinstance(grand, cst.AugAssign):
                return True
        elif isinstance(parent, cst.Arg):
            return True
    return False


def _is_resume(ctx: FileContext, ckpt: cst.Name, scope) -> bool:
    """The checkpoint also carries optimizer/epoch state: resuming a run of this very
    model, not loading foreign weights."""
    if scope is None:
        return False
    for acc in scope.accesses[ckpt.value]:
        parent = ctx.parent(acc.node)
        if isinstance(parent, cst.Subscript) and _string_index(parent) in RESUME_KEYS:
            return True
        if isinstance(parent, cst.Attribute) and parent.attr.value == "get":
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and call.args and isinstance(call.args[0].value, cst.SimpleString):
                if call.args[0].value.evaluated_value in RESUME_KEYS:
                    return True
    return False


def _head_assignment(ctx: FileContext, recv: str, load: cst.Call, scope) -> Optional[cst.Assign]:
    """The last assignment replacing ``recv``'s head before ``load`` in the same scope,
    unless ``recv`` itself is rebound after it."""
    pos = ctx.position(load)
    head, rebound_at = None, None
    for node in ctx.nodes(cst.Assign):
        if ctx.scope(node) is not scope:
            continue
        p = ctx.position(node)
        if p >= pos:
            continue
        for t in node.targets:
            code = ctx.code(t.target)
            if code == recv:
                if rebound_at is None or p > rebound_at:
                    rebound_at = p
            elif _is_head_target(t.target, recv) and len(node.targets) == 1 and not _exclusive(ctx, node, load):
                if head is None or p > ctx.position(head):
                    head = node
    if head is None or (rebound_at is not None and rebound_at > ctx.position(head)):
        return None
    return head


def _exclusive(ctx: FileContext, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if`` (so never both run)."""
    chain_a = [a, *ctx.ancestors(a)]
    ids_a = {id(n): i for i, n in enumerate(chain_a)}
    prev = b
    for n in ctx.ancestors(b):
        i = ids_a.get(id(n))
        if i is not None:  # n is the lowest common ancestor; children on both paths:
            child_a = chain_a[i - 1] if i else None
            if isinstance(n, cst.If) and child_a is not None:
                return {id(child_a), id(prev)} == {id(n.body), id(n.orelse)}
            return False
        prev = n
    return False


def _is_head_target(target: cst.CSTNode, recv: str) -> bool:
    """``recv.fc``, ``recv.classifier[-1]``, ``recv.heads.head``."""
    if isinstance(target, cst.Subscript):
        target = target.value
    if not isinstance(target, cst.Attribute) or target.attr.value not in HEADS:
        return False
    base = _dotted(target.value)
    if base == recv:
        return True
    return (
        isinstance(target.value, cst.Attribute)
        and target.value.attr.value in HEADS
        and _dotted(target.value.value) == recv
    )


def _path_expr(ctx: FileContext, load_call: cst.Call) -> Optional[cst.CSTNode]:
    for i, arg in enumerate(load_call.args):
        if arg.keyword is None and i == 0 and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value in ("f", "url"):
            return arg.value
    return None


def _names_pretrained(ctx: FileContext, expr: cst.CSTNode, depth: int) -> bool:
    """The path/URL names a pretrained checkpoint: a string in it mentions pretrain,
    imagenet or an architecture (and not fine-tuning/best/epoch/resume), possibly
    through a variable bound once to such an expression."""
    texts = []
    for n in _walk(expr):
        if isinstance(n, cst.SimpleString):
            v = n.evaluated_value
            texts.append(v if isinstance(v, str) else v.decode("latin-1"))
        elif isinstance(n, cst.FormattedStringText):
            texts.append(n.value)
        elif isinstance(n, cst.Name) and depth < 2 and not isinstance(ctx.parent(n), cst.Attribute):
            assign = _single_binding(ctx, n, ctx.scope(n), n)
            if assign is not None and _names_pretrained(ctx, assign.value, depth + 1):
                return True
    text = " ".join(texts)
    return bool(_FOREIGN.search(text)) and not _OWN.search(text)
