"""What the zero_grad rules (TM201, TM202) share: training loops, what each loop steps,
and what may clear the gradients.

The analysis is deliberately conservative (precision first): anything that might clear
the gradients counts as clearing them, e.g. a ``zero_grad()`` on any receiver that may be
the optimizer or one of its models, ``p.grad = None``, ``.grad.zero_()``, a closure, or an
unknown call that receives the optimizer or the model (unless it runs strictly between a
backward and a step in one block: clearing there would void that step).  Same-file helpers and methods
are followed, with their parameters bound to the caller's arguments.  Loops driven by a
framework (Lightning ``training_step``, ``accelerator.accumulate``, a DeepSpeed-style
engine that both runs ``backward`` and ``step``) and ``step(closure)`` loops are skipped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from ..semantic import BindingKind, OriginKind, SemanticModel
from ..semantic import names as N
from ..semantic.source import reversed_text

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# nodes between a call and its loop that make the call conditional (or deferred)
_CONDITIONAL = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef,
    ast.ClassDef, ast.Lambda, ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.Match, ast.match_case,
) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
# callees that are known not to clear gradients (qualified-name prefixes)
KNOWN_PREFIXES = (
    "torch.", "builtins.", "math.", "time.", "random.", "numpy.", "itertools.", "functools.", "logging.", "tqdm.",
    "statistics.", "copy.", "os.", "sys.", "json.", "pickle.", "pathlib.", "collections.", "operator.", "warnings.",
    "datetime.",
)
OPT_METHODS = {"step", "zero_grad", "state_dict", "load_state_dict", "add_param_group"}
MODEL_METHODS = {
    "parameters", "named_parameters", "train", "eval", "to", "cuda", "cpu", "forward", "state_dict", "modules",
    "children", "named_modules", "buffers", "requires_grad_", "float", "half", "double",
    "zero_grad",  # decided by zero_ops (which module it clears)
}
SCALER_METHODS = {"step", "unscale_", "scale", "update", "get_scale"}
# a library method on the model with one of these in its name may clear the gradients
_SUSPECT_WORDS = ("zero", "grad", "step", "optim", "backward", "update", "reset", "clear", "fit", "train")


# the nodes of a test whose value cannot change from one iteration to the next unless a
# name in it is rebound in the loop (no calls, no subscripts)
_INVARIANT = (ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Load, ast.And, ast.Or,
              ast.Not, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def known(sem: SemanticModel, call: ast.Call) -> bool:
    """A library callee known not to clear gradients, or a function of another file of
    the project whose text cannot touch them (:func:`_harmless_sibling`)."""
    return any(q.startswith(KNOWN_PREFIXES) for q in sem.qualnames(call.func)) or _harmless_sibling(sem, call)


def _harmless_sibling(sem: SemanticModel, call: ast.Call) -> bool:
    """``save_sample(..., E1, G1)`` of ``from utils import save_sample``: a function of
    another file of the project whose text names no gradient, step or backward (a helper
    that cleared them would have to; one that hands the models on to yet another
    function that does is not followed)."""
    if not isinstance(call.func, ast.Name) or sem.project is None:
        return False
    other, bs = sem.sibling_definitions(call.func)
    if other is None or len(bs) != 1 or bs[0].kind is not BindingKind.FUNCTION:
        return False
    text = other.segment(bs[0].node)
    return "grad" not in text and "step" not in text and "backward" not in text


def _runs_once(sem: SemanticModel, loop) -> bool:
    """``loop`` steps once in the whole run: its body ends with an unconditional
    ``break`` that no ``continue`` skips, no loop of its function (or module code) runs it
    again, and its function, if any, is called only from this file, never in a loop
    (``for x, y in loader: ...; optimizer.step(); break`` to profile one step)."""
    if not loop.body or not isinstance(loop.body[-1], ast.Break):
        return False
    stack = list(loop.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Continue):
            return False
        if not isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))
    fn = None
    for a in sem.ancestors(loop):
        if isinstance(a, (ast.For, ast.AsyncFor, ast.While)):
            return False
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            fn = a
            break
    if fn is None:
        return True
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    sites = sem.call_sites(fn)
    return sites.complete and bool(sites.calls) and all(
        not any(isinstance(a, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)) for a in sem.ancestors(c))
        for c in sites.calls)


def class_without_zero_grad(sem: SemanticModel, expr) -> Optional[tuple]:
    """``(class name, model of its file)`` when every value of ``expr`` is an instance
    of one class of the project (this file's or another's) that defines no ``zero_grad``
    and can inherit none (no base but ``object``, no ``__getattr__`` that may hand the
    call on): ``expr.zero_grad()`` would raise ``AttributeError`` (a wrapper around an
    optimizer, ``Optimizers(...)`` with ``step()`` only).  None otherwise."""
    origins = sem.origins(expr)
    if not origins:
        return None
    found = None
    for o in origins:
        call = o.node
        if o.kind is not OriginKind.VALUE or not isinstance(call, ast.Call) \
                or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return None
        where, cls = sem, sem.callee(call)
        if cls is None:
            where, bs = sem.sibling_definitions(call.func)
            if where is None or len(bs) != 1 or bs[0].kind is not BindingKind.CLASS:
                return None
            cls = bs[0].node
        if not isinstance(cls, ast.ClassDef) or cls.keywords or cls.decorator_list \
                or any(not (isinstance(b, ast.Name) and b.id == "object") for b in cls.bases) \
                or "zero_grad" in where.segment(cls):
            return None  # (``self.zero_grad = opt.zero_grad`` in a method: an instance attribute)
        for st in cls.body:
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
                continue  # (a docstring)
            names = [st.name] if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else \
                [t.id for t in ast.walk(st) if isinstance(t, ast.Name)] if isinstance(st, (ast.Assign, ast.AnnAssign)) \
                else None
            if names is None or any(n in ("__getattr__", "__getattribute__") for n in names):
                return None  # (a statement of another kind may bind anything: unknown)
        if found is not None and found[0] != cls.name:
            return None
        found = (cls.name, where)
    return found


def related(a: str, b: str) -> bool:
    """One dotted path is the other or contains it (``model`` / ``model.fc``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


@dataclass
class Binding:
    kind: str  # opt | param | scaler | sched | unknown
    ctors: list = field(default_factory=list)  # optimizer constructor calls


def binding(sem: SemanticModel, expr) -> Binding:
    """What ``expr`` (a step receiver or argument) is: a torch.optim optimizer (with the
    constructor calls), a parameter whose callers are unknown, a GradScaler, a scheduler."""
    kinds, ctors = set(), []
    for o in sem.origins(expr):
        if o.kind is OriginKind.PARAMETER:
            kinds.add("param")
        elif o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
            q = sem.call_qualname(o.node)
            if N.is_optimizer(q):
                kinds.add("opt")
                ctors.append(o.node)
            elif N.is_scaler(q):
                kinds.add("scaler")
            elif N.is_scheduler(q):
                kinds.add("sched")
            else:
                kinds.add("unknown")
        else:
            kinds.add("unknown")
    if len(kinds) == 1:
        return Binding(kinds.pop(), ctors)
    if kinds == {"opt", "param"}:
        return Binding("opt", ctors)
    return Binding("unknown")


def models_of(sem: SemanticModel, ctors: list) -> Optional[set[str]]:
    """Dotted receivers of ``.parameters()`` in the optimizer constructors: the modules
    whose gradients the optimizer steps; None when not all are known."""
    if not ctors:
        return None
    out: set[str] = set()
    for call in ctors:
        found = False
        for n in (m for a in [*call.args, *(k.value for k in call.keywords)] for m in sem.walk(a)):
            if isinstance(n, ast.Call) and sem.method_name(n) in ("parameters", "named_parameters"):
                d = sem.dotted(_container(sem.receiver(n)))
                if d is None:
                    return None
                out.add(d)
                found = True
        if not found:
            return None
    return out


def _container(expr):
    """``teachers[i]`` as ``teachers``: an element of a container of modules is a part of
    it (``related`` tells parts), whichever element it is."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr


def rebased(sem: SemanticModel, text: str, ctors: list, models: Optional[set[str]]) -> Optional[set[str]]:
    """The modules of ``models_of`` as the loop names them.  An optimizer a module builds
    for itself in a method (``self.optimizer = Adam(self.parameters())``) and that the
    loop reaches as ``X.optimizer`` (``self.discriminator.optimizer``) steps ``X``'s
    parameters: that method's ``self`` is ``X``.  None when a ``self`` of a constructor
    cannot be so named."""
    if not models or not any(m == "self" or m.startswith("self.") for m in models):
        return models
    base, _, attr = text.rpartition(".")
    for call in ctors:
        stmt = sem.statement_of(call)
        fn = sem.enclosing(call, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        if not (
            base and isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and sem.dotted(stmt.targets[0]) == "self." + attr
            and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(sem.parent(fn), ast.ClassDef)
        ):
            return None
    return {base + m[4:] if m == "self" or m.startswith("self.") else m for m in models}


def innermost_loop(sem: SemanticModel, node):
    """The innermost loop whose body holds ``node`` within its function, or None."""
    child = node
    for a in sem.ancestors(node):
        if isinstance(a, _LOOPS):
            if in_body(child, a):
                return a
        if isinstance(a, _SCOPES):
            return None
        child = a
    return None


def in_body(child, loop) -> bool:
    return any(s is child for s in loop.body)


def direct(sem: SemanticModel, node, loop) -> bool:
    """``node`` runs on every iteration of ``loop`` (only ``with`` blocks between)."""
    for a in sem.ancestors(node):
        if a is loop:
            return True
        if isinstance(a, _CONDITIONAL):
            return False
    return False


def framework_skip(sem: SemanticModel, node) -> bool:
    """Lightning training_step / LightningModule, ``accelerator.accumulate``."""
    for a in sem.ancestors(node):
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) and a.name in ("training_step", "training_step_end"):
            return True
        if isinstance(a, ast.ClassDef) and any(N.framework_of(q) == "Lightning" for q in sem.base_qualnames(a)):
            return True
        if isinstance(a, (ast.With, ast.AsyncWith)):
            for item in a.items:
                if isinstance(item.context_expr, ast.Call) and sem.method_name(item.context_expr) == "accumulate":
                    return True
    return False


def accumulation_guard(sem: SemanticModel, node, loop) -> bool:
    """``node`` sits under an ``if`` that may be an accumulation window: its test has a
    ``%`` (``(i + 1) % k == 0``), a name that says so (``accumulate``, ``every``), a
    ``len(...)``, or reads a counter of the loop (a name its target binds, a name
    incremented in its body, an enclosing loop's target).  Only a condition that is none
    of these (``if torch.isfinite(loss):``) lets a zero_grad at the top of the loop stay
    right."""
    counters = set()
    for lp in [loop, *(a for a in sem.ancestors(loop) if isinstance(a, _LOOPS))]:
        if isinstance(lp, (ast.For, ast.AsyncFor)):
            counters |= {n.id for n in ast.walk(lp.target) if isinstance(n, ast.Name)}
        for n in (m for s in lp.body for m in ast.walk(s)):
            if isinstance(n, ast.AugAssign):
                d = sem.dotted(n.target)
                if d:
                    counters.add(d)
    for a in sem.ancestors(node):
        if a is loop:
            return False
        if isinstance(a, (ast.If, ast.While)):
            for n in ast.walk(a.test):
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
                    return True
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
                    return True
                word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
                if any(w in word.lower() for w in ("accum", "every", "step", "iter", "count")):
                    return True
                d = sem.dotted(n) if isinstance(n, (ast.Name, ast.Attribute)) else None
                if d is not None and d in counters:
                    return True
    return False


def sole_call(stmt) -> Optional[ast.Call]:
    """The call of a statement that is just ``X.f(...)``."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    return None


@dataclass
class Stepper:
    text: str  # the optimizer expression, e.g. "optimizer"
    expr: ast.AST
    binding: Binding
    calls: list = field(default_factory=list)  # the step calls (opt.step() / scaler.step(opt))
    models: Optional[set] = None

    @property
    def known(self) -> bool:
        return self.binding.kind in ("opt", "param")


@dataclass
class LoopFacts:
    loop: ast.AST
    steppers: dict  # text -> Stepper
    backwards: list  # backward calls whose innermost loop is the loop
    any_backward: bool  # a backward anywhere in the body (any depth)
    forwards: set  # dotted callees called like models
    skip: bool = False
    ambiguous: bool = False  # several stepped objects, none provably an optimizer
    scalers: set = field(default_factory=set)  # receivers used as a GradScaler: ``X.scale(loss).backward()``


def method_may_be_called(text: str, name: str, has=None) -> bool:
    """``x.name`` may stand in ``text``: a call the loop facts count (``.backward()``,
    ``.step()``) is an attribute, so the text has ``.name``, or a dot and the name with
    only spaces, line continuations or comments between them.  Half the files that
    mention ``backward`` and ``step`` (a docstring, ``step_size``) call neither.
    ``has(word)``: the text gate's remembering ``word in text``."""
    has = has or text.__contains__
    if has("." + name):
        return True
    if not has(name):
        return False
    # ``\.(?:\s|\\|#[^\n]*)*name`` stands in the text if and only if its reverse stands
    # in the reversed text: that pattern begins with a literal, which the engine skips to
    # (the forward one is tried at every dot)
    return _reversed_call(name).search(reversed_text(text)) is not None


@lru_cache(maxsize=None)
def _reversed_call(name: str):
    r"""The reverse of ``\.(?:\s|\\|#[^\n]*)*name``, written so that no text makes the
    engine backtrack more than the ``#`` of a line: between the dot and the name, each
    line (reversed) is spaces and backslashes after its last ``#`` (what a comment and the
    spaces around it leave), or spaces and backslashes only.  (The plain reverse,
    ``(?:\s|\\|[^\n]*#)*``, splits a line of ``#`` in exponentially many ways: a banner
    of 70 took minutes.)"""
    line = r"(?:[^\n]*#)?(?:[^\S\n]|\\)*"
    return re.compile(re.escape(name[::-1]) + line + r"(?:\n" + line + r")*\.")


class Analysis:
    """Per-file facts shared by both rules (one per Context)."""

    def __init__(self, sem: SemanticModel):
        self.sem = sem
        self.loops = [l for l in sem.find(*_LOOPS, containing=("backward",)) if sem._contains(l, ("step",))]
        self._facts: dict = {}
        self._cleared: dict = {}  # (loop, optimizer text, optimizers) -> may_clear over the whole body
        self._exempt: dict = {}  # (loop, optimizer text) -> between_backward_and_step

    @classmethod
    def of(cls, ctx) -> "Analysis":
        a = ctx.cache.get("zero_grad")
        if a is None:
            a = ctx.cache["zero_grad"] = cls(ctx.sem)
        return a

    # ----- loops
    def facts(self, loop) -> LoopFacts:
        f = self._facts.get(loop)
        if f is None:
            f = self._facts[loop] = self._compute(loop)
        return f

    def _compute(self, loop) -> LoopFacts:
        sem = self.sem
        body_calls = [n for s in loop.body for n in sem.walk(s) if isinstance(n, ast.Call)]
        own = [c for c in body_calls if innermost_loop(sem, c) is loop]
        backwards = [c for c in own if sem.method_name(c) == "backward"]
        any_backward = any(sem.method_name(c) == "backward" for c in body_calls)
        backward_receivers = {sem.dotted(sem.receiver(c)) for c in body_calls if sem.method_name(c) == "backward"}
        facts = LoopFacts(loop, {}, backwards, any_backward, set())
        # ``X.scale(loss).backward()``: X is used as a GradScaler (its ``step(opt)`` steps ``opt``)
        for c in body_calls:
            r = sem.receiver(c) if sem.method_name(c) == "backward" else None
            if isinstance(r, ast.Call) and sem.method_name(r) == "scale" and len(r.args) == 1 and not r.keywords:
                d = sem.dotted(sem.receiver(r))
                if d is not None:
                    facts.scalers.add(d)
        if framework_skip(sem, loop):
            facts.skip = True
            return facts
        if _runs_once(sem, loop):
            facts.skip = True  # (its body ends with a ``break``: it runs once, nothing accumulates)
            return facts
        for c in own:
            if sem.method_name(c) != "step":
                continue
            recv = sem.receiver(c)
            rtext = sem.dotted(recv)
            if rtext is not None and rtext in backward_receivers:
                facts.skip = True  # an engine that runs backward and step itself (DeepSpeed)
                return facts
            if c.keywords or len(c.args) > 1:
                facts.skip = True  # step(closure=...)
                return facts
            if not c.args:
                opt_expr = recv
                b = binding(sem, recv)
                if b.kind in ("scaler", "sched"):
                    continue
            else:
                arg = c.args[0]
                if isinstance(arg, ast.Starred):
                    facts.skip = True
                    return facts
                rb, ab = binding(sem, recv), binding(sem, arg)
                if rb.kind == "sched":
                    continue  # scheduler.step(metric)
                if rb.kind == "scaler" or rtext in facts.scalers and rb.kind in ("unknown", "param") \
                        or ab.kind in ("opt", "param") and rb.kind != "opt":
                    opt_expr, b = arg, ab
                else:
                    facts.skip = True  # optimizer.step(closure): the closure clears
                    return facts
            text = sem.dotted(opt_expr)
            if text is None:
                facts.skip = True
                return facts
            st = facts.steppers.get(text)
            if st is None:
                st = facts.steppers[text] = Stepper(text, opt_expr, b)
                st.models = rebased(sem, text, b.ctors, models_of(sem, b.ctors)) if b.kind == "opt" else None
            st.calls.append(c)
        # unknown receivers are dropped when a known optimizer steps; never a scheduler
        if any(s.known for s in facts.steppers.values()):
            facts.steppers = {t: s for t, s in facts.steppers.items() if s.known}
        else:
            facts.steppers = {t: s for t, s in facts.steppers.items() if "sched" not in t.split(".")[-1].lower()}
            facts.ambiguous = len(facts.steppers) > 1
        for c in body_calls:
            d = sem.dotted(c.func)
            if d is not None and not known(sem, c):
                target = sem.callee(c)
                if isinstance(c.func, ast.Name) and target is None:
                    facts.forwards.add(d)
                elif isinstance(c.func, ast.Attribute) and d.startswith("self.") and d.count(".") == 1 and target is None:
                    facts.forwards.add(d)
        return facts

    # ----- what clears gradients
    def zero_ops(self, root, st: Stepper, facts: LoopFacts) -> list:
        """Explicit gradient-clearing operations inside ``root`` (a node or a list of
        statements) that may clear ``st``'s gradients (zero_grad on it or its model,
        p.grad = None, .grad.zero_(), ...)."""
        sem = self.sem
        out = []
        models = st.models
        all_opts = set(facts.steppers)
        others: set[str] = set()
        for t, o in facts.steppers.items():
            if t != st.text:
                others |= o.models or set()
        roots = root if isinstance(root, list) else [root]
        for n in (m for r in roots for m in sem.walk(r)):
            if isinstance(n, ast.Call):
                m = sem.method_name(n)
                if m == "zero_grad":
                    recv = sem.receiver(n)
                    r = sem.dotted(recv)
                    if r == st.text or (r is None and not isinstance(recv, ast.Subscript)):
                        out.append(n)
                        continue
                    rb = binding(sem, recv)  # (``opts[i]``: an element of a list of optimizers, say)
                    if r is None and rb.kind != "opt":
                        out.append(n)  # an element of something else: it may be ours
                        continue
                    if rb.kind in ("opt", "param"):
                        # another optimizer: it clears ours only if they may share modules
                        theirs = models_of(sem, rb.ctors) if rb.kind == "opt" else None
                        if models is None or theirs is None or any(related(a, b) for a in theirs for b in models):
                            out.append(n)
                    elif r in all_opts:
                        continue  # another stepped object
                    elif models is None or any(related(r, mm) for mm in models):
                        out.append(n)
                    elif not any(related(r, mm) for mm in others):
                        out.append(n)
                elif (
                    isinstance(n.func, ast.Name)
                    and "zero" in n.func.id.lower()
                    and not any(q.startswith("torch.") for q in sem.qualnames(n.func))
                ):
                    out.append(n)  # zero_gradients(opts), reset_zero_grads(model), ...
                elif m is not None and m.endswith("_") and touches_grad(sem.receiver(n)):
                    out.append(n)
                elif m is not None and "zero_grad" in m:
                    out.append(n)
            elif isinstance(n, ast.Assign):
                if any(touches_grad(t) for t in n.targets):
                    out.append(n)
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                if touches_grad(n.target):
                    out.append(n)
            elif isinstance(n, ast.Delete) and any(touches_grad(t) for t in n.targets):
                out.append(n)
        return [n for n in out if not never_runs(sem, n)]

    def may_clear(self, loop, st: Stepper, facts: LoopFacts, all_opts: set[str], body: Optional[list] = None) -> Optional[str]:
        """Why ``st``'s gradients may be cleared inside the loop body (or ``body``, the
        statements of one path through it), or None."""
        key = (loop, st.text, frozenset(all_opts))
        if body is None and key in self._cleared:
            return self._cleared[key]
        exempt = self._exempt.get((loop, st.text))
        if exempt is None:
            exempt = self._exempt[(loop, st.text)] = self.between_backward_and_step(loop, st)
        why = self._scan(loop.body if body is None else body, st, facts, self.watched(st, facts, all_opts), set(), exempt)
        if body is None:
            self._cleared[key] = why
        return why

    @staticmethod
    def watched(st: Stepper, facts: LoopFacts, all_opts: set[str]) -> set[str]:
        """What an unknown call may clear the gradients through when it receives it: the
        optimizers, their models, what the loop calls like a model."""
        watched = {st.text, *all_opts, *(st.models or ()), *facts.forwards}
        for s in facts.steppers.values():
            watched |= s.models or set()
        return watched

    def between_backward_and_step(self, loop, st: Stepper) -> set[int]:
        """The calls that run strictly between a ``backward()`` and a step of ``st`` on one
        path of an iteration: statements of the step's block after the nearest backward
        statement before it, with no other backward or step in them.  Such a call cannot be
        what clears the gradients across iterations: clearing them there would leave that
        step nothing to apply (``loss.backward(); clip_gradient(optimizer, c);
        optimizer.step()``).  Ids of the call nodes."""
        sem = self.sem
        out: set[int] = set()
        for step in st.calls:
            stmt = sem.statement_of(step)
            block = sem.block_of(stmt) if stmt is not None and innermost_loop(sem, step) is loop else None
            if block is None or block is loop.orelse:
                continue
            i = next(k for k, s in enumerate(block) if s is stmt)
            between = []
            for s in reversed(block[:i]):
                if isinstance(s, (ast.For, ast.While)) and not s.orelse:
                    # a gradient accumulation loop: every iteration runs a backward and nothing
                    # steps or clears in it (``for _ in range(k): loss.backward()``)
                    names = {sem.method_name(n) for n in sem.walk(s) if isinstance(n, ast.Call)}
                    if any(always_backward(sem, b) for b in s.body) and not names & {"step", "zero_grad"}:
                        out |= {id(n) for b in between for n in sem.walk(b) if isinstance(n, ast.Call)}
                    break
                if not isinstance(s, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.With)):
                    break
                names = {sem.method_name(n) for n in sem.walk(s) if isinstance(n, ast.Call)}
                if "backward" in names:
                    if always_backward(sem, s) and "step" not in names:
                        out |= {id(n) for b in between for n in sem.walk(b) if isinstance(n, ast.Call)}
                    break
                if names & {"step", "zero_grad"}:
                    break
                between.append(s)
        return out

    def _within(self, node, stmts: list) -> bool:
        """``node`` is (in) one of ``stmts``."""
        ids = {id(s) for s in stmts}
        return id(node) in ids or any(id(a) in ids for a in self.sem.ancestors(node))

    def unclearing_branch(self, loop, st: Stepper, facts: LoopFacts, all_opts: set[str]):
        """``(step, clear, if)`` when a step of ``st`` runs in one branch of an ``if`` of
        the loop body whose other branch holds every clearing of ``st``, and nothing else
        on the step's path may clear (``if amp: opt.zero_grad(); scaler.step(opt) else:
        loss.backward(); opt.step()``); None otherwise."""
        zeros = self.zero_ops(loop.body, st, facts)
        if not zeros:
            return None
        stored = None
        for a in loop.body:
            if not isinstance(a, ast.If) or not a.orelse:
                continue
            # the same branch every iteration (``if args.amp:``): else the other one may
            # clear between two steps (``if i % 2: opt.step() else: opt.zero_grad()``)
            if stored is None:
                stored = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
            if not all(isinstance(n, _INVARIANT) for n in ast.walk(a.test)) or any(
                isinstance(n, ast.Name) and n.id in stored for n in ast.walk(a.test)
            ):
                continue
            for mine, other in ((a.body, a.orelse), (a.orelse, a.body)):
                if not all(self._within(z, other) for z in zeros):
                    continue
                steps = [c for c in st.calls if self._within(c, mine)]
                if not steps:
                    continue
                path = [s for s in loop.body if s is not a] + list(mine)
                if self.may_clear(loop, st, facts, all_opts, path) is None:
                    return steps[0], zeros[0], a
        return None

    def windowed_clear(self, loop, st: Stepper, facts: LoopFacts, all_opts: set[str]):
        """``(if, what)``: the first ``if`` of the loop body that opens once every few
        iterations (``if i % 100 == 0:``; the counter also through a name the body binds
        to it plus an offset, ``batches_done = epoch * len(loader) + i``) and may clear
        ``st``'s gradients (``what``: why), when every clearing of them in the loop may
        happen only in such ``if``s while each step of ``st`` and a backward() run every
        iteration: between two of its openings, each step applies the gradients
        accumulated since.  None otherwise."""
        sem = self.sem
        if not all(direct(sem, c, loop) for c in st.calls) or not any(direct(sem, c, loop) for c in facts.backwards):
            return None
        if _stepped_range(sem, loop):
            return None  # (``for i in range(0, n, bs)``: ``i % bs == 0`` holds every time)
        counters = _index_counters(sem, loop)
        counters |= _offset_counters(loop, counters)
        windows = [s for s in loop.body if isinstance(s, ast.If) and not s.orelse and window_test(sem, s.test, counters)
                   and not _may_be_one(sem, s.test)]
        if not windows:
            return None
        rest = [s for s in loop.body if not any(s is w for w in windows)]
        if self.may_clear(loop, st, facts, all_opts, rest) is not None:
            return None
        for w in windows:
            why = self.may_clear(loop, st, facts, all_opts, [w])
            if why is not None:
                return w, why
        return None

    def _follow(self, fn, call: Optional[ast.Call], st, facts, watched, seen) -> Optional[str]:
        """Scan the body of a same-file function ``fn`` that ``call`` runs: the caller's
        watched values are watched under the names of the parameters they are passed as
        (module-level names keep theirs)."""
        if fn in seen:
            return None
        seen.add(fn)
        inner = set(watched)
        if call is not None:
            args = fn.args
            pos = [a.arg for a in (*args.posonlyargs, *args.args)]
            skip = 1 if isinstance(call.func, ast.Attribute) and isinstance(self.sem.parent(fn), ast.ClassDef) else 0
            for j, a in enumerate(call.args):
                if isinstance(a, ast.Starred):
                    return "a call with *args"
                d = self.sem.dotted(a)
                if d is not None and any(related(d, w) for w in watched) and j + skip < len(pos):
                    inner.add(pos[j + skip])
            for k in call.keywords:
                if k.arg is None:
                    return "a call with **kwargs"
                d = self.sem.dotted(k.value)
                if d is not None and any(related(d, w) for w in watched):
                    inner.add(k.arg)
        return self._scan(fn.body, st, facts, inner, seen)

    def _scan(self, root, st: Stepper, facts: LoopFacts, watched, seen, exempt=frozenset()) -> Optional[str]:
        if self.zero_ops(root, st, facts):
            return "zero"
        sem = self.sem
        all_opts = set(facts.steppers)
        roots = root if isinstance(root, list) else [root]
        for c in (n for r in roots for n in sem.walk(r) if isinstance(n, ast.Call)):
            if known(sem, c):
                continue
            d = sem.dotted(c.func)
            m = sem.method_name(c)
            recv = sem.dotted(sem.receiver(c)) if m else None
            target = sem.callee(c)
            if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # a function or method of this file: follow it with its arguments bound
                why = self._follow(target, c, st, facts, watched, seen)
                if why:
                    return f"`{d or 'call'}()`"
                continue
            if isinstance(target, ast.ClassDef):
                init = sem.method(target, "__init__")
                if init is not None and self._receives(c, watched):
                    if self._follow(init, c, st, facts, watched, seen):
                        return f"`{d or 'call'}()`"
                continue
            if recv is not None:
                if recv in all_opts or recv == st.text:
                    if m not in OPT_METHODS:
                        return f"`{d}()`"
                    continue
                if m in SCALER_METHODS and (recv in facts.scalers or binding(sem, sem.receiver(c)).kind == "scaler"):
                    continue
                if m == "backward":
                    continue
                if recv == "self":
                    continue  # ``self.model(x)``: a forward (methods of the class were followed)
                if id(c) in exempt:
                    continue  # between backward() and the step: see between_backward_and_step
                if recv in watched and m not in MODEL_METHODS:
                    # a library method of the model: assumed not to clear unless its name says it might
                    if any(w in m.lower() for w in _SUSPECT_WORDS):
                        return f"`{d}()`"
            if id(c) not in exempt and self._receives(c, watched):
                return f"`{d or 'call'}(...)`"
        return None

    def _receives(self, call: ast.Call, watched: set[str]) -> bool:
        """The optimizer or a model is passed to ``call`` (not merely called)."""
        sem = self.sem
        roots = {w.split(".")[0] for w in watched if w.startswith("self.")}
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            for n in sem.walk(arg):
                if isinstance(n, (ast.Name, ast.Attribute)):
                    d = sem.dotted(n)
                    if d is None:
                        continue
                    if d in watched or d in roots:
                        p = sem.parent(n)
                        if isinstance(p, ast.Call) and p.func is n:
                            continue  # a forward call: model(x)
                        if isinstance(p, ast.Attribute) and p.value is n and sem.dotted(p) in watched:
                            continue  # ``self`` of ``self.model``: the attribute is judged as itself (this walk reaches it)
                        if isinstance(p, ast.Attribute) and p.value is n and sem.dotted(p) not in watched:
                            # model.parameters() is the model; model.fc(x) a forward
                            pp = sem.parent(p)
                            if not (isinstance(pp, ast.Call) and pp.func is p and p.attr in MODEL_METHODS):
                                continue
                        return True
        return False


def never_runs(sem: SemanticModel, node) -> bool:
    """``node`` stands in the body of an ``if`` (of its own function) that no call of the
    file enters: its test, or a conjunct of it, is ``p is not None`` (or ``p``) for a
    parameter ``p`` that every call site leaves ``None`` (``train_ch3(..., params=None,
    optimizer=opt)`` with ``if params is not None: for p in params: p.grad.zero_()``)."""
    child = node
    for a in sem.ancestors(node):
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)):
            return False
        if isinstance(a, ast.If) and any(child is x for x in a.body) and _false_test(sem, a.test):
            return True
        child = a
    return False


def _false_test(sem: SemanticModel, test) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_false_test(sem, v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        c = test.comparators[0]
        return isinstance(c, ast.Constant) and c.value is None and _always_none(sem, test.left)
    return _always_none(sem, test)


def _always_none(sem: SemanticModel, e) -> bool:
    """``e`` is a parameter of its function that is ``None`` at every call site (its
    default included), all of them known."""
    if not isinstance(e, ast.Name):
        return False
    bs = sem.reaching(e)
    if len(bs) != 1 or bs[0].kind is not BindingKind.PARAMETER:
        return False
    fn = bs[0].scope.node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    pv = sem.param_values(fn, bs[0].name)
    return pv.complete and bool(pv.values) and all(
        isinstance(v, ast.Constant) and v.value is None for v, _, _ in pv.values)


def always_backward(sem: SemanticModel, stmt, names: tuple = ("backward",)) -> bool:
    """``stmt`` runs a ``backward()`` whenever it runs: a simple statement with one, a
    ``with`` block or an ``if`` whose every branch has one (``if scaler:
    scaler.scale(loss).backward() else: loss.backward()``)."""
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return any(isinstance(n, ast.Call) and sem.method_name(n) in names for n in sem.walk(stmt, scopes=False))
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return any(always_backward(sem, s, names) for s in stmt.body)
    if isinstance(stmt, ast.If):
        return bool(stmt.orelse) and any(always_backward(sem, s, names) for s in stmt.body) and any(
            always_backward(sem, s, names) for s in stmt.orelse)
    return False


def touches_grad(expr) -> bool:
    return expr is not None and any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(expr))


def backward_run(sem: SemanticModel, stmt, own_text: str):
    """Walk back from ``stmt`` in its block and return the earliest statement of the
    straight-line run of backward statements that feeds it, or a string saying why
    there is none."""
    block = sem.block_of(stmt)
    if block is None or sem.parent(stmt) is sem.module:
        return "not in an indented block"
    i = next(k for k, s in enumerate(block) if s is stmt)
    first = None
    for s in reversed(block[:i]):
        calls = [n for n in sem.walk(s) if isinstance(n, ast.Call)]
        if isinstance(s, _COMPOUND):
            if first is None:
                return "control flow between the backward() and the step()"
            if any(sem.method_name(c) == "backward" for c in calls):
                return "more backward() calls under control flow before the step()"
            break
        if any(sem.method_name(c) == "backward" for c in calls):
            first = s
            continue
        steps = [c for c in calls if sem.method_name(c) == "step"]
        if steps and first is not None:
            break
        zeros = [c for c in calls if sem.method_name(c) == "zero_grad" and sem.dotted(sem.receiver(c)) == own_text]
        if zeros:
            break
    if first is None:
        return "no backward() before the step() in the same block"
    return first


def loop_counters(sem: SemanticModel, loop) -> set[str]:
    """Names that change by one every iteration of ``loop``: its target's names
    (``for i, batch in enumerate(loader)``) and what a statement of its body (not under
    control flow) increments (``global_step += 1``)."""
    out = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        out |= {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for s in loop.body:
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add):
            d = sem.dotted(s.target)
            if d is not None:
                out.add(d)
    return out


def _stepped_range(sem: SemanticModel, loop) -> bool:
    """``loop`` runs over ``range(start, stop, step)`` (or its ``enumerate``)."""
    it = loop.iter if isinstance(loop, (ast.For, ast.AsyncFor)) else None
    if isinstance(it, ast.Call) and sem.call_qualname(it) == "builtins.enumerate" and it.args:
        it = it.args[0]
    return isinstance(it, ast.Call) and sem.call_qualname(it) == "builtins.range" and len(it.args) == 3


def _may_be_one(sem: SemanticModel, test) -> bool:
    """A modulus of ``test`` (``i % k == 0``) may be 1 (the test then holds every time):
    a name bound to such a constant, or a parameter whose default is one."""
    for m in ast.walk(test):
        if not (isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mod) and isinstance(m.right, ast.Name)):
            continue
        for o in sem.origins(m.right):
            v = o.node
            if o.kind is OriginKind.PARAMETER and o.binding is not None:
                v = _default(o.binding)
            if isinstance(v, ast.Constant) and isinstance(v.value, int) and v.value <= 1:
                return True
    return False


def _default(b) -> Optional[ast.expr]:
    """The default value of the parameter binding ``b`` (None: none)."""
    fn = b.scope.node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    a = fn.args
    pos = [*a.posonlyargs, *a.args]
    for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
        if arg.arg == b.name:
            return d
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        if arg.arg == b.name:
            return d
    return None


def _index_counters(sem: SemanticModel, loop) -> set[str]:
    """The names that count the iterations of ``loop`` one by one: the index of ``for i,
    batch in enumerate(...)``, the target of ``for i in range(n)``, and what a statement
    of its body (not under control flow) increments by one (``step += 1``)."""
    out = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, ast.Call):
        q = sem.call_qualname(loop.iter)
        t = loop.target
        if q == "builtins.enumerate" and isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name):
            out.add(t.elts[0].id)
        elif q == "builtins.range" and len(loop.iter.args) < 3 and isinstance(t, ast.Name):
            out.add(t.id)
    for s in loop.body:
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and isinstance(s.value, ast.Constant) \
                and s.value.value == 1 and sem.dotted(s.target) is not None:
            out.add(sem.dotted(s.target))  # (``step += 1``, ``self.global_step += 1``)
    return out


def _offset_counters(loop, counters: set[str]) -> set[str]:
    """Names a statement of the loop body (not under control flow) binds to a counter
    plus an integer that stays the same within the loop's run (``batches_done = epoch *
    len(loader) + i``, ``step = i + 1``; not a batch's value): they change by one every
    iteration too."""
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} \
        if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    out = set()
    for s in loop.body:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.BinOp) and isinstance(s.value.op, ast.Add)):
            continue
        a, b = s.value.left, s.value.right
        for c, other in ((a, b), (b, a)):
            if isinstance(c, ast.Name) and c.id in counters and _steady_int(other, targets):
                out.add(s.targets[0].id)
    return out


def _steady_int(e, loop_names: set[str]) -> bool:
    """``e`` is built of integer constants, names the loop does not bind, ``len(...)``
    and ``+``/``-``/``*`` of those."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id not in loop_names
    if isinstance(e, ast.Call):
        return isinstance(e.func, ast.Name) and e.func.id == "len"
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        return _steady_int(e.left, loop_names) and _steady_int(e.right, loop_names)
    return False


def window_test(sem: SemanticModel, test, counters: set[str]) -> bool:
    """``test`` is true once every few iterations: ``C % k == 0`` (or ``(C + 1) % k == 0``,
    ``not C % k``) with ``C`` a counter of the loop and ``k`` not the constant 1, or an
    ``and``/``or`` with such an operand (``... or i == len(loader) - 1``)."""
    if isinstance(test, ast.BoolOp):
        return any(window_test(sem, v, counters) for v in test.values)
    mod = None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        mod = test.operand
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        a, b = test.left, test.comparators[0]
        mod = a if isinstance(a, ast.BinOp) and isinstance(b, ast.Constant) else b if isinstance(a, ast.Constant) else None
    if not (isinstance(mod, ast.BinOp) and isinstance(mod.op, ast.Mod)):
        return False
    if isinstance(mod.right, ast.Constant) and (not isinstance(mod.right.value, int) or mod.right.value <= 1):
        return False
    return any(sem.dotted(n) in counters for n in ast.walk(mod.left) if isinstance(n, (ast.Name, ast.Attribute)))


@dataclass
class Wiped:
    zero: ast.Call  # the zero_grad() that runs every iteration
    guard: ast.If  # the accumulation window's ``if``
    after: ast.stmt  # the statement of the window's block the zero_grad() belongs after
    unscale: Optional[ast.Call] = None  # a scaler's unscale_() that runs every iteration
    cleared_after: bool = False  # the window already clears the gradients after its step


def wiped_window(an: "Analysis", loop, st: Stepper, facts: LoopFacts) -> Optional[Wiped]:
    """A gradient accumulation window that the loop wipes: ``st.zero_grad()`` runs every
    iteration (a statement of the loop body) before a ``backward()`` that also runs every
    iteration, while every step of ``st`` runs in one later ``if C % k == 0:`` block; no
    other clearing of ``st`` in the loop but in that block after its last step (``if i %
    k == 0: optimizer.step(); optimizer.zero_grad()``), and nothing unknown between the
    zero_grad() and the steps that may put gradients back.  Each step then applies the
    last micro-batch's gradients only."""
    sem = an.sem
    zeros = an.zero_ops(loop.body, st, facts)
    top = [x for x in zeros if isinstance(x, ast.Call) and sem.method_name(x) == "zero_grad"
           and any(s is sem.statement_of(x) for s in loop.body)]
    if len(top) != 1:
        return None
    z = top[0]
    others = [x for x in zeros if x is not z]
    zstmt = sem.statement_of(z)
    zr = sem.dotted(sem.receiver(z))
    if sole_call(zstmt) is not z or not any(s is zstmt for s in loop.body):
        return None
    if not (zr == st.text or st.models is not None and zr is not None and any(related(zr, m) for m in st.models)):
        return None
    if zr != st.text and len(facts.steppers) > 1:
        return None  # (``model.zero_grad()`` clears another optimizer's gradients too: it may step every iteration)
    zi = next(k for k, s in enumerate(loop.body) if s is zstmt)
    watched = an.watched(st, facts, set(facts.steppers))
    return _wiped_body(an, loop, zi, st.calls, loop_counters(sem, loop), ("backward",),
                       lambda path: an._scan(path, st, facts, watched, set()) is not None, others)


# what may end an iteration (or the call) before the statements after it
_LEAVES = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def _wiped_body(an: "Analysis", owner, zi: int, steps: list, counters: set[str], backwards: tuple,
                restores, others: list = ()) -> Optional[Wiped]:
    """The part of :func:`wiped_window` after the zero_grad() (``owner.body[zi]``): a
    backward() every iteration after it, every step of its optimizer (``steps``) in one
    later ``if`` of ``owner.body`` whose test is a window of ``counters`` (or a zero_grad()
    at the end of the body, after that ``if``, which nothing before it may skip: it runs
    before the next iteration's backward), no backward in that ``if``, and nothing
    between the zero_grad() and the last step that ``restores`` (a predicate on the
    statements in between) may put gradients back.  ``others``: the
    loop's other clearings of the optimizer, which must all stand in the window's block
    after its last step."""
    sem = an.sem
    body = owner.body
    z = sole_call(body[zi])
    if not steps:
        return None
    guard = None
    for c in steps:
        top = next((a for a in sem.ancestors(c) if sem.parent(a) is owner), None)
        if not isinstance(top, ast.If) or guard not in (None, top) or not an._within(c, top.body):
            return None
        guard = top
    gi = next((k for k, s in enumerate(body) if s is guard), None)
    if gi is None or not window_test(sem, guard.test, counters):
        return None
    # the body runs again and again: a zero_grad() after the window (at the end of the
    # body) runs before the next iteration's backward as one before it does
    before = body[zi + 1:gi] if zi < gi else body[zi + 1:] + body[:gi]
    if not any(always_backward(sem, s, backwards) for s in (body[zi + 1:gi] if zi < gi else body[:gi])):
        return None
    if zi > gi and any(isinstance(n, _LEAVES) for s in body[:zi] for n in sem.walk(s, scopes=False)):
        return None  # (``else: continue`` in the window: the zero_grad() after it may run only when it steps)
    # every backward of the loop runs outside the window (else it is not accumulating)
    if any(isinstance(n, ast.Call) and sem.method_name(n) in backwards for n in sem.walk(guard)):
        return None
    last = max(steps, key=lambda c: (c.lineno, c.col_offset))
    after = next(s for s in guard.body if an._within(last, [s]))
    rest = guard.body[guard.body.index(after) + 1:]
    if any(not an._within(o, rest) for o in others):
        return None
    # nothing unknown between the zero_grad() and the window end may restore gradients
    if restores(before + guard.body[:guard.body.index(after) + 1]):
        return None
    # a step through a scaler: the zero_grad() goes after the scaler's update()
    k = guard.body.index(after)
    scalers = {sem.dotted(sem.receiver(c)) for c in steps if c.args}
    while k + 1 < len(guard.body):
        nxt = sole_call(guard.body[k + 1])
        if nxt is None or sem.method_name(nxt) != "update" or sem.dotted(sem.receiver(nxt)) not in scalers:
            break
        k += 1
    unscale = next((n for s in before for n in sem.walk(s)
                    if isinstance(n, ast.Call) and sem.method_name(n) == "unscale_"), None)
    return Wiped(z, guard, guard.body[k], unscale, cleared_after=bool(others))


def lightning_wiped(an: "Analysis", fn) -> list:
    """:func:`wiped_window` for a Lightning ``training_step`` under manual optimization
    (the class sets ``self.automatic_optimization = False``): Lightning calls it once per
    batch with ``batch_idx`` counting the batches and clears nothing itself, so its body is
    one iteration.  ``opt.zero_grad(); self.manual_backward(loss); if (batch_idx + 1) % k
    == 0: opt.step()`` with ``opt`` from ``self.optimizers()``: one :class:`Wiped` per
    optimizer."""
    sem = an.sem
    cls = sem.parent(fn)
    pos = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if fn.name != "training_step" or not isinstance(cls, ast.ClassDef) or len(pos) < 3:
        return []
    if not any(N.framework_of(q) == "Lightning" for q in sem.base_qualnames(cls)):
        return []
    if not any(
        isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is False
        and any(sem.dotted(t) == "self.automatic_optimization" for t in n.targets)
        for n in sem.walk(cls)
    ):
        return []
    calls = [n for s in fn.body for n in sem.walk(s) if isinstance(n, ast.Call)]
    # something that may put gradients back or clear them otherwise: not this shape
    if any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)) and any(
            touches_grad(t) for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]))
           for s in fn.body for n in sem.walk(s)):
        return []
    counter = pos[2]
    if any(isinstance(n, ast.Name) and n.id == counter and not isinstance(n.ctx, ast.Load) for s in fn.body for n in sem.walk(s)):
        return []
    out = []
    for zi, stmt in enumerate(fn.body):
        z = sole_call(stmt)
        if z is None or sem.method_name(z) != "zero_grad":
            continue
        recv = sem.receiver(z)
        text = sem.dotted(recv)
        origins = sem.origins(recv)
        if text is None or not origins or not all(
            o.kind in (OriginKind.VALUE, OriginKind.PART) and isinstance(o.node, ast.Call)
            and sem.method_name(o.node) == "optimizers" and sem.dotted(sem.receiver(o.node)) == "self"
            for o in origins
        ):
            continue
        if sum(1 for c in calls if sem.method_name(c) == "zero_grad" and sem.dotted(sem.receiver(c)) == text) != 1:
            continue
        steps = [c for c in calls if sem.method_name(c) == "step" and sem.dotted(sem.receiver(c)) == text]
        if any(c.args or c.keywords for c in steps):
            continue  # step(closure)

        def restores(path, text=text):
            # an unknown call given the optimizer (methods of self: Lightning's or the class's own)
            for c in (n for s in path for n in sem.walk(s) if isinstance(n, ast.Call)):
                if known(sem, c) or sem.dotted(sem.receiver(c)) in ("self", text) and sem.method_name(c):
                    continue
                if any(sem.dotted(n) == text for a in [*c.args, *(k.value for k in c.keywords)] for n in sem.walk(a)
                       if isinstance(n, (ast.Name, ast.Attribute))):
                    return True
            return False

        w = _wiped_body(an, fn, zi, steps, {counter}, ("backward", "manual_backward"), restores)
        if w is not None:
            out.append((w, text))
    return out


def unzeroed_steps(an: "Analysis", loop, st: Stepper, facts: LoopFacts) -> list:
    """Steps of an optimizer that steps several times per iteration in straight-line code
    (``optimizerG.step()`` after a VAE loss, then ``netG.zero_grad()``, a GAN loss and
    ``optimizerG.step()`` again) whose stretch since the previous step (across the loop's
    end for the first one) has a backward() and nothing that may clear ``st``: that step
    applies the gradients the previous one already applied.  ``(step, previous step)``
    pairs; empty unless every step, clearing and backward of the body is a plain
    statement of it."""
    sem = an.sem
    if len(st.calls) < 2 or not facts.any_backward:
        return []
    body = loop.body
    if any(isinstance(n, (ast.Continue, ast.Break, ast.Return)) for s in body for n in sem.walk(s)):
        return []
    zeros = an.zero_ops(body, st, facts)
    interesting = {id(n) for n in [*st.calls, *zeros]} | {
        id(n) for s in body for n in sem.walk(s) if isinstance(n, ast.Call) and sem.method_name(n) == "backward"}
    for s in body:
        hit = any(id(n) in interesting for n in sem.walk(s))
        if hit and isinstance(s, _COMPOUND):
            return []
    pos = sorted({next(k for k, s in enumerate(body) if an._within(c, [s])) for c in st.calls})
    if len(pos) != len(st.calls):
        return []
    out = []
    all_opts = set(facts.steppers)
    for j, p in enumerate(pos):
        prev = pos[j - 1]
        window = body[prev + 1:p] if j else body[prev + 1:] + body[:p]
        if not any(always_backward(sem, s) for s in window):
            continue
        if an.may_clear(loop, st, facts, all_opts, window) is None:
            step = next(c for c in st.calls if an._within(c, [body[p]]))
            out.append((step, next(c for c in st.calls if an._within(c, [body[prev]]))))
    return out


def guarded_run(sem: SemanticModel, loop, st: Stepper):
    """The first statement of the backward run that feeds ``st``'s only step, when that
    step runs under control flow and every ``backward()`` of the loop is in that run, in
    the step's block (``if len(batch) == n: loss = ...; loss.backward();
    optimizer.step()``): the step and its backward run together, no accumulation window
    is open; None otherwise."""
    if len(st.calls) != 1:
        return None
    stmt = sem.statement_of(st.calls[0])
    if stmt is None or innermost_loop(sem, stmt) is not loop or sem.block_of(stmt) is loop.body:
        return None
    first = backward_run(sem, stmt, st.text)
    if isinstance(first, str):
        return None
    block = sem.block_of(stmt)
    i, j = next(k for k, s in enumerate(block) if s is first), next(k for k, s in enumerate(block) if s is stmt)
    run = {id(n) for s in block[i:j] for n in sem.walk(s)}
    every = [n for s in loop.body for n in sem.walk(s) if isinstance(n, ast.Call) and sem.method_name(n) == "backward"]
    if not every or any(id(n) not in run for n in every):
        return None
    return first


_COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef,
    ast.ClassDef, ast.Match,
) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def new_zero(view, receiver: str):
    import libcst as cst

    return cst.parse_statement(f"{receiver}.zero_grad()\n")


def moved_stmt(stmt):
    """A LibCST statement as it will be re-inserted: its comment lines kept, blank lines dropped."""
    return stmt.with_changes(leading_lines=[ln for ln in stmt.leading_lines if ln.comment is not None])
