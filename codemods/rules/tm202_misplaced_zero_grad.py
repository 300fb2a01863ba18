"""TM202 misplaced-zero-grad."""

from __future__ import annotations

import ast

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ._zero_grad import (
    _COMPOUND, _LOOPS, _SCOPES, SCALER_METHODS, Analysis, LoopFacts, Stepper, binding, direct, framework_skip,
    backward_run, known, method_may_be_called, models_of, moved_stmt, new_zero, related, sole_call, unzeroed_steps,
    lightning_wiped, wiped_window,
)


class MisplacedZeroGrad(Rule):
    """## What it does
    Finds `optimizer.zero_grad()` calls in the wrong place: once per epoch in an outer
    loop while the inner loop steps every batch; between `loss.backward()` and
    `optimizer.step()` in the same block (the backward also inside a `with` block before
    it, `with torch.autocast("cuda"): loss = ...; loss.backward()`; also when the step is the first thing the
    body of a later `if` does: `if (i + 1) % k == 0: optimizer.step()`, reported only); on every micro-batch of a gradient accumulation
    window (`zero_grad()` before each backward, or at the end of the body after the
    window, while the step runs under `if (i + 1) % k == 0:`, in a loop or in a
    Lightning `training_step` with manual optimization); or before only one of two
    steps of the same optimizer in an iteration.

    ## Why is this bad?
    Once per epoch, gradients still accumulate across every batch of the epoch.  Between
    backward and step, the step sees no gradient at all and the model does not learn.
    Every micro-batch, the accumulated gradients are wiped and each step applies only the
    last micro-batch's: the effective batch is k times smaller than intended.  Before one
    of two steps only, the other step also applies the gradients the previous step
    already applied.

    ## Example
    ```python
    for epoch in range(3):
        optimizer.zero_grad()
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()

    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        (criterion(model(x), y) / k).backward()
        if (i + 1) % k == 0:
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

    for i, (x, y) in enumerate(loader):
        (criterion(model(x), y) / k).backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    An accumulation window is one the code shows: `C % k == 0` (or `not C % k`, or
    either inside an `and`/`or`) with `C` the loop's target or a counter incremented by
    the loop body (`global_step += 1`), or `batch_idx` in a `training_step`.  A step under
    any other condition (`if torch.isfinite(loss):`, `if should_step(i):`), a zero_grad()
    under the window's condition, the zero_grad() of another optimizer, a backward inside
    the window, an unknown call given the optimizer between the zero_grad() and the step
    (it may put gradients back), Lightning automatic optimization and
    `accelerator.accumulate` are not reported.

    ## Fix safety
    The call is moved as written (arguments such as `set_to_none=True` and its comment
    are kept): into the inner loop as its first statement, or before the backward
    statement(s) that feed the step.  Safe when the code in between is straight-line and
    the optimizer is a known `torch.optim` optimizer; otherwise reported or offered as an
    unsafe fix.  For a wiped accumulation window the zero_grad() moves into the window's
    block right after the step (after the scaler's `update()`); the fix is always unsafe:
    the code between the old and the new place (clipping, logging, another loss's
    backward that reaches these parameters) now sees the accumulated gradients, and each
    step applies k micro-batches' worth (divide the loss by k if it is not).  When the
    window already clears them after its step, the every-micro-batch call is removed
    instead (unsafe for the same reasons).  With a
    scaler's `unscale_()` on every micro-batch it is reported only (moved, `unscale_()`
    would run twice before `update()` and raise).  For a second step that was not
    cleared, `optimizer.zero_grad()` is inserted before the backward that feeds it, as an
    unsafe fix: an earlier backward of the iteration may have been meant for that step.
    """

    code = "TM202"
    name = "misplaced-zero-grad"
    pitfall = "zero_grad"
    summary = "zero_grad() once per epoch, between backward() and step(), or every micro-batch of an accumulation window"
    severity = Severity.BUG
    # clearing operations: zero_grad(), p.grad = None, p.grad.zero_(), zero_gradients(...)
    needles = ("grad", "zero", "Zero", "ZERO")
    requires_all = ("step", "backward")
    verify = Verify("zero_grad", ("TM202",))
    corpus_minimum = (10, 8)
    valid = (
        "for epoch in range(3):\n    for x, y in loader:\n        opt.zero_grad()\n        loss(x, y).backward()\n"
        "        opt.step()\n",
        "for i, (x, y) in enumerate(loader):\n    (loss(x, y) / k).backward()\n    if (i + 1) % k == 0:\n"
        "        opt.step()\n        opt.zero_grad()\n",
        "for i, (x, y) in enumerate(loader):\n    opt.zero_grad()\n    loss(x, y).backward()\n"
        "    if torch.isfinite(loss(x, y)):\n        opt.step()\n",
    )
    invalid = (
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n"
        "    opt.zero_grad()\n    for x, y in loader:\n        loss(x, y).backward()\n        opt.step()\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    loss(x, y).backward()\n    opt.zero_grad()\n    opt.step()\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i, (x, y) in enumerate(loader):\n"
        "    opt.zero_grad()\n    (loss(x, y) / k).backward()\n    if (i + 1) % k == 0:\n        opt.step()\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The needles, then a ``step`` called as a method somewhere in the file (both
        checks start from the step a zero_grad must precede)."""
        return super().may_match(text, has) and method_may_be_called(text, "step", has)

    def check(self, ctx: Context):
        an = Analysis.of(ctx)
        seen: set = set()
        for loop in an.loops:
            facts = an.facts(loop)
            if facts.skip or not facts.steppers or not facts.any_backward or facts.ambiguous:
                continue
            all_opts = set(facts.steppers)
            for st in facts.steppers.values():
                f = self._epoch_level(ctx, an, loop, facts, st, all_opts) or self._wiped(ctx, an, loop, facts, st)
                if f is not None and f[0] not in seen:
                    seen.add(f[0])
                    yield f[1]
            for st in facts.steppers.values():
                if an.may_clear(loop, st, facts, all_opts) != "zero":
                    continue
                for step, prev in unzeroed_steps(an, loop, st, facts):
                    if step not in seen:
                        seen.add(step)
                        yield self._unzeroed(ctx, an, st, step, prev)
        for fn in ctx.sem.find(ast.FunctionDef, containing=("manual_backward",)):
            for w, text in lightning_wiped(an, fn):
                if w.zero not in seen:
                    seen.add(w.zero)
                    yield self._wiped_finding(ctx, w, text)[1]
        yield from self._between(ctx, an, seen)

    # 2.5: an optimizer stepped twice per iteration, cleared before one of the steps only
    def _unzeroed(self, ctx, an: Analysis, st: Stepper, step, prev):
        sem = ctx.sem
        where = sem.segment(step).strip()
        msg = (
            f"`{where}` applies the gradients left from the step at line {prev.lineno}"
            f"{' (of the previous iteration)' if prev.lineno > step.lineno else ''}: `{st.text}` steps twice per"
            " iteration and its gradients are cleared before the other step only"
        )
        target = backward_run(sem, sem.statement_of(step), st.text)
        if isinstance(target, str):
            return ctx.finding(self, step, f"{msg} (not fixed automatically: {target})")

        def build(view, target=target, text=st.text):
            return view.insert_before(view.statement(target), new_zero(view, text))

        return ctx.finding(self, step, msg, Fix(build, safety=Safety.UNSAFE, message=f"insert `{st.text}.zero_grad()`"))

    # 2.6: an accumulation window wiped by a zero_grad() every micro-batch
    def _wiped(self, ctx, an: Analysis, loop, facts: LoopFacts, st: Stepper):
        w = wiped_window(an, loop, st, facts)
        return None if w is None else self._wiped_finding(ctx, w, st.text)

    def _wiped_finding(self, ctx, w, text: str):
        sem = ctx.sem
        z = w.zero
        zt = sem.segment(z).strip()
        advice = ("that block already clears them after the step: drop this call" if w.cleared_after
                  else "clear them after the step, inside that block")
        msg = (
            f"`{zt}` runs every iteration before backward() while `{text}` steps only under"
            f" `if {sem.segment(w.guard.test)}:` (line {w.guard.lineno}): it wipes the accumulated gradients and each"
            f" step applies only the last micro-batch's; {advice}"
        )
        if w.unscale is not None:
            return z, ctx.finding(self, z, msg + f" (not moved automatically: `{sem.segment(w.unscale.func)}()` at line"
                                  f" {w.unscale.lineno} runs every iteration and may not run twice before the scaler's update())")
        zstmt = sem.statement_of(z)
        if w.cleared_after:
            # ``if i % k == 0: opt.step(); opt.zero_grad()``: the window clears them already
            def drop(view, zstmt=zstmt):
                import libcst as cst

                return {view.statement(zstmt): cst.RemoveFromParent()}

            return z, ctx.finding(self, z, msg, Fix(drop, safety=Safety.UNSAFE, message=f"remove `{zt}`"))

        def build(view, zstmt=zstmt, after=w.after):
            import libcst as cst

            zs = view.statement(zstmt)
            return {zs: cst.RemoveFromParent(), **view.insert_after(view.statement(after), moved_stmt(zs))}

        return z, ctx.finding(self, z, msg, Fix(build, safety=Safety.UNSAFE, message=f"move `{zt}` after the step"))

    # 2.2: zero_grad once per epoch
    def _epoch_level(self, ctx, an: Analysis, loop, facts: LoopFacts, st: Stepper, all_opts):
        sem = ctx.sem
        if an.may_clear(loop, st, facts, all_opts):
            return None
        outer, zeros = None, []
        for a in sem.ancestors(loop):
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
        direct_step = [c for c in st.calls if direct(sem, c, loop)]
        direct_bw = [c for c in facts.backwards if direct(sem, c, loop)]
        zt = sem.segment(z).strip() if isinstance(z, ast.Call) else "the gradients are cleared"
        how = "every iteration of" if direct_step else "under a condition in"
        msg = (
            f"`{zt}` runs once per iteration of the outer loop (line {outer.lineno}) while "
            f"`{st.text}` steps {how} the inner loop: gradients accumulate across steps"
        )
        zstmt = sem.statement_of(z) if isinstance(z, ast.Call) else None
        zr = sem.dotted(sem.receiver(z)) if isinstance(z, ast.Call) else None
        strict = isinstance(z, ast.Call) and (
            zr == st.text or st.models is not None and zr is not None and any(related(zr, m) for m in st.models)
        )
        ok = (
            strict
            and len(zeros) == 1
            and zstmt is not None
            and sole_call(zstmt) is z
            and any(s is zstmt for s in outer.body)
            and direct_step
            and direct_bw
            and not isinstance(z.func, ast.Name)
            # only this inner loop steps this optimizer inside the outer loop
            and not any(
                l2 is not loop and l2 in set(sem.walk(outer)) and st.text in an.facts(l2).steppers for l2 in an.loops
            )
        )
        if not ok:
            return z, ctx.finding(self, z, msg + " (not moved automatically)")
        first = loop.body[0]

        def build(view, zstmt=zstmt, first=first):
            import libcst as cst

            zs = view.statement(zstmt)
            return {zs: cst.RemoveFromParent(), **view.insert_before(view.statement(first), moved_stmt(zs))}

        safety = Safety.SAFE if st.known else Safety.UNSAFE
        return z, ctx.finding(self, z, msg, Fix(build, safety=safety, message=f"move `{zt}` into the inner loop"))

    # 2.4: zero_grad between backward and step
    def _step_in_if(self, sem, s: ast.If, zr: str):
        """``(label, optimizer)`` of a step of what ``zr`` clears among the first simple
        statements of ``s``'s body, before any backward(), zero_grad() or unknown call."""
        for st in s.body:
            if isinstance(st, _COMPOUND):
                return None
            calls = [n for n in sem.walk(st) if isinstance(n, ast.Call)]
            if any(sem.method_name(c) in ("backward", "zero_grad") for c in calls):
                return None
            got = self._stepper_cleared(sem, calls, zr)
            if got is not None:
                return got
            if _may_refill(sem, calls):
                return None
        return None

    def _between(self, ctx, an: Analysis, seen: set):
        sem = ctx.sem
        for z in sem.find(ast.Call, containing=("zero_grad",)):
            if sem.method_name(z) != "zero_grad" or z in seen:
                continue
            zstmt = sem.statement_of(z)
            if zstmt is None or isinstance(zstmt, _COMPOUND) or framework_skip(sem, z):
                continue
            block = sem.block_of(zstmt)
            if block is None:
                continue
            zr = sem.dotted(sem.receiver(z))
            if zr is None:
                continue
            i = next(k for k, s in enumerate(block) if s is zstmt)
            # forward: the next step() this zero_grad can clear, with no backward before it
            label, straight, opt_expr = None, True, None
            for s in block[i + 1:]:
                calls = [n for n in sem.walk(s) if isinstance(n, ast.Call)]
                if isinstance(s, _COMPOUND):
                    # ``if (i + 1) % k == 0: optimizer.step()``: a step in the body of an
                    # ``if`` before any backward there sees the cleared gradients too
                    got = self._step_in_if(sem, s, zr) if isinstance(s, ast.If) else None
                    if got is not None:
                        label, opt_expr = got
                        straight = False
                        break
                    if any(sem.method_name(n) in ("backward", "step", "zero_grad") for n in calls):
                        break
                    straight = False
                    continue
                if any(sem.method_name(c) in ("backward", "zero_grad") for c in calls):
                    break
                got = self._stepper_cleared(sem, calls, zr)
                if got is not None:
                    label, opt_expr = got
                    break
                # an unknown call between the zero_grad and the step may refill the
                # gradients (a SAM-style second pass): assume it does, no finding
                if _may_refill(sem, calls):
                    break
            if label is None:
                continue
            # backward: a backward() since the last step of that optimizer
            first = None
            for s in reversed(block[:i]):
                if _binds(sem, s, zr):
                    break  # (a backward above the optimizer's own binding was not run for its step)
                calls = [n for n in sem.walk(s) if isinstance(n, ast.Call)]
                if isinstance(s, (ast.With, ast.AsyncWith)) and _backward_block(sem, s, calls):
                    first = s  # ``with torch.autocast(...): loss = ...; loss.backward()``: it always runs
                    continue
                if isinstance(s, _COMPOUND):
                    if any(sem.method_name(n) in ("backward", "step", "zero_grad") for n in calls):
                        break
                    if first is None:
                        straight = False
                    continue
                if any(sem.method_name(c) == "backward" for c in calls):
                    first = s
                    continue
                if any(sem.method_name(c) in ("step", "zero_grad") for c in calls):
                    break
            if first is None:
                continue
            b = binding(sem, opt_expr)
            is_known = b.kind in ("opt", "param")
            zt = sem.segment(z).strip()
            msg = f"`{zt}` runs between backward() and `{label}`: the step sees no gradients and the model does not learn"
            if not straight or sole_call(zstmt) is not z:
                yield ctx.finding(self, z, msg + " (not moved automatically: control flow in between)")
                continue

            def build(view, zstmt=zstmt, first=first):
                import libcst as cst

                zs = view.statement(zstmt)
                return {zs: cst.RemoveFromParent(), **view.insert_before(view.statement(first), moved_stmt(zs))}

            safety = Safety.SAFE if is_known else Safety.UNSAFE
            yield ctx.finding(self, z, msg, Fix(build, safety=safety, message=f"move `{zt}` before backward()"))

    @staticmethod
    def _stepper_cleared(sem, calls, zr: str):
        """A step call among ``calls`` whose optimizer ``zr.zero_grad()`` clears:
        ``(label, optimizer expression)``."""
        for c in calls:
            if sem.method_name(c) != "step":
                continue
            recv = sem.receiver(c)
            if not c.args and not c.keywords:
                opt = recv
            elif len(c.args) == 1 and not c.keywords and binding(sem, recv).kind == "scaler":
                opt = c.args[0]
            else:
                continue
            ot = sem.dotted(opt)
            if ot is None:
                continue
            b = binding(sem, opt)
            if b.kind in ("sched", "scaler"):
                continue
            if ot == zr:
                return sem.segment(c).strip(), opt
            models = models_of(sem, b.ctors) if b.kind == "opt" else None
            if b.kind in ("opt", "param") and models is not None and any(related(zr, m) for m in models):
                return sem.segment(c).strip(), opt
        return None


def _binds(sem, stmt, dotted: str) -> bool:
    """``stmt`` binds ``dotted`` or a name it is read through (``optimizer = SGD(...)``,
    ``self.opt = ...`` for ``self.opt``)."""
    for n in sem.walk(stmt, scopes=False):
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            d = sem.dotted(n)
            if d is not None and (d == dotted or dotted.startswith(d + ".")):
                return True
    return False


def _backward_block(sem, block, calls) -> bool:
    """The ``with`` statement ``block`` runs a backward() whatever happens in it (only
    ``with`` statements around the call inside it), and no step() or zero_grad()."""
    if any(sem.method_name(c) in ("step", "zero_grad") for c in calls):
        return False
    found = False
    for c in calls:
        if sem.method_name(c) != "backward":
            continue
        for a in sem.ancestors(c):
            if a is block:
                break
            if isinstance(a, ast.stmt) and not isinstance(a, (ast.With, ast.AsyncWith, ast.Expr, ast.Assign)):
                return False
        found = True
    return found


def _may_refill(sem, calls) -> bool:
    """An unknown call among ``calls`` (not a scaler's method, ``item``/``detach``/``cpu``)
    may put gradients back after a zero_grad() (a SAM-style second pass)."""
    return any(not known(sem, c) and sem.method_name(c) not in SCALER_METHODS | {"item", "detach", "cpu"} for c in calls)
