"""TM201 missing-zero-grad."""

from __future__ import annotations

import ast
import os
import re

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic import OriginKind
from ..semantic import names as N
from ._zero_grad import (
    _LOOPS, _SCOPES, Analysis, LoopFacts, Stepper, accumulation_guard, backward_run, binding, direct,
    class_without_zero_grad, framework_skip, guarded_run, innermost_loop, known, method_may_be_called, models_of, new_zero,
)


_GRAD_READ = re.compile(r"\.grad\b")


def _first_statement(fn):
    """The first statement of ``fn``'s body after its docstring (None when there is none)."""
    return next((st for st in fn.body if not (
        isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)
    )), None)


def _clears_by_text(text: str) -> bool:
    """``text`` may clear gradients: a ``zero_grad`` or a ``.grad`` stands in it, other
    than on a line that is a comment (``#     self.gradient_accumulation_steps,`` of a
    block commented out)."""
    for word in ("zero_grad", ".grad"):
        i = text.find(word)
        while i >= 0:
            line = text[text.rfind("\n", 0, i) + 1 : i]
            if not line.lstrip().startswith("#"):
                return True
            i = text.find(word, i + 1)
    return False


# methods of containers, tensors and strings that leave any gradient as it is, whatever
# their receiver (``batch.items()``, ``x.to(device)``)
_KEEPS_GRADS = frozenset({
    "items", "keys", "values", "get", "pop", "append", "extend", "copy", "to", "cuda", "cpu", "size", "dim",
    "float", "long", "int", "half", "double", "bool", "item", "tolist", "numpy", "detach", "view", "reshape",
    "format", "join", "split", "strip",
})


def _handed(call: ast.Call) -> tuple:
    """What ``call`` is given: its arguments, keyword values and receiver (not the receiver
    of a method that keeps gradients as they are, :data:`_KEEPS_GRADS`)."""
    f = call.func
    recv = (f.value,) if isinstance(f, ast.Attribute) and f.attr not in _KEEPS_GRADS else ()
    return (*call.args, *(k.value for k in call.keywords), *recv)



def _importers_pass_optimizers(sem, expr) -> bool:
    """Every value of ``expr`` that comes in as a parameter (``self.optimizer`` set from
    the constructor's ``optimizer``) is, where the scripts that import this file call it
    (``Trainer(model, torch.optim.Adam(...), loader)`` in main.py), a torch.optim
    optimizer (``SemanticModel.importer_arguments``); False when no importer passes one."""
    found = False
    for o in sem.origins(expr):
        if o.kind is not OriginKind.PARAMETER:
            continue
        b = o.binding
        fn = b.scope.node if b is not None else None
        args = sem.importer_arguments(fn, b.name) if fn is not None else []
        if not args:
            return False
        for other, arg, _ in args:
            origins = other.origins(arg)
            if not origins or not all(x.kind is OriginKind.VALUE and isinstance(x.node, ast.Call)
                                      and N.is_optimizer(other.call_qualname(x.node)) for x in origins):
                return False
        found = True
    return found

class MissingZeroGrad(Rule):
    """## What it does
    Finds training loops that call `loss.backward()` and `optimizer.step()` (or
    `scaler.step(optimizer)`) while nothing clears the gradients.  Also a training step
    written as a function or method of its own (`def train_step(model, x, y,
    optimizer): ...; loss.backward(); optimizer.step()`, straight-line, one step of a
    torch.optim optimizer besides any scheduler's, also one a trainer class of its own
    file gets from the scripts that import it, `Trainer(model, torch.optim.Adam(...),
    loader)` in main.py; its `backward()` may run in a
    same-file helper it calls before the step) that a loop calls every iteration, when nothing in it or in
    that loop clears the gradients (no `zero_grad`, no `.grad`, no unknown call given the
    optimizer or the model, no same-file callee that clears them); its fix puts
    `optimizer.zero_grad()` first in the function.  And a training step of its own that
    steps two optimizers (a GAN's `step(self, data)`) and clears the gradients of one
    (`self.generator.zero_grad()`) but not of the other: it clears per call, so the other
    optimizer's gradients pile up from call to call (an unsafe fix: its callers are not
    seen).

    ## Why is this bad?
    `backward()` *adds* to `.grad`.  Without `optimizer.zero_grad()` each step uses the
    sum of every gradient computed so far: the effective learning rate grows with the
    iteration count and training diverges or stalls, without any error.

    Gradient accumulation (a step under `if (i + 1) % k == 0:`), `model.zero_grad()`,
    `p.grad = None`, LBFGS closures, Lightning, Accelerate and DeepSpeed loops, and
    unknown calls that receive the optimizer or the model are not reported (a function of
    another file of the project whose text names no gradient, step or backward is read:
    it does not count), except a call
    that runs strictly between a `backward()` and the step in the same block
    (`loss.backward(); clip_gradient(optimizer, c); optimizer.step()`): clearing there
    would leave that step nothing to apply, so it is not taken to clear.  Helpers and
    methods of the same file that the loop calls are read, with their parameters bound
    to the loop's arguments.

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

    ## Fix safety
    Safe when the optimizer is provably a `torch.optim` optimizer (built with
    `torch.optim.X(...)` in the file, reaching the loop through names, attributes,
    parameters or a builder function) or a parameter whose callers are not all known;
    otherwise unsafe.  A step under a condition that is not an accumulation window
    (`if torch.isfinite(loss):`) still gets the `zero_grad()` at the top of the loop;
    an accumulation window is reported only.  A step that runs under a condition
    together with every backward of the loop, in its block (`if len(batch) == n:
    loss.backward(); optimizer.step()`), gets the `zero_grad()` right before that
    backward.  With several optimizers in the loop the
    `zero_grad()` goes right before the backward that feeds that optimizer's step, when
    that pairing is straight-line code.  `optimizer.zero_grad` (or the stepped model's
    `model.zero_grad`) written without `()` in the loop's block, before the backward or
    after the step, is a no-op: the fix adds the `()` where it stands (between the
    backward and the step, a call would clear what the step needs: the usual insertion
    at the top of the loop instead).  Gradients cleared by hand only in the body of an
    `if params is not None:` (or `if params:`) where every call of the function in the
    file leaves `params` None (d2l's `train_ch3(..., params=None, optimizer=opt)`) are
    never cleared.  A step and a backward that run every iteration, while whatever
    clears the gradients (a `zero_grad()`, or an unknown call given the model) runs only
    under `if i % 100 == 0:` (the counter also through `batches_done = epoch *
    len(loader) + i`), apply the gradients accumulated since its last opening: reported
    only (which of the two the author meant is not known).
    """

    code = "TM201"
    name = "missing-zero-grad"
    pitfall = "zero_grad"
    summary = "backward() and step() in a loop with nothing that clears the gradients"
    severity = Severity.BUG
    needles = ("backward",)
    requires_all = ("step",)
    # (a zero_grad() that runs only before the loop shows as the detector's TM202: a step
    # with gradients left over although zero_grad() was called)
    verify = Verify("zero_grad", ("TM201", "TM202"))
    corpus_minimum = (10, 8)
    valid = (
        "for x, y in loader:\n    opt.zero_grad()\n    criterion(model(x), y).backward()\n    opt.step()\n",
        "for x, y in loader:\n    criterion(model(x), y).backward()\n    opt.step()\n    opt.zero_grad()\n",
    )
    invalid = (
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    criterion(model(x), y).backward()\n    opt.step()\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    criterion(model(x), y).backward()\n    utils.clip_gradient(opt, 0.5)\n    opt.step()\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    opt.zero_grad\n    criterion(model(x), y).backward()\n    opt.step()\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The needles, then what the loop facts need: ``backward`` and ``step`` called
        as methods somewhere in the file."""
        return (super().may_match(text, has) and method_may_be_called(text, "backward", has)
                and method_may_be_called(text, "step", has))

    def check(self, ctx: Context):
        an = Analysis.of(ctx)
        yield from self._step_helpers(ctx, an)
        yield from self._unzeroed_partners(ctx, an)
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

    def _step_helpers(self, ctx, an: Analysis):
        """A same-file function or method whose own statements run ``backward()`` and one
        torch.optim optimizer's ``step()`` (a per-batch training step), called directly in
        a loop, with nothing in it or in that loop that clears the gradients (no
        ``zero_grad``, no ``.grad``, no unknown call given the optimizer or its model):
        each call adds its gradients to all the earlier ones."""
        sem = ctx.sem
        with_backward = sem.find(ast.FunctionDef, ast.AsyncFunctionDef, containing=("backward",))
        calls_of: dict = {}  # a function's own calls, walked once

        def calls(fn) -> list:
            got = calls_of.get(fn)
            if got is None:
                got = calls_of[fn] = [c for c in sem.walk(fn, scopes=False) if isinstance(c, ast.Call)]
            return got

        backward_helpers = self._backward_helpers(sem, with_backward, calls)
        for fn in self._with_callers(sem, with_backward, backward_helpers):
            if _clears_by_text(sem.segment(fn)) or framework_skip(sem, fn.body[0]):
                continue
            own = [c for c in calls(fn) if innermost_loop(sem, c) is None]
            backs = [c for c in own if sem.method_name(c) == "backward"]
            steps = [c for c in own if sem.method_name(c) == "step" and not c.args and not c.keywords]
            if len(steps) > 1:  # (a scheduler steps too)
                steps = [c for c in steps if binding(sem, sem.receiver(c)).kind != "sched"]
            if not backs and steps:
                # ``loss = self.forward_backward(batch); self.optimizer.step()``: a same-file
                # helper that runs backward() (and neither steps nor clears) called first
                backs = [c for c in own if sem.callee(c) in backward_helpers
                         and (c.lineno, c.col_offset) < (steps[0].lineno, steps[0].col_offset)]
            if not backs or len(steps) != 1 or any(sem.statement_of(c) not in fn.body for c in (*backs, *steps)):
                continue  # (straight-line statements of the function itself)
            step = steps[0]
            rtext = sem.dotted(sem.receiver(step))
            b = binding(sem, sem.receiver(step))
            if rtext is None or b.kind != "opt" and not (b.kind == "param" and _importers_pass_optimizers(sem, sem.receiver(step))):
                continue
            watched = {rtext, *(models_of(sem, b.ctors) or ())}
            if any(not known(sem, c) and an._receives(c, watched) for c in own if c is not step and c not in backs):
                continue
            if self._clears_elsewhere(sem, fn):
                continue
            loop = self._calling_loop(sem, fn)
            if loop is None:
                continue
            first = _first_statement(fn)
            if first is None:
                continue
            msg = (f"`{rtext}.step()` in `{fn.name}` runs on every call, and `{fn.name}` is called every iteration of"
                   f" the loop at line {loop.lineno}, but nothing clears the gradients: they accumulate across steps")

            def build(view, first=first, text=rtext):
                return view.insert_before(view.statement(first), new_zero(view, text))

            yield ctx.finding(self, step, msg, Fix(build, safety=Safety.SAFE, message=f"insert `{rtext}.zero_grad()`"))

    def _unzeroed_partners(self, ctx, an: Analysis):
        """A per-batch training step written as a function of its own (``def step(self,
        data)`` of a GAN) whose own straight-line statements step two torch.optim
        optimizers after ``backward()`` and clear the gradients of one of them
        (``self.generator.zero_grad()``) but not of the other: its author clears per
        call, so the other one's gradients pile up from call to call (and the other
        network's backward adds to them too).  Not when the function holds a loop (the
        loop rules judge it), reads ``.grad``, hands an optimizer or its model to an
        unknown call, calls a same-file function that clears, or is called in this file
        by a loop that clears."""
        sem = ctx.sem
        for fn in sem.find(ast.FunctionDef, ast.AsyncFunctionDef, containing=("backward",)):
            text = sem.segment(fn)
            if "zero_grad" not in text or _GRAD_READ.search(text) or framework_skip(sem, fn.body[0]):
                continue
            own = [c for c in sem.walk(fn, scopes=False) if isinstance(c, ast.Call)]
            if any(innermost_loop(sem, c) is not None and any(a is fn for a in sem.ancestors(innermost_loop(sem, c)))
                   for c in own):
                continue  # (a loop of its own: the loop checks read it)
            if any(sem.statement_of(c) not in fn.body for c in own
                   if sem.method_name(c) in ("backward", "step", "zero_grad")):
                continue  # (straight-line statements of the function itself)
            steps, clears = {}, []
            for c in own:
                name = sem.method_name(c)
                if name == "step" and not c.args and not c.keywords:
                    r = sem.dotted(sem.receiver(c))
                    b = binding(sem, sem.receiver(c))
                    if r is None or b.kind != "opt":
                        break  # (something else steps: not judged)
                    steps.setdefault(r, (c, b))
                elif name == "zero_grad":
                    r = sem.dotted(sem.receiver(c))
                    if r is None:
                        break
                    clears.append(r)
            else:
                if len(steps) < 2 or not clears:
                    continue
                backs = [c for c in own if sem.method_name(c) == "backward"]

                def cleared(r, b):
                    models = models_of(sem, b.ctors) or set()
                    return any(z == r or r.startswith(z + ".") or z in models for z in clears)

                done = {r for r, (c, b) in steps.items() if cleared(r, b)}
                if not done:
                    continue
                for r, (step, b) in steps.items():
                    if r in done or not any((x.lineno, x.col_offset) < (step.lineno, step.col_offset) for x in backs):
                        continue
                    # the optimizer, its models, and what holds it (``self.discriminator`` of
                    # ``self.discriminator.optimizer``); a model named ``self`` is the
                    # constructor's class's own, not this function's ``self``
                    parts = r.split(".")
                    holders = {".".join(parts[:k]) for k in range(2, len(parts))}
                    watched = {r, *holders, *((models_of(sem, b.ctors) or set()) - {"self"})}
                    if any(not known(sem, c) and an._receives(c, watched) for c in own if sem.method_name(c) not in (
                            "step", "backward", "zero_grad")):
                        continue
                    if self._clears_elsewhere(sem, fn) or self._called_by_clearing_loop(sem, fn):
                        continue
                    other = next(iter(done))
                    first = _first_statement(fn)
                    msg = (f"`{r}.step()` in `{fn.name}` applies gradients nothing in it clears, while `{fn.name}` clears"
                           f" those of `{other}` on every call: across calls `{r}`'s gradients accumulate (and every"
                           " backward through its model adds to them)")

                    def build(view, first=first, text=r):
                        return view.insert_before(view.statement(first), new_zero(view, text))

                    # (the calls are in another file: whether they clear is not seen)
                    yield ctx.finding(self, step, msg, Fix(build, safety=Safety.UNSAFE,
                                                           message=f"insert `{r}.zero_grad()` first in `{fn.name}`"))

    @staticmethod
    def _called_by_clearing_loop(sem, fn) -> bool:
        """A loop of this file calls ``fn`` and clears gradients (or runs backward) itself."""
        for call in sem.find(ast.Call, containing=(fn.name,)):
            if sem.callee(call) is fn:
                loop = innermost_loop(sem, call)
                if loop is not None:
                    t = sem.segment(loop)
                    if _clears_by_text(t) or "backward" in t:
                        return True
        return False

    @staticmethod
    def _backward_helpers(sem, fns, calls) -> set:
        """Of ``fns``, those that call ``backward()`` and neither step nor clear the gradients
        (``def forward_backward(self, batch): ...; loss.backward(); return loss``);
        ``calls(fn)``: a function's own calls."""
        out = set()
        for fn in fns:
            if _clears_by_text(sem.segment(fn)):
                continue
            names = {sem.method_name(c) for c in calls(fn)}
            if "backward" in names and "step" not in names:
                out.add(fn)
        return out

    @staticmethod
    def _with_callers(sem, fns: list, helpers: set) -> list:
        """``fns``, then the functions that call one of ``helpers`` (and are not in ``fns``)."""
        out = list(fns)
        if helpers:
            seen = set(out)
            names = {h.name for h in helpers}
            for call in sem.find_named((ast.Call,), names):
                if sem.callee(call) in helpers:
                    fn = sem.enclosing_function(call)
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn not in seen:
                        seen.add(fn)
                        out.append(fn)
        return out

    @staticmethod
    def _calling_loop(sem, fn):
        """A loop whose body calls ``fn`` directly (as a statement of its own, or its
        value assigned or added up), and in which nothing else may clear the gradients:
        no ``zero_grad`` or ``.grad`` in its text, and no other call given what the call
        of ``fn`` is given."""
        for call in sem.find(ast.Call, containing=(fn.name,)):
            if sem.callee(call) is not fn:
                continue
            loop = innermost_loop(sem, call)
            stmt = sem.statement_of(call)
            if loop is None or stmt not in loop.body or not isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign)):
                continue
            ltext = sem.segment(loop)
            if _clears_by_text(ltext) or "backward" in ltext:
                continue
            given = {sem.dotted(x) for x in _handed(call)} - {None}
            others = [c for c in sem.walk(loop) if isinstance(c, ast.Call) and c is not call and not known(sem, c)]
            if any(sem.dotted(x) in given for c in others for x in _handed(c)):
                continue
            if MissingZeroGrad._clears_elsewhere(sem, loop, skip=fn):
                continue
            return loop
        return None

    @staticmethod
    def _clears_elsewhere(sem, node, skip=None) -> bool:
        """``node`` calls a same-file function, method or class (other than ``skip``) whose
        text clears gradients some way (``zero_grad``, ``.grad``): through a global, say."""
        for c in sem.walk(node):
            if isinstance(c, ast.Call):
                target = sem.callee(c)
                if target is not None and target is not skip and target is not node \
                        and _clears_by_text(sem.segment(target)):
                    return True
        return False

    def _zeroed_outside(self, ctx, an, loop, st, facts) -> bool:
        """A zero_grad in an enclosing loop, outside this one: TM202's business."""
        for a in ctx.sem.ancestors(loop):
            if isinstance(a, _SCOPES):
                return False
            if isinstance(a, _LOOPS) and any(z is not loop and not any(x is loop for x in ctx.sem.ancestors(z))
                                             for z in an.zero_ops(a.body, st, facts)):
                return True
        return False

    def _check_ambiguous(self, ctx, an: Analysis, loop, facts: LoopFacts, all_opts: set[str]):
        """Several objects step and none is provably an optimizer (``optimizer.step();
        ema.step()``): report once when nothing in the loop may clear, never fix."""
        for st in facts.steppers.values():
            if an.may_clear(loop, st, facts, all_opts) or self._zeroed_outside(ctx, an, loop, st, facts):
                return None
        names = ", ".join(f"`{t}`" for t in sorted(facts.steppers))
        first = min((c for s in facts.steppers.values() for c in s.calls), key=lambda c: (c.lineno, c.col_offset))
        return ctx.finding(
            self,
            first,
            f"{names} step in a loop with backward() and nothing clears the gradients; "
            "none is provably a torch.optim optimizer, so which to zero is left to you",
        )

    def _check_one(self, ctx, an: Analysis, loop, facts: LoopFacts, st: Stepper, all_opts: set[str]):
        sem = ctx.sem
        if self._zeroed_outside(ctx, an, loop, st, facts):
            return None
        if an.may_clear(loop, st, facts, all_opts):
            windowed = an.windowed_clear(loop, st, facts, all_opts)
            if windowed is not None:
                w, why = windowed
                what = "its gradients are cleared only" if why == "zero" else \
                    f"nothing but {why} may clear its gradients, and only"
                return ctx.finding(
                    self, st.calls[0],
                    f"`{st.text}.step()` runs every iteration, but {what} under `if {sem.segment(w.test)}:` (line"
                    f" {w.lineno}), once every few iterations: in between, each step applies the gradients accumulated"
                    " since (clear them every iteration, or step only there too; not fixed automatically)",
                )
            got = an.unclearing_branch(loop, st, facts, all_opts)
            if got is None:
                return None
            step, zero, branch = got
            where = f"`{sem.segment(step.func)}({sem.segment(step.args[0])})`" if sem.receiver(step) is not st.expr and step.args \
                else f"`{st.text}.step()`"
            return ctx.finding(
                self, step,
                f"{where} runs in a loop with backward() and nothing clears the gradients on its branch: the"
                f" `{sem.segment(zero.func) + '()' if isinstance(zero, ast.Call) else sem.segment(zero)}` at line"
                f" {zero.lineno} runs only in the other branch of"
                f" `if {sem.segment(branch.test)}:` (line {branch.lineno}); clear them on this branch too"
                " (not fixed automatically)",
            )
        step = st.calls[0]
        direct_step = [c for c in st.calls if direct(sem, c, loop)]
        direct_bw = [c for c in facts.backwards if direct(sem, c, loop)]
        recv = sem.receiver(step)
        where = f"`{st.text}.step()`" if recv is st.expr else f"`{sem.segment(step.func)}({st.text})`"
        safety = Safety.SAFE if st.known else Safety.UNSAFE
        what = "" if st.known else f" (`{st.text}` is not provably a torch.optim optimizer)"
        lacking = None if st.known else class_without_zero_grad(sem, st.expr)
        if lacking is not None:
            name, home = lacking
            home = "" if home is sem else f" (of {os.path.basename(home.path)})"
            return ctx.finding(
                self, step,
                f"{where} runs in a loop with backward() and nothing clears the gradients: they accumulate across"
                f" steps; `{st.text}` is an instance of `{name}`{home}, which defines no `zero_grad()`: clear the gradients of the"
                " model it steps (`model.zero_grad()`) or give the class a `zero_grad` (not fixed automatically)",
            )
        guarded = None if direct_step else guarded_run(sem, loop, st)
        if guarded is not None:
            # ``if len(batch) == n: loss.backward(); optimizer.step()``: every backward of
            # the loop feeds this step in its block, so no accumulation window is open
            msg = (f"{where} runs under a condition together with its backward(), but nothing clears the gradients:"
                   f" they accumulate across steps{what}")

            def build_guarded(view, target=guarded, text=st.text):
                return view.insert_before(view.statement(target), new_zero(view, text))

            return ctx.finding(self, step, msg, Fix(build_guarded, safety=safety, message=f"insert `{st.text}.zero_grad()`"))
        accumulating = not direct_step and accumulation_guard(sem, step, loop)
        if accumulating or not direct_bw:
            if accumulating:
                why = (
                    "the step runs every few iterations: add "
                    f"`{st.text}.zero_grad()` after it, where the accumulation window ends"
                )
            else:
                why = "backward() runs under control flow or in a nested loop: not fixed automatically"
            return ctx.finding(
                self, step, f"{where} runs in a loop with backward() and nothing clears the gradients ({why})"
            )
        when = "every iteration" if direct_step else "in a loop"
        msg = f"{where} runs {when} but nothing clears the gradients: they accumulate across steps{what}"
        once = _zeroed_before(sem, loop, st)
        if once is not None:
            msg = (f"{where} runs {when} but the gradients are cleared only once, by `{sem.segment(once)}` at line"
                   f" {once.lineno} before the loop: they accumulate across its steps{what}")
        text = st.text
        if len(facts.steppers) == 1:
            bare = _uncalled_zero(sem, loop, st, direct_step, direct_bw)
            if bare is not None:
                # ``optimizer.zero_grad`` written without ``()``: a no-op; calling it where
                # it stands is what was meant
                written = sem.segment(bare)
                msg = (f"{where} runs every iteration but nothing clears the gradients: `{written}` at line"
                       f" {bare.lineno} is never called (no `()`), so they accumulate across steps")

                def build_call(view, bare=bare):
                    import libcst as cst

                    node = view.node(bare)
                    return {node: cst.Call(func=node)}

                return ctx.finding(self, bare, msg, Fix(build_call, safety=safety, message=f"call `{written}()`"))
            first = loop.body[0]

            def build(view, first=first, text=text):
                return view.insert_before(view.statement(first), new_zero(view, text))

            return ctx.finding(self, step, msg, Fix(build, safety=safety, message=f"insert `{text}.zero_grad()`"))
        # several optimizers: zero right before the backward run that feeds this step
        if not direct_step:
            return ctx.finding(self, step, f"{msg}; several optimizers and the step is conditional: not fixed")
        stmt = sem.statement_of(direct_step[0])
        target = backward_run(sem, stmt, text)
        if isinstance(target, str):
            return ctx.finding(self, step, f"{msg}; several optimizers and {target}: not fixed")

        def build_before(view, target=target, text=text):
            return view.insert_before(view.statement(target), new_zero(view, text))

        return ctx.finding(self, step, msg, Fix(build_before, safety=safety, message=f"insert `{text}.zero_grad()`"))


def _zeroed_before(sem, loop, st) -> "ast.Call | None":
    """A ``zero_grad()`` call of the stepped optimizer (or of a model it steps) that runs
    before ``loop`` in the block holding it (``optimizer.zero_grad()`` above ``for batch
    in loader:``): it clears the gradients once, not every iteration."""
    parent = sem.parent(loop)
    block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                  if isinstance(b, list) and loop in b), None)
    if block is None:
        return None
    receivers = {st.text, *(st.models or ())}
    for stmt in block[:block.index(loop)]:
        v = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "zero_grad" \
                and sem.dotted(v.func.value) in receivers:
            return v
    return None


def _uncalled_zero(sem, loop, st, steps: list, backwards: list):
    """``optimizer.zero_grad`` (or ``model.zero_grad`` of a model the optimizer steps)
    written as a statement of its own without ``()`` in the loop's own block, before the
    iteration's first backward() or after its last step (a call there clears the
    gradients at the right time); None when there is none such."""
    block = loop.body

    def index(node):
        s = sem.statement_of(node)
        while s is not None and s not in block:
            s = sem.statement_of(sem.parent(s))
        return block.index(s) if s is not None else None

    b_at = [index(c) for c in backwards]
    s_at = [index(c) for c in steps]
    if not b_at or not s_at or None in b_at or None in s_at:
        return None
    receivers = {st.text, *(st.models or ())}
    for i, stmt in enumerate(block):
        v = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(v, ast.Attribute) and v.attr == "zero_grad" and sem.dotted(v.value) in receivers \
                and (i < min(b_at) or i > max(s_at)):
            return v
    return None
