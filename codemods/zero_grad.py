"""Pitfall: zero_grad (see shared/pitfalls.md section 2).

TM201 (missing-zero-grad): a loop runs ``backward()`` and ``optimizer.step()`` every
iteration and nothing clears the gradients, so every step uses the sum of all the
gradients computed so far.

TM202 (misplaced-zero-grad): the gradients are cleared, but in the wrong place: once per
epoch in the outer loop while the inner loop steps every batch, or between ``backward()``
and ``step()`` so that the step sees no gradient at all.

The analysis is deliberately conservative (precision first): anything that might clear
the gradients counts as clearing them, e.g. a ``zero_grad()`` on any receiver we cannot
tell apart from the optimizer, ``p.grad = None``, ``.grad.zero_()``, a closure, or an
unknown call that receives the optimizer or the model.  Loops driven by a framework
(Lightning ``training_step``, ``accelerator.accumulate``, a DeepSpeed-style engine that
both runs ``backward`` and ``step``) and ``step(closure)`` loops are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from .astfacts import facts as _ast_facts
from .cstutil import dotted as _dotted, method_name as _method, walk as _walk
from .rule import FileContext, Fix, Rule, Safety, Severity

# --------------------------------------------------------------------------- helpers

_LOOPS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# nodes between a call and its loop that make the call conditional (or deferred)
_CONDITIONAL = (
    cst.If,
    cst.Else,
    cst.For,
    cst.While,
    cst.Try,
    cst.TryStar,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.FunctionDef,
    cst.ClassDef,
    cst.Lambda,
    cst.IfExp,
    cst.BooleanOperation,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Match,
)
_SCALERS = {
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.cpu.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
}
# callees that are known not to clear gradients (qualified-name prefixes)
_KNOWN_PREFIXES = (
    "torch.",
    "builtins.",
    "math.",
    "time.",
    "random.",
    "numpy.",
    "itertools.",
    "functools.",
    "logging.",
    "tqdm.",
    "statistics.",
    "copy.",
    "os.",
    "sys.",
    "json.",
    "pickle.",
    "pathlib.",
    "collections.",
    "operator.",
    "warnings.",
    "datetime.",
)
_OPT_METHODS = {"step", "zero_grad", "state_dict", "load_state_dict", "add_param_group"}
_MODEL_METHODS = {
    "parameters",
    "named_parameters",
    "train",
    "eval",
    "to",
    "cuda",
    "cpu",
    "forward",
    "state_dict",
    "modules",
    "children",
    "named_modules",
    "buffers",
    "requires_grad_",
    "float",
    "half",
    "double",
    "zero_grad",  # decided by zero_ops (which module it clears)
}
_SCALER_METHODS = {"step", "unscale_", "scale", "update", "get_scale"}
# a library method on the model with one of these in its name may clear the gradients
_SUSPECT_WORDS = ("zero", "grad", "step", "optim", "backward", "update", "reset", "clear", "fit", "train")


def _qn(ctx: FileContext, node: cst.CSTNode) -> set[str]:
    return ctx.qualnames(node)


def _receiver(call: cst.Call) -> cst.BaseExpression | None:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def _related(a: str, b: str) -> bool:
    """One dotted path is the other or contains it (``model`` / ``model.fc``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _opt_ctor(ctx: FileContext, call: cst.Call) -> bool:
    for q in _qn(ctx, call.func):
        parts = q.split(".")
        if (
            len(parts) >= 3
            and parts[:2] == ["torch", "optim"]
            and parts[-1][:1].isupper()
            and parts[-1] not in ("Optimizer", "LBFGS")
            and not any(p in ("lr_scheduler", "swa_utils") for p in parts)
        ):
            return True
    return False


def _kind_of_value(ctx: FileContext, value: cst.BaseExpression) -> str:
    if isinstance(value, cst.Name):
        # ``self.optimizer = optimizer`` with ``optimizer`` a parameter of the function
        scope = ctx.scope(value)
        assigns = list(scope[value.value]) if scope is not None else []
        if assigns and all(isinstance(getattr(a, "node", None), cst.Param) for a in assigns):
            return "param"
    if isinstance(value, cst.Call):
        if _opt_ctor(ctx, value):
            return "opt"
        qs = _qn(ctx, value.func)
        if qs & _SCALERS:
            return "scaler"
        if any("lr_scheduler" in q for q in qs):
            return "sched"
    return "unknown"


@dataclass
class Binding:
    kind: str  # opt | param | scaler | sched | unknown
    ctors: list = field(default_factory=list)  # optimizer constructor calls


def _assigned_value(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The value bound to a Name/Attribute target of an assignment, or None."""
    parent = ctx.parent(target)
    if isinstance(parent, cst.AssignTarget):
        stmt = ctx.parent(parent)
        return stmt.value if isinstance(stmt, cst.Assign) else None
    if isinstance(parent, cst.AnnAssign) and parent.target is target:
        return parent.value
    if isinstance(parent, cst.Element):
        tup = ctx.parent(parent)
        at = ctx.parent(tup) if isinstance(tup, (cst.Tuple, cst.List)) else None
        stmt = ctx.parent(at) if isinstance(at, cst.AssignTarget) else None
        if isinstance(stmt, cst.Assign) and isinstance(stmt.value, (cst.Tuple, cst.List)):
            i = list(tup.elements).index(parent)
            vals = stmt.value.elements
            if len(vals) == len(tup.elements) and not isinstance(vals[i], cst.StarredElement):
                return vals[i].value
    return None


def _binding(ctx: FileContext, expr: cst.BaseExpression) -> Binding:
    """What ``expr`` (a step receiver or argument) is bound to."""
    if isinstance(expr, cst.Name):
        scope = ctx.scope(expr)
        if scope is None:
            return Binding("unknown")
        assigns = list(scope[expr.value])
        if not assigns:
            return Binding("unknown")
        kinds, ctors = set(), []
        for a in assigns:
            node = getattr(a, "node", None)
            if isinstance(node, cst.Param):
                kinds.add("param")
                continue
            value = _assigned_value(ctx, node) if isinstance(node, cst.Name) else None
            kind = "unknown" if value is None else _kind_of_value(ctx, value)
            kinds.add(kind)
            if kind == "opt":
                ctors.append(value)
        if len(kinds) == 1:
            return Binding(kinds.pop(), ctors)
        if kinds == {"opt", "param"}:
            return Binding("opt", ctors)
        return Binding("unknown")
    text = _dotted(expr)
    if text and text.startswith("self.") and text.count(".") == 1:
        cls = next((a for a in ctx.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
        if cls is None:
            return Binding("unknown")
        kinds, ctors = set(), []
        for n in _walk(cls):
            if isinstance(n, cst.AssignTarget) and _dotted(n.target) == text:
                value = _assigned_value(ctx, n.target)
                kind = "unknown" if value is None else _kind_of_value(ctx, value)
                kinds.add(kind)
                if kind == "opt":
                    ctors.append(value)
            elif isinstance(n, (cst.AnnAssign, cst.AugAssign)) and _dotted(n.target) == text:
                kinds.add("unknown")
        if len(kinds) == 1:
            return Binding(kinds.pop(), ctors)
    return Binding("unknown")


def _models_of(ctors: list) -> set[str] | None:
    """Dotted receivers of ``.parameters()`` in the optimizer constructors: the modules
    whose gradients the optimizer steps; None when not all are known."""
    if not ctors:
        return None
    out: set[str] = set()
    for call in ctors:
        found = False
        for n in (m for a in call.args for m in _walk(a.value)):
            if isinstance(n, cst.Call) and _method(n) in ("parameters", "named_parameters"):
                d = _dotted(_receiver(n))
                if d is None:
                    return None
                out.add(d)
                found = True
        if not found:
            return None
    return out


def _innermost(ctx: FileContext, node: cst.CSTNode):
    """The innermost loop holding ``node`` within its function, or None."""
    for a in ctx.ancestors(node):
        if isinstance(a, _LOOPS):
            return a
        if isinstance(a, _SCOPES):
            return None
    return None


def _in_body(ctx: FileContext, node: cst.CSTNode, loop) -> bool:
    """``node`` lies in ``loop.body`` (not its header or ``else``)."""
    prev = node
    for a in ctx.ancestors(node):
        if a is loop:
            return prev is loop.body
        prev = a
    return False


def _direct(ctx: FileContext, node: cst.CSTNode, loop) -> bool:
    """``node`` runs on every iteration of ``loop`` (only ``with`` blocks between)."""
    for a in ctx.ancestors(node):
        if a is loop:
            return True
        if isinstance(a, _CONDITIONAL):
            return False
    return False


def _stmt_of(ctx: FileContext, node: cst.CSTNode):
    for a in ctx.ancestors(node):
        if isinstance(a, cst.SimpleStatementLine):
            return a
        if isinstance(a, cst.BaseCompoundStatement):
            return None
    return None


def _sole_call(stmt) -> cst.Call | None:
    """The call of a statement line that is just ``X.f(...)``."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        s = stmt.body[0]
        if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call):
            return s.value
    return None


def _framework_skip(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Lightning training_step / LightningModule, ``accelerator.accumulate``."""
    for a in ctx.ancestors(node):
        if isinstance(a, cst.FunctionDef) and a.name.value in ("training_step", "training_step_end"):
            return True
        if isinstance(a, cst.ClassDef):
            for b in a.bases:
                if any("lightning" in q.lower() for q in _qn(ctx, b.value)):
                    return True
        if isinstance(a, cst.With):
            for item in a.items:
                if isinstance(item.item, cst.Call) and _method(item.item) == "accumulate":
                    return True
    return False


def _accumulation_guard(ctx: FileContext, node: cst.CSTNode, loop) -> bool:
    """``node`` sits under an ``if`` whose test uses ``%`` (``(i + 1) % k == 0``)."""
    for a in ctx.ancestors(node):
        if a is loop:
            return False
        if isinstance(a, cst.If) and any(
            isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo) for n in _walk(a.test)
        ):
            return True
    return False


def _moved_stmt(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """The statement as it will be re-inserted: its comment lines kept, blank lines dropped."""
    return stmt.with_changes(leading_lines=[ln for ln in stmt.leading_lines if ln.comment is not None])


def _new_zero(receiver: str) -> cst.SimpleStatementLine:
    return cst.parse_statement(f"{receiver}.zero_grad()\n")


# --------------------------------------------------------------------------- the analysis


@dataclass
class Stepper:
    text: str  # the optimizer expression, e.g. "optimizer"
    expr: cst.BaseExpression
    binding: Binding
    calls: list = field(default_factory=list)  # the step calls (opt.step() / scaler.step(opt))

    @property
    def known(self) -> bool:
        return self.binding.kind in ("opt", "param")

    @property
    def models(self) -> set[str] | None:
        return _models_of(self.binding.ctors) if self.binding.kind == "opt" else None


@dataclass
class LoopFacts:
    loop: cst.CSTNode
    steppers: dict  # text -> Stepper
    backwards: list  # backward calls whose innermost loop is the loop
    any_backward: bool  # a backward anywhere in the body (any depth)
    forwards: set  # dotted callees called like models
    skip: bool = False
    ambiguous: bool = False  # several stepped objects, none provably an optimizer


class _Analysis:
    """Per-file facts shared by both rules (computed once per FileContext)."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.calls = [n for n in _walk(ctx.module) if isinstance(n, cst.Call)]
        self.defs: dict[str, list[cst.FunctionDef]] = {}
        for n in _walk(ctx.module):
            if isinstance(n, cst.FunctionDef):
                self.defs.setdefault(n.name.value, []).append(n)
        self.loops = [n for n in _walk(ctx.module) if isinstance(n, _LOOPS)]
        self._facts: dict[int, LoopFacts] = {}

    # ----- loops
    def facts(self, loop) -> LoopFacts:
        f = self._facts.get(id(loop))
        if f is None:
            f = self._facts[id(loop)] = self._compute(loop)
        return f

    def _compute(self, loop) -> LoopFacts:
        ctx = self.ctx
        body_calls = [n for n in _walk(loop.body) if isinstance(n, cst.Call)]
        own = [c for c in body_calls if _innermost(ctx, c) is loop]
        backwards = [c for c in own if _method(c) == "backward"]
        any_backward = any(_method(c) == "backward" for c in body_calls)
        backward_receivers = {_dotted(_receiver(c)) for c in body_calls if _method(c) == "backward"}
        facts = LoopFacts(loop, {}, backwards, any_backward, set())
        if _framework_skip(ctx, loop):
            facts.skip = True
            return facts
        for c in own:
            if _method(c) != "step":
                continue
            recv = _receiver(c)
            rtext = _dotted(recv)
            if rtext is not None and rtext in backward_receivers:
                facts.skip = True  # an engine that runs backward and step itself (DeepSpeed)
                return facts
            if any(a.keyword is not None for a in c.args) or len(c.args) > 1:
                facts.skip = True  # step(closure=...)
                return facts
            if not c.args:
                opt_expr = recv
                b = _binding(ctx, recv)
                if b.kind in ("scaler", "sched"):
                    continue
            else:
                arg = c.args[0].value
                rb, ab = _binding(ctx, recv), _binding(ctx, arg)
                if rb.kind == "sched":
                    continue  # scheduler.step(metric)
                if rb.kind == "scaler" or ab.kind in ("opt", "param") and rb.kind != "opt":
                    opt_expr, b = arg, ab
                else:
                    facts.skip = True  # optimizer.step(closure): the closure clears
                    return facts
            text = _dotted(opt_expr)
            if text is None:
                facts.skip = True
                return facts
            st = facts.steppers.setdefault(text, Stepper(text, opt_expr, b))
            st.calls.append(c)
        # unknown receivers are dropped when a known optimizer steps; never a scheduler
        if any(s.known for s in facts.steppers.values()):
            facts.steppers = {t: s for t, s in facts.steppers.items() if s.known}
        else:
            facts.steppers = {
                t: s for t, s in facts.steppers.items() if "sched" not in t.split(".")[-1].lower()
            }
            facts.ambiguous = len(facts.steppers) > 1
        for c in body_calls:
            d = _dotted(c.func)
            if d is not None and not any(q.startswith(_KNOWN_PREFIXES) for q in _qn(ctx, c.func)):
                if isinstance(c.func, cst.Name) and d not in self.defs:
                    facts.forwards.add(d)
                elif isinstance(c.func, cst.Attribute) and d.startswith("self.") and d.count(".") == 1:
                    if not self._is_method(c.func):
                        facts.forwards.add(d)
        return facts

    def _is_method(self, func: cst.Attribute) -> bool:
        cls = next((a for a in self.ctx.ancestors(func) if isinstance(a, cst.ClassDef)), None)
        if cls is None:
            return True
        return any(
            isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value for s in cls.body.body
        )

    # ----- what clears gradients
    def zero_ops(self, root: cst.CSTNode, st: Stepper, facts: LoopFacts) -> list[cst.CSTNode]:
        """Explicit gradient-clearing operations inside ``root`` that may clear ``st``'s
        gradients (zero_grad on it or its model, p.grad = None, .grad.zero_(), ...)."""
        out = []
        models = st.models
        all_opts = set(facts.steppers)
        others = set()
        for t, o in facts.steppers.items():
            if t != st.text:
                others |= o.models or set()
        for n in _walk(root):
            if isinstance(n, cst.Call):
                m = _method(n)
                if m == "zero_grad":
                    r = _dotted(_receiver(n))
                    if r is None or r == st.text:
                        out.append(n)
                        continue
                    rb = _binding(self.ctx, _receiver(n))
                    if rb.kind in ("opt", "param"):
                        # another optimizer: it clears ours only if they may share modules
                        theirs = _models_of(rb.ctors) if rb.kind == "opt" else None
                        if models is None or theirs is None or any(_related(a, b) for a in theirs for b in models):
                            out.append(n)
                    elif r in all_opts:
                        continue  # another stepped object
                    elif models is None or any(_related(r, mm) for mm in models):
                        out.append(n)
                    elif not any(_related(r, m) for m in others):
                        out.append(n)
                elif (
                    isinstance(n.func, cst.Name)
                    and "zero" in n.func.value.lower()
                    and not any(q.startswith("torch.") for q in _qn(self.ctx, n.func))
                ):
                    out.append(n)  # zero_gradients(opts), reset_zero_grads(model), ...
                elif m is not None and m.endswith("_") and self._touches_grad(_receiver(n)):
                    out.append(n)
                elif m is not None and "zero_grad" in m:
                    out.append(n)
            elif isinstance(n, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
                if self._touches_grad(n.target):
                    out.append(n)
            elif isinstance(n, cst.Del) and self._touches_grad(n.target):
                out.append(n)
        return out

    @staticmethod
    def _touches_grad(expr) -> bool:
        return any(isinstance(n, cst.Attribute) and n.attr.value == "grad" for n in _walk(expr))

    def may_clear(self, loop, st: Stepper, facts: LoopFacts, all_opts: set[str]) -> str | None:
        """Why ``st``'s gradients may be cleared inside the loop body, or None."""
        watched = {st.text, *all_opts, *(st.models or ()), *facts.forwards}
        for s in facts.steppers.values():
            watched |= s.models or set()
        roots = {w.split(".")[0] for w in watched if "." in w and w.split(".")[0] == "self"}
        return self._scan(loop.body, st, facts, watched, roots, set())

    def _follow(self, defs, st, facts, watched, roots, seen) -> str | None:
        """Scan same-file functions a call may run (their bodies are known)."""
        for fn in defs:
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            why = self._scan(fn.body, st, facts, watched, roots, seen)
            if why:
                return why
        return None

    def _scan(self, root, st: Stepper, facts: LoopFacts, watched, roots, seen) -> str | None:
        if self.zero_ops(root, st, facts):
            return "zero"
        ctx = self.ctx
        all_opts = set(facts.steppers)
        for c in (n for n in _walk(root) if isinstance(n, cst.Call)):
            qs = _qn(ctx, c.func)
            if any(q.startswith(_KNOWN_PREFIXES) for q in qs):
                continue
            d = _dotted(c.func)
            m = _method(c)
            recv = _dotted(_receiver(c)) if m else None
            if isinstance(c.func, cst.Name) and c.func.value in self.defs:
                # a function of this file: it may clear, or get the optimizer/model under
                # another name (then assume it clears)
                if self._receives(c, watched, roots):
                    return f"`{d}()`"
                why = self._follow(self.defs[c.func.value], st, facts, watched, roots, seen)
                if why:
                    return f"`{d}()`"
                continue
            if recv is not None:
                if recv in all_opts or recv == st.text:
                    if m not in _OPT_METHODS:
                        return f"`{d}()`"
                    continue
                if m in _SCALER_METHODS and _binding(ctx, _receiver(c)).kind == "scaler":
                    continue
                if m == "backward":
                    continue
                if recv == "self" and roots and isinstance(c.func, cst.Attribute) and self._is_method(c.func):
                    cls = next((a for a in ctx.ancestors(c) if isinstance(a, cst.ClassDef)), None)
                    defs = [
                        f for f in (cls.body.body if cls else ()) if isinstance(f, cst.FunctionDef) and f.name.value == m
                    ]
                    if not defs or self._follow(defs, st, facts, watched, roots, seen):
                        return f"`{d}()`"
                elif recv in watched and m not in _MODEL_METHODS:
                    # a method of the model: follow it when defined here; a library method
                    # is assumed not to clear unless its name says it might
                    if m in self.defs:
                        if self._follow(self.defs[m], st, facts, watched, roots, seen):
                            return f"`{d}()`"
                    elif any(w in m.lower() for w in _SUSPECT_WORDS):
                        return f"`{d}()`"
            if self._receives(c, watched, roots):
                return f"`{d or 'call'}(...)`"
        return None

    def _receives(self, call: cst.Call, watched: set[str], roots: set[str]) -> bool:
        """The optimizer or a model is passed to ``call`` (not merely called)."""
        for arg in call.args:
            for n in _walk(arg.value):
                if isinstance(n, (cst.Name, cst.Attribute)):
                    d = _dotted(n)
                    if d is None:
                        continue
                    if d in watched or d in roots:
                        p = self.ctx.parent(n)
                        if isinstance(p, cst.Call) and p.func is n:
                            continue  # a forward call: model(x)
                        if isinstance(p, cst.Attribute) and p.value is n and _dotted(p) not in watched:
                            # model.parameters() is the model; model.fc(x) a forward
                            pp = self.ctx.parent(p)
                            if not (isinstance(pp, cst.Call) and pp.func is p and p.attr.value in _MODEL_METHODS):
                                continue
                        return True
        return False


# --------------------------------------------------------------------------- ast gates
def _calls_in(node) -> list:
    import ast

    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]


def _train_loops(f):
    """Loops (stdlib ``ast``) whose body calls ``.backward()`` and ``.step()``, as
    ``(method calls in the body, whether they sit in another loop)``."""
    for loop, nested in f.loops:
        calls = [c for stmt in loop.body for c in _calls_in(stmt)]
        names = {c.func.attr for c in calls}
        if "backward" in names and "step" in names:
            yield calls, nested


def _zeroes_each_stepper(calls) -> bool:
    """Of a loop body's method ``calls``: every ``X.step()`` / ``X.step(opt)`` has ``X.zero_grad()`` /
    ``opt.zero_grad()`` (same spelling) somewhere in the body, or some ``zero_grad()``
    has a receiver that is not a plain name chain: ``_Analysis.zero_ops`` then finds a
    clearing operation for each stepped optimizer and ``may_clear`` answers yes, so
    neither rule reports this loop (nor TM202 its enclosing loop)."""
    import ast

    from .astfacts import _dotted as dotted

    zeroed, any_zero, steps = set(), False, []
    for c in calls:
        if c.func.attr == "zero_grad":
            r = dotted(c.func.value)
            if r is None:
                any_zero = True
            else:
                zeroed.add(r)
        elif c.func.attr == "step":
            steps.append(c)
    for c in steps:
        if c.keywords or len(c.args) > 1 or (c.args and isinstance(c.args[0], ast.Starred)):
            return False
        need = dotted(c.args[0]) if c.args else dotted(c.func.value)
        if need is None or not (any_zero or need in zeroed):
            return False
    return True


def _zero_grad_after_backward(tree, f) -> bool:
    """Some simple statement calling ``.zero_grad()`` follows, in the same block, a
    statement that calls ``.backward()``: what ``MisplacedZeroGrad._between`` needs."""
    import ast

    def span(n):
        return (n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)

    bw = [span(c) for c in f.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "backward"]
    zg = [span(c) for c in f.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "zero_grad"]

    def holds(stmt, spans):
        a, b = span(stmt)
        return any(a <= s and e <= b for s, e in spans)

    from .astfacts import COMPOUND as compound

    def blocks(stmt):
        for name in ("body", "orelse", "finalbody"):
            b = getattr(stmt, name, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                yield b
        for h in getattr(stmt, "handlers", ()) or ():
            yield h.body
        for c in getattr(stmt, "cases", ()) or ():
            yield c.body

    # the block holding each zero_grad call's statement: descend by position
    for z in zg:
        block, i = tree.body, None
        while True:
            i = next((k for k, st in enumerate(block) if holds(st, [z])), None)
            if i is None:
                break
            inner = next((b for b in blocks(block[i]) if any(holds(st, [z]) for st in b)), None)
            if inner is None:
                break
            block = inner
        if i is None or isinstance(block[i], compound):
            continue  # in a header (a loop's iterable, a condition): not a statement of its own
        if any(holds(st, bw) for st in block[:i]):
            return True
    return False


def _analysis(ctx: FileContext) -> _Analysis:
    a = getattr(ctx, "_zero_grad_analysis", None)
    if a is None:
        a = ctx._zero_grad_analysis = _Analysis(ctx)
    return a


def _backward_run(ctx: FileContext, stmt, own_text: str):
    """Walk back from ``stmt`` (a statement line) in its block and return the earliest
    statement of the straight-line run of backward statements that feeds it, or a
    string saying why there is none."""
    block = ctx.parent(stmt)
    if not isinstance(block, cst.IndentedBlock):
        return "not in an indented block"
    body = list(block.body)
    i = body.index(stmt)
    first = None
    for s in reversed(body[:i]):
        if not isinstance(s, cst.SimpleStatementLine):
            if first is None:
                return "control flow between the backward() and the step()"
            if any(isinstance(n, cst.Call) and _method(n) == "backward" for n in _walk(s)):
                return "more backward() calls under control flow before the step()"
            break
        calls = [n for n in _walk(s) if isinstance(n, cst.Call)]
        if any(_method(c) == "backward" for c in calls):
            first = s
            continue
        steps = [c for c in calls if _method(c) == "step"]
        if steps and first is not None:
            break
        zeros = [c for c in calls if _method(c) == "zero_grad" and _dotted(_receiver(c)) == own_text]
        if zeros:
            break
    if first is None:
        return "no backward() before the step() in the same block"
    return first


# --------------------------------------------------------------------------- rules


class MissingZeroGrad(Rule):
    """## What it does
    Finds training loops that call `loss.backward()` and `optimizer.step()` (or
    `scaler.step(optimizer)`) on every iteration while nothing clears the gradients.

    ## Why is this bad?
    `backward()` *adds* to `.grad`.  Without `optimizer.zero_grad()` each step uses the
    sum of every gradient computed so far: the effective learning rate grows with the
    iteration count and training diverges or stalls, without any error.

    Gradient accumulation (a step under `if (i + 1) % k == 0:`), `model.zero_grad()`,
    `p.grad = None`, LBFGS closures, Lightning, Accelerate and DeepSpeed loops, and
    unknown calls that receive the optimizer or the model are not reported.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```
    The fix is safe when the optimizer is provably a `torch.optim` optimizer (built with
    `torch.optim.X(...)` in the file, or a function parameter); otherwise it is unsafe.
    With several optimizers in the loop the `zero_grad()` goes right before the
    backward that feeds that optimizer's step, when that pairing is straight-line code.
    """

    code = "TM201"
    name = "missing-zero-grad"
    pitfall = "zero_grad"
    summary = "backward() and step() in a loop with nothing that clears the gradients"
    severity = Severity.BUG
    needles = ("backward",)
    requires_all = ("step",)

    @classmethod
    def ast_check(cls, tree) -> bool:
        # a loop whose body calls ``.backward(...)`` and ``.step(...)`` and does not
        # visibly zero every object it steps (``may_clear`` would then be true)
        f = _ast_facts(tree)
        return f.loop_backward_step and any(not _zeroes_each_stepper(calls) for calls, _ in _train_loops(f))

    def check(self, ctx: FileContext):
        an = _analysis(ctx)
        for loop in an.loops:
            facts = an.facts(loop)
            if facts.skip or not facts.steppers or not facts.any_backward:
                continue
            all_opts = set(facts.steppers)
            if facts.ambiguous:
                f = self._check_ambiguous(ctx, an, loop, facts, all_opts)
                if f is not None:
                    yield f
                continue
            for st in facts.steppers.values():
                f = self._check_one(ctx, an, loop, facts, st, all_opts)
                if f is not None:
                    yield f

    def _check_ambiguous(self, ctx, an: _Analysis, loop, facts: LoopFacts, all_opts: set[str]):
        """Several objects step and none is provably an optimizer (``optimizer.step();
        ema.step()``): report once when nothing in the loop may clear, never fix."""
        for st in facts.steppers.values():
            if an.may_clear(loop, st, facts, all_opts):
                return None
            for a in ctx.ancestors(loop):
                if isinstance(a, _SCOPES):
                    break
                if isinstance(a, _LOOPS) and an.zero_ops(a.body, st, facts):
                    return None
        names = ", ".join(f"`{t}`" for t in sorted(facts.steppers))
        first = min((c for s in facts.steppers.values() for c in s.calls), key=lambda c: ctx.position(c))
        return ctx.finding(
            self,
            first,
            f"{names} step in a loop with backward() and nothing clears the gradients; "
            "none is provably a torch.optim optimizer, so which to zero is left to you",
        )

    def _check_one(self, ctx, an: _Analysis, loop, facts: LoopFacts, st: Stepper, all_opts: set[str]):
        if an.may_clear(loop, st, facts, all_opts):
            return None
        # zero_grad in an enclosing loop: TM202's business
        for a in ctx.ancestors(loop):
            if isinstance(a, _SCOPES):
                break
            if isinstance(a, _LOOPS) and an.zero_ops(a.body, st, facts):
                return None
        step = st.calls[0]
        direct_step = [c for c in st.calls if _direct(ctx, c, loop)]
        direct_bw = [c for c in facts.backwards if _direct(ctx, c, loop)]
        where = f"`{st.text}.step()`" if _receiver(step) is st.expr else f"`{ctx.code(step.func)}({st.text})`"
        if not direct_step or not direct_bw:
            if not direct_step and _accumulation_guard(ctx, step, loop):
                why = (
                    "the step runs every few iterations: add "
                    f"`{st.text}.zero_grad()` after it, where the accumulation window ends"
                )
            elif not direct_step:
                why = "the step runs under control flow: not fixed automatically"
            else:
                why = "backward() runs under control flow or in a nested loop: not fixed automatically"
            return ctx.finding(
                self, step, f"{where} runs in a loop with backward() and nothing clears the gradients ({why})"
            )
        safety = Safety.SAFE if st.known else Safety.UNSAFE
        what = "" if st.known else f" (`{st.text}` is not provably a torch.optim optimizer)"
        msg = (
            f"{where} runs every iteration but nothing clears the gradients: "
            f"they accumulate across steps{what}"
        )
        new = _new_zero(st.text)
        if len(facts.steppers) == 1:
            body = loop.body
            if not isinstance(body, cst.IndentedBlock) or not body.body:
                return ctx.finding(self, step, msg)
            fix = Fix(ctx.insert_before(body.body[0], new), safety=safety, message=f"insert `{st.text}.zero_grad()`")
            return ctx.finding(self, step, msg, fix)
        # several optimizers: zero right before the backward run that feeds this step
        stmt = _stmt_of(ctx, direct_step[0])
        target = _backward_run(ctx, stmt, st.text) if stmt is not None else "no statement"
        if isinstance(target, str):
            return ctx.finding(self, step, f"{msg}; several optimizers and {target}: not fixed")
        fix = Fix(ctx.insert_before(target, new), safety=safety, message=f"insert `{st.text}.zero_grad()`")
        return ctx.finding(self, step, msg, fix)


class MisplacedZeroGrad(Rule):
    """## What it does
    Finds `optimizer.zero_grad()` calls in the wrong place: once per epoch in an outer
    loop while the inner loop steps every batch, or between `loss.backward()` and
    `optimizer.step()` in the same block.

    ## Why is this bad?
    Once per epoch, gradients still accumulate across every batch of the epoch.  Between
    backward and step, the step sees no gradient at all and the model does not learn.

    ## Example
    ```python
    for epoch in range(3):
        optimizer.zero_grad()
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    ```
    The call is moved as written (arguments such as `set_to_none=True` are kept): into
    the inner loop as its first statement, or before the backward statement(s) that
    feed the step.  Safe when the code in between is straight-line and the optimizer is
    a known `torch.optim` optimizer; otherwise reported or offered as an unsafe fix.
    """

    code = "TM202"
    name = "misplaced-zero-grad"
    pitfall = "zero_grad"
    summary = "zero_grad() outside the loop that steps, or between backward() and step()"
    severity = Severity.BUG
    # clearing operations: zero_grad(), p.grad = None, p.grad.zero_(), zero_gradients(...)
    needles = ("grad", "zero", "Zero", "ZERO")
    requires_all = ("step", "backward")

    @classmethod
    def ast_check(cls, tree) -> bool:
        f = _ast_facts(tree)
        # once per epoch: a backward/step loop inside another loop that does not visibly
        # zero what it steps; between backward and step: a zero_grad() statement after a
        # statement calling backward() in the same block
        if f.nested_backward_step and any(nested and not _zeroes_each_stepper(calls) for calls, nested in _train_loops(f)):
            return True
        return {"zero_grad", "step", "backward"} <= f.methods and _zero_grad_after_backward(tree, f)

    def check(self, ctx: FileContext):
        an = _analysis(ctx)
        seen: set[int] = set()
        for loop in an.loops:
            facts = an.facts(loop)
            if facts.skip or not facts.steppers or not facts.any_backward:
                continue
            all_opts = set(facts.steppers)
            if facts.ambiguous:
                continue
            for st in facts.steppers.values():
                f = self._epoch_level(ctx, an, loop, facts, st, all_opts)
                if f is not None and id(f[0]) not in seen:
                    seen.add(id(f[0]))
                    yield f[1]
        yield from self._between(ctx, an, seen)

    # 2.2: zero_grad once per epoch
    def _epoch_level(self, ctx, an: _Analysis, loop, facts: LoopFacts, st: Stepper, all_opts):
        if an.may_clear(loop, st, facts, all_opts):
            return None
        outer, zeros = None, []
        for a in ctx.ancestors(loop):
            if isinstance(a, _SCOPES):
                break
            if isinstance(a, _LOOPS):
                zeros = an.zero_ops(a.body, st, facts)
                if zeros:
                    outer = a
                    break
        if outer is None:
            return None
        z = zeros[0]
        direct_step = [c for c in st.calls if _direct(ctx, c, loop)]
        direct_bw = [c for c in facts.backwards if _direct(ctx, c, loop)]
        zt = ctx.code(z).strip() if isinstance(z, cst.Call) else "the gradients are cleared"
        how = "every iteration of" if direct_step else "under a condition in"
        msg = (
            f"`{zt}` runs once per iteration of the outer loop (line {ctx.position(outer)[0]}) while "
            f"`{st.text}` steps {how} the inner loop: gradients accumulate across steps"
        )
        zstmt = _stmt_of(ctx, z) if isinstance(z, cst.Call) else None
        strict = isinstance(z, cst.Call) and (
            _dotted(_receiver(z)) == st.text
            or st.models is not None
            and _dotted(_receiver(z)) is not None
            and any(_related(_dotted(_receiver(z)), m) for m in st.models)
        )
        ok = (
            strict
            and len(zeros) == 1
            and zstmt is not None
            and _sole_call(zstmt) is z
            and isinstance(ctx.parent(zstmt), cst.IndentedBlock)
            and ctx.parent(ctx.parent(zstmt)) is outer
            and direct_step
            and direct_bw
            and isinstance(loop.body, cst.IndentedBlock)
            and not (isinstance(z.func, cst.Name))
            # only this inner loop steps this optimizer inside the outer loop
            and sum(
                1
                for l2 in an.loops
                if l2 is not loop
                and _in_body(ctx, l2, outer)
                and st.text in an.facts(l2).steppers
            )
            == 0
        )
        if not ok:
            return z, ctx.finding(self, z, msg + " (not moved automatically)")
        first = loop.body.body[0]
        repl = {zstmt: cst.RemoveFromParent(), **ctx.insert_before(first, _moved_stmt(zstmt))}
        safety = Safety.SAFE if st.known else Safety.UNSAFE
        fix = Fix(repl, safety=safety, message=f"move `{zt}` into the inner loop")
        return z, ctx.finding(self, z, msg, fix)

    # 2.4: zero_grad between backward and step
    def _between(self, ctx, an: _Analysis, seen: set[int]):
        for z in an.calls:
            if _method(z) != "zero_grad" or id(z) in seen:
                continue
            zstmt = _stmt_of(ctx, z)
            if zstmt is None or _framework_skip(ctx, z):
                continue
            block = ctx.parent(zstmt)
            if not isinstance(block, (cst.IndentedBlock, cst.Module)):
                continue
            zr = _dotted(_receiver(z))
            if zr is None:
                continue
            body = list(block.body)
            i = body.index(zstmt)
            # forward: the next step() this zero_grad can clear, with no backward before it
            label, straight, opt_expr = None, True, None
            for s in body[i + 1 :]:
                if not isinstance(s, cst.SimpleStatementLine):
                    if any(isinstance(n, cst.Call) and _method(n) in ("backward", "step", "zero_grad") for n in _walk(s)):
                        break
                    straight = False
                    continue
                calls = [n for n in _walk(s) if isinstance(n, cst.Call)]
                if any(_method(c) in ("backward", "zero_grad") for c in calls):
                    break
                st = self._stepper_cleared(ctx, calls, zr)
                if st is not None:
                    label, opt_expr = st
                    break
                # an unknown call between the zero_grad and the step may refill the
                # gradients (a SAM-style second pass): assume it does, no finding
                if any(
                    not any(q.startswith(_KNOWN_PREFIXES) for q in _qn(ctx, c.func))
                    and _method(c) not in _SCALER_METHODS | {"item", "detach", "cpu"}
                    for c in calls
                ):
                    break
            if label is None:
                continue
            # backward: a backward() since the last step of that optimizer
            first, k = None, i
            for s in reversed(body[:i]):
                k -= 1
                if not isinstance(s, cst.SimpleStatementLine):
                    if any(isinstance(n, cst.Call) and _method(n) in ("backward", "step", "zero_grad") for n in _walk(s)):
                        break
                    if first is None:
                        straight = False
                    continue
                calls = [n for n in _walk(s) if isinstance(n, cst.Call)]
                if any(_method(c) == "backward" for c in calls):
                    first = s
                    continue
                if any(_method(c) in ("step", "zero_grad") for c in calls):
                    break
            if first is None:
                continue
            b = _binding(ctx, opt_expr)
            known = b.kind in ("opt", "param")
            zt = ctx.code(z).strip()
            msg = (
                f"`{zt}` runs between backward() and `{label}`: the step sees no gradients "
                f"and the model does not learn"
            )
            if not straight or _sole_call(zstmt) is not z:
                yield ctx.finding(self, z, msg + " (not moved automatically: control flow in between)")
                continue
            repl = {zstmt: cst.RemoveFromParent(), **ctx.insert_before(first, _moved_stmt(zstmt))}
            fix = Fix(repl, safety=Safety.SAFE if known else Safety.UNSAFE, message=f"move `{zt}` before backward()")
            yield ctx.finding(self, z, msg, fix)

    @staticmethod
    def _stepper_cleared(ctx, calls, zr: str):
        """A step call among ``calls`` whose optimizer ``zr.zero_grad()`` clears:
        ``(label, optimizer expression)``."""
        for c in calls:
            if _method(c) != "step":
                continue
            recv = _receiver(c)
            if not c.args:
                opt = recv
            elif len(c.args) == 1 and c.args[0].keyword is None and _binding(ctx, recv).kind == "scaler":
                opt = c.args[0].value
            else:
                continue
            ot = _dotted(opt)
            if ot is None:
                continue
            b = _binding(ctx, opt)
            if b.kind in ("sched", "scaler"):
                continue
            if ot == zr:
                return ctx.code(c).strip(), opt
            models = _models_of(b.ctors) if b.kind == "opt" else None
            if b.kind in ("opt", "param") and models is not None and any(_related(zr, m) for m in models):
                return ctx.code(c).strip(), opt
        return None
