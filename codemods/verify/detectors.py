"""Run-time detectors for the pitfalls that raise no exception, and the step counter.

Every detector reports on stderr, one machine-readable line per (code, location)::

    TORCHMEND-DETECTOR: TM201 at train.py:42: <message>

and the bootstrap exits with :data:`EXIT_DETECTOR` (3) when any fired.

zero_grad (installed by ``install_zero_grad``)
    A parameter's gradient is *stepped* when an optimizer's ``step()`` finishes while the
    parameter has a ``.grad``.  It *leaks* when a later ``backward()`` accumulates into that
    parameter while its ``.grad`` is still the very tensor the step used, unmodified (same
    object, same version counter): nothing set it to None (``zero_grad()``'s default,
    ``p.grad = None``), zeroed it in place (``zero_grad(set_to_none=False)``,
    ``p.grad.zero_()``) or replaced it.  The detector fires when an optimizer then *steps*
    with such a leaked gradient, still uncleared (so a GAN generator's backward that passes
    through the discriminator, whose gradients are zeroed before the discriminator's next
    step, is fine).  Several ``backward()`` calls before one ``step()`` (gradient
    accumulation) are fine too: only gradients that survive a step into the next step count.
    The location reported is the ``backward()`` that accumulated onto the stale gradient.

    * ``TM201``: a leaked gradient was stepped, and no clearing of that optimizer's gradients
      was observed anywhere in the run (no ``optimizer.zero_grad()``, no
      ``module.zero_grad()`` covering its parameters, no manual clearing): zero_grad is
      missing.  Leaks are reported when the script ends (however it ends; a run killed on
      timeout reports none), since only then is "anywhere" known; with ``--max-steps``,
      "the run" is those steps.
    * ``TM202``: a leaked gradient was stepped although clearing was observed somewhere in
      the run (zero_grad in the wrong place, e.g. once per epoch); or ``step()`` ran when every
      parameter that the last ``backward()`` reached had its gradient cleared again
      (zero_grad between ``backward()`` and ``step()``: the step discards the gradients);
      or every gradient a ``backward()`` wrote was cleared (set to None, replaced, or all
      zeros) before any ``step()`` applied it (zero_grad on every micro-batch of a gradient
      accumulation window; reported at that backward()).  A closure's backward() that
      ``step()`` evaluates (LBFGS) counts as applied.

    Only ``loss.backward()`` / ``torch.autograd.backward`` count (``torch.autograd.grad``
    does not write ``.grad``).  Not detected: an extra ``backward()`` before the first step
    (variant 2.7) looks like accumulation.

softmax (installed by ``install_softmax``)
    ``torch.nn.functional.cross_entropy`` (which ``nn.CrossEntropyLoss`` calls) inspects its
    input along the class dimension (dim 1, or 0 for an unbatched input; at least 2 classes):

    * ``TM501``: every row is non-negative (>= -1e-6) and sums to 1 (within 1e-3):
      probabilities, a softmax was applied before the loss;
    * ``TM502``: every row is <= 1e-6 and its logsumexp is 0 (within 1e-3):
      log-probabilities, a log_softmax was applied before the loss.

    Logits (anything else) pass.  Inputs without values (meta tensors of the simulated GPU)
    are not inspected.

steps (always installed)
    A global optimizer step post-hook counts ``step()`` calls; with ``max_steps`` it stops the
    script by raising :class:`StopScript` after that many steps (the bootstrap reports it as
    a clean stop).
"""

from __future__ import annotations

import os
import sys
import traceback

EXIT_DETECTOR = 3
MARK = "TORCHMEND-DETECTOR:"


class StopScript(BaseException):
    """Raised after ``max_steps`` optimizer steps; a BaseException so that a script's own
    ``except Exception`` does not swallow it."""


class State:
    user_root: str = ""  # the script's directory: frames under it are "user code"
    fired: list = []  # (code, location, message)
    steps: int = 0
    max_steps: int | None = None


_seen: set = set()
_HERE = os.path.dirname(os.path.abspath(__file__))


def user_location(stack=None) -> str:
    """``file:line`` of the innermost frame of the user's code ("" if none)."""
    frames = stack if stack is not None else traceback.extract_stack()
    root = State.user_root
    for fr in reversed(frames):
        fn = os.path.abspath(fr.filename)
        if fn.startswith(_HERE) or "site-packages" in fn or fn.startswith(sys.prefix + os.sep + "lib"):
            continue
        if root and not fn.startswith(root + os.sep):
            continue
        rel = os.path.relpath(fn, root) if root else os.path.basename(fn)
        return f"{rel}:{fr.lineno}"
    return ""


def report(code: str, message: str, location: str | None = None) -> None:
    loc = user_location() if location is None else location
    if (code, loc) in _seen:
        return
    _seen.add((code, loc))
    State.fired.append((code, loc, message))
    sys.stderr.write(f"{MARK} {code} at {loc or '?'}: {message}\n")
    sys.stderr.flush()


# ----------------------------------------------------------------------------- steps
def install_steps(max_steps: int | None) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    State.max_steps = max_steps

    def post(opt, args, kwargs):
        State.steps += 1
        if State.max_steps is not None and State.steps >= State.max_steps:
            raise StopScript(f"stopped after {State.steps} steps")

    # registered last by the bootstrap, so other post hooks run before the stop
    register_optimizer_step_post_hook(post)


# ----------------------------------------------------------------------------- zero_grad
class ZeroGradDetector:
    def __init__(self):
        self.owner: dict[int, object] = {}  # id(param) -> first optimizer holding it
        self.params: dict[int, object] = {}  # id(param) -> param (kept alive: ids stay unique)
        self.stepped: dict[int, tuple] = {}  # id(param) -> (grad tensor at step, its version)
        self.dirty: dict[int, str] = {}  # id(param) -> location of the backward() that leaked into it
        self.dirty_snap: dict[int, tuple] = {}  # id(param) -> (grad, version) after that accumulation
        self.accumulated: set[int] = set()  # params reached by a backward() since their last step
        self.cleared: set[int] = set()  # id(optimizer) whose gradients were seen cleared
        self.in_backward = 0
        self.backward_loc = ""
        self.leaks: list[tuple[object, str]] = []  # (optimizer, location of the backward())
        # wiped accumulation: which backward() calls each parameter's gradient holds since
        # its last step, and what became of each call's contributions
        self.bid = 0  # the current backward() call
        self.in_step = 0  # inside an optimizer's step() (a closure's backward())
        self.bid_loc: dict[int, str] = {}
        self.touched: dict[int, set] = {}  # backward id -> params it accumulated into
        self.lost: dict[int, set] = {}  # backward id -> params whose gradient was cleared before a step
        self.used: set[int] = set()  # backward ids a step applied (for some parameter)
        self.pending: dict[int, tuple] = {}  # id(param) -> (grad, version, backward ids) after a backward
        self.carry: dict[int, set] = {}  # id(param) -> backward ids kept by the accumulation under way

    # -- wiring
    def install(self) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        det = self
        Opt = torch.optim.Optimizer
        orig_add = Opt.add_param_group

        def add_param_group(opt, group):
            r = orig_add(opt, group)
            for p in opt.param_groups[-1]["params"]:
                det.watch(opt, p)
            return r

        Opt.add_param_group = add_param_group

        orig_opt_zero = Opt.zero_grad

        def opt_zero_grad(opt, *a, **k):
            det.cleared.add(id(opt))
            for g in opt.param_groups:
                for p in g["params"]:
                    det.clean(id(p))
            return orig_opt_zero(opt, *a, **k)

        opt_zero_grad.__wrapped__ = orig_opt_zero
        Opt.zero_grad = opt_zero_grad

        Mod = torch.nn.Module
        orig_mod_zero = Mod.zero_grad

        def mod_zero_grad(mod, *a, **k):
            for p in mod.parameters():
                det.clean(id(p))
                o = det.owner.get(id(p))
                if o is not None:
                    det.cleared.add(id(o))
            return orig_mod_zero(mod, *a, **k)

        Mod.zero_grad = mod_zero_grad

        orig_backward = torch.autograd.backward

        def backward(*a, **k):
            det.in_backward += 1
            det.backward_loc = user_location()
            det.bid += 1
            det.bid_loc[det.bid] = det.backward_loc
            if det.in_step:
                det.used.add(det.bid)  # a closure that step() evaluates (LBFGS): the step applies it
            try:
                return orig_backward(*a, **k)
            finally:
                det.in_backward -= 1

        torch.autograd.backward = backward
        register_optimizer_step_pre_hook(self.pre_step)
        register_optimizer_step_post_hook(self.post_step)

    def clean(self, pid: int) -> None:
        self.stepped.pop(pid, None)
        self.dirty.pop(pid, None)
        self.dirty_snap.pop(pid, None)

    def watch(self, opt, p) -> None:
        if id(p) in self.owner or not getattr(p, "requires_grad", False):
            return
        self.owner[id(p)] = opt
        self.params[id(p)] = p
        try:
            p.register_hook(self._pre_hook_for(p))
            p.register_post_accumulate_grad_hook(self._post_hook)
        except RuntimeError:
            pass

    @staticmethod
    def _same(g, snap) -> bool:
        return g is not None and g is snap[0] and g._version == snap[1]

    @staticmethod
    def _kept(g, snap) -> bool:
        """The gradient a backward() left (``snap``) is still there: the same tensor,
        unchanged or scaled in place (``clip_grad_norm_`` between backward() and step()),
        not zeroed.  (Without values, the meta device's, any change counts as a clearing.)"""
        if g is None or g is not snap[0]:
            return False
        if g._version == snap[1]:
            return True
        return not g.is_meta and not g.is_sparse and bool(g.any())

    def _pre_hook_for(self, p):
        pid = id(p)

        def hook(grad):
            """Before a backward() accumulates into p."""
            if not self.in_backward:
                return None
            self._check_wiped(p)
            self.touched.setdefault(self.bid, set()).add(pid)
            st = self.stepped.pop(pid, None)
            if st is not None:
                if self._same(p.grad, st):
                    self.dirty[pid] = self.backward_loc  # stale gradient + new one
                else:
                    self.cleared.add(id(self.owner.get(pid)))
            elif pid in self.dirty and not self._kept(p.grad, self.dirty_snap.get(pid, (None, -1))):
                self.clean(pid)  # cleared since the leak
                self.cleared.add(id(self.owner.get(pid)))
            self.accumulated.add(pid)
            return None

        return hook

    @staticmethod
    def _cleared(g, snap) -> bool:
        """The gradient a backward() left (``snap``) is gone: None, another tensor, or all
        zeros (``zero_grad(set_to_none=False)``); scaled in place (clipping) it is not."""
        if g is None or g is not snap[0]:
            return True
        return g._version != snap[1] and not g.is_meta and not g.is_sparse and not bool(g.any())

    def _check_wiped(self, p) -> None:
        """Before ``p`` accumulates again or is stepped: were the backward() calls its
        gradient held cleared before any step applied them?"""
        pid = id(p)
        pend = self.pending.pop(pid, None)
        self.carry[pid] = set()
        if pend is None:
            return
        if not self._cleared(p.grad, pend):
            self.carry[pid] = pend[2]
            return
        for b in pend[2]:
            lost = self.lost.setdefault(b, set())
            lost.add(pid)
            if b not in self.used and lost >= self.touched.get(b, set()):
                report("TM202", "the gradients of this backward() were cleared before any step() applied them:"
                       " zero_grad() runs every micro-batch of a gradient accumulation window", self.bid_loc.get(b, ""))

    def _post_hook(self, p) -> None:
        pid = id(p)
        if p.grad is not None and self.in_backward:
            self.pending[pid] = (p.grad, p.grad._version, self.carry.pop(pid, set()) | {self.bid})
        if pid in self.dirty and p.grad is not None:
            self.dirty_snap[pid] = (p.grad, p.grad._version)

    def _opt_params(self, opt):
        return [p for g in opt.param_groups for p in g["params"] if id(p) in self.owner]

    def pre_step(self, opt, args, kwargs) -> None:
        self.in_step += 1
        ps = self._opt_params(opt)
        for p in ps:
            pid = id(p)
            if pid in self.dirty and self._kept(p.grad, self.dirty_snap.get(pid, (None, -1))):
                loc = self.dirty.pop(pid)
                if (id(opt), loc) not in {(id(o), lc) for o, lc in self.leaks}:
                    self.leaks.append((opt, loc))  # its code is decided at the end of the run
        acc = [p for p in ps if id(p) in self.accumulated]
        if acc and all(p.grad is None or (not p.grad.is_meta and not p.grad.is_sparse and not bool(p.grad.any())) for p in acc):
            report(
                "TM202",
                "step() after the gradients of the last backward() were cleared: zero_grad() sits between backward() and step()",
            )

    def finalize(self) -> None:
        """Report the leaks, now that the whole run tells whether each optimizer's gradients
        were ever cleared (TM202) or never (TM201)."""
        for opt, loc in self.leaks:
            if id(opt) in self.cleared:
                report("TM202", "this step uses gradients left over from the previous step, accumulated by this "
                       "backward(): zero_grad() is called, but not between the previous step and this backward()", loc)
            else:
                report("TM201", "this step uses gradients left over from the previous step, accumulated by this "
                       "backward(): nothing ever clears this optimizer's gradients (no zero_grad())", loc)
        self.leaks.clear()

    def post_step(self, opt, args, kwargs) -> None:
        self.in_step = max(0, self.in_step - 1)
        for p in self._opt_params(opt):
            pid = id(p)
            pend = self.pending.pop(pid, None)
            if pend is not None and not self._cleared(p.grad, pend):
                self.used |= pend[2]
            elif pend is not None:
                self.pending[pid] = pend
                self._check_wiped(p)
                self.carry.pop(pid, None)
            self.accumulated.discard(pid)
            self.dirty.pop(pid, None)
            self.dirty_snap.pop(pid, None)
            if p.grad is not None:
                self.stepped[pid] = (p.grad, p.grad._version)
            else:
                self.stepped.pop(pid, None)


FINALIZERS: list = []  # called by the bootstrap once the script ended (however it ended)


def install_zero_grad() -> ZeroGradDetector:
    d = ZeroGradDetector()
    d.install()
    FINALIZERS.append(d.finalize)
    return d


# ----------------------------------------------------------------------------- softmax
PROB_TOL = 1e-3
NEG_TOL = 1e-6


def classify_ce_input(x) -> str | None:
    """"TM501" (probabilities), "TM502" (log-probabilities) or None (logits / unknown)."""
    import torch

    if not isinstance(x, torch.Tensor) or x.is_meta or x.is_sparse or not x.dtype.is_floating_point:
        return None
    if x.dim() == 0 or x.numel() == 0:
        return None
    dim = 1 if x.dim() >= 2 else 0
    if x.shape[dim] < 2:
        return None
    with torch.no_grad():
        x = x.detach().float()
        if not bool(torch.isfinite(x).all()):
            return None
        if bool((x >= -NEG_TOL).all()) and bool(((x.sum(dim) - 1).abs() <= PROB_TOL).all()):
            return "TM501"
        if bool((x <= NEG_TOL).all()) and bool((torch.logsumexp(x, dim).abs() <= PROB_TOL).all()):
            return "TM502"
    return None


def install_softmax() -> None:
    import torch.nn.functional as F

    orig = F.cross_entropy

    def cross_entropy(input, target, *a, **k):
        code = classify_ce_input(input)
        if code == "TM501":
            report(code, "cross_entropy input rows are probabilities (>= 0, sum to 1): a softmax before the loss, which applies log_softmax itself")
        elif code == "TM502":
            report(code, "cross_entropy input rows are log-probabilities (logsumexp 0): a log_softmax before the loss, which applies it itself")
        return orig(input, target, *a, **k)

    cross_entropy.__wrapped__ = orig
    cross_entropy.__doc__ = orig.__doc__
    F.cross_entropy = cross_entropy
