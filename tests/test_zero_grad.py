"""TM201 (missing zero_grad) and TM202 (misplaced zero_grad): one test per variant class,
and the look-alikes that must produce no finding at all."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch

HEAD = "import torch\nfrom torch import nn\n"


def run(src: str, unsafe: bool = False, head: str = HEAD):
    src = head + textwrap.dedent(src)
    r = process_text("t.py", src, Options(unsafe_fixes=unsafe))
    assert r.error is None, r.error
    out = apply_patch(src.encode(), r.diff).decode() if r.changed else src
    if r.changed:  # the fix is a fixpoint
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe))
        assert not again.changed, again.diff.decode()
    return r, out


def codes(r):
    return sorted(f.code for f in r.findings)


def body(out: str) -> str:
    return out.split("\n", 2)[2] if out.startswith(HEAD) else out


# --------------------------------------------------------------------------- TM201


BASIC = """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        # forward
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
"""


def test_missing_inserts_zero_grad_first_in_innermost_loop():
    r, out = run(BASIC)
    assert codes(r) == ["TM201"]
    f = r.findings[0]
    assert "`opt.step()`" in f.message and f.line == 11 and f.fix.safety.value == "safe"
    assert body(out) == textwrap.dedent(BASIC).replace(
        "    for x, y in loader:\n", "    for x, y in loader:\n        opt.zero_grad()\n"
    )


UNCALLED = """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    {before}
    loss.backward()
    opt.step()
    {after}
"""


@pytest.mark.parametrize(
    "before,after,fixed",
    [
        ("opt.zero_grad", "pass", "opt.zero_grad()"),  # the call's parentheses forgotten
        ("model.zero_grad  # clear", "pass", "model.zero_grad()  # clear"),  # the stepped model's
        ("pass", "opt.zero_grad", "opt.zero_grad()"),  # after the step: as good
    ],
)
def test_uncalled_zero_grad_is_called_where_it_stands(before, after, fixed):
    src = UNCALLED.format(before=before, after=after)
    r, out = run(src)
    assert codes(r) == ["TM201"]
    f = r.findings[0]
    bare = fixed.split("(")[0]
    assert f"`{bare}` at line" in f.message and "never called" in f.message and f.fix.safety.value == "safe"
    assert body(out) == textwrap.dedent(src).replace(fixed.replace("()", ""), fixed)


def test_uncalled_zero_grad_between_backward_and_step_is_not_called_there():
    # calling it there would clear the gradients before the step: the usual insertion instead
    r, out = run(UNCALLED.format(before="loss = loss * 1", after="pass").replace(
        "    opt.step()\n", "    opt.zero_grad\n    opt.step()\n"))
    assert codes(r) == ["TM201"] and "never called" not in r.findings[0].message
    assert "for x, y in loader:\n    opt.zero_grad()\n" in out and "    opt.zero_grad\n    opt.step()" in out


def test_uncalled_zero_grad_of_another_object_is_not_called():
    r, out = run(UNCALLED.format(before="other.zero_grad", after="pass"))
    assert codes(r) == ["TM201"] and "never called" not in r.findings[0].message
    assert "other.zero_grad\n" in out and "other.zero_grad()" not in out


@pytest.mark.parametrize(
    "imp,ctor",
    [
        ("import torch.optim as optim", "optim.Adam"),
        ("from torch import optim", "optim.AdamW"),
        ("from torch.optim import SGD as Plain", "Plain"),
        ("import torch", "torch.optim.RMSprop"),
        ("from torch.optim.adam import Adam", "Adam"),
    ],
)
def test_optimizer_resolved_by_qualified_name(imp, ctor):
    src = f"""
    {imp}
    model = nn.Linear(3, 1)
    o = {ctor}(model.parameters())
    for x in data:
        model(x).sum().backward()
        o.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"]
    assert "    o.zero_grad()\n    model(x).sum().backward()" in out


def test_user_class_named_like_an_optimizer_is_not_provable():
    src = """
    class SGD:
        def __init__(self, params): self.params = list(params)
        def step(self): pass
        def zero_grad(self): pass
    model = nn.Linear(3, 1)
    o = SGD(model.parameters())
    for x in data:
        model(x).sum().backward()
        o.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and not r.changed  # unsafe only
    assert "not provably a torch.optim optimizer" in r.findings[0].message
    r2, out2 = run(src, unsafe=True)
    assert "    o.zero_grad()\n    model(x).sum().backward()" in out2
    # without a ``zero_grad`` of its own, ``o.zero_grad()`` would raise AttributeError: no fix
    r3, _ = run(src.replace("        def zero_grad(self): pass\n", ""), unsafe=True)
    assert codes(r3) == ["TM201"] and not r3.changed
    assert "`o` is an instance of `SGD`, which defines no `zero_grad()`" in r3.findings[0].message


def test_optimizer_parameter_is_safe():
    src = """
    def train(model, loader, optimizer, loss_fn):
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"]
    assert "        optimizer.zero_grad()\n        loss = loss_fn" in out


def test_module_level_optimizer_used_in_function():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    def train(loader):
        for xb in loader:
            model(xb).sum().backward()
            optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and "optimizer.zero_grad()\n" in out


def test_self_optimizer_bound_in_init():
    src = """
    class Trainer:
        def __init__(self, model, opt=None):
            self.model = model
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            self.other = opt

        def fit(self, loader):
            for x, y in loader:
                loss = (self.model(x) - y).pow(2).mean()
                loss.backward()
                self.optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"]
    assert "            self.optimizer.zero_grad()\n            loss = " in out


def test_self_optimizer_from_constructor_parameter_is_safe():
    src = """
    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer

        def fit(self, loader):
            for x in loader:
                self.model(x).sum().backward()
                self.optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and r.changed


def test_scaler_step_zeroes_its_argument():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cpu")
    for x in data:
        scaler.scale(model(x).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and "`scaler.step(optimizer)`" in r.findings[0].message
    assert "    optimizer.zero_grad()\n    scaler.scale" in out


def test_unknown_optimizer_gets_an_unsafe_fix_only():
    src = """
    model = nn.Linear(3, 1)
    optimizer = build_optimizer(model)
    for x in data:
        model(x).sum().backward()
        optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and not r.changed
    assert r.suggestions, "the unsafe fix is shown as a suggestion"
    r2, out2 = run(src, unsafe=True)
    assert "    optimizer.zero_grad()\n    model(x)" in out2


def test_schedulers_are_not_optimizers():
    src = """
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    warm = get_linear_schedule_with_warmup(opt, 1, 10)
    for x in data:
        model(x).sum().backward()
        opt.step()
        sched.step()
        warm.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"]
    assert out.count("zero_grad") == 1 and "    opt.zero_grad()\n" in out


def test_two_optimizers_one_missing_inserted_before_its_backward():
    src = """
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    for real in data:
        fake = G(real)
        d_real = D(real).mean()
        d_real.backward()
        d_fake = D(fake.detach()).mean()
        d_fake.backward()
        opt_D.step()
        opt_G.zero_grad()
        D(fake).mean().backward()
        opt_G.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and "`opt_D.step()`" in r.findings[0].message
    # before the first backward of the run that feeds opt_D.step(): both backward calls count
    assert "d_real = D(real).mean()\n    opt_D.zero_grad()\n    d_real.backward()" in out
    assert out.count("opt_D.zero_grad()") == 1


def test_two_optimizers_sharing_one_backward():
    src = """
    enc, dec = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_e = torch.optim.SGD(enc.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(dec.parameters(), lr=0.1)
    for x in data:
        loss = dec(enc(x)).sum()
        loss.backward()
        opt_e.step()
        opt_d.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201", "TM201"]
    assert "opt_e.zero_grad()\n    opt_d.zero_grad()\n    loss.backward()" in out or (
        "opt_d.zero_grad()\n    opt_e.zero_grad()\n    loss.backward()" in out
    )


def test_two_optimizers_with_control_flow_is_report_only():
    src = """
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    for real in data:
        d_loss = D(real).mean()
        d_loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)
        opt_D.step()
        opt_G.zero_grad()
        D(G(real)).mean().backward()
        opt_G.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM201"] and not r.changed
    assert r.findings[0].fix is None
    assert "not fixed" in r.findings[0].message


def test_conditional_step_without_any_zero_is_report_only():
    src = """
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(data):
        (model(x).sum() / 4).backward()
        if (i + 1) % 4 == 0:
            opt.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM201"] and not r.changed
    assert "every few iterations" in r.findings[0].message


# --------------------------------------------------------------------------- TM202


def test_epoch_level_zero_is_moved_with_its_arguments():
    src = """
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        opt.zero_grad(set_to_none=False)  # once
        for x in data:
            model(x).sum().backward()
            opt.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM202"]
    assert "outer loop" in r.findings[0].message
    assert body(out).endswith(
        "for epoch in range(3):\n    for x in data:\n        opt.zero_grad(set_to_none=False)  # once\n"
        "        model(x).sum().backward()\n        opt.step()\n"
    )


def test_epoch_level_model_zero_after_inner_loop():
    src = """
    net = nn.Linear(3, 1)
    opt = torch.optim.Adam(net.parameters())
    for epoch in range(3):
        for x in data:
            net(x).sum().backward()
            opt.step()
        net.zero_grad()
        print(epoch)
    """
    r, out = run(src)
    assert codes(r) == ["TM202"]
    assert "    for x in data:\n        net.zero_grad()\n        net(x)" in out
    assert "opt.step()\n    print(epoch)" in out


def test_epoch_level_zero_with_two_stepping_loops_is_report_only():
    src = """
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        opt.zero_grad()
        for x in data:
            model(x).sum().backward()
            opt.step()
        for x in extra:
            model(x).sum().backward()
            opt.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"] and r.findings[0].fix is None
    assert not r.changed


def test_zero_between_backward_and_step_moves_before_the_backward_run():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    for x in data:
        out = model(x)
        out.sum().backward()
        out.mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.zero_grad(set_to_none=True)
        optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM202"] and "between backward()" in r.findings[0].message
    assert (
        "    out = model(x)\n    optimizer.zero_grad(set_to_none=True)\n    out.sum().backward()\n"
        "    out.mean().backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    optimizer.step()\n"
    ) in out


def test_model_zero_between_backward_and_step():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    loss = model(x).sum()
    loss.backward()
    model.zero_grad()
    optimizer.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM202"]
    assert "model.zero_grad()\nloss.backward()\noptimizer.step()\n" in out


def test_zero_between_with_control_flow_is_report_only():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters())
    for x in data:
        model(x).sum().backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.zero_grad()
        optimizer.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"] and not r.changed


# --------------------------------------------------------------------------- look-alikes

LOOKALIKES = {
    "accumulation": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        opt.zero_grad()
        for i, x in enumerate(data):
            (model(x).sum() / 4).backward()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
    """,
    "accumulation_epoch_zero": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.zero_grad()
            for i, x in enumerate(data):
                model(x).sum().backward()
                if (i + 1) % 4 == 0:
                    opt.step()
                    opt.zero_grad()
    """,
    "accelerate_accumulate": """
        model, opt, data = accelerator.prepare(nn.Linear(3, 1), opt, data)
        for x in data:
            with accelerator.accumulate(model):
                accelerator.backward(model(x).sum())
                opt.step()
    """,
    "model_zero_grad": """
        net = nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x in data:
            net.zero_grad()
            net(x).sum().backward()
            opt.step()
    """,
    "zero_after_step_set_to_none": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    """,
    "zero_right_before_backward": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """,
    "grad_none": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            for p in model.parameters():
                p.grad = None
            model(x).sum().backward()
            opt.step()
    """,
    "grad_zero_inplace": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            for p in model.parameters():
                p.grad.data.zero_()
    """,
    "zero_gradients_helper": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            zero_gradients([opt])
            model(x).sum().backward()
            opt.step()
    """,
    "lbfgs_closure": """
        model = nn.Linear(3, 1)
        optimizer = torch.optim.LBFGS(model.parameters())
        for epoch in range(3):
            def closure():
                optimizer.zero_grad()
                loss = model(x).sum()
                loss.backward()
                return loss
            optimizer.step(closure)
    """,
    "gan_both_zeroed": """
        G, D = nn.Linear(2, 2), nn.Linear(2, 1)
        opt_G = torch.optim.Adam(G.parameters())
        opt_D = torch.optim.Adam(D.parameters())
        for real in data:
            opt_D.zero_grad()
            D(real).mean().backward()
            D(G(real).detach()).mean().backward()
            opt_D.step()
            opt_G.zero_grad()
            D(G(real)).mean().backward()
            opt_G.step()
    """,
    "several_backward_one_step": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            opt.zero_grad()
            model(x).sum().backward()
            model(x).mean().backward()
            opt.step()
    """,
    "lightning_training_step": """
        import pytorch_lightning as pl
        class Lit(pl.LightningModule):
            def training_step(self, batch, idx):
                opt = self.optimizers()
                for chunk in batch:
                    self(chunk).sum().backward()
                    opt.step()
    """,
    "deepspeed_engine": """
        engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
        for x in data:
            loss = engine(x).sum()
            engine.backward(loss)
            engine.step()
    """,
    "autograd_grad": """
        w = torch.randn(3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for x in data:
            (g,) = torch.autograd.grad((x * w).sum(), w)
            with torch.no_grad():
                w -= 0.1 * g
    """,
    "unknown_call_receives_optimizer": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            hooks.after_step(opt)
    """,
    "unknown_call_receives_model": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            reset_model(model)
    """,
    "unknown_method_on_optimizer": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            opt.clear_grads()
    """,
    "zero_nested_in_if": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            if model.training:
                opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    """,
    "zero_in_try": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            try:
                opt.zero_grad()
            except RuntimeError:
                pass
            model(x).sum().backward()
            opt.step()
    """,
    "helper_in_file_zeroes": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def reset():
            opt.zero_grad()
        for x in data:
            reset()
            model(x).sum().backward()
            opt.step()
    """,
    "self_method_may_zero": """
        class Agent:
            def __init__(self, net):
                self.net = net
                self.opt = torch.optim.Adam(net.parameters())
            def clear(self):
                self.opt.zero_grad()
            def learn(self, batches):
                for b in batches:
                    self.clear()
                    self.net(b).sum().backward()
                    self.opt.step()
    """,
    "self_method_two_levels_down_zeroes": """
        class Agent:
            def __init__(self, net):
                self.net = net
                self.opt = torch.optim.Adam(net.parameters())
            def _reset(self):
                self.opt.zero_grad()
            def after_step(self):
                self._reset()
            def learn(self, batches):
                for b in batches:
                    self.net(b).sum().backward()
                    self.opt.step()
                    self.after_step()
    """,
    "self_method_passes_optimizer_to_unknown_code": """
        class Agent:
            def __init__(self, net):
                self.net = net
                self.opt = torch.optim.Adam(net.parameters())
            def after_step(self):
                callbacks.run(self.opt)
            def learn(self, batches):
                for b in batches:
                    self.net(b).sum().backward()
                    self.opt.step()
                    self.after_step()
    """,
    "library_method_on_model_named_like_a_reset": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            model.reset_grads()
    """,
    "step_in_helper": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def update(loss):
            opt.zero_grad()
            loss.backward()
            opt.step()
        for x in data:
            update(model(x).sum())
    """,
    "eval_loop_no_backward": """
        model = nn.Linear(3, 1)
        with torch.no_grad():
            for x in data:
                model(x)
    """,
    "optimizer_step_in_nested_loop_over_optimizers": """
        for x in data:
            loss = model(x).sum()
            loss.backward()
            for o in optimizers:
                o.step()
                o.zero_grad()
    """,
    "zero_grad_in_epoch_and_batch": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.zero_grad()
            for x in data:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
    """,
    "zero_then_step_then_other_backward": """
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
            scheduler.step()
    """,
    "torch_zeros_is_not_clearing_but_model_zero_is": """
        from torch import zeros
        net = nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x in data:
            h = zeros(3)
            net(x + h).sum().backward()
            opt.step()
            net.zero_grad(set_to_none=True)
    """,
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_lookalike_is_silent_and_untouched(name):
    r, out = run(LOOKALIKES[name], unsafe=True)
    assert r.findings == [], [f.format() for f in r.findings]
    assert not r.changed


def test_torch_zeros_alone_does_not_hide_a_missing_zero_grad():
    src = """
    from torch import zeros
    net = nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in data:
        net(x + zeros(3)).sum().backward()
        opt.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"]


def test_other_network_zero_grad_does_not_clear_this_optimizer():
    # 2.9-ish: netG.zero_grad() does not clear opt_D's parameters (netD)
    src = """
    netG, netD = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_G = torch.optim.Adam(netG.parameters())
    opt_D = torch.optim.Adam(netD.parameters())
    for real in data:
        netD(real).mean().backward()
        opt_D.step()
        netG.zero_grad()
        netD(netG(real)).mean().backward()
        opt_G.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and "`opt_D.step()`" in r.findings[0].message
    assert "    opt_D.zero_grad()\n    netD(real).mean().backward()\n    opt_D.step()" in out


def test_rule_documentation_follows_ruff_layout():
    from torchmend.rules.tm201_missing_zero_grad import MissingZeroGrad
    from torchmend.rules.tm202_misplaced_zero_grad import MisplacedZeroGrad

    for rule in (MissingZeroGrad, MisplacedZeroGrad):
        doc = rule.doc()
        for part in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert part in doc


def test_helpers_whose_bodies_do_not_clear_do_not_hide_the_bug():
    src = """
    class Agent:
        def __init__(self, policy):
            self.policy = policy
            self.optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)

        def log_stats(self, loss):
            print(loss)

        def learn(self, states):
            for _ in range(4):
                loss = self.policy(states).mean()
                loss.backward()
                self.optimizer.step()
                self.log_stats(loss.item())

    def report(value):
        print(value)

    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        feats = model.backbone(x)
        feats.sum().backward()
        opt.step()
        report(feats.mean().item())
    """
    r, out = run(src)
    assert codes(r) == ["TM201", "TM201"]
    assert "            self.optimizer.zero_grad()\n            loss = self.policy" in out
    assert "    opt.zero_grad()\n    feats = model.backbone(x)" in out


def test_several_unknown_steppers_are_reported_once_without_fix():
    src = """
    model = nn.Linear(3, 1)
    optimizer, ema = make_training(model)
    for x in data:
        model(x).sum().backward()
        optimizer.step()
        ema.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM201"] and not r.changed
    assert "`ema`, `optimizer`" in r.findings[0].message and r.findings[0].fix is None


def test_another_optimizers_zero_grad_in_the_outer_loop_is_not_moved():
    # WGAN critic loop: opt_G is zeroed per epoch, the critic's opt_D never is
    src = """
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_G = torch.optim.RMSprop(G.parameters())
    opt_D = torch.optim.RMSprop(D.parameters())
    for epoch in range(3):
        opt_G.zero_grad()
        for _ in range(5):
            D(real).mean().backward()
            opt_D.step()
        D(G(z)).mean().backward()
        opt_G.step()
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and "`opt_D.step()`" in r.findings[0].message
    assert "        opt_D.zero_grad()\n        D(real).mean().backward()" in out
    assert "    opt_G.zero_grad()\n    for _ in range(5):" in out


def test_an_alias_zeroed_in_the_outer_loop_is_reported_not_moved():
    src = """
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    o = opt
    for epoch in range(3):
        o.zero_grad()
        for x in data:
            model(x).sum().backward()
            opt.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"] and not r.changed


def test_stdlib_calls_receiving_the_model_do_not_hide_the_bug():
    src = """
    import copy
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        model(x).sum().backward()
        opt.step()
        best = copy.deepcopy(model)
        print(model, isinstance(model, nn.Module))
    """
    r, out = run(src)
    assert codes(r) == ["TM201"] and r.changed


def test_two_optimizers_with_backward_in_a_block_before_the_run_is_report_only():
    src = """
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    for real in data:
        for chunk in real.split(2):
            D(chunk).mean().backward()
        D(G(real).detach()).mean().backward()
        opt_D.step()
        opt_G.zero_grad()
        D(G(real)).mean().backward()
        opt_G.step()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM201"] and not r.changed
    assert "under control flow" in r.findings[0].message


def test_zero_between_with_an_unknown_call_before_the_step_is_left_alone():
    src = """
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        model(x).sum().backward()
        optimizer.zero_grad()
        recompute_gradients(model, x)
        optimizer.step()
    """
    r, out = run(src, unsafe=True)
    assert r.findings == [] and not r.changed


# (IDEA-Research/DAB-DETR engine.py: ``if args.amp: optimizer.zero_grad(); scaler...
# scaler.step(optimizer) else: losses.backward(); optimizer.step()``: without AMP the
# gradients are never cleared)
BRANCHES = """\
import torch
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    if {test}:
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
{other}"""


@pytest.mark.parametrize(
    "test, other, reported",
    [("args.amp", "        loss.backward()\n        optimizer.step()\n", True),
     # both branches clear
     ("args.amp", "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n", False),
     # a test that changes between iterations: the other branch may clear between two steps
     ("i % 2 == 0", "        loss.backward()\n        optimizer.step()\n", False),
     ("i == 0", "        loss.backward()\n        optimizer.step()\n", False),  # (a name the loop binds)
     # something unknown on the step's path gets the optimizer
     ("args.amp", "        loss.backward()\n        clip_and_step(optimizer)\n", False)],
)
def test_a_step_on_a_branch_that_never_clears(test, other, reported):
    r = process_text("t.py", BRANCHES.format(test=test, other=other), Options(select=frozenset({"TM201", "TM202"})))
    assert r.error is None, r.error
    got = [f for f in r.findings if f.code == "TM201"]
    assert len(got) == (1 if reported else 0), [f.message for f in r.findings]
    if reported:
        assert got[0].fix is None and "on its branch" in got[0].message and got[0].line == 13


# (GodWriter/GAN-Pytorch unit/train.py: ``optimizer_G`` steps every batch, and the only
# call that may clear its gradients, ``save_sample(..., E1, E2, G1, G2, ...)`` of a module
# the tree lacks, runs every ``opt.sample_interval`` batches)
WINDOWED = """\
import torch
from utils import save_sample
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for i, (x, y) in enumerate(loader):
        batches_done = epoch * len(loader) + i
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
{window}"""


@pytest.mark.parametrize("window, reported", [
    ("        if i % 100 == 0:\n            optimizer.zero_grad()\n", "its gradients are cleared only under `if i % 100 == 0:`"),
    ("        if batches_done % 50 == 0:\n            save_sample(loader, model)\n",
     "nothing but `save_sample(...)` may clear its gradients, and only under `if batches_done % 50 == 0:`"),
    # look-alikes: something clears on every iteration too; a test that is no window of the
    # loop counter; an else branch; the step also runs only in the window (accumulation)
    ("        if i % 100 == 0:\n            save_sample(loader, model)\n        optimizer.zero_grad()\n", None),
    ("        if args.sample:\n            optimizer.zero_grad()\n", None),
    ("        if i % 100 == 0:\n            optimizer.zero_grad()\n        else:\n            print(i)\n", None),
    # (review) a modulus that may be 1 (a name bound to 1, a parameter defaulting to it): the
    # window may open every time; a counter offset by a batch's value is no counter
    ("        if i % k == 0:\n            optimizer.zero_grad()\n", None),
    ("        n = y.sum() + i\n        if n % 2 == 0:\n            optimizer.zero_grad()\n", None),
])
def test_gradients_cleared_only_once_every_few_iterations(window, reported):
    r = process_text("t.py", "k = 1\n" + WINDOWED.format(window=window), Options(select=frozenset({"TM201", "TM202"})))
    assert r.error is None, r.error
    got = [f for f in r.findings if f.code == "TM201"]
    assert len(got) == (1 if reported else 0), [f.message for f in r.findings]
    if reported:
        assert got[0].fix is None and got[0].line == 11 and reported in got[0].message, got[0].message


@pytest.mark.parametrize("loop, found", [
    ("for i in range(0, len(X), bs):", False),  # (review) ``i % bs == 0`` holds every time
    ("for i in range(len(X)):", True),
])
def test_a_window_over_a_stepped_range(loop, found):
    src = (f"import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           f"def train(X, Y, bs=8):\n    {loop}\n        if i % bs == 0:\n            opt.zero_grad()\n"
           "        loss = ((model(X[i:i + bs]) - Y[i:i + bs]) ** 2).mean()\n        loss.backward()\n        opt.step()\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM201"})))
    assert len(r.findings) == int(found), [f.message for f in r.findings]


def test_a_window_of_an_attribute_counter():
    """(review) ``self.global_step += 1`` counts the iterations too (a trainer class)."""
    src = ("import torch\n\n\nclass T:\n    def __init__(self, model):\n        self.model = model\n"
           "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)\n        self.global_step = 0\n\n"
           "    def fit(self, loader):\n        for x, y in loader:\n            self.global_step += 1\n"
           "            if self.global_step % 100 == 0:\n                self.opt.zero_grad()\n"
           "            loss = ((self.model(x) - y) ** 2).mean()\n            loss.backward()\n            self.opt.step()\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM201"})))
    assert [f.line for f in r.findings] == [17] and "if self.global_step % 100 == 0:" in r.findings[0].message


def test_an_accumulation_window_that_steps_is_not_a_cleared_window():
    src = WINDOWED.format(window="").replace(
        "        optimizer.step()\n", "        if (i + 1) % 4 == 0:\n            optimizer.step()\n            optimizer.zero_grad()\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM201", "TM202"})))
    assert not any("once every few iterations" in f.message for f in r.findings)


def test_a_branch_whose_other_branch_clears_by_assignment():
    """``p.grad = None`` in the AMP branch (an assignment, not a call) is named as it is written."""
    src = BRANCHES.format(test="args.amp", other="        loss.backward()\n        optimizer.step()\n").replace(
        "        optimizer.zero_grad()\n", "        for p in model.parameters():\n            p.grad = None\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM201"})))
    assert r.error is None, r.error
    assert [f.code for f in r.findings] == ["TM201"] and "the `p.grad = None` at line 8" in r.findings[0].message


# --------------------------------------------------------------------------- accumulation wiped (TM202)

WIPED = """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    # fresh gradients
    opt.zero_grad(set_to_none=True)
    loss = ((model(x) - y) ** 2).mean() / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
"""


def test_accumulation_wiped_is_reported_with_an_unsafe_move():
    r, out = run(WIPED)
    assert codes(r) == ["TM202"]
    f = r.findings[0]
    assert "`opt.zero_grad(set_to_none=True)`" in f.message and "last micro-batch" in f.message
    assert f.fix.safety.value == "unsafe" and out == HEAD + textwrap.dedent(WIPED)
    r, out = run(WIPED, unsafe=True)
    assert body(out) == textwrap.dedent(WIPED).replace(
        "    # fresh gradients\n    opt.zero_grad(set_to_none=True)\n", ""
    ).replace("        opt.step()\n", "        opt.step()\n        # fresh gradients\n        opt.zero_grad(set_to_none=True)\n")


def test_accumulation_wiped_with_a_scaler_goes_after_update():
    src = """
    opt = build_optimizer(model)
    scaler = make_scaler()
    step = 0
    for x, y in loader:
        opt.zero_grad()
        if scaler:
            scaler.scale(loss_fn(model(x), y) / k).backward()
        else:
            (loss_fn(model(x), y) / k).backward()
        if step % k == 0:
            scaler.step(opt)
            scaler.update()
            sched.step()
        step += 1
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"]
    assert "        scaler.update()\n        opt.zero_grad()\n        sched.step()\n" in out
    assert "for x, y in loader:\n    if scaler:" in out


def test_accumulation_wiped_with_unscale_every_micro_batch_is_report_only():
    src = WIPED.replace("    loss.backward()\n", "    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n").replace(
        "        opt.step()\n", "        scaler.step(opt)\n        scaler.update()\n")
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"] and r.findings[0].fix is None and "unscale_" in r.findings[0].message
    assert not r.changed


@pytest.mark.parametrize(
    "change",
    [
        # the zero_grad() under the window's own condition
        ("    opt.zero_grad(set_to_none=True)\n", "    if i % accum == 0:\n        opt.zero_grad(set_to_none=True)\n"),
        # not a window: the step is skipped on a non-finite loss / an unknown condition
        ("    if (i + 1) % accum == 0:\n", "    if torch.isfinite(loss):\n"),
        ("    if (i + 1) % accum == 0:\n", "    if should_step(i):\n"),
        # `% 1`: every iteration
        ("    if (i + 1) % accum == 0:\n", "    if (i + 1) % 1 == 0:\n"),
        # the modulus of something that is not a counter of the loop
        ("    if (i + 1) % accum == 0:\n", "    if epoch % accum == 0:\n"),
        # another optimizer's zero_grad()
        ("    opt.zero_grad(set_to_none=True)\n", "    other.zero_grad(set_to_none=True)\n"),
        # the backward runs in the window too
        ("        opt.step()\n", "        extra.backward()\n        opt.step()\n        opt.zero_grad()\n"),
        # an unknown call between the zero_grad() and the step may restore the gradients
        ("    loss.backward()\n", "    loss.backward()\n    restore_grads(opt)\n"),
    ],
)
def test_accumulation_wiped_look_alikes(change):
    r, _ = run(WIPED.replace(*change))
    assert "TM202" not in codes(r), r.findings


def test_accumulation_wiped_while_the_window_also_clears_after_its_step():
    """(ZiqiaoPeng/DualTalk#9) ``zero_grad()`` before every backward and again after the
    windowed step: the first one wipes the window; the fix drops it."""
    src = WIPED.replace("        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n")
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"] and "drop this call" in r.findings[0].message
    assert body(out) == textwrap.dedent(src).replace("    # fresh gradients\n    opt.zero_grad(set_to_none=True)\n", "")
    # a clearing in the window before the step is no such window
    other = WIPED.replace("        opt.step()\n", "        opt.zero_grad()\n        opt.step()\n")
    assert "TM202" not in [f.code for f in run(other)[0].findings if "micro-batch" in f.message]


# (tatsu-lab/alpaca_farm before #58, in a plain loop) the zero_grad() at the end of the
# body, after the window: it runs before the next iteration's backward all the same
WIPED_AT_END = WIPED.replace("    # fresh gradients\n    opt.zero_grad(set_to_none=True)\n", "") + \
    "    model.zero_grad(set_to_none=True)  # fresh gradients\n"


def test_accumulation_wiped_by_a_zero_grad_at_the_end_of_the_body():
    r, out = run(WIPED_AT_END)
    assert codes(r) == ["TM202"] and "last micro-batch" in r.findings[0].message
    assert r.findings[0].line == HEAD.count("\n") + WIPED_AT_END.count("\n")
    r, out = run(WIPED_AT_END, unsafe=True)
    assert body(out) == textwrap.dedent(WIPED_AT_END).replace("    model.zero_grad(set_to_none=True)  # fresh gradients\n", "").replace(
        "        opt.step()\n", "        opt.step()\n        model.zero_grad(set_to_none=True)  # fresh gradients\n")


@pytest.mark.parametrize("change", [
    # the iterations that do not step leave before it: it runs only after a step
    ("        opt.step()\n", "        opt.step()\n    else:\n        continue\n"),
    ("    loss.backward()\n", "    loss.backward()\n    if (i + 1) % accum:\n        continue\n"),
    # cleared under the window's own condition, in an ``if`` of its own after it
    ("    model.zero_grad(", "    if (i + 1) % accum == 0:\n        model.zero_grad("),
])
def test_a_zero_grad_at_the_end_of_the_body_look_alikes(change):
    r, _ = run(WIPED_AT_END.replace(*change))
    assert "micro-batch" not in " ".join(f.message for f in r.findings), r.findings


@pytest.mark.parametrize("at_end", [True, False])
def test_a_models_zero_grad_that_also_clears_another_optimizer_stepping_every_iteration(at_end):
    """(review) ``model.zero_grad()`` clears ``opt_main``'s parameters too, and it steps
    every iteration: moving the call into ``opt_emb``'s window would hand ``opt_main``
    gradients summed over the window."""
    zero = "    model.zero_grad()\n"
    src = ("model = nn.Sequential(nn.Embedding(10, 3), nn.Linear(3, 1))\n"
           "opt_main = torch.optim.SGD(model[1].parameters(), lr=0.1)\n"
           "opt_emb = torch.optim.SGD(model[0].parameters(), lr=0.1)\n"
           "for i, (x, y) in enumerate(loader):\n" + ("" if at_end else zero)
           + "    loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n    opt_main.step()\n"
           "    if (i + 1) % 10 == 0:\n        opt_emb.step()\n" + (zero if at_end else ""))
    r, _ = run(src, unsafe=True)
    assert "micro-batch" not in " ".join(f.message for f in r.findings) and not r.changed, r.findings


def test_correct_accumulation_is_silent():
    src = WIPED.replace("    # fresh gradients\n    opt.zero_grad(set_to_none=True)\n", "").replace(
        "        opt.step()\n", "        opt.step()\n        model.zero_grad()\n")
    r, _ = run(src)
    assert codes(r) == []


def test_lightning_accumulation_is_skipped():
    src = """
    import lightning as L
    class M(L.LightningModule):
        def fit_loop(self, loader, opt):
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                self.manual_backward(self(x).sum())
                loss = self(x).sum()
                loss.backward()
                if (i + 1) % 4 == 0:
                    opt.step()
    """
    r, _ = run(src)
    assert codes(r) == []


# --------------------------------------------------------------------------- a call between backward and step

HELPER = """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, batch in enumerate(loader):
    if len(batch) == n:
        loss = model(batch).sum()
        loss.backward()
        utils.clip_gradient(opt, 0.5)
        opt.step()
"""


def test_unknown_call_between_backward_and_step_does_not_count_as_clearing():
    r, out = run(HELPER)
    assert codes(r) == ["TM201"] and r.findings[0].fix.safety.value == "safe"
    assert body(out) == textwrap.dedent(HELPER).replace(
        "        loss.backward()\n", "        opt.zero_grad()\n        loss.backward()\n")


@pytest.mark.parametrize(
    "change",
    [
        # before the backward: it may clear
        ("        loss.backward()\n        utils.clip_gradient(opt, 0.5)\n",
         "        utils.clip_gradient(opt, 0.5)\n        loss.backward()\n"),
        # after the step: it may clear
        ("        opt.step()\n", "        opt.step()\n        utils.reset(opt)\n"),
        # in another block than the step's
        ("        utils.clip_gradient(opt, 0.5)\n        opt.step()\n",
         "        utils.clip_gradient(opt, 0.5)\n    opt.step()\n"),
        # a second backward after it (a helper that refills the gradients)
        ("        opt.step()\n", "        model(batch).sum().backward()\n        opt.step()\n"),
    ],
)
def test_unknown_calls_elsewhere_still_count_as_clearing(change):
    r, _ = run(HELPER.replace(*change))
    assert codes(r) == [], r.findings


def test_unknown_call_between_backward_and_step_in_plain_loop():
    src = HELPER.replace("    if len(batch) == n:\n", "").replace("        ", "    ")
    r, out = run(src)
    assert codes(r) == ["TM201"]
    assert "for i, batch in enumerate(loader):\n    opt.zero_grad()\n" in out


# --------------------------------------------------------------------------- one optimizer stepped twice per iteration

TWICE = """
G, D = nn.Linear(3, 3), nn.Linear(3, 1)
optG = torch.optim.Adam(G.parameters())
optD = torch.optim.Adam(D.parameters())
for x in loader:
    D.zero_grad()
    D(x).mean().backward()
    optD.step()
    rec = ((G(x) - x) ** 2).mean()
    rec.backward()
    optG.step()
    G.zero_grad()
    D(G(x)).mean().backward()
    optG.step()
"""


def test_second_step_of_an_iteration_zeroed_first_not():
    r, out = run(TWICE)
    assert codes(r) == ["TM202"]
    f = r.findings[0]
    assert f.line == 13 and "previous iteration" in f.message and f.fix.safety.value == "unsafe"
    r, out = run(TWICE, unsafe=True)
    assert "    optG.zero_grad()\n    rec.backward()\n" in out


@pytest.mark.parametrize(
    "change",
    [
        ("    rec.backward()\n", "    G.zero_grad()\n    rec.backward()\n"),
        ("    rec.backward()\n", "    optG.zero_grad(set_to_none=True)\n    rec.backward()\n"),
        ("    rec.backward()\n", "    helper(optG)\n    rec.backward()\n"),  # an unknown call before the backward may clear
        ("    rec.backward()\n    optG.step()\n", "    if rec > 0:\n        rec.backward()\n        optG.step()\n"),
    ],
)
def test_twice_stepped_look_alikes(change):
    r, _ = run(TWICE.replace(*change))
    assert "TM202" not in codes(r), r.findings


LIGHTNING_MANUAL = """
import lightning.pytorch as pl
class VAE(pl.LightningModule):
    def __init__(self, k):
        super().__init__()
        self.automatic_optimization = False
        self.k = k

    def training_step(self, batch, batch_idx):
        g_opt, d_opt = self.optimizers()
        loss = self.loss(batch)
        g_opt.zero_grad()
        self.manual_backward(loss / self.k)
        if (batch_idx + 1) % self.k == 0:
            self.clip_gradients(g_opt, gradient_clip_val=1.0)
            g_opt.step()
"""


def test_lightning_manual_optimization_accumulation_wiped():
    r, out = run(LIGHTNING_MANUAL)
    assert codes(r) == ["TM202"] and "`g_opt.zero_grad()`" in r.findings[0].message
    r, out = run(LIGHTNING_MANUAL, unsafe=True)
    assert "            g_opt.step()\n            g_opt.zero_grad()\n" in out
    assert out.count("zero_grad()") == 1


@pytest.mark.parametrize(
    "change",
    [
        # automatic optimization: Lightning zeroes (the class does not turn it off)
        ("        self.automatic_optimization = False\n", ""),
        # the step is every batch
        ("        if (batch_idx + 1) % self.k == 0:\n", "        if self.global_step >= 0:\n"),
        # not an optimizer of self.optimizers()
        ("        g_opt.zero_grad()\n", "        other.zero_grad()\n"),
        # already right
        ("        g_opt.zero_grad()\n        self.manual_backward(loss / self.k)\n",
         "        self.manual_backward(loss / self.k)\n"),
        # not the training step
        ("    def training_step(self, batch, batch_idx):\n", "    def my_step(self, batch, batch_idx):\n"),
    ],
)
def test_lightning_look_alikes(change):
    src = LIGHTNING_MANUAL.replace(*change)
    if "already" in str(change) or change[0].startswith("        g_opt.zero_grad()\n        self"):
        src = src.replace("            g_opt.step()\n", "            g_opt.step()\n            g_opt.zero_grad()\n")
    r, _ = run(src)
    assert "TM202" not in codes(r), r.findings


# --------------------------------------------------------------------------- optimizers held by submodules

SUBMODULE = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)
        self.optimizer = torch.optim.Adam(self.parameters())

class GAN:
    def __init__(self):
        self.G, self.D = Net(), Net()

    def train(self, loader):
        for x in loader:
            self.D(x).mean().backward()
            self.D.optimizer.step()
            self.G.zero_grad()
            self.D(self.G(x)).mean().backward()
            self.G.optimizer.step()
"""


def test_optimizer_of_a_submodule_steps_that_submodule():
    r, out = run(SUBMODULE)
    assert codes(r) == ["TM201"] and "`self.D.optimizer.step()`" in r.findings[0].message
    assert "            self.D.optimizer.zero_grad()\n            self.D(x).mean().backward()\n" in out


@pytest.mark.parametrize(
    "change",
    [
        ("            self.G.zero_grad()\n", "            self.G.zero_grad()\n            self.D.zero_grad()\n"),
        ("            self.D(x).mean().backward()\n", "            self.zero_grad()\n            self.D(x).mean().backward()\n"),
        # built outside a method of its module: whose `self` is unknown, any self.* clears
        ("        self.optimizer = torch.optim.Adam(self.parameters())\n", ""),
    ],
)
def test_optimizer_of_a_submodule_look_alikes(change):
    src = SUBMODULE.replace(*change)
    if not change[1]:
        src = src.replace("        self.G, self.D = Net(), Net()\n",
                          "        self.G, self.D = Net(), Net()\n        self.D.optimizer = make(self.parameters())\n")
    r, _ = run(src)
    assert "TM201" not in codes(r), r.findings


def test_scaler_parameter_recognised_by_its_use():
    src = """
    def train(model, scaler, loader, k):
        opt = build_optimizer(model)
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()
            scaler.scale(model(x).sum()).backward()
            if (i + 1) % k == 0:
                scaler.step(opt)
                scaler.update()
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM202"]
    assert "            scaler.update()\n            opt.zero_grad()\n" in out


# --------------------------------------------------------------------------- cleared after backward, the step in a window
CLEARED = """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
other = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = ((model(x) - y) ** 2).mean() / accum
    loss.backward()
{between}
    if (i + 1) % accum == 0:
{window}
"""


def test_a_zero_grad_after_backward_clears_what_a_windowed_step_would_apply():
    r, out = run(CLEARED.format(between="    opt.zero_grad()", window="        opt.step()"), unsafe=True)
    assert codes(r) == ["TM202"] and "the step sees no gradients" in r.findings[0].message
    assert r.findings[0].fix is None and not r.changed  # moving it before backward would wipe the window


@pytest.mark.parametrize("between, window", [
    ("    pass", "        opt.step()\n        opt.zero_grad()"),  # cleared after the step: right
    ("    other.zero_grad()", "        opt.step()"),  # another optimizer's gradients
    ("    opt.zero_grad()", "        loss.backward()\n        opt.step()"),  # a backward in the window first
    ("    opt.zero_grad()", "        refill(opt)\n        opt.step()"),  # an unknown call may refill them
])
def test_a_zero_grad_before_a_windowed_step_look_alikes(between, window):
    r, _ = run(CLEARED.format(between=between, window=window))
    assert [f for f in r.findings if "sees no gradients" in f.message] == []


TRAINER = '''\
criterion = nn.CrossEntropyLoss()


def reset_grads(t):
    {helper}


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def train_epoch(self):
        for x, y in self.loader:
{body}
'''


# a trainer's loop: ``self`` under ``self.model(x)`` in a loss call's arguments is the
# model's forward, not the trainer handed to code that may clear its optimizer
@pytest.mark.parametrize("body, helper, reported", [
    ("loss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "pass", True),
    ("loss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()\nself.opt.zero_grad()", "pass", False),
    ("self.model.zero_grad()\nloss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "pass", False),
    ("reset_grads(self)\nloss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "t.opt.zero_grad()", False),
    ("reset_grads(self)\nloss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "pass", True),
    # unknown code given the trainer or its model before the backward may clear: left alone
    ("lib.reset(self)\nloss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "pass", False),
    ("lib.refresh(self.model)\nloss = criterion(self.model(x), y)\nloss.backward()\nself.opt.step()", "pass", False),
])
def test_a_trainer_loop_calling_its_model_inside_a_loss(body, helper, reported):
    src = TRAINER.format(helper=helper, body=textwrap.indent(body, " " * 12))
    r, out = run(src)
    got = [x for x in r.findings if x.code == "TM201"]
    assert bool(got) == reported, [x.message for x in r.findings]
    if reported and "reset_grads" not in body:
        assert "            self.opt.zero_grad()\n            loss = criterion" in out


STEP_HELPER = '''\
criterion = nn.CrossEntropyLoss()
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))] * 4
{extra}

def train_step(model, x, y, optimizer):
{body}


for epoch in range(2):
    for x, y in loader:
{call}
'''
_STEP = "    loss = criterion(model(x), y)\n    loss.backward()\n    optimizer.step()\n    return loss.item()"


# a per-batch training step in a function of its own, called every iteration of a loop:
# nothing clears in it or in the loop (a common shape of real scripts)
@pytest.mark.parametrize("body, call, extra, reported", [
    (_STEP, "        train_step(model, x, y, optimizer)", "", True),
    (_STEP, "        total = train_step(model, x, y, optimizer)", "", True),
    ("    optimizer.zero_grad()\n" + _STEP, "        train_step(model, x, y, optimizer)", "", False),
    (_STEP, "        optimizer.zero_grad()\n        train_step(model, x, y, optimizer)", "", False),
    (_STEP, "        model.zero_grad()\n        train_step(model, x, y, optimizer)", "", False),
    (_STEP, "        lib.reset(optimizer)\n        train_step(model, x, y, optimizer)", "", False),
    ("    clear()\n" + _STEP, "        train_step(model, x, y, optimizer)", "def clear():\n    optimizer.zero_grad()\n", False),
    (_STEP.replace("    optimizer.step()", "    if y.sum() > 0:\n        optimizer.step()"), "        train_step(model, x, y, optimizer)", "", False),
    (_STEP, "        pass\ntrain_step(model, x, y, optimizer)", "", False),  # called once, after the loop
    # a scheduler stepped with the optimizer; a block commented out that mentions ``.grad``;
    # the batch's own methods in the loop (none of them can clear)
    (_STEP.replace("    return", "    scheduler.step()\n    return"), "        train_step(model, x, y, optimizer)",
     "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)", True),
    ("    # for p in model.parameters():\n    #     p.grad = None\n" + _STEP, "        train_step(model, x, y, optimizer)", "", True),
    (_STEP, "        x = x.to('cpu').float()\n        train_step(model, x, y.long(), optimizer)", "", True),
    # look-alikes: a real ``.grad`` after a ``#`` on a line of code; a second optimizer's step
    ("    x.grad = None  # #\n" + _STEP, "        train_step(model, x, y, optimizer)", "", False),
    (_STEP.replace("    return", "    other.step()\n    return"), "        train_step(model, x, y, optimizer)",
     "other = torch.optim.SGD(model.parameters(), lr=0.1)", False),
])
def test_a_training_step_helper_called_in_a_loop(body, call, extra, reported):
    src = STEP_HELPER.format(body=body, call=call, extra=extra)
    r, out = run(src)
    got = [f for f in r.findings if f.code == "TM201"]
    assert bool(got) == reported, [f.message for f in r.findings]
    if reported:
        assert "def train_step(model, x, y, optimizer):\n    optimizer.zero_grad()\n" in out


# (opendp/smartnoise-sdk PATECTGAN, issue 280: the student's optimizer never cleared, the
# teachers' ones, a list, cleared once per outer iteration)
TEACHERS = """\
import torch.optim as optim
student = nn.Linear(4, 1)
teachers = [nn.Linear(4, 1) for i in range(3)]
optimizerS = optim.Adam(student.parameters(), lr=2e-4)
optimizerT = [optim.Adam(teachers[i].parameters(), lr=2e-4) for i in range(3)]
for epoch in range(10):
    for i in range(3):
        optimizerT[i].zero_grad()
        teachers[i](torch.randn(8, 4)).sum().backward()
        optimizerT[i].step()
    for t in range(5):
        student(torch.randn(8, 4)).sum().backward()
        optimizerS.step()
"""


def test_an_element_of_a_list_of_other_optimizers_does_not_clear_ours():
    r, out = run(TEACHERS)
    assert codes(r) == ["TM201"] and r.findings[0].line == 15 and r.findings[0].applied
    assert "        optimizerS.zero_grad()\n        student(torch.randn(8, 4)).sum().backward()\n" in out
    # the teachers' optimizers step the student's parameters: cleared once per epoch, misplaced
    r, _ = run(TEACHERS.replace("teachers[i].parameters()", "student.parameters()"))
    assert codes(r) == ["TM202"]


RECIPE = """\
class Recipe:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: 1.0)

    def forward_backward(self, batch, do_backward=True):
        loss = self.model(batch).sum()
        if do_backward:
            loss.backward()
        return loss

    def train_step(self, batch):
        loss = self.forward_backward(batch)
        self.optimizer.step()
        self.scheduler.step()
        return loss

    def train(self, loader):
        self.optimizer.zero_grad()
        for batch in loader:
            for k, v in batch.items():
                batch[k] = v.to("cuda")
            self.train_step(batch)
"""


@pytest.mark.parametrize("change,reported", [
    ("", True),
    # look-alikes: the helper clears, the helper steps too, the backward comes after the step,
    # the loop hands the recipe to unknown code
    ("        if do_backward:\n", "        self.optimizer.zero_grad()\n        if do_backward:\n"),
    ("        return loss\n\n    def train_step", "        self.optimizer.step()\n        return loss\n\n    def train_step"),
    ("        loss = self.forward_backward(batch)\n        self.optimizer.step()\n",
     "        self.optimizer.step()\n        loss = self.forward_backward(batch)\n"),
    ("            self.train_step(batch)\n", "            self.train_step(batch)\n            hooks.after_step(self)\n"),
])
def test_a_training_step_whose_backward_runs_in_a_helper(change, reported):
    """(meta-pytorch/torchforge apps/sft/main.py before PR #71: ``train_step`` steps every
    iteration after ``forward_backward`` runs backward(); zero_grad only before the loop)"""
    if isinstance(reported, str):
        src, reported = RECIPE.replace(change, reported), False
        assert src != RECIPE
    else:
        src = RECIPE
    r, out = run(src)
    got = [f for f in r.findings if f.code == "TM201"]
    assert bool(got) == reported, [f.message for f in r.findings]
    if reported:
        assert "    def train_step(self, batch):\n        self.optimizer.zero_grad()\n        loss = self.forward_backward" in out


D2L_TRAIN = """
def train_ch3(net, train_iter, loss, num_epochs, params=None, lr=None, optimizer=None):
    for epoch in range(num_epochs):
        for X, y in train_iter:
            l = loss(net(X), y).sum()
            # clear the gradients
            if {test}:
                for param in params:
                    param.grad.data.zero_()
            l.backward()
            if optimizer is not None:
                optimizer.step()
            else:
                sgd(params, lr)


net = nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
train_ch3(net, train_iter, nn.CrossEntropyLoss(), 5, {params}, 0.3, optimizer)
"""


@pytest.mark.parametrize("test", ["params is not None and params[0].grad is not None", "params is not None", "params"])
def test_gradients_cleared_only_on_a_branch_no_call_takes(test):
    # Miraclelucy/dive_into_deep_learning #6: d2l's train_ch3 clears the gradients by hand
    # only when ``params`` is given; called with an optimizer and ``params=None``, nothing
    # clears them
    r, out = run(D2L_TRAIN.format(test=test, params="None"))
    assert codes(r) == ["TM201"]
    assert "        for X, y in train_iter:\n            optimizer.zero_grad()\n" in out


@pytest.mark.parametrize("params", ["list(net.parameters())", "params_of(net)"])
def test_gradients_cleared_on_a_branch_some_call_may_take(params):
    r, _ = run(D2L_TRAIN.format(test="params is not None", params=params))
    assert codes(r) == []


def test_a_parameter_of_a_function_with_unknown_callers_may_be_anything():
    r, _ = run(D2L_TRAIN.format(test="params is not None", params="None") + "train_ch3(net, it, l, 1, *rest)\n")
    assert codes(r) == []


@pytest.mark.parametrize("ctx", ['torch.autocast("cuda")', "torch.cuda.amp.autocast()", "profiler.record_function('fwd')"])
def test_zero_grad_after_a_with_block_that_runs_backward(ctx):
    # lucidrains/byol-pytorch trainer: ``with self.accelerator.autocast(): loss = ...;
    # self.accelerator.backward(loss)`` then ``zero_grad()`` right before ``step()``
    r, out = run(f"""
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            with {ctx}:
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
            opt.zero_grad()
            opt.step()
        """)
    assert codes(r) == ["TM202"]
    assert f"    opt.zero_grad()\n    with {ctx}:" in out


@pytest.mark.parametrize("inner", [
    "if ok:\n                    loss.backward()",  # the backward may not run
    "loss.backward()\n                opt.step()",  # a step inside: the zero_grad clears the next ones
])
def test_a_with_block_whose_backward_may_not_feed_the_step(inner):
    r, _ = run(f"""
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = ((model(x) - y) ** 2).mean()
                {inner}
            opt.zero_grad()
            opt.step()
        """)
    assert "TM202" not in codes(r) or "not moved automatically" in r.findings[0].message


# (Adversarial-Deep-Learning/code-soup ch5 gan.py before 7aa48e7: ``GAN.step(self, data)``
# steps the discriminator's and the generator's optimizers, clears only the generator's)
GAN_STEP = """
class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Linear(4, 8)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Linear(8, 1)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)


class GAN:
    def __init__(self, device):
        self.generator = Generator().to(device)
        self.discriminator = Discriminator().to(device)
        self.criterion = nn.BCEWithLogitsLoss()

    def step(self, real):
        \"\"\"One batch.\"\"\"
{d_clear}        err_real = self.criterion(self.discriminator(real), torch.ones(len(real), 1))
        err_real.backward()
        fake = self.generator(torch.randn(len(real), 4))
        err_fake = self.criterion(self.discriminator(fake.detach()), torch.zeros(len(real), 1))
        err_fake.backward()
        self.discriminator.optimizer.step()
        self.generator.zero_grad()
        err_g = self.criterion(self.discriminator(fake), torch.ones(len(real), 1))
        err_g.backward()
        self.generator.optimizer.step()
        return err_real + err_fake, err_g
{more}"""


@pytest.mark.parametrize("d_clear, more, reported", [
    ("", "", True),
    ("        self.discriminator.zero_grad()\n", "", False),
    ("        self.discriminator.optimizer.zero_grad()\n", "", False),
    ("        for p in self.discriminator.parameters():\n            p.grad = None\n", "", False),
    # called by a loop of this file that clears, or handing the optimizer to unknown code
    ("", "\n\ngan = GAN('cpu')\nfor batch in loader:\n    gan.discriminator.optimizer.zero_grad()\n    gan.step(batch)\n", False),
    ("        clip(self.discriminator)\n", "", False),
])
def test_a_step_function_that_clears_one_optimizer_but_not_the_other(d_clear, more, reported):
    r, out = run(GAN_STEP.format(d_clear=d_clear, more=more), unsafe=True)
    got = [f for f in r.findings if f.code == "TM201"]
    assert len(got) == (1 if reported else 0), [f.message for f in r.findings]
    if reported:
        assert got[0].fix.safety.value == "unsafe" and "`self.discriminator.optimizer.step()` in `step`" in got[0].message
        assert '        """One batch."""\n        self.discriminator.optimizer.zero_grad()\n' in out
        r2, out2 = run(GAN_STEP.format(d_clear=d_clear, more=more))
        assert out2 == HEAD + textwrap.dedent(GAN_STEP.format(d_clear=d_clear, more=more))  # (not applied by default)


# (GodWriter/GAN-Pytorch unit/train.py: ``save_sample(..., E1, E2, G1, G2, FloatTensor)``
# of ``from utils import save_sample`` in the loop gets the models: read in the project,
# it touches no gradient)
@pytest.mark.parametrize("helper, reported", [
    ("def save_sample(name, *models):\n    for m in models:\n        m.eval()\n", True),
    ("def save_sample(name, *models):\n    for m in models:\n        m.zero_grad()\n", False),
    ("def save_sample(name, *models):\n    helper(models)\n", True),  # (what it hands on is not followed)
    ("save_sample = make_saver()\n", False),  # not a function the file defines
])
def test_a_project_helper_given_the_model_is_read(tmp_path, helper, reported):
    from torchmend.engine import process_file

    (tmp_path / "utils.py").write_text("import torch\n\n\n" + helper)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom utils import save_sample\n\nmodel = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    loss = torch.nn.functional.mse_loss(model(x), y)\n    loss.backward()\n    opt.step()\n"
        "    save_sample('s', model)\n")
    res = process_file(str(tmp_path / "train.py"), Options(select=frozenset({"TM201"})))
    assert res.error is None, res.error
    assert len(res.findings) == (1 if reported else 0), [f.message for f in res.findings]


# (GodWriter/GAN-Pytorch unit/train.py: ``FloatTensor = torch.cuda.FloatTensor if cuda else
# torch.FloatTensor`` called in the loop is a tensor type, not a model an unknown call could
# clear through)
@pytest.mark.parametrize("alias, reported", [
    ("torch.cuda.FloatTensor if cuda else torch.FloatTensor", True),
    ("torch.cuda.FloatTensor", True),
    ("make_type() if cuda else torch.FloatTensor", False),  # (one side unknown: anything)
])
def test_a_tensor_type_chosen_by_a_condition_is_no_model(alias, reported):
    r, _ = run(f"""
    cuda = torch.cuda.is_available()
    FloatTensor = {alias}
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        x = x.type(FloatTensor)
        valid = FloatTensor(x.shape[0], 2).fill_(1.0)
        loss = ((model(x) - valid) ** 2).mean()
        loss.backward()
        opt.step()
    """)
    assert (codes(r) == ["TM201"]) == reported, [f.message for f in r.findings]


NESTED_AMP = """
def main(args):
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler()
    for epoch in range(10):
{outer}        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            if not args.bf16:
                opt.zero_grad()
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
"""


@pytest.mark.parametrize("outer, found", [
    ("", ["TM201"]),
    # a zero_grad of the epoch loop, outside the batch loop: TM202's (misplaced), not TM201's
    ("        opt.zero_grad()\n", []),
])
def test_a_branch_that_never_clears_inside_an_epoch_loop(outer, found):
    """facebookresearch/nwm (before 7782ade), reduced: ``opt.zero_grad()`` only in the
    non-bfloat16 branch of the batch loop, which runs inside an epoch loop; the zero_grad
    inside the inner loop is no clearing by the outer one."""
    r, _ = run(NESTED_AMP.format(outer=outer))
    assert [f.code for f in r.findings if f.code == "TM201"] == found
    if found:
        assert "on its branch" in r.findings[0].message


TRAINER_CLASS = """\
import torch


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader

    def train_step(self, x, y):
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def train(self):
        for x, y in self.loader:
            self.train_step(x, y)
"""


# a trainer class of its own file whose optimizer the script that imports it makes
@pytest.mark.parametrize("made, reported", [
    ("torch.optim.Adam(model.parameters(), lr=1e-3)", True),
    ("make_optimizer(model)", False),  # (not known to be an optimizer: its step may be anything)
])
def test_a_trainer_class_given_its_optimizer_by_the_script_that_imports_it(tmp_path, made, reported):
    from torchmend.engine import process_file

    (tmp_path / "trainer.py").write_text(TRAINER_CLASS)
    (tmp_path / "main.py").write_text(
        "import torch\nfrom trainer import Trainer\n\nmodel = torch.nn.Linear(4, 2)\n"
        f"optimizer = {made}\nTrainer(model, optimizer, loader).train()\n")
    res = process_file(str(tmp_path / "trainer.py"), Options(select=frozenset({"TM201"})))
    assert res.error is None, res.error
    assert [f.line for f in res.findings] == ([13] if reported else []), [f.message for f in res.findings]
    if reported:
        assert "`self.optimizer.step()` in `train_step`" in res.findings[0].message
        assert str(tmp_path / "main.py") in {d for d, *_ in res.deps}


_WRAPPER = '''import torch


class Optimizers(object):
    """A wrapper (OpenNMT/PreSumm style) around an optimizer it makes."""

    def __init__(self, lr):
        self.lr = lr

    def set_parameters(self, params):
        self.optimizer = torch.optim.SGD([p for _, p in params], lr=self.lr)

    def step(self):
        self.optimizer.step()
{extra}'''


@pytest.mark.parametrize("extra, where, fixed", [
    # the class defines no ``zero_grad``: ``optim.zero_grad()`` would raise AttributeError
    ("", "other", False),
    ("", "here", False),
    # look-alikes for the fix: a ``zero_grad`` of its own, or one a base class or
    # ``__getattr__`` may give
    ("\n    def zero_grad(self):\n        self.optimizer.zero_grad()\n", "other", True),
    ("\n    def __getattr__(self, name):\n        return getattr(self.optimizer, name)\n", "other", True),
    ("\n\nclass Adam(Optimizers, torch.optim.Adam):\n    pass\n", "other", True),
])
def test_an_optimizer_wrapper_without_zero_grad_gets_no_fix(tmp_path, extra, where, fixed):
    """Masao-Someki's train.py: ``optim = Optimizers(...)`` of the project's optim.py
    (``step()`` only); the loop never clears the gradients.  The unsafe fix inserted
    ``optim.zero_grad()``, which raised AttributeError on the first batch."""
    from torchmend.engine import process_file

    wrapper = _WRAPPER.format(extra=extra)
    make = "Adam(0.01)" if "class Adam" in extra else "Optimizers(0.01)"
    imports = "from optim_wrapper import Optimizers, Adam\n" if "class Adam" in extra else \
        "from optim_wrapper import Optimizers\n"
    if where == "other":
        (tmp_path / "optim_wrapper.py").write_text(wrapper)
        head = "import torch\nimport torch.nn as nn\n" + imports
    else:
        head = wrapper.replace("import torch\n", "import torch\nimport torch.nn as nn\n", 1) + "\n\n"
    src = head + (f"\n\ndef train(data):\n    net = nn.Linear(4, 1)\n    optim = {make}\n"
                  "    optim.set_parameters(list(net.named_parameters()))\n    for x, y in data:\n"
                  "        loss = ((net(x) - y) ** 2).mean()\n        loss.backward()\n        optim.step()\n")
    (tmp_path / "train.py").write_text(src)
    res = process_file(str(tmp_path / "train.py"), Options(select=frozenset({"TM201"}), unsafe_fixes=True))
    assert res.error is None, res.error
    assert [f.code for f in res.findings] == ["TM201"]
    assert res.changed == fixed
    if not fixed:
        assert "is an instance of `Optimizers`" in res.findings[0].message
        assert "defines no `zero_grad()`" in res.findings[0].message
        assert ("(of optim_wrapper.py)" in res.findings[0].message) == (where == "other")


def test_a_zero_grad_that_runs_once_before_the_loop_is_said():
    """heartcored98/Standalone-DeepLearning Lab7: ``optimizer.zero_grad()`` once, above the
    batch loop of ``train()`` (the epoch loop is the caller's): the finding says so, and
    the fix clears them at the top of each iteration."""
    r, out = run("""
    def train(net, loader, optimizer, criterion):
        net.train()
        optimizer.zero_grad()
        for x, y in loader:
            loss = criterion(net(x), y)
            loss.backward()
            optimizer.step()
    """)
    assert codes(r) == ["TM201"]
    assert "cleared only once, by `optimizer.zero_grad()` at line 6 before the loop" in r.findings[0].message
    assert "    for x, y in loader:\n        optimizer.zero_grad()\n" in out


@pytest.mark.parametrize("between, reported", [
    # the optimizer is made after the backward: that backward ran for no step of it (a
    # notebook that shows autograd on a tensor, then the optimizer's API)
    ("optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n", False),
    ("print(w.grad)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.01)\nprint(optimizer)\n", False),
    # made before the backward: the zero_grad wipes what the step needed
    ("", True),
])
def test_a_backward_above_the_optimizer_is_not_its_step(between, reported):
    """Mooguy/hw2 pytorch_tut.ipynb: ``L.backward()`` on a tensor ``w`` (cells 29-30), then
    ``optimizer = SGD(model.parameters())``, ``optimizer.zero_grad()``,
    ``optimizer.step()``.  The fix moved the zero_grad above the backward, where
    ``optimizer`` is not yet bound (NameError)."""
    made = "" if between else "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    src = ("model = nn.Linear(4, 2)\n" + made + "w = torch.tensor([1.], requires_grad=True)\n"
           "L = (w * 2. - 3.) ** 2\nL.backward()\n" + between + "optimizer.zero_grad()\noptimizer.step()\n")
    r, out = run(src)
    assert codes(r) == (["TM202"] if reported else [])
    if reported:
        assert "optimizer.zero_grad()\nL.backward()\n" in out


_ONCE = """
def profile(model, loader, optimizer):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
{tail}

{caller}
"""


@pytest.mark.parametrize("tail, caller, reported", [
    # the loop ends with an unconditional ``break`` and its function runs once: one step
    ("        break", "if __name__ == '__main__':\n    profile(m, dl, opt)", False),
    # review: called in a loop (the gradients of each call add up), a ``continue`` that
    # skips the ``break``, callers not all known, a ``return`` (its function may run again)
    ("        break", "for epoch in range(3):\n    profile(m, dl, opt)", True),
    ("        if i == 0:\n            continue\n        break", "profile(m, dl, opt)", True),
    ("        break", "", True),
    ("        return", "profile(m, dl, opt)", True),
    ("        if i == 3:\n            break", "profile(m, dl, opt)", True),
])
def test_a_loop_that_runs_once(tail, caller, reported):
    """yechanp/self_kd flops/main_pf.py: a loop that profiles one optimisation step and
    ends with an unconditional ``break``."""
    r, _ = run(_ONCE.format(tail=tail, caller=caller))
    assert codes(r) == (["TM201"] if reported else [])


def test_a_module_level_loop_that_runs_once():
    r, _ = run("""
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        break
    """)
    assert codes(r) == []


def test_an_optimizer_wrapper_with_an_instance_zero_grad_gets_the_fix(tmp_path):
    """(review) ``self.zero_grad = self.optimizer.zero_grad`` in ``__init__``: the instance has
    one (Python reads the instance's attributes before the class's)."""
    from torchmend.engine import process_file

    (tmp_path / "optim_wrapper.py").write_text(_WRAPPER.format(extra="").replace(
        "        self.lr = lr\n", "        self.lr = lr\n        self.zero_grad = lambda: None\n"))
    src = ("import torch\nimport torch.nn as nn\nfrom optim_wrapper import Optimizers\n\n\ndef train(data):\n"
           "    net = nn.Linear(4, 1)\n    optim = Optimizers(0.01)\n    for x, y in data:\n"
           "        loss = ((net(x) - y) ** 2).mean()\n        loss.backward()\n        optim.step()\n")
    (tmp_path / "train.py").write_text(src)
    res = process_file(str(tmp_path / "train.py"), Options(select=frozenset({"TM201"}), unsafe_fixes=True))
    assert [f.code for f in res.findings] == ["TM201"] and res.changed


def test_a_star_import_after_the_function_is_read_when_it_runs(tmp_path):
    """(review) ``from opt_full import *`` below ``def train():`` rebinds ``Optimizers``
    before ``train()`` runs: the class of ``opt_basic`` (no ``zero_grad``) is not the one."""
    from torchmend.engine import process_file

    (tmp_path / "opt_basic.py").write_text(_WRAPPER.format(extra=""))
    (tmp_path / "opt_full.py").write_text(_WRAPPER.format(
        extra="\n    def zero_grad(self):\n        self.optimizer.zero_grad()\n"))
    src = ("import torch\nimport torch.nn as nn\nfrom opt_basic import *\n\n\ndef train(data):\n"
           "    net = nn.Linear(4, 1)\n    optim = Optimizers(0.01)\n    for x, y in data:\n"
           "        loss = ((net(x) - y) ** 2).mean()\n        loss.backward()\n        optim.step()\n\n\n"
           "from opt_full import *\n")
    (tmp_path / "train.py").write_text(src)
    res = process_file(str(tmp_path / "train.py"), Options(select=frozenset({"TM201"}), unsafe_fixes=True))
    assert [f.code for f in res.findings] == ["TM201"] and res.changed
    assert "defines no" not in res.findings[0].message
