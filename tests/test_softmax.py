"""TM501 / TM502: (log-)softmax fed into cross-entropy.  One test per variant class,
plus look-alikes that must stay silent and unchanged."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def run(src, unsafe=False, head=True):
    src = textwrap.dedent(src)
    if head:
        src = HEAD + src
    r = process_text("t.py", src, Options(unsafe_fixes=unsafe))
    assert r.error is None, r.error
    out = apply_patch(src.encode(), r.diff).decode() if r.changed else src
    if r.changed:  # applying twice changes nothing
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe))
        assert not again.changed, again.diff.decode()
    return r, out


def codes(r):
    return sorted(f.code for f in r.findings)


def bugs(r):
    """Codes of the findings that are not follow-on notes (an unsafe fix that re-applies the
    softmax where probabilities are used reports each such line too, as info)."""
    return sorted(f.code for f in r.findings if f.severity.value != "info")


def notes(r):
    return [f for f in r.findings if f.severity.value == "info"]


def body(out):
    return out[len(HEAD):] if out.startswith(HEAD) else out


# ----------------------------------------------------------------------------- inline
@pytest.mark.parametrize(
    "call",
    ["F.softmax(z, dim=1)", "torch.softmax(z, 1)", "torch.nn.functional.softmax(z, -1)", "z.softmax(-1)", "nn.Softmax(dim=1)(z)"],
)
def test_inline_softmax_spellings_dropped(call):
    r, out = run(f"z = torch.randn(4, 3)\ny = torch.zeros(4, dtype=torch.long)\nloss = F.cross_entropy({call}, y)\n")
    assert codes(r) == ["TM501"]
    assert body(out).endswith("loss = F.cross_entropy(z, y)\n")


def test_inline_ctor_and_alias_import():
    src = """\
    from torch.nn import CrossEntropyLoss as CE
    crit = CE()
    loss = crit(F.softmax(z, 1), y) + CE(reduction="sum")(z.softmax(1), y)
    """
    r, out = run(src)
    assert codes(r) == ["TM501", "TM501"]
    assert 'loss = crit(z, y) + CE(reduction="sum")(z, y)' in out


def test_self_criterion_and_only_first_argument_matters():
    src = """\
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.criterion = nn.CrossEntropyLoss()
        def loss(self, z, t):
            return self.criterion(z, F.softmax(t, dim=1)) + self.criterion(F.softmax(z, dim=1), t.argmax(1))
    """
    r, out = run(src)
    assert codes(r) == ["TM501"]
    assert "self.criterion(z, F.softmax(t, dim=1)) + self.criterion(z, t.argmax(1))" in out


def test_parenthesised_when_a_view_follows():
    r, out = run("loss = F.cross_entropy(F.softmax(a + b, -1).view(-1, 5), y)\n")
    assert "F.cross_entropy((a + b).view(-1, 5), y)" in out


# ----------------------------------------------------------------------------- variable
def test_single_use_variable_removed():
    src = """\
    for x, y in loader:
        p = model(x).softmax(-1)
        loss = ce(p, y)
    """
    r, out = run("ce = nn.CrossEntropyLoss()\n" + textwrap.dedent(src))
    assert codes(r) == ["TM501"]
    assert "p = " not in out and "loss = ce(model(x), y)" in out


def test_variable_kept_when_used_elsewhere():
    src = """\
    ce = nn.CrossEntropyLoss()
    logits = net(x)
    p = F.softmax(logits, 1)
    loss = ce(p, y)
    print(p.max(1).values)
    """
    r, out = run(src)
    assert codes(r) == ["TM501"]
    assert "p = F.softmax(logits, 1)\nloss = ce(logits, y)\n" in out


def test_variable_not_adjacent_unstable_input_keeps_name():
    src = """\
    ce = nn.CrossEntropyLoss()
    p = F.softmax(net(x), 1)
    print("step")
    loss = ce(p, y)
    """
    r, out = run(src)
    assert "p = net(x)\nprint(\"step\")\nloss = ce(p, y)\n" in out


def test_variable_input_reassigned_in_between_is_not_substituted():
    src = """\
    ce = nn.CrossEntropyLoss()
    p = F.softmax(z, 1)
    q = F.softmax(z, 1)
    z = z * 2
    loss = ce(p, y) + ce(q, y)
    print(q)
    """
    r, out = run(src)
    assert codes(r) == ["TM501", "TM501"]
    assert "p = z\n" in out  # single use: the variable holds the logits instead
    f = [f for f in r.findings if "`q`" in f.message][0]  # q is used elsewhere and z changed: report only
    assert f.fix is None and f.line == 8


def test_variable_comment_moves_to_loss_line():
    src = """\
    ce = nn.CrossEntropyLoss()
    # class probabilities
    p = F.softmax(z, 1)
    loss = ce(p, y)
    """
    r, out = run(src)
    assert "# class probabilities\nloss = ce(z, y)\n" in out


# ----------------------------------------------------------------------------- models
SEQ_TRAIN = """\
loss_fn = nn.CrossEntropyLoss()
for x, y in loader:
    loss = loss_fn(net(x), y)
pred = net(x).argmax(1)
"""


@pytest.mark.parametrize(
    "seq, want",
    [
        ("net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n", "net = nn.Sequential(nn.Linear(4, 3))\n"),
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),\n    nn.Softmax(dim=1),\n)\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3),\n)\n",
        ),
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),  # head\n    nn.Softmax(dim=1)\n)\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3)  # head\n)\n",
        ),
    ],
)
def test_sequential_last_softmax_removed(seq, want):
    r, out = run(seq + SEQ_TRAIN)
    assert codes(r) == ["TM501"]
    assert body(out).startswith(want)


def test_sequential_with_probability_use_is_unsafe():
    src = "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n" + SEQ_TRAIN + "probs = net(x)\nprint(probs[:, 1] > 0.5)\n"
    r, out = run(src)
    assert bugs(r) == ["TM501"] and body(out) == body(HEAD + textwrap.dedent(src))  # nothing safe
    # the line the unsafe fix also edits is a finding of its own, sharing the fix
    (note,) = notes(r)
    assert note.code == "TM501" and note.line == 10 and note.fix.safety.value == "unsafe"
    r, out = run(src, unsafe=True)
    assert "print(probs.softmax(dim=1)[:, 1] > 0.5)" in out
    assert "nn.Sequential(nn.Linear(4, 3))" in out


def test_sequential_escaping_is_report_only():
    src = "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n" + SEQ_TRAIN + "torch.jit.script(net)\n"
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed


def test_sequential_implicit_dim_with_probability_use_is_report_only():
    src = "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax())\n" + SEQ_TRAIN + "print(net(x))\n"
    r, _ = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None


MODEL = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.sm = nn.Softmax(dim=1)

    def forward(self, x):
        {body}


def train(model, loader, crit):
    for x, y in loader:
        out = model(x)
        loss = crit(out, y)
        _, pred = torch.max(out, 1)


model = Net().to("cpu")
train(model, loader, nn.CrossEntropyLoss())
"""


@pytest.mark.parametrize(
    "fwd, want",
    [
        ("return F.softmax(self.fc(x), dim=1)", "return self.fc(x)"),
        ("return self.sm(self.fc(x))", "return self.fc(x)"),
        ("x = self.fc(x)\n        x = torch.softmax(x, dim=1)\n        return x", "x = self.fc(x)\n        return x"),
        ("h = self.fc(x)\n        out = h.softmax(1)\n        return out", "h = self.fc(x)\n        return h"),
    ],
)
def test_forward_softmax_removed_through_function_parameters(fwd, want):
    r, out = run(MODEL.format(body=fwd))
    assert codes(r) == ["TM501"], [f.format() for f in r.findings]
    assert want in out


@pytest.mark.parametrize(
    "use, safe",
    [
        ("_, pred = torch.max(out.data, 1)", True),
        ("pred = out.detach().argmax(dim=1)", True),
        ("pred = out.topk(2, dim=1).indices", True),
        ("pred = out.topk(2).indices", False),  # topk's default dim is -1, the softmax's is 1
        ("pred = out.argmax()", False),  # flattened argmax is not invariant
        ("pred = torch.argmax(out, 0)", False),
        ("best = out.max(1)[0]", False),  # the values, not the indices
    ],
)
def test_ranking_uses_only_along_the_softmax_dim(use, safe):
    src = MODEL.format(body="return F.softmax(self.fc(x), dim=1)").replace("_, pred = torch.max(out, 1)", use)
    r, out = run(src)
    assert bugs(r) == ["TM501"]
    assert len(notes(r)) == (0 if safe else 1)
    assert r.changed is safe
    if not safe:
        r, out = run(src, unsafe=True)
        assert r.changed and "out.softmax(dim=1)" in out


def test_forward_returning_sequential_attribute():
    src = MODEL.format(body="return self.head(x)").replace(
        "self.sm = nn.Softmax(dim=1)", "self.head = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))"
    )
    r, out = run(src)
    assert codes(r) == ["TM501"]
    assert "self.head = nn.Sequential(nn.Linear(4, 3))" in out


def test_model_passed_to_two_models_function_probability_use_not_rewritten():
    src = MODEL.format(body="return F.softmax(self.fc(x), dim=1)") + "train(nn.Linear(4, 3), loader, nn.CrossEntropyLoss())\n"
    src = src.replace("_, pred = torch.max(out, 1)", "print(out)")
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed


def test_model_imported_elsewhere_is_report_only(tmp_path):
    from torchmend.engine import process_source
    from torchmend.project import ImportIndex, Project
    from torchmend.sourcefile import decode_source

    src = HEAD + MODEL.format(body="return F.softmax(self.fc(x), dim=1)")
    (tmp_path / "netmod.py").write_text(src)
    (tmp_path / "other.py").write_text("from netmod import Net\n")
    path = str(tmp_path / "netmod.py")
    files = [path, str(tmp_path / "other.py")]
    opts = Options(roots=(str(tmp_path),), unsafe_fixes=True)
    r = process_source(decode_source(path, src.encode()), opts, Project(opts.roots, ImportIndex(files)))
    assert [f.code for f in r.findings] == ["TM501"] and not r.changed
    assert r.findings[0].fix is None and "imports this one" in r.findings[0].message
    (tmp_path / "other.py").write_text("import os\n")  # nobody imports it: the fix is safe again
    r = process_source(decode_source(path, src.encode()), opts, Project(opts.roots, ImportIndex(files)))
    assert r.changed


def test_skorch_file_is_left_alone():
    src = "from skorch import NeuralNetClassifier\nnet = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n" + SEQ_TRAIN
    r, out = run(src)
    assert codes(r) == [] and not r.changed


# ----------------------------------------------------------------------------- TM502
LSM = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


model = Net()
{loss}
"""


@pytest.mark.parametrize(
    "loss, want",
    [
        ("criterion = nn.CrossEntropyLoss(weight=w, reduction='sum')\nl = criterion(model(x), y)",
         "criterion = nn.NLLLoss(weight=w, reduction='sum')"),
        ("criterion = torch.nn.CrossEntropyLoss()\nl = criterion(model(x), y)", "criterion = torch.nn.NLLLoss()"),
        ("l = F.cross_entropy(model(x), y, ignore_index=0)", "l = F.nll_loss(model(x), y, ignore_index=0)"),
        ("l = nn.CrossEntropyLoss()(model(x), y)", "l = nn.NLLLoss()(model(x), y)"),
    ],
)
def test_log_softmax_model_loss_becomes_nll(loss, want):
    r, out = run(LSM.format(loss=loss))
    assert codes(r) == ["TM502"]
    assert r.findings[0].severity.value == "warning"
    assert want in out
    assert "log_softmax" in out  # the model is untouched


def test_log_softmax_model_alias_import_gets_nllloss_import():
    r, out = run(LSM.format(loss="from torch.nn import CrossEntropyLoss as CE\ncrit = CE()\nl = crit(model(x), y)"))
    assert codes(r) == ["TM502"]
    assert "crit = NLLLoss()" in out and "from torch.nn import NLLLoss\n" in out


@pytest.mark.parametrize(
    "loss",
    [
        "criterion = nn.CrossEntropyLoss(label_smoothing=0.1)\nl = criterion(model(x), y)",
        "l = F.cross_entropy(model(x), F.softmax(t, 1))",
        "criterion = nn.CrossEntropyLoss()\nl = criterion(model(x), y) + criterion(other(x), y)",
    ],
)
def test_log_softmax_model_report_only(loss):
    r, out = run(LSM.format(loss=loss), unsafe=True)
    assert codes(r) == ["TM502"] and r.findings[0].fix is None and not r.changed


def test_sequential_logsoftmax():
    r, out = run("net = nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1))\nce = nn.CrossEntropyLoss()\nl = ce(net(x), y)\n")
    assert codes(r) == ["TM502"] and "ce = nn.NLLLoss()" in out


def test_inline_log_softmax_dropped_even_with_label_smoothing():
    r, out = run("l = F.cross_entropy(F.log_softmax(z, 1), y, label_smoothing=0.2)\nm = crit(x.log_softmax(dim=-1), y)\ncrit = 1\n")
    assert codes(r) == ["TM502"]
    assert "l = F.cross_entropy(z, y, label_smoothing=0.2)" in out


# ----------------------------------------------------------------------------- look-alikes
LOOKALIKES = {
    "log_softmax_nll": "out = F.log_softmax(z, dim=1)\nloss = F.nll_loss(out, y) + nn.NLLLoss()(out, y)\n",
    "metrics_only": "logits = net(x)\nloss = F.cross_entropy(logits, y)\nprobs = F.softmax(logits, 1)\nacc = probs.argmax(1)\n",
    "distillation": (
        "kd = F.kl_div(F.log_softmax(s / T, 1), F.softmax(t / T, 1))\n"
        "ce = F.cross_entropy(s, F.softmax(t / T, -1))\n"
    ),
    "attention": (
        "class A(nn.Module):\n    def forward(self, q, k):\n        w = F.softmax(q @ k.T, dim=-1)\n"
        "        return self.out(w @ k)\n\n\nm = A()\nloss = F.cross_entropy(m(q, k), y)\n"
    ),
    "defined_unused": (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.softmax = nn.Softmax(dim=1)\n"
        "        self.fc = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "m = M()\nloss = nn.CrossEntropyLoss()(m(x), y)\n"
    ),
    "class_named_softmax": (
        "class Softmax(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
        "        self.criterion = torch.nn.CrossEntropyLoss()\n\n    def forward(self, x, label):\n"
        "        return self.criterion(self.fc(x), label)\n\n\nhead = Softmax()\nloss = head(x, y)\n"
    ),
    "user_softmax_function": "from mylib import softmax\nloss = F.cross_entropy(softmax(z), y)\n",
    "scipy_softmax": "import scipy.special\nloss = F.cross_entropy(scipy.special.softmax(z), y)\n",
    "branching": (
        "class N(nn.Module):\n    def forward(self, x):\n        if self.training:\n            return self.fc(x)\n"
        "        return F.softmax(self.fc(x), dim=1)\n\n\nn = N()\nloss = F.cross_entropy(n(x), y)\n"
    ),
    "sigmoid_bce": "d = nn.Sequential(nn.Linear(2, 1), nn.Sigmoid())\nloss = nn.BCELoss()(d(x), y)\n",
    "softmax_model_nll_on_log": (
        "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\nloss = F.nll_loss(torch.log(net(x)), y)\n"
    ),
    "reassigned_criterion": "crit = nn.CrossEntropyLoss()\ncrit = MyLoss()\nloss = crit(F.softmax(z, 1), y)\n",
    "commented": "# loss = F.cross_entropy(F.softmax(z, 1), y)\nloss = F.cross_entropy(z, y)\n",
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_lookalikes_silent(name):
    for unsafe in (False, True):
        r, out = run(LOOKALIKES[name], unsafe=unsafe)
        assert codes(r) == [], [f.format() for f in r.findings]
        assert not r.changed


def test_suppression_comment():
    r, _ = run("loss = F.cross_entropy(F.softmax(z, 1), y)  # torchmend: ignore[TM501]\n")
    assert codes(r) == []


def test_model_from_sibling_file_is_reported_not_fixed(tmp_path):
    (tmp_path / "models.py").write_text(
        HEAD + "class Net(nn.Module):\n    def forward(self, x):\n        return F.log_softmax(self.fc(x), 1)\n\n\n"
        "class Sm(nn.Module):\n    def forward(self, x):\n        return self.fc(x).softmax(1)\n"
    )
    src = HEAD + "from models import Net, Sm as Model\nnet = Net()\nm = Model().to('cpu')\nout = m(x)\n" \
        "loss = F.cross_entropy(net(x), y) + nn.CrossEntropyLoss()(out, y)\n"
    path = str(tmp_path / "train.py")
    (tmp_path / "train.py").write_text(src)
    r = process_text(path, src, Options(unsafe_fixes=True))
    assert codes(r) == ["TM501", "TM502"] and not r.changed
    assert all(f.fix is None for f in r.findings)
    assert "from models.py" in r.findings[0].message
    # a class of the same name that does not end in softmax: nothing
    (tmp_path / "models.py").write_text(HEAD + "class Net(nn.Module):\n    def forward(self, x):\n        return x\n\n\nSm = Net\n")
    r = process_text(path, src, Options(unsafe_fixes=True))
    assert codes(r) == []


def test_log_softmax_model_loss_object_shared_through_function_is_report_only():
    src = LSM.format(loss=(
        "crit = nn.CrossEntropyLoss()\n\n\ndef step(m, c):\n    return c(m(x), y)\n\n\n"
        "step(model, crit)\nstep(nn.Linear(4, 3), crit)\n"
    ))
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM502"] and r.findings[0].fix is None and not r.changed


def test_log_softmax_model_loss_object_escaping_is_report_only():
    src = LSM.format(loss="crit = nn.CrossEntropyLoss()\nl = crit(model(x), y)\nregister(crit)\n")
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM502"] and r.findings[0].fix is None


def test_log_softmax_model_loss_through_function_parameter_is_fixed():
    src = LSM.format(loss=(
        "def fit(net, loss_fn):\n    for x, y in loader:\n        loss = loss_fn(net(x), y)\n\n\n"
        "fit(model, nn.CrossEntropyLoss(ignore_index=-1))\n"
    ))
    r, out = run(src)
    assert codes(r) == ["TM502"] and "fit(model, nn.NLLLoss(ignore_index=-1))" in out


def test_variable_defined_in_outer_scope_is_not_moved():
    src = "p = F.softmax(z, 1)\n\n\ndef f():\n    return F.cross_entropy(p, y)\n"
    r, out = run(src)
    assert codes(r) == [] and not r.changed


def test_model_calling_itself_is_report_only():
    src = MODEL.format(body="return F.softmax(self.fc(x), dim=1)").replace(
        "    def forward(self, x):", "    def proba(self, x):\n        return self(x)\n\n    def forward(self, x):"
    )
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed


def test_submodule_access_does_not_block_the_fix():
    src = MODEL.format(body="return self.sm(self.fc(x))") + "for p in model.fc.parameters():\n    p.requires_grad_(False)\n"
    r, out = run(src)
    assert codes(r) == ["TM501"] and "return self.fc(x)" in out
    src = MODEL.format(body="return self.sm(self.fc(x))") + "model.sm = nn.Identity()\n"
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None


def test_loss_moved_to_device_and_local_softmax_module():
    src = """\
    device = torch.device("cpu")
    criterion = nn.CrossEntropyLoss().to(device)
    softmax = nn.Softmax(dim=1)
    out = softmax(z)
    loss = criterion(out, y)
    """
    r, out = run(src)
    assert codes(r) == ["TM501"] and "loss = criterion(z, y)" in out and "out = softmax" not in out


def test_log_softmax_model_loss_on_device_renamed():
    r, out = run(LSM.format(loss="crit = nn.CrossEntropyLoss(weight=w).cuda()\nl = crit(model(x), y)"))
    assert codes(r) == ["TM502"] and "crit = nn.NLLLoss(weight=w).cuda()" in out


@pytest.mark.parametrize(
    "call",
    ["self.model.softmax(z)", "helper.softmax(z)", "obj.softmax(z, 1)", "z.softmax(self.dim)", "self.logits.softmax(1)"],
)
def test_method_softmax_needs_a_tensor_and_a_literal_dim(call):
    src = f"class T:\n    def loss(self, z, y):\n        return F.cross_entropy({call}, y)\n"
    r, out = run(src, unsafe=True)
    assert codes(r) == [] and not r.changed
