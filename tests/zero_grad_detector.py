"""A small runtime detector for the zero_grad pitfall, used to prove the corpus.

It hooks every optimizer step (torch's global step hooks) and the gradient hooks of the
stepped parameters:

- a step uses gradients that include leftovers from before the previous step of the same
  optimizer (a backward accumulated onto gradients that survived a step): ``TM201`` when
  no ``zero_grad()`` (of an optimizer or a module) ever covered those parameters, else
  ``TM202`` (the clearing exists but is misplaced);
- ``TM202``: a step (without closure) finds every gradient of its parameters None or zero.

Several backward calls before one step are fine; so are gradients that another
optimizer's backward adds, as long as they are cleared before this optimizer steps.
"""

from __future__ import annotations

import contextlib
import io
import runpy


def run_script(path: str) -> set[str]:
    import torch
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    flags: set[str] = set()
    state: dict[int, dict] = {}
    covered: set[int] = set()  # ids of parameters some zero_grad() call has covered

    orig_opt_zero, orig_mod_zero = torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad

    def opt_zero(self, *a, **k):
        covered.update(id(p) for group in self.param_groups for p in group["params"])
        return orig_opt_zero(self, *a, **k)

    def mod_zero(self, *a, **k):
        covered.update(id(p) for p in self.parameters())
        return orig_mod_zero(self, *a, **k)

    def on_grad(p):
        st = state[id(p)]
        g = p.grad
        if g is None or not bool(g.any()):
            st["dirty"] = False
        elif st["stale"] is not None and st["stale"][0] is g and st["stale"][1] == g._version:
            st["dirty"] = True
        st["stale"] = None

    def params(opt):
        return [p for group in opt.param_groups for p in group["params"]]

    def pre(opt, args, kwargs):
        ps = params(opt)
        dirty = [p for p in ps if state.get(id(p), {}).get("dirty")]
        if dirty:
            flags.add("TM202" if any(id(p) in covered for p in dirty) else "TM201")
        closure = args[1] if len(args) > 1 else kwargs.get("closure")  # args[0] is the optimizer
        if closure is None and all(p.grad is None or not bool(p.grad.any()) for p in ps):
            flags.add("TM202")

    def post(opt, args, kwargs):
        for p in params(opt):
            st = state.get(id(p))
            if st is None:
                st = state[id(p)] = {"dirty": False, "stale": None, "p": p}
                p.register_hook(lambda grad, p=p: on_grad(p))
            g = p.grad
            st["dirty"] = False
            st["stale"] = (g, g._version) if g is not None and bool(g.any()) else None

    h1 = register_optimizer_step_pre_hook(pre)
    h2 = register_optimizer_step_post_hook(post)
    torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad = opt_zero, mod_zero
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
    finally:
        h1.remove()
        h2.remove()
        torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad = orig_opt_zero, orig_mod_zero
    return flags


if __name__ == "__main__":
    import sys

    for f in sys.argv[1:]:
        print(f, sorted(run_script(f)))
