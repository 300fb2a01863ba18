"""TM501 / TM502: (log-)softmax fed into cross-entropy.  One test per variant class,
plus look-alikes that must stay silent and unchanged."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch
from tests.siblings import unparsable_module

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


@pytest.mark.parametrize("shape", ["resize(1, 5)", "view_as(logits)", "reshape_as(logits)"])
def test_reshapes_the_loss_input_goes_through(shape):
    """(nishnik/Deep-Semantic-Similarity-Model-PyTorch: the model's softmax output reaches
    the loss as ``y_pred.resize(1, J+1)``, the deprecated ``Tensor.resize``)"""
    r, out = run(f"loss = F.cross_entropy(F.softmax(a + b, -1).{shape}, y)\n")
    assert codes(r) == ["TM501"] and f"F.cross_entropy((a + b).{shape}, y)" in out


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


@pytest.mark.parametrize("between", ["criterion = nn.CrossEntropyLoss()\n", "print('step')\nn = 2\n",
                                     "for k in range(2):\n    print(k)\n"])
def test_variable_not_adjacent_stable_input_is_substituted_at_the_use(between):
    """(abhi-vellala's TrainUnet.py) ``softmax = F.log_softmax(pred_masks, 1)``, then
    ``loss = nn.CrossEntropyLoss()``, then ``loss = loss(softmax, masks)``: the definition
    goes and the use gets the logits (the fix removed the line and left the use: NameError)."""
    src = ("def step(model, x, y):\n    out = model(x)\n    probs = F.log_softmax(out, dim=1)\n"
           + textwrap.indent(between, "    ") + "    loss = criterion(probs, y)\n    return loss\n")
    r, out = run("criterion = nn.CrossEntropyLoss()\n" + src)
    assert codes(r) == ["TM502"] and r.findings[0].applied
    assert "probs" not in out and "    loss = criterion(out, y)\n" in out
    compile(out, "t.py", "exec")


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


@pytest.mark.parametrize("src, fixed", [
    # kakaoenterprise/JORLDY icm.py: the name rebound from a value that reads it
    ("x = torch.randn(3, 8)\nx = F.relu(fc1(x))\nx = F.softmax(fc2(x), dim=1)\nloss = ce(x, y)\n",
     "x = torch.randn(3, 8)\nx = F.relu(fc1(x))\nloss = ce(fc2(x), y)\n"),
    # not adjacent: the name keeps the logits
    ("x = torch.randn(3, 8)\nx = F.softmax(fc2(x), dim=1)\nprint('step')\nloss = ce(x, y)\n",
     "x = torch.randn(3, 8)\nx = fc2(x)\nprint('step')\nloss = ce(x, y)\n"),
    ("for x, y in loader:\n    x = torch.softmax(net(x), 1)\n    loss = ce(x, y)\n",
     "for x, y in loader:\n    loss = ce(net(x), y)\n"),
])
def test_a_name_rebound_from_a_softmax_of_itself(src, fixed):
    r, out = run("ce = nn.CrossEntropyLoss()\n" + src)
    assert codes(r) == ["TM501"]
    assert body(out) == "ce = nn.CrossEntropyLoss()\n" + fixed


@pytest.mark.parametrize("src", [
    # the probabilities are read again after the loss: said, not fixed
    "x = torch.randn(3, 8)\nx = F.softmax(fc2(x), dim=1)\nloss = ce(x, y)\nacc = (x.argmax(1) == y).float().mean()\n",
    # the use may get another binding of the name
    "x = torch.randn(3, 8)\nx = F.softmax(fc2(x), dim=1)\nif flag:\n    x = fc3(z)\nloss = ce(x, y)\n",
])
def test_a_name_rebound_from_a_softmax_of_itself_read_elsewhere_is_report_only(src):
    r, out = run("ce = nn.CrossEntropyLoss()\n" + src)
    if "flag" in src:
        assert codes(r) == [] and body(out) == "ce = nn.CrossEntropyLoss()\n" + src
    else:
        assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed


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


# (rasbt/machine-learning-book ch13: ``all_layers.append(nn.Softmax(dim=1))`` after a loop
# that appends the hidden layers, then ``nn.Sequential(*all_layers)``)
LAYERS = """\
def get_model(sizes=(8, 4)):
    layers = [nn.Flatten()]
    n = 16
    for h in sizes:
        layers.append(nn.Linear(n, h))
        layers.append(nn.ReLU())
        n = h
    layers.append(nn.Linear(n, 3))
    layers.append(nn.Softmax(dim=1))  # probabilities
{after}    net = nn.Sequential(*layers)
    return net


net = get_model()
"""


def test_sequential_of_a_list_ended_by_an_appended_softmax():
    r, out = run(LAYERS.format(after="") + SEQ_TRAIN)
    assert codes(r) == ["TM501"] and r.findings[0].line == 12, [f.message for f in r.findings]
    assert "layers.append(nn.Softmax" not in out and "layers.append(nn.Linear(n, 3))\n" \
        "    net = nn.Sequential(*layers)  # probabilities\n" in out, out  # (its comment kept, on the next line)


@pytest.mark.parametrize("after", [
    "    print(layers)\n",  # read otherwise
    "    layers.insert(0, nn.Identity())\n",  # changed otherwise
    "    if n > 2:\n        layers.append(nn.Identity())\n",  # maybe something after it
    "    layers = layers[:-1]\n",  # bound again
])
def test_sequential_of_a_list_that_may_end_otherwise_is_silent(after):
    r, out = run(LAYERS.format(after=after) + SEQ_TRAIN)
    assert codes(r) == [] and not r.changed, [f.message for f in r.findings]


# (jeffheaton/app_deep_learning 04_3_kfold: ``model = model.to(device)`` after the Sequential;
# the name bound again to the same module hid it; his later notebooks add
# ``model = torch.compile(model)``)
@pytest.mark.parametrize("again", ["net.to('cuda')", "torch.compile(net)", "nn.DataParallel(net)"])
def test_sequential_bound_again_to_itself(again):
    src = f"net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\nnet = {again}\n" + SEQ_TRAIN
    r, out = run(src)
    assert codes(r) == ["TM501"] and body(out).startswith(f"net = nn.Sequential(nn.Linear(4, 3))\nnet = {again}\n")


def test_sequential_moved_under_its_own_name():
    src = "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\nnet = net.to('cuda')\n" + SEQ_TRAIN
    r, out = run(src)
    assert codes(r) == ["TM501"] and body(out).startswith("net = nn.Sequential(nn.Linear(4, 3))\nnet = net.to('cuda')\n")
    r, out = run(src + "torch.jit.script(net)\n", unsafe=True)  # a use not visible: report only
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed
    r, out = run(src + "print(net(x))\n")  # probabilities used after the move: unsafe
    assert bugs(r) == ["TM501"] and not r.changed
    # bound to another module, or added to after the move: not followed
    for more in ("net = nn.Linear(4, 3)\n", "net.add_module('extra', nn.Identity())\n"):
        r, _ = run(src.replace("net = net.to('cuda')\n", "net = net.to('cuda')\n" + more))
        assert codes(r) == [], [f.message for f in r.findings]


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


@pytest.mark.parametrize("ctor,head", [
    ("SM(dim=1)", "from torch.nn import Softmax as SM\n"),
    ("Act(dim=1)", "Act = nn.Softmax\n"),
    ("nn.Softmax(dim=1)", "# nn.Softmax held by self.sm; XSoftmax is another name\nclass XSoftmax:\n    pass\n"),
])
def test_softmax_module_under_another_name_is_followed(ctor, head):
    """The module may be built through a name bound to ``nn.Softmax`` here: the attribute
    that holds it is still followed into ``forward``'s return."""
    src = HEAD + head + MODEL.format(body="return self.sm(self.fc(x))").replace("nn.Softmax(dim=1)", ctor)
    r, out = run(src, head=False)
    assert codes(r) == ["TM501"]
    assert "return self.fc(x)" in out


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
NET_LSM = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)
"""
LSM = NET_LSM + """

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


# ----------------------------------------------------------------------------- issue 10: real-code shapes
SOFT_MODEL = MODEL.format(body="return F.softmax(self.fc(x), dim=1)")


@pytest.mark.parametrize(
    "extra",
    [
        "model.eval()\n",
        "model.train()\n",
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "torch.save(model.state_dict(), 'm.pt')\n",
        "model = model.to('cpu')\nmodel.eval()\n",
        "print(model)\n",
        "n = sum(p.numel() for p in model.parameters())\n",
        "out = model(x)\nacc = (out.argmax(1) == y).float().mean()\n",
        "out = model(x)\ntotal = out.size(0) + out.shape[0] + len(out)\n",
        "assert isinstance(model, Net)\n",
        "with torch.no_grad():\n    correct = model(x).max(1)[1].eq(y).sum()\n",
        "values, idx = model(x).max(dim=1)\nprint(idx)\n",
        "wrapped = nn.DataParallel(model)\npred = wrapped(x).argmax(dim=1)\n",
    ],
)
def test_known_harmless_uses_keep_the_fix_safe(extra):
    r, out = run(SOFT_MODEL + extra)
    assert codes(r) == ["TM501"], [f.format() for f in r.findings]
    assert r.findings[0].fix.safety.value == "safe" and "return self.fc(x)" in out


@pytest.mark.parametrize(
    "extra, why",
    [
        ("torch.save(model, 'm.pt')\n", "torch.save(model, 'm.pt')"),
        ("from mylib import summary\nsummary(model)\n", "summary(model)"),
        ("models = [model]\n", "line"),
        ("scripted = torch.jit.script(model)\n", "torch.jit.script(model)"),
        ("class Bigger(Net):\n    pass\n", "`Net` is used"),
    ],
)
def test_unknown_uses_block_the_fix_and_say_where(extra, why):
    r, out = run(SOFT_MODEL + extra, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed
    assert why in r.findings[0].message


def test_old_style_super_call_and_global_model_read_by_functions():
    src = """\
    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            x = self.fc(x)
            return F.softmax(x, dim=1)


    model = Net()
    criterion = nn.CrossEntropyLoss()


    def train():
        model.train()
        for x, y in loader:
            loss = criterion(model(x), y)


    def test():
        model.eval()
        _, predicted = torch.max(model(x).data, 1)
        return predicted
    """
    r, out = run(src)
    assert codes(r) == ["TM501"] and "        return x\n" in out and "softmax" not in body(out)


def test_builder_and_tuple_unpacking_are_followed():
    src = """\
    def build():
        return nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))


    def setup():
        m = build()
        return m, torch.optim.SGD(m.parameters(), lr=0.1)


    net, opt = setup()
    loss = nn.CrossEntropyLoss()(net(x), y)
    pred = net(x).argmax(dim=1)
    """
    r, out = run(src)
    assert codes(r) == ["TM501"] and "return nn.Sequential(nn.Linear(4, 3))\n" in out
    r, out = run(src + "print(net(x))\n")  # a probability use: unsafe, that line reported too
    assert bugs(r) == ["TM501"] and [f.line for f in notes(r)] == [16] and not r.changed


def test_model_in_a_trainer_attribute_with_unknown_receiver_blocks():
    src = """\
    class Trainer:
        def __init__(self):
            self.model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
            self.crit = nn.CrossEntropyLoss()

        def step(self, x, y):
            return self.crit(self.model(x), y)


    def report(t):
        return t.model
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None
    src = textwrap.dedent(src)
    assert "def report(t):\n    return t.model\n" in src
    r, out = run(src.replace("def report(t):\n    return t.model\n", "t = Trainer()\nt.step(x, y)\n"))
    assert codes(r) == ["TM501"] and "self.model = nn.Sequential(nn.Linear(4, 3))" in out


def test_reaching_a_model_through_unknown_callers_reports_only():
    """``train`` may be called from another file with another model: the known caller
    shows the bug (reported), the fix waits for all uses to be visible."""
    src = SOFT_MODEL.replace("def train(model", "def train(model").replace(
        'model = Net().to("cpu")\ntrain(model, loader, nn.CrossEntropyLoss())\n', ""
    ) + "if __name__ == '__main__':\n    train(Net(), loader, nn.CrossEntropyLoss())\n"
    r, out = run(src)
    assert codes(r) == ["TM501"] and r.changed


# ----------------------------------------------------------------------------- issue 12: comments kept, edits at reported lines
@pytest.mark.parametrize(
    "seq, want",
    [
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),\n    nn.Softmax(dim=1),  # probabilities\n)\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3),  # probabilities\n)\n",
        ),
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),  # head\n    nn.Softmax(dim=1)  # probabilities\n)\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3)  # head\n    # probabilities\n)\n",
        ),
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),\n    # the output layer\n    nn.Softmax(dim=1),\n)\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3),\n    # the output layer\n)\n",
        ),
        (
            "net = nn.Sequential(\n    nn.Linear(4, 3),  # head\n    nn.Softmax(dim=1))\n",
            "net = nn.Sequential(\n    nn.Linear(4, 3)  # head\n)\n",
        ),
        (
            "net = nn.Sequential(nn.Linear(4, 3),\n                    nn.Softmax(  # normalise\n                        dim=1))\n",
            None,
        ),
    ],
)
def test_sequential_comments_are_kept(seq, want):
    r, out = run(seq + SEQ_TRAIN)
    assert codes(r) == ["TM501"]
    got = body(out)[: body(out).index("loss_fn")]
    if want is not None:
        assert got == want
    for c in ("# probabilities", "# head", "# the output layer", "# normalise"):
        assert (c in seq) == (c in got), (c, got)
    assert "Softmax" not in got


@pytest.mark.parametrize(
    "fwd, want",
    [
        ("x = self.fc(x)\n        x = F.softmax(x, dim=1)  # probs\n        return x",
         "x = self.fc(x)\n        return x  # probs"),
        ("x = self.fc(x)\n        # normalise\n        x = F.softmax(x, dim=1)\n        return x  # out",
         "x = self.fc(x)\n        # normalise\n        return x  # out"),
        ("h = self.fc(x)\n        out = h.softmax(1)  # p\n        return out",
         "h = self.fc(x)\n        return h  # p"),
        ("return F.softmax(\n            self.fc(x),  # logits\n            dim=1,\n        )",
         "# logits\n        return self.fc(x)"),
    ],
)
def test_forward_comments_move_to_the_surviving_line(fwd, want):
    r, out = run(MODEL.format(body=fwd))
    assert codes(r) == ["TM501"], [f.format() for f in r.findings]
    assert want in out, out


def test_variable_trailing_comment_moves_to_the_loss_line():
    src = "ce = nn.CrossEntropyLoss()\np = F.softmax(z, 1)  # probabilities\nloss = ce(p, y)\n"
    r, out = run(src)
    assert "loss = ce(z, y)  # probabilities\n" in out and "p =" not in out
    src = "ce = nn.CrossEntropyLoss()\np = F.softmax(z, 1)  # probabilities\nprint(1)\nloss = ce(p, y)  # the loss\n"
    r, out = run(src)  # not adjacent: the line stays, with its comment, and holds the logits
    assert "p = z  # probabilities\nprint(1)\nloss = ce(p, y)  # the loss\n" in out


def test_inline_multiline_softmax_comment_kept():
    src = "loss = F.cross_entropy(\n    F.softmax(\n        z,  # scores\n        dim=1,\n    ),\n    y,\n)\n"
    r, out = run(src)
    assert codes(r) == ["TM501"] and "# scores" in out and "softmax" not in body(out)


def test_tm502_is_reported_at_the_loss_it_rewrites():
    src = LSM.format(loss="\n\ncriterion = nn.CrossEntropyLoss(reduction='sum')\n\n\nl = criterion(model(x), y)")
    r, out = run(src)
    (f,) = r.findings
    assert f.code == "TM502" and "criterion = nn.NLLLoss(reduction='sum')" in out
    lines = out.splitlines()
    assert lines[f.line - 1].startswith("criterion = ")
    assert f"line(s) {lines.index('l = criterion(model(x), y)') + 1}" in f.message and "line 10" in f.message


def _edited_old_lines(diff: bytes) -> set[int]:
    """Old-side line numbers a unified diff deletes or inserts before."""
    import re

    out: set[int] = set()
    old = 0
    replacing = False  # "+" lines right after "-" lines replace them
    for line in diff.decode().splitlines():
        m = re.match(r"@@ -(\d+)", line)
        if m:
            old, replacing = int(m.group(1)), False
        elif line.startswith(("---", "+++", "diff ", "index ")):
            continue
        elif line.startswith("-"):
            out.add(old)
            old += 1
            replacing = True
        elif line.startswith("+"):
            out.add(old - 1 if replacing else old)
        else:
            old += 1
            replacing = False
    return out


def _named_lines(f) -> set[int]:
    import re

    lines = set(range(f.line, f.end_line + 1)) | set(range(f.stmt_lines[0], f.stmt_lines[1] + 1))
    for m in re.finditer(r"line(?:\(s\))? ([\d, ]+)", f.message):
        lines |= {int(x) for x in re.findall(r"\d+", m.group(1))}
    return lines


def test_every_edited_line_is_named_by_a_finding_of_the_fix():
    """No edit outside the lines a reported finding names (its own span and statement,
    or a line its message names): on the whole softmax corpus, safe and unsafe."""
    from tests.corpus_cases import load_cases

    checked = 0
    for case in load_cases():
        if case.pitfall != "softmax" or case.kind != "bug":
            continue
        src = case.read().decode()
        for unsafe in (False, True):
            r = process_text(case.path(), src, Options(unsafe_fixes=unsafe, select=frozenset({"TM501", "TM502"})))
            if not r.changed:
                continue
            named = set().union(*(_named_lines(f) for f in r.findings if f.applied))
            edited = _edited_old_lines(r.diff)
            assert edited <= named, (case.id, unsafe, sorted(edited - named))
            checked += 1
    assert checked >= 15


# ----------------------------------------------------------------------------- the semantic model queries added for softmax
def _sem(src):
    from torchmend.semantic import SemanticModel

    return SemanticModel(textwrap.dedent(src), "s.py", lazy=False)


def test_value_uses_follows_names_params_attributes_returns_and_tuples():
    import ast

    sem = _sem("""\
    class T:
        def __init__(self, m):
            self.m = m
        def run(self, x):
            return self.m(x)
    def make():
        net = Net()
        return net, 1
    def use(k):
        k.eval()
    a, b = make()
    use(a)
    t = T(a)
    other.m(1)
    """)
    ctor = [c for c in sem.find(ast.Call, containing=("Net",)) if isinstance(c.func, ast.Name) and c.func.id == "Net"][0]
    flow = sem.value_uses(ctor)
    got = sorted((u.lineno, sem.segment(sem.parent(u))) for u in flow.uses)
    assert got == [(5, "self.m(x)"), (10, "k.eval")]
    # ``other.m``: ``other`` may be a T (unknown origin): an escape
    assert [e.lineno for e in flow.escapes] == [3]


def test_bound_parameter_and_maybe_instance():
    import ast

    from torchmend.semantic import UNKNOWN_ARG

    sem = _sem("""\
    class C:
        def m(self, a, *rest, k=1):
            pass
    def f(x, y=2):
        pass
    c = C()
    c.m(1, 2, k=3)
    f(4, y=5)
    f(*z)
    n = 0
    """)
    calls = {sem.segment(c): c for c in sem.find(ast.Call)}
    cm = calls["c.m(1, 2, k=3)"]
    assert sem.bound_parameter(cm, cm.args[0]).name == "a"
    assert sem.bound_parameter(cm, cm.args[1]) is UNKNOWN_ARG  # *rest
    assert sem.bound_parameter(cm, cm.keywords[0].value).name == "k"
    fc = calls["f(4, y=5)"]
    assert sem.bound_parameter(fc, fc.keywords[0].value).name == "y"
    assert sem.bound_parameter(calls["f(*z)"], calls["f(*z)"].args[0]) is UNKNOWN_ARG
    assert sem.bound_parameter(calls["C()"], None) in (None, UNKNOWN_ARG)
    cls = sem.find(ast.ClassDef)[0]
    names = {n.id: n for n in sem.find(ast.Name) if isinstance(n.ctx, ast.Load)}
    assert sem.maybe_instance(names["c"], cls) is True
    assert sem.maybe_instance(names["z"], cls) is None
    n_load = _sem("n = 0\nprint(n)\nclass C:\n    pass\n")
    nm = [x for x in n_load.find(ast.Name) if x.id == "n" and isinstance(x.ctx, ast.Load)][0]
    assert n_load.maybe_instance(nm, n_load.find(ast.ClassDef)[0]) is False


def test_reaching_in_a_loop_respects_a_dominating_rebinding():
    import ast

    sem = _sem("for i in r:\n    o = f(i)\n    o = g(o)\n    h(o)\n")
    loads = [n for n in sem.find(ast.Name) if n.id == "o" and isinstance(n.ctx, ast.Load)]
    assert [b.order[0] for b in sem.reaching(loads[0])] == [2]  # not the line-3 binding of the previous iteration
    assert [b.order[0] for b in sem.reaching(loads[1])] == [3]
    sem = _sem("o = 0\nfor i in r:\n    h(o)\n    o = g(o)\n")
    first = [n for n in sem.find(ast.Name) if n.id == "o" and isinstance(n.ctx, ast.Load)][0]
    assert sorted(b.order[0] for b in sem.reaching(first)) == [1, 4]


def test_lightning_module_and_explicit_forward_call_report_only():
    src = """\
    import lightning.pytorch as pl


    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return F.softmax(self.fc(x), dim=1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self.forward(x)
            return F.cross_entropy(logits, y)
    """
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and not r.changed
    assert "`Lit.forward`" in r.findings[0].message
    # even when nothing in the file calls the module itself, the framework may (predict)
    src2 = textwrap.dedent(src).replace("logits = self.forward(x)\n        ", "") + "m = Lit()\nl = F.cross_entropy(m(x), y)\n"
    r, out = run(src2, unsafe=True)
    assert bugs(r) == ["TM501"] and all(f.fix is None for f in r.findings)
    assert "LightningModule" in r.findings[0].message


def test_forward_hook_sees_the_probabilities():
    r, out = run(SOFT_MODEL + "model.register_forward_hook(lambda m, i, o: print(o))\n", unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None


def test_comments_on_every_edited_line_survive_the_fix():
    """Issue 12: a comment at the end of (and above) each line a fix edits is still in
    the output, on the whole softmax corpus, safe and unsafe."""
    import ast as _ast

    from tests.corpus_cases import load_cases

    tried = 0
    for case in load_cases():
        if case.pitfall != "softmax" or case.kind != "bug":
            continue
        src = case.read().decode()
        for unsafe in (False, True):
            opts = Options(unsafe_fixes=unsafe, select=frozenset({"TM501", "TM502"}))
            r = process_text(case.path(), src, opts)
            if not r.changed:
                continue
            lines = src.splitlines(keepends=True)
            marked = list(lines)
            tags = []
            for n in sorted(_edited_old_lines(r.diff)):
                if not 1 <= n <= len(lines):
                    continue
                body_ = lines[n - 1].rstrip("\n")
                if "#" in body_ or not body_.strip():
                    continue
                indent = body_[: len(body_) - len(body_.lstrip())]
                trial = list(marked)
                trial[n - 1] = f"{indent}# above {n}\n{body_}  # tag {n}\n"
                text = "".join(trial)
                try:
                    same = _ast.dump(_ast.parse(text)) == _ast.dump(_ast.parse("".join(marked)))
                except SyntaxError:
                    same = False
                if same:
                    marked = trial
                    tags += [f"# above {n}", f"# tag {n}"]
            text = "".join(marked)
            got = process_text(case.path(), text, opts)
            assert got.error is None and got.changed, (case.id, got.error)
            out = apply_patch(text.encode(), got.diff).decode()
            for t in tags:
                assert out.count(t) == 1, (case.id, unsafe, t, got.diff.decode())
            tried += len(tags)
    assert tried >= 40, tried


def test_non_literal_softmax_dim_is_never_copied_to_a_use():
    src = MODEL.format(body="return F.softmax(self.fc(x), dim=self.dim)").replace(
        "_, pred = torch.max(out, 1)", "print(out)"
    )
    r, out = run(src, unsafe=True)
    assert codes(r) == ["TM501"] and r.findings[0].fix is None and "not a literal" in r.findings[0].message


def test_model_built_by_a_sibling_builder_is_reported(tmp_path):
    (tmp_path / "nets.py").write_text(
        HEAD + "def make_net(n):\n    net = nn.Sequential(nn.Linear(n, 3), nn.Softmax(dim=1))\n    return net\n\n\n"
        "def make_plain(n):\n    return nn.Linear(n, 3)\n"
    )
    src = HEAD + "from nets import make_net, make_plain\nnet = make_net(4)\nplain = make_plain(4)\n" \
        "loss = F.cross_entropy(net(x), y) + F.cross_entropy(plain(x), y)\n"
    path = tmp_path / "train.py"
    path.write_text(src)
    r = process_text(str(path), src, Options(unsafe_fixes=True))
    assert codes(r) == ["TM501"] and not r.changed and r.findings[0].fix is None
    assert "`make_net()` (from nets.py) ends with `nn.Softmax(dim=1)`" in r.findings[0].message


@pytest.mark.parametrize("call", ["F.cross_entropy (F.softmax(z, 1), y)", "nn.CrossEntropyLoss()(\n        F.softmax(z, 1), y)"])
def test_loss_called_in_a_long_file_among_definitions_that_only_name_it(call):
    """In a long file (read definition by definition), the cross-entropy call is found
    in the definition that calls it (a space before the bracket, an inline loss across
    lines); definitions that only name the loss in docstrings and hints are not parsed."""
    others = "".join(
        f"\n\ndef note{i}(loss: nn.CrossEntropyLoss):\n    \"\"\"Wraps F.cross_entropy.\"\"\"\n" + "    x = 1\n" * 150
        + "    return loss\n" for i in range(3))
    src = HEAD + others + f"\n\ndef train(z, y):\n    loss = {call}\n    return loss\n"
    r = process_text("t.py", src, Options())
    assert r.error is None and codes(r) == ["TM501"]
    from torchmend.rule import Context
    from torchmend.rules.tm501_softmax_before_cross_entropy import SoftmaxBeforeCrossEntropy
    from torchmend.semantic import SemanticModel

    sem = SemanticModel(src)
    assert len(sem.source.chunks) > 3
    list(SoftmaxBeforeCrossEntropy().check(Context("t.py", src, sem)))
    assert [c.name for c in sem.source.chunks if c.kind == "def" and c.stmts is not None] == ["train"]


# (lansinuote/Huggingface_Toturials: ``out = out.argmax(dim=1)`` after the loss, then
# ``(out == labels)``: that ``out`` holds the indices, not the model's probabilities; the
# fix re-applied the softmax to it, which raises on a Long tensor)
RANKED = """\
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        out = self.fc(x)
        out = out.softmax(dim=1)
        return out


model = Model()
criterion = nn.CrossEntropyLoss()
for x, labels in loader:
    out = model(x)
    loss = criterion(out, labels)
    if step % 5 == 0:
        out = out.argmax(dim=1)
        accuracy = (out == labels).sum().item()
{after}"""


def test_a_name_rebound_to_the_ranking_is_no_use_of_the_probabilities():
    r, out = run(RANKED.format(after=""))
    assert bugs(r) == ["TM501"] and not notes(r)
    assert "out = out.softmax(dim=1)" not in out and "out.softmax" not in out and "(out == labels)" in out


def test_the_probabilities_read_where_the_rebinding_may_not_have_run_are_still_uses():
    r, out = run(RANKED.format(after="    print(out[0])\n"), unsafe=True)
    assert bugs(r) == ["TM501"]
    assert "(out == labels)" in out  # the indices: untouched


# (vinhkhuc/PyTorch-Mini-Tutorials: ``output = loss.forward(fx, y)``: the loss module
# called through its ``forward`` method)
def test_a_loss_called_through_forward():
    r, out = run("""\
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return F.softmax(self.fc(x), dim=1)


    model = Net()
    loss = nn.CrossEntropyLoss()
    for x, y in loader:
        fx = model.forward(x)
        output = loss.forward(fx, y)
    """)
    assert bugs(r) == ["TM501"] and "feeds `loss.forward`" in r.findings[0].message
    assert "return self.fc(x)" in out


def test_a_sequential_built_with_add_module_ends_with_its_last_addition():
    """``seq = nn.Sequential(); seq.add_module(...)``: the last module added is the last
    layer (removed when it is a Softmax); a Softmax followed by an added layer is not
    the output, and a sequence changed otherwise is not judged."""
    from torchmend.engine import Options, process_text

    head = "import torch\nimport torch.nn as nn\n"
    tail = "loss = nn.CrossEntropyLoss()(model(torch.randn(2, 8)), torch.tensor([0, 1]))\n"
    bug = head + ("model = nn.Sequential()\nmodel.add_module('fc', nn.Linear(8, 3))\n"
                  "model.add_module('sm', nn.Softmax(dim=1))\n") + tail
    r = process_text("t.py", bug, Options())
    assert [f.code for f in r.findings] == ["TM501"] and r.findings[0].applied
    assert b"-model.add_module('sm', nn.Softmax(dim=1))" in r.diff
    for body in (
        "model = nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1))\nmodel.add_module('head', nn.Linear(3, 3))\n",
        "model = nn.Sequential()\nmodel.add_module('sm', nn.Softmax(dim=1))\nmodel.add_module('fc', nn.Linear(8, 3))\n",
        "model = nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1))\nmodel.append(nn.Linear(3, 3))\n",
        "model = nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1))\nmodel[1] = nn.Identity()\n",
        "model = nn.Sequential()\nmodel.add_module('fc', nn.Linear(8, 3))\nif True:\n"
        "    model.add_module('sm', nn.Softmax(dim=1))\n",
    ):
        r = process_text("t.py", head + body + tail, Options(unsafe_fixes=True))
        assert r.findings == [] and not r.changed, body


# ----------------------------------------------------------------------------- heads out of the plain shape
TRAIN = """
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    out = model(x)
    loss = criterion({out}, y)
    loss.backward()
    opt.step()
"""


def test_forward_returns_a_name_bound_by_a_sequential_head():
    r, out = run(textwrap.dedent("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(8, 16)
                self.head = nn.Sequential(nn.Linear(16, 4), nn.Softmax(dim=1))

            def forward(self, x):
                h = self.body(x)
                out = self.head(h)
                return out

        model = Net()
        """) + TRAIN.format(out="out"))
    assert bugs(r) == ["TM501"] and "`Net.head` ends with `nn.Softmax(dim=1)`" in r.findings[0].message


def test_forward_returning_the_softmax_inside_a_tuple():
    src = """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 4)

            def forward(self, x):
                logits = self.fc(x)
                probs = F.softmax(logits, dim=1)
                return {ret}

        model = Net()
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            a, b = model(x)
            loss = criterion(a, y)
        """
    r, out = run(src.replace("{ret}", "probs, logits.argmax(1)"))
    assert bugs(r) == ["TM501"] and "element 0 of a tuple" in r.findings[0].message and out == HEAD + textwrap.dedent(
        src.replace("{ret}", "probs, logits.argmax(1)"))
    # the logits are element 0, the probabilities beside them: the loss gets logits
    r, _ = run(src.replace("{ret}", "logits, probs"))
    assert r.findings == []


def test_a_torchvision_head_replaced_by_a_sequential_ending_with_log_softmax():
    src = textwrap.dedent("""
        import torchvision.models as models
        model = models.densenet121(weights=None)
        model.classifier = nn.Sequential(nn.Linear(1024, 2), {last})
        """) + TRAIN.format(out="out")
    r, out = run(src.replace("{last}", "nn.LogSoftmax(dim=1)"))
    assert codes(r) == ["TM502"] and "`model.classifier`" in r.findings[0].message
    assert "nn.NLLLoss()" in out
    r, _ = run(src.replace("{last}", "nn.Softmax(dim=1)"))
    assert bugs(r) == ["TM501"] and r.findings[0].fix is None
    r, _ = run(src.replace("{last}", "nn.ReLU()"))
    assert r.findings == []


def test_a_softmax_function_kept_as_an_attribute():
    r, out = run(textwrap.dedent("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 4)
                self.softmax = nn.functional.softmax

            def forward(self, x):
                logits = self.fc(x)
                return self.softmax(logits, 1)

        model = Net()
        """) + TRAIN.format(out="out"))
    assert bugs(r) == ["TM501"]
    assert "return logits\n" in out


# ----------------------------------------------------------------------------- dims moved before the loss
TAGGER = """\
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.out = nn.Linear(16, 5)

    def forward(self, s):
        h, _ = self.lstm(self.emb(s))
        return {soft}


model = Tagger()
criterion = nn.CrossEntropyLoss()
for s, tags in loader:
    loss = criterion(model(s).{move}, tags)
"""


@pytest.mark.parametrize("soft, move", [
    ("F.log_softmax(self.out(h), dim=2)", "transpose(1, 2)"),
    ("F.log_softmax(self.out(h), dim=2)", "transpose(2, 1)"),
    ("F.log_softmax(self.out(h), dim=-1)", "permute(0, 2, 1)"),
    ("F.log_softmax(self.out(h), dim=-1)", "transpose(1, -1)"),
    ("F.log_softmax(self.out(h), dim=2)", "movedim(2, 1)"),
    ("F.log_softmax(self.out(h), dim=-1)", "swapaxes(-1, 1)"),
    ("F.log_softmax(self.out(h), dim=-1)", "permute(0, 2, 1).contiguous()"),
])
def test_class_dim_moved_into_place_is_followed(soft, move):
    r, out = run(TAGGER.format(soft=soft, move=move))
    assert codes(r) == ["TM502"]
    assert "criterion = nn.NLLLoss()" in out


@pytest.mark.parametrize("soft, move", [
    ("F.log_softmax(self.out(h), dim=-1)", "transpose(1, 2)"),  # dim 1 only if the output is 3-d
    ("F.log_softmax(self.out(h), dim=-1)", "transpose(-1, -2)"),  # (the same)
    ("F.log_softmax(self.out(h), dim=2)", "transpose(1, -1)"),  # (the same)
    ("F.log_softmax(self.out(h), dim=-1)", "movedim(-1, 1)"),  # movedim of a negative dim: the rank decides
    ("F.log_softmax(self.out(h), dim=1)", "transpose(1, 2)"),  # the softmax's dim moves away from 1
    ("F.log_softmax(self.out(h), dim=2)", "transpose(1, 2).reshape(-1, 5)"),  # dims regrouped
    ("F.log_softmax(self.out(h), dim=2)", "permute(0, 2)"),  # not a permutation of the rank
    ("F.log_softmax(self.out(h))", "transpose(1, 2)"),  # implicit dim
    ("F.log_softmax(self.out(h), dim=2)", "transpose(1, k)"),
])
def test_class_dim_not_shown_in_place_is_left_alone(soft, move):
    r, out = run(TAGGER.format(soft=soft, move=move).replace("for s, tags", "k = 2\nfor s, tags"))
    assert codes(r) == []


def test_inline_softmax_under_a_transpose():
    r, out = run("loss = F.cross_entropy(F.log_softmax(z, dim=2).transpose(1, 2), y)\n")
    assert codes(r) == ["TM502"]
    assert body(out) == "loss = F.cross_entropy(z.transpose(1, 2), y)\n"
    r, out = run("loss = F.cross_entropy(F.log_softmax(z, dim=1).transpose(1, 2), y)\n")
    assert codes(r) == []


def test_a_model_with_one_site_off_the_class_dim_is_left_alone():
    src = TAGGER.format(soft="F.log_softmax(self.out(h), dim=2)", move="transpose(1, 2)")
    src += "    other = criterion(model(s), tags)\n"
    r, out = run(src)
    assert codes(r) == []


def test_a_view_may_bring_the_softmax_dim_to_the_class_dim():
    src = TAGGER.format(soft="F.log_softmax(self.out(h), dim=2)", move="view(-1, 5)")
    r, out = run(src.replace("tags)", "tags.view(-1))"))
    assert codes(r) == ["TM502"]
    r, out = run(src.replace(".view(-1, 5)", "").replace("tags)", "tags.view(-1))"))
    assert codes(r) == []  # dim 2 straight into the loss: the loss's class dim is 1


# ----------------------------------------------------------------------------- handed to a trainer of another file
HANDED = """\
from skorch import NeuralNetClassifier
from ignite.engine import create_supervised_trainer


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {ret}


"""


@pytest.mark.parametrize("call, code", [
    ("net = NeuralNetClassifier(Net, criterion=nn.CrossEntropyLoss, max_epochs=3)\n", "TM501"),
    ("model = Net()\ncriterion = nn.CrossEntropyLoss()\ntrainer = create_supervised_trainer(model, opt, criterion)\n", "TM501"),
    ("trainer = Trainer(model=Net(), loss_fn=torch.nn.CrossEntropyLoss(label_smoothing=0.1))\n", "TM501"),
])
def test_a_softmax_model_handed_with_a_cross_entropy_is_reported(call, code):
    r, out = run(HANDED.format(ret="F.softmax(self.fc(x), dim=1)") + call)
    assert codes(r) == [code] and r.findings[0].fix is None and not r.changed
    assert "remove the final softmax" in r.findings[0].message
    r, _ = run(HANDED.format(ret="F.log_softmax(self.fc(x), dim=1)") + call)
    assert codes(r) == ["TM502"] and "use NLLLoss" in r.findings[0].message


@pytest.mark.parametrize("call", [
    # the loss skorch uses by default for classifiers: NLLLoss on probabilities (right)
    "net = NeuralNetClassifier(Net, max_epochs=3)\n",
    "net = NeuralNetClassifier(Net, criterion=nn.NLLLoss)\n",
    # not code that trains
    "print(Net(), nn.CrossEntropyLoss())\n",
    "import wandb\nwandb.watch(Net(), nn.CrossEntropyLoss())\n",
    "torch.save({'model': Net(), 'loss': nn.CrossEntropyLoss()}, 'x.pt')\n",
    # a same-file function: its body is read (here it uses the loss on something else)
    "def fit(model, crit):\n    return crit(torch.randn(2, 3), torch.zeros(2, dtype=torch.long))\n\n\nfit(Net(), nn.CrossEntropyLoss())\n",
])
def test_handed_look_alikes(call):
    r, _ = run(HANDED.format(ret="F.softmax(self.fc(x), dim=1)") + call)
    assert codes(r) == []


def test_a_logits_model_handed_with_a_cross_entropy_is_silent():
    r, _ = run(HANDED.format(ret="self.fc(x)") + "net = NeuralNetClassifier(Net, criterion=nn.CrossEntropyLoss)\n")
    assert codes(r) == []


# (Polarisoo/eecs498-598-dlcv-wi2022 a2_challenge_problem: a loss of probabilities under
# ``torch.no_grad()`` only sorts the digits: no gradient is taken, the value is what is wrong)
@pytest.mark.parametrize("wrap", [
    "with torch.no_grad():\n    {body}",
    "@torch.no_grad()\ndef evaluate():\n    {body}",
    "@torch.inference_mode()\ndef evaluate():\n    {body}",
])
def test_a_loss_of_probabilities_without_gradients_is_a_wrong_value(wrap):
    body = "loss = F.cross_entropy(F.softmax(model(x), dim=1), y)"
    r, _ = run(wrap.format(body=body) + "\n")
    assert codes(r) == ["TM501"] and "is not the cross-entropy of the predictions" in r.findings[0].message
    r, _ = run(body + "\n")
    assert codes(r) == ["TM501"] and "its gradient vanishes" in r.findings[0].message


@pytest.mark.parametrize("loss,fixed", [
    ("F.nll_loss(F.softmax(out, dim=1), y)", "F.nll_loss(F.log_softmax(out, dim=1), y)"),
    ("nn.NLLLoss()(out.softmax(dim=1), y)", "nn.NLLLoss()(out.log_softmax(dim=1), y)"),
    ("crit(F.softmax(out, 1).view(-1, 3), y)", "crit(F.log_softmax(out, 1).view(-1, 3), y)"),
])
def test_softmax_into_nll_loss_becomes_log_softmax(loss, fixed):
    # NLLLoss expects log-probabilities: probabilities give a negative, meaningless loss
    r, out = run(f"crit = nn.NLLLoss()\nloss = {loss}\n")
    assert codes(r) == ["TM501"] and "expects log-probabilities" in r.findings[0].message
    assert f"loss = {fixed}\n" in out


@pytest.mark.parametrize("src,found", [
    ("loss = F.nll_loss(F.log_softmax(out, dim=1), y)\n", []),
    ("loss = F.nll_loss(torch.log(F.softmax(out, dim=1)), y)\n", []),  # log applied: right
    ("loss = F.nll_loss(F.softmax(out, dim=0), y)\n", []),  # not the class dim
    # through a name or a module object: said, not fixed
    ("p = F.softmax(out, dim=1)\nloss = F.nll_loss(p, y)\n", ["TM501"]),
    ("sm = nn.Softmax(dim=1)\nloss = F.nll_loss(sm(out), y)\n", ["TM501"]),
])
def test_softmax_into_nll_loss_lookalikes_and_report_only(src, found):
    r, out = run(src)
    assert codes(r) == found and not r.changed


_NLL_MODEL = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {ret}


model = Net()
{loss_def}
for x, y in loader:
    out = model(x)
    loss = {loss}
"""


@pytest.mark.parametrize("ret,loss_def,loss,found", [
    # a model ending with a softmax, its output fed to NLLLoss: reported at the softmax, not fixed
    ("F.softmax(self.fc(x), dim=1)", "crit = nn.NLLLoss()", "crit(out, y)", ["TM501"]),
    ("F.softmax(self.fc(x), dim=1)", "", "F.nll_loss(out, y)", ["TM501"]),
    ("self.fc(x).softmax(dim=1)", "", "F.nll_loss(model(x), y)", ["TM501"]),
    # look-alikes: log-probabilities, the log taken at the loss, another dim, no softmax at all
    ("F.log_softmax(self.fc(x), dim=1)", "crit = nn.NLLLoss()", "crit(out, y)", []),
    ("F.softmax(self.fc(x), dim=1)", "crit = nn.NLLLoss()", "crit(torch.log(out), y)", []),
    ("F.softmax(self.fc(x), dim=0)", "crit = nn.NLLLoss()", "crit(out, y)", []),
    ("self.fc(x)", "crit = nn.NLLLoss()", "crit(out, y)", []),
])
def test_a_model_ending_with_a_softmax_into_nll_loss_is_reported(ret, loss_def, loss, found):
    r, _ = run(_NLL_MODEL.format(ret=ret, loss_def=loss_def, loss=loss))
    assert codes(r) == found and not r.changed
    if found:
        f = r.findings[0]
        assert "expects log-probabilities" in f.message and "`Net.forward` ends with" in f.message
        assert f.line == 11  # the model's softmax (HEAD's 3 lines, then the class)


def test_a_sibling_module_that_does_not_parse_is_not_followed(tmp_path):
    # (Python 2 code in the sibling's class: a part a lazy parse reaches only when the model is read)
    (tmp_path / "models.py").write_text(unparsable_module(
        HEAD, "class Net(nn.Module):\n    def forward(self, x):\n        print 'x'\n        return F.softmax(self.fc(x), 1)\n"))
    src = HEAD + "from models import Net\nnet = Net()\nloss = F.cross_entropy(net(x), y)\n"
    path = str(tmp_path / "train.py")
    (tmp_path / "train.py").write_text(src)
    r = process_text(path, src, Options())
    assert r.error is None and codes(r) == []


_REGISTRY_MODEL = """
class GIN(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {gin}


class MLP(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {mlp}


gnn_models = {{
    'gin': GIN,
    'mlp': MLP,
}}
{extra}

def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def main(args, loader):
    model = gnn_models[args.model](args)
    train(model, loader, torch.optim.Adam(model.parameters()))
"""


@pytest.mark.parametrize("gin,mlp,extra,found,fixed", [
    # every model the registry gives ends with log_softmax: the loss becomes nll_loss (said
    # once, naming both)
    ("F.log_softmax(self.fc(x), dim=-1)", "F.log_softmax(self.fc(x), dim=1)", "", ["TM502"], True),
    # one of them returns logits: reported, not fixed (the loss receives other values too)
    ("F.log_softmax(self.fc(x), dim=-1)", "self.fc(x)", "", ["TM502"], False),
    # a softmax model among them
    ("F.softmax(self.fc(x), dim=-1)", "self.fc(x)", "", ["TM501"], False),
    # look-alikes: logits only; a registry changed elsewhere is not followed
    ("self.fc(x)", "self.fc(x)", "", [], False),
    ("F.log_softmax(self.fc(x), dim=-1)", "self.fc(x)", "gnn_models['other'] = nn.Linear", [], False),
])
def test_a_model_from_a_registry_dict(gin, mlp, extra, found, fixed):
    """``gnn_models[args.model](args)`` (safreita1/malnet-graph gnn.py): the models a
    dict literal of classes gives are followed into their forward."""
    r, out = run(_REGISTRY_MODEL.format(gin=gin, mlp=mlp, extra=extra))
    assert bugs(r) == found and r.changed == fixed, [f.message for f in r.findings]
    if fixed:
        assert "loss = F.nll_loss(model(x), y)" in out
        assert "`GIN.forward`" in r.findings[0].message and "it also receives those of `MLP.forward`" in r.findings[0].message


_WRAPPED = """
class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0):
        super().__init__()
        self.gamma = gamma

    def forward(self, inputs, targets):
        ce_loss = F.cross_entropy({ce_input}, targets, reduction="none")
        pt = torch.exp(-ce_loss)
        return ((1 - pt) ** self.gamma * ce_loss).mean()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {ret}


model = Net()
criterion = FocalLoss()
for x, y in loader:
    loss = {loss}
"""


@pytest.mark.parametrize("ce_input,ret,loss,found,message", [
    # a focal loss (a same-file module whose forward hands its input to F.cross_entropy)
    ("inputs", "F.softmax(self.fc(x), dim=1)", "criterion(model(x), y)", ["TM501"], "which expects logits"),
    ("inputs.float()", "F.log_softmax(self.fc(x), dim=1)", "criterion(model(x), y)", ["TM502"], "log_softmax again"),
    ("inputs", "self.fc(x)", "criterion(F.softmax(model(x), dim=1), y)", ["TM501"], "which expects logits"),
    ("inputs", "F.softmax(self.fc(x), dim=1)", "criterion(targets=y, inputs=model(x))", ["TM501"], "which expects logits"),
    # look-alikes: logits; the wrapper reshapes or transposes its input first, or mixes it
    ("inputs", "self.fc(x)", "criterion(model(x), y)", [], ""),
    ("inputs.transpose(1, 2)", "F.softmax(self.fc(x), dim=1)", "criterion(model(x), y)", [], ""),
    ("inputs.view(-1, 3)", "F.softmax(self.fc(x), dim=1)", "criterion(model(x), y)", [], ""),
    ("inputs * self.gamma", "F.softmax(self.fc(x), dim=1)", "criterion(model(x), y)", [], ""),
])
def test_a_loss_module_that_applies_cross_entropy(ce_input, ret, loss, found, message):
    """``class FocalLoss(nn.Module)`` calling ``F.cross_entropy(inputs, ...)``: its calls are
    cross-entropy sites for their input argument; report only."""
    r, _ = run(_WRAPPED.format(ce_input=ce_input, ret=ret, loss=loss))
    assert bugs(r) == found and not r.changed, [f.message for f in r.findings]
    if found:
        assert message in r.findings[0].message and r.findings[0].fix is None


@pytest.mark.parametrize("probs, logits", [
    ("torch.exp(F.log_softmax(model(x), dim=1))", "model(x)"),
    ("F.log_softmax(model(x), dim=1).exp()", "model(x)"),
    ("torch.exp(model(x).log_softmax(1))", "model(x)"),
    ("torch.exp(nn.LogSoftmax(dim=1)(model(x)))", "model(x)"),
])
def test_the_exponential_of_a_log_softmax_is_a_softmax(probs, logits):
    # bowang-lab/Transformer-GCN-QA #32: ``torch.exp(self.log_softmax(masked_max))`` fed
    # to nn.CrossEntropyLoss
    r, out = run(f"""
        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            probs = {probs}
            loss = criterion(probs, y)
            loss.backward()
        """)
    assert bugs(r) == ["TM501"]
    assert f"loss = criterion({logits}, y)" in out and "probs" not in out


@pytest.mark.parametrize("value", [
    "torch.exp(F.softmax(model(x), dim=1))",  # not a log-softmax: exp of probabilities
    "torch.exp(model(x))",
    "F.log_softmax(model(x), dim=1).exp().log()",
    "torch.exp(F.log_softmax(model(x), dim=1), out=buf)",
])
def test_an_exponential_of_anything_else_is_no_softmax(value):
    r, out = run(f"""
        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            v = {value}
            loss = criterion(v, y)
            loss.backward()
        """)
    assert "TM501" not in bugs(r), [f.message for f in r.findings]


# (vinhkhuc/PyTorch-Mini-Tutorials 5_convolutional_net.py: ``self.fc = torch.nn.Sequential()``
# then ``self.fc.add_module("softmax", torch.nn.Softmax())`` last in ``__init__``, and
# ``forward`` returns ``self.fc.forward(x)`` into ``torch.nn.CrossEntropyLoss``)
ATTR_SEQ = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential()
        self.fc.add_module("fc1", nn.Linear(8, 3))
{more}

    def forward(self, x):
        return self.fc.forward(x)

model = Net()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("more, found, fixed", [
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))', True, True),
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))  # probabilities', True, False),  # (the comment)
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))\n        self.out = nn.Identity()', True, True),
    # another module after it, the sequence changed elsewhere, the attribute stored twice
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))\n        self.fc.add_module("fc2", nn.Linear(3, 3))',
     False, False),
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))\n\n    def more(self):\n        self.fc.append(nn.ReLU())',
     False, False),
    ('        self.fc.add_module("softmax", nn.Softmax(dim=1))\n\n    def swap(self):\n        self.fc = nn.Identity()',
     False, False),
])
def test_a_sequential_attribute_built_with_add_module(more, found, fixed):
    r, out = run(ATTR_SEQ.format(more=more), unsafe=True)
    assert bugs(r) == (["TM501"] if found else []), [f.message for f in r.findings]
    assert ('add_module("softmax"' not in out) == fixed


# ----------------------------------------------------------------------------- models of other files, seen from here
SIBLING_NET = HEAD + """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {ret}
"""


def _check_in(tmp_path, name, src):
    from torchmend.project import Project

    (tmp_path / name).write_text(src)
    return process_text(str(tmp_path / name), src, Options(unsafe_fixes=True), Project(roots=(str(tmp_path),)))


@pytest.mark.parametrize("ret, found", [
    ("F.softmax(self.fc(x), dim=1), x", "returns `F.softmax(self.fc(x), dim=1)` as element 0 of a tuple"),
    ("x, F.softmax(self.fc(x), dim=1)", None),  # the element unpacked for the loss is not the softmax
    ("self.fc(x), x", None),
])
def test_a_sibling_model_returning_its_softmax_in_a_tuple(tmp_path, ret, found):
    """yongjincho/cnn-text-classification-pytorch: ``probs, classes = model(x)`` with the
    model's ``forward`` returning ``F.softmax(logits), classes`` from model.py."""
    (tmp_path / "model.py").write_text(SIBLING_NET.format(ret=ret))
    r = _check_in(tmp_path, "train.py", HEAD + "from model import Net\nnet = Net()\nprobs, classes = net(x)\n"
                  "loss = nn.CrossEntropyLoss()(probs, y)\n")
    assert codes(r) == (["TM501"] if found else [])
    if found:
        assert found in r.findings[0].message and r.findings[0].fix is None and not r.changed


@pytest.mark.parametrize("ret, code", [("F.softmax(self.fc(x), dim=1)", "TM501"), ("F.log_softmax(self.fc(x), dim=1)", "TM502"),
                                       ("self.fc(x)", None)])
def test_a_sibling_model_handed_with_a_cross_entropy_is_reported_where_it_is_handed(tmp_path, ret, code):
    """doronharitan/human_activity_recognition_LRCN: train.py hands ``ConvLstm(...)`` (of
    lrcn_model.py, ending with ``nn.Softmax``) and ``nn.CrossEntropyLoss()`` to a training
    function of another module: reported on the model argument, report only."""
    (tmp_path / "model.py").write_text(SIBLING_NET.format(ret=ret))
    r = _check_in(tmp_path, "main.py", HEAD + "from model import Net\nfrom utils import train_model\n\n"
                  "model = Net()\ncriterion = nn.CrossEntropyLoss()\ntrain_model(model, loader, opt, criterion)\n")
    assert codes(r) == ([code] if code else [])
    if code:
        f = r.findings[0]
        assert (f.line, f.col) == (9, 13) and f.fix is None and not r.changed
        assert "`Net.forward` (from model.py)" in f.message and "goes to `train_model` here" in f.message


TRAINER = HEAD + """

def fit(model, loader, opt):
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("main, found", [
    ("from model import Net\nimport trainer\n\nnet = Net().cuda()\ntrainer.fit(net, [], opt)\n", "line 5"),
    ("from model import Net\nfrom trainer import fit\n\nnet = Net()\nfit(loader=[], opt=opt, model=net)\n", "line 5"),
    ("from trainer import fit\nfrom model import Net\n\n\ndef main():\n    fit(Net(), [], opt)\n", "line 6"),
    # a class of the caller's own file
    (HEAD + "from trainer import fit\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
     "        return F.softmax(self.fc(x), dim=1)\n\n\nfit(Net(), [], opt)\n", "line 12"),
    # look-alikes: a logits model; another function of that name; no call
    ("from trainer import fit\n\nfit(nn.Linear(4, 3), [], opt)\n", None),
    ("from model import Net\nfrom other import fit\n\nfit(Net(), [], opt)\n", None),
    ("from model import Net\nimport trainer\n\nnet = Net()\n", None),
])
def test_a_model_the_importing_script_passes_to_a_training_function(tmp_path, main, found):
    """NaJaeMin92/pytorch-DANN (before a70cf59): main.py builds ``model.Classifier()``
    (its forward ends with ``F.softmax``) and calls ``train.source_only(encoder,
    classifier, ...)``, whose own cross-entropy gets the classifier's output: what the
    scripts of the directory that import the training module pass is read."""
    (tmp_path / "model.py").write_text(SIBLING_NET.format(ret="F.softmax(self.fc(x), dim=1)"))
    (tmp_path / "main.py").write_text(main)
    r = _check_in(tmp_path, "trainer.py", TRAINER)
    assert codes(r) == (["TM501"] if found else [])
    if found:
        f = r.findings[0]
        assert f.line == 10 and f.fix is None and not r.changed
        assert f"`Net.forward` (from {'main.py' if 'class Net' in main else 'model.py'}, passed by main.py {found})" \
            in f.message
    # a caller of the same file passes something else: the importer's model still reaches it
    r = _check_in(tmp_path, "trainer.py", TRAINER + "\n\nif __name__ == '__main__':\n    fit(nn.Linear(4, 3), [], None)\n")
    assert codes(r) == (["TM501"] if found else [])


@pytest.mark.parametrize("build, found", [
    ("model = model.Net().to(device)", True),  # the module's name rebound to the model it builds
    ("if big:\n    model = model.Net()\nelse:\n    model = nn.Linear(4, 3)", True),
    ("model = nn.Linear(4, 3)\nmodel = model.Net()", False),  # ``model`` is no module there
])
def test_a_sibling_module_name_rebound_to_its_model(tmp_path, build, found):
    """pytorch/examples word_language_model (before 1800513): ``import model`` then ``model =
    model.TransformerModel(...)``, whose ``forward`` ends with ``F.log_softmax``, fed to
    ``nn.CrossEntropyLoss``: the name read on the right is the module."""
    (tmp_path / "model.py").write_text(SIBLING_NET.format(ret="F.log_softmax(self.fc(x), dim=-1)"))
    r = _check_in(tmp_path, "main.py", HEAD + "import model\n\n" + build + "\ncriterion = nn.CrossEntropyLoss()\n"
                  "loss = criterion(model(x), y)\n")
    assert codes(r) == (["TM502"] if found else [])
    if found:
        assert "`Net.forward` (from model.py)" in r.findings[0].message and r.findings[0].fix is None


UPDATE = HEAD + """

class LocalUpdate(object):
    def __init__(self, args):
        self.loss_func = nn.CrossEntropyLoss()

    def train(self, net, lr=0.1):
        for images, labels in loader:
            log_probs = net(images)
            loss = self.loss_func(log_probs, labels)
"""


@pytest.mark.parametrize("call, found", [
    ("local = LocalUpdate(args)\nw = local.train(net=copy.deepcopy(net_glob).to(args.device))\n", True),
    ("w = Update.LocalUpdate(args).train(net_glob, 0.1)\n", True),
    # look-alikes: another class's method of that name; a model of logits
    ("local = Other(args)\nw = local.train(net=net_glob)\n", False),
    ("local = LocalUpdate(args)\nw = local.train(net=nn.Linear(4, 3))\n", False),
])
def test_a_model_the_importing_script_passes_to_a_method(tmp_path, call, found):
    """shaoxiongji/federated-learning (before 5ffe3e3): models/Update.py's
    ``LocalUpdate.train(self, net)`` applies its ``nn.CrossEntropyLoss`` to ``net(images)``;
    main_fed.py, in the directory above ``models/``, builds ``MLP(...)`` (its forward ends
    with a softmax) and calls ``local.train(net=copy.deepcopy(net_glob).to(args.device))``."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "Nets.py").write_text(SIBLING_NET.format(ret="F.softmax(self.fc(x), dim=1)"))
    (tmp_path / "main_fed.py").write_text(
        "import copy\nfrom models.Nets import Net\nfrom models.Update import LocalUpdate\nfrom models import Update\n"
        "from other import Other\n\nnet_glob = Net().to(args.device)\n" + call)
    (tmp_path / "models" / "Update.py").write_text(UPDATE)
    from torchmend.project import Project

    r = process_text(str(tmp_path / "models" / "Update.py"), UPDATE, Options(), Project(roots=(str(tmp_path),)))
    assert codes(r) == (["TM501"] if found else [])
    if found:
        line = 7 + call.count("\n")  # (the call of `train`, the last line)
        assert r.findings[0].line == 13 and f"(from Nets.py, passed by main_fed.py line {line})" in r.findings[0].message


@pytest.mark.parametrize("use, found", [
    ("for out in outputs:\n    loss = loss + crit(out, y)\n", True),
    ("loss = crit(outputs[0], y)\n", True),
    ("loss = crit(outputs[-1], y)\n", True),
    # look-alikes: a slice keeps the batch dim; an element's loss over the softmax's batch dim
    ("loss = crit(outputs[:, 0], y)\n", False),
    ("for out in outputs.t():\n    loss = loss + crit(out, y)\n", False),
    ("for out in logits:\n    loss = loss + crit(out, y)\n", False),
])
@pytest.mark.parametrize("dim, lands", [("-1", True), ("2", True), ("1", False)])
def test_an_element_of_a_softmax_fed_to_the_loss(use, found, dim, lands):
    """mlelarge/graph_neural_net (before 62c6240): ``outputs = torch.softmax(raw_scores,
    -1)`` then ``for out in outputs: self.loss(out, target)`` with a cross-entropy: each
    element is a distribution over the softmax's dim less one (report only)."""
    src = f"crit = nn.CrossEntropyLoss()\noutputs = torch.softmax(logits, {dim})\nloss = 0\n" + use
    r, out = run(src, unsafe=True)
    assert codes(r) == (["TM501"] if found and lands else [])
    if found and lands:
        assert "an element of `torch.softmax(logits, " in r.findings[0].message and r.findings[0].fix is None


@pytest.mark.parametrize("other, found", [
    ("", ["TM502"]),
    # look-alike: one class of the registry ends with logits
    ("class Plain(nn.Module):\n    def forward(self, x):\n        return x, self.fc(x)\n\n\n", []),
])
def test_model_built_by_a_registry_of_a_sibling_module(tmp_path, other, found):
    """KaiyangZhou/pytorch-center-loss (before 850cde7): ``models.create(name, n)`` returns
    ``__factory[name](n)`` of ``__factory = {'cnn': ConvNet}``, whose forward returns
    ``F.log_softmax(y)`` as element 1; main.py feeds it to ``nn.CrossEntropyLoss()``."""
    registry = "{'cnn': ConvNet, 'plain': Plain}" if other else "{'cnn': ConvNet}"
    (tmp_path / "models.py").write_text(
        HEAD + "class ConvNet(nn.Module):\n    def forward(self, x):\n        y = self.fc(x)\n"
        "        return x, F.log_softmax(y, dim=1)\n\n\n" + other +
        f"__factory = {registry}\n\n\ndef create(name, num_classes):\n    return __factory[name](num_classes)\n")
    src = HEAD + "import models\nmodel = models.create(name='cnn', num_classes=10)\ncriterion = nn.CrossEntropyLoss()\n" \
        "features, outputs = model(x)\nloss = criterion(outputs, y)\n"
    (tmp_path / "main.py").write_text(src)
    r = process_text(str(tmp_path / "main.py"), src, Options(unsafe_fixes=True))
    assert codes(r) == found and not r.changed


def test_a_trainer_class_given_a_softmax_model_by_the_script_that_imports_it(tmp_path):
    """The trainer class of its own file feeds ``self.model``'s output to its
    cross-entropy; the script that imports it builds it with a model (of a third file)
    whose ``forward`` ends with a softmax: reported at the loss, in the trainer's file."""
    (tmp_path / "net.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
        "        return torch.softmax(self.fc(x), dim=1)\n")
    (tmp_path / "trainer.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Trainer:\n    def __init__(self, model, optimizer):\n"
        "        self.model = model\n        self.optimizer = optimizer\n        self.criterion = nn.CrossEntropyLoss()\n\n"
        "    def fit(self, loader):\n        for x, y in loader:\n            self.optimizer.zero_grad()\n"
        "            loss = self.criterion(self.model(x), y)\n            loss.backward()\n            self.optimizer.step()\n")
    (tmp_path / "main.py").write_text(
        "import torch\nfrom net import Net\nfrom trainer import Trainer\n\nmodel = Net()\n"
        "Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)).fit(loader)\n")
    from torchmend.engine import Options
    from torchmend.runner import run as run_tree

    out = run_tree([str(tmp_path)], Options(select=frozenset({"TM501"}), roots=(str(tmp_path),)), isolate=False)
    [f] = [f for r in out.results for f in r.findings]
    assert f.path.endswith("trainer.py") and f.line == 14 and "passed by main.py line 6" in f.message


_MASKED = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


model = Net()
crit = nn.CrossEntropyLoss()
x, y = torch.randn(5, 4), torch.zeros(5).long()
mask, idx = torch.ones(5).bool(), torch.arange(3)
out = model(x)
loss = crit({pred}, y[:3])
"""


@pytest.mark.parametrize("pred, found", [
    ("out[mask]", True),  # (soujie/GnnCode gat_dense: ``loss_fn(pred[train_mask], labels[train_mask])``)
    ("out[idx]", True),
    ("out[:3]", True),
    ("out[data.train_mask]", True),
    # look-alikes: a number drops the batch dim (the class dim moves); a tuple may index it
    ("out[0]", False),
    ("out[:, :3]", False),
])
def test_log_softmax_output_indexed_by_rows_before_the_loss(pred, found):
    src = _MASKED.format(pred=pred)
    if "data." in pred:
        src = src.replace("mask, idx = ", "data = type('D', (), {'train_mask': torch.ones(5).bool()})\nmask, idx = ")
    r, out = run(src)
    assert bugs(r) == (["TM502"] if found else [])


@pytest.mark.parametrize("init, imports, build, found", [
    # a package's ``__init__`` re-exports the model class: by name, or by a star import
    ("from .net import Net\n", "from models import Net", "Net()", True),
    ("from .net import Net\n", "from models import *", "Net()", True),
    ("from .net import Net\n", "import models", "models.Net()", True),
    ("from .net import *\n", "from models import Net", "Net()", True),
    ("from .net import *\n", "from models import *", "Net()", True),  # (kuangliu/pytorch-cifar's layout)
    ("from .net import *\n", "import models", "models.Net()", True),
    ("from . import net\nfrom .net import Net as Net\n", "import models", "models.Net()", True),
    # look-alikes: ``__all__`` leaves it out (so the star import brings no ``Net``); the
    # package binds another ``Net`` after its star import (which one wins is not read);
    # a star import of a module of another package (not the tree's)
    ("from .net import *\n__all__ = []\n", "from models import *", "Net()", False),
    ("from .net import *\nNet = None\n", "from models import Net", "Net()", False),
    ("from torchvision.models import *\n", "from models import *", "Net()", False),
])
def test_a_model_a_package_re_exports(tmp_path, init, imports, build, found):
    """``models/__init__.py`` re-exports ``Net`` of ``models/net.py`` (``from .net import
    Net``, or ``from .net import *``), whose forward ends with a softmax; the script
    imports it from the package and feeds its output to a cross-entropy."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text(init)
    (tmp_path / "models" / "net.py").write_text(SIBLING_NET.format(ret="F.softmax(self.fc(x), dim=1)"))
    r = _check_in(tmp_path, "train.py", HEAD + f"{imports}\nnet = {build}\nloss = nn.CrossEntropyLoss()(net(x), y)\n")
    assert codes(r) == (["TM501"] if found else [])
    if found:
        assert "`Net.forward` (from net.py)" in r.findings[0].message and r.findings[0].fix is None


def test_a_model_of_the_project_package_imported_by_a_script_below(tmp_path):
    """dl4sits/BreizhCrops examples/train.py: ``from breizhcrops.models import LSTM`` (the
    repository's own package, one directory up), whose forward ends with
    ``F.log_softmax``, feeds a ``CrossEntropyLoss``."""
    from torchmend.project import Project

    (tmp_path / "crops" / "models").mkdir(parents=True)
    (tmp_path / "examples").mkdir()
    (tmp_path / "crops" / "__init__.py").write_text("from .models import *\n")
    (tmp_path / "crops" / "models" / "__init__.py").write_text("from .lstm import LSTM\n")
    (tmp_path / "crops" / "models" / "lstm.py").write_text(
        SIBLING_NET.format(ret="F.log_softmax(self.fc(x), dim=-1)").replace("class Net", "class LSTM"))
    src = HEAD + "from crops.models import LSTM\n\n\ndef train(loader):\n    model = LSTM()\n" \
        "    criterion = torch.nn.CrossEntropyLoss(reduction='mean')\n    for x, y in loader:\n" \
        "        loss = criterion(model(x), y)\n"
    path = tmp_path / "examples" / "train.py"
    path.write_text(src)
    r = process_text(str(path), src, Options(unsafe_fixes=True), Project(roots=(str(tmp_path),)))
    assert codes(r) == ["TM502"] and "`LSTM.forward` (from lstm.py)" in r.findings[0].message
    # the run's root is the script's directory: the package above is not read
    r = process_text(str(path), src, Options(unsafe_fixes=True), Project(roots=(str(tmp_path / "examples"),)))
    assert codes(r) == []


@pytest.mark.parametrize("last, loss, code, fixed", [
    ("nn.LogSoftmax(dim=1)", "nn.CrossEntropyLoss()", "TM502", True),
    ("nn.Softmax(dim=1)", "nn.CrossEntropyLoss()", "TM501", False),  # (report only: the entry is not removed)
    ("nn.LogSoftmax(dim=1)", "nn.NLLLoss()", None, False),  # the right pairing
    ("nn.ReLU()", "nn.CrossEntropyLoss()", None, False),
])
def test_a_sequential_of_an_ordered_dict(last, loss, code, fixed):
    """``nn.Sequential(OrderedDict([("fc", nn.Linear(...)), ("out", nn.LogSoftmax(dim=1))]))``
    (the Udacity classifier's head), fed to a cross-entropy."""
    r, out = run(f"""
    from collections import OrderedDict


    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = nn.Sequential(OrderedDict([
                ('fc', nn.Linear(4, 2)),
                ('out', {last}),
            ]))

        def forward(self, x):
            return self.classifier(x)


    net = Small()
    criterion = {loss}
    loss = criterion(net(x), y)
    """)
    assert codes(r) == ([code] if code else [])
    assert r.changed == fixed
    if fixed:
        assert "criterion = nn.NLLLoss()" in out


def test_an_ordered_dict_with_a_repeated_key_is_not_read():
    """(review) ``OrderedDict([("fc", ...), ("out", nn.LogSoftmax(1)), ("out", nn.Linear(...))])``
    keeps the first place of a repeated key: the last entry is not the model's end."""
    r, out = run("""
    from collections import OrderedDict
    net = nn.Sequential(OrderedDict([
        ('out', nn.Linear(4, 2)),
        ('lsm', nn.ReLU()),
        ('out', nn.LogSoftmax(dim=1)),
    ]))
    loss = nn.CrossEntropyLoss()(net(x), y)
    """)
    assert codes(r) == [] and not r.changed


@pytest.mark.parametrize("head, found", [
    # (kitsch231/pytorch_fake_news_Classification_mml models.py) a star import above the
    # class: the class statement runs after it, so it is what ``models.Net`` holds
    ("from helpers import *\n", True),
    # a star import below it of a module that binds no ``Net``: the class stays
    ("", True),
    # a star import below it that may rebind the name: not read
    ("rebind", False),
])
def test_a_model_module_with_a_star_import(tmp_path, head, found):
    (tmp_path / "helpers.py").write_text("import math\n" + ("Net = None\n" if head == "rebind" else ""))
    body = SIBLING_NET.format(ret="F.softmax(self.fc(x), dim=1)")
    (tmp_path / "model.py").write_text(head + body if head.startswith("from") else body + "\nfrom helpers import *\n")
    r = _check_in(tmp_path, "train.py", HEAD + "from model import Net\nnet = Net()\nloss = nn.CrossEntropyLoss()(net(x), y)\n")
    assert codes(r) == (["TM501"] if found else [])


_WITH_FORWARD = """\
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.classify = nn.Linear(20, 3)

    def forward(self, g, h):
        with g.local_scope():
            g.ndata["h"] = h
{tail}


model = Classifier()
for g, h, labels in loader:
    logits = model(g, h)
    loss = F.cross_entropy(logits, labels)
"""


@pytest.mark.parametrize("tail, fixed", [
    # a DGL model returns from inside ``with g.local_scope():`` (ZZy979/pytorch-tutorial)
    ("            return F.softmax(self.classify(h), dim=1)", "            return self.classify(h)"),
    ("            p = F.softmax(self.classify(h), dim=1)\n            return p", "            return self.classify(h)"),
    # look-alike: the ``with`` block is not the end of ``forward``
    ("            p = F.softmax(self.classify(h), dim=1)\n        return h", None),
])
def test_a_forward_that_returns_from_a_with_block(tail, fixed):
    r, out = run(_WITH_FORWARD.format(tail=tail))
    assert codes(r) == (["TM501"] if fixed else [])
    if fixed:
        assert fixed + "\n" in out and "softmax" not in out


@pytest.mark.parametrize("soft, code, fixed", [
    # a softmax over dim 0 fed to a cross-entropy: the batch (or an unbatched input's
    # classes): no logits either way (int2-group-19's nn.Softmax(dim=0) head, a DGL model)
    ("F.softmax(z, dim=0)", ["TM501"], "loss = F.cross_entropy(z, y)\n"),
    ("torch.softmax(z, 0)", ["TM501"], "loss = F.cross_entropy(z, y)\n"),
    # look-alikes: a log_softmax over dim 0 (no NLLLoss swap for it); dim 2 of a 3-d input;
    # a softmax over dim 0 into NLLLoss (its log_softmax fix would keep the wrong dim)
    ("F.log_softmax(z, dim=0)", [], None),
    ("F.softmax(z3, dim=2)", [], None),
])
def test_a_softmax_over_dim_0_fed_to_a_cross_entropy(soft, code, fixed):
    r, out = run(f"z = torch.randn(4, 3)\nz3 = torch.randn(4, 3, 5)\ny = torch.zeros(4, dtype=torch.long)\n"
                 f"loss = F.cross_entropy({soft}, y)\n")
    assert codes(r) == code
    if fixed:
        assert body(out).endswith(fixed)


def test_a_softmax_over_dim_0_fed_to_nll_is_not_made_a_log_softmax_over_dim_0():
    r, out = run("z = torch.randn(4, 3)\ny = torch.zeros(4, dtype=torch.long)\nloss = F.nll_loss(F.softmax(z, dim=0), y)\n")
    assert not r.changed


# (iorymaeda's disaster-tweets Trainer) the name of the probabilities is bound in both arms
# of an ``if``: each binding reaches only its own arm's loss
BOTH_ARMS = """\
criterion = nn.CrossEntropyLoss()


def step(model, x, y, fp16):
    if fp16:
        with torch.autocast("cpu"):
            outputs = model(x).softmax(1)
            loss = criterion(outputs, y)
    else:
        outputs = model(x).softmax(1)
        loss = criterion(outputs, y)
    return loss{tail}
"""


def test_a_name_bound_to_a_softmax_in_both_arms_of_an_if():
    torch = pytest.importorskip("torch")
    src = BOTH_ARMS.format(tail="")
    r, out = run(src)
    assert bugs(r) == ["TM501", "TM501"] and all(f.applied for f in r.findings)
    assert body(out).count("loss = criterion(model(x), y)") == 2 and "softmax" not in out
    ns = {}
    exec(compile(out, "t.py", "exec"), ns)
    model = torch.nn.Linear(4, 3)
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
    for fp16 in (False, True):
        assert torch.allclose(ns["step"](model, x, y, fp16), torch.nn.functional.cross_entropy(model(x), y), atol=1e-2)
    # the probabilities also read after the ``if``: said, not fixed (as for one binding)
    r, out = run(BOTH_ARMS.format(tail=", outputs.argmax(1)"), unsafe=True)
    assert bugs(r) == ["TM501", "TM501"] and not r.changed


@pytest.mark.parametrize("after", ["    out *= 100\n    return loss, out\n", "    out += 1\n    return loss\n",
                                   "    del out\n    return loss\n"])
def test_a_softmax_name_changed_or_deleted_after_the_loss_keeps_its_statement(after):
    """(review) ``out *= 100`` / ``del out`` after the loss read the probabilities too:
    removing their statement left a NameError (or another value); said, not removed."""
    src = ("def step(model, x, y, cond):\n    if cond:\n        out = model(x)\n"
           "    out = F.softmax(model(x), dim=1)\n    loss = ce(out, y)\n" + after)
    r, out = run("ce = nn.CrossEntropyLoss()\n" + src)
    assert bugs(r) == ["TM501"]
    assert "\n    out = " in out  # (the function-level binding stays)


# (Hikaru-13915's Lightning introduction) ``self(x)`` in a step runs the module's own
# ``forward``, which hands on to a submodule ending with log_softmax, as ``self.forward(x)`` does
SELF_CALL = NET_LSM + """

class Wrapper({base}):
    def __init__(self):
        super().__init__()
        self.model = Net()

    def forward(self, x):
        return self.model.forward(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x_hat = {call}
        return F.cross_entropy(x_hat, y)
"""


@pytest.mark.parametrize("base", ["nn.Module", "pl.LightningModule"])
@pytest.mark.parametrize("call", ["self(x)", "self.forward(x)"])
def test_self_called_runs_the_modules_forward(base, call):
    src = ("import pytorch_lightning as pl\n" if base.startswith("pl.") else "") + SELF_CALL.format(base=base, call=call)
    r, _ = run(src)
    assert codes(r) == ["TM502"], r.findings


def test_self_called_runs_its_own_dunder_call_first():
    """A class that defines ``__call__`` runs that, not ``forward``."""
    src = SELF_CALL.format(base="nn.Module", call="self(x)").replace(
        "    def training_step", "    def __call__(self, x):\n        return torch.zeros(2, 3)\n\n    def training_step")
    r, _ = run(src)
    assert "TM502" not in codes(r)


@pytest.mark.parametrize("arms, tail, found, fixed", [
    ("    out = F.softmax(model(x + 1), dim=1)\nelse:\n    out = F.softmax(model(x), dim=1)\n", "", "TM501", True),
    ("    out = F.log_softmax(model(x + 1), dim=1)\nelse:\n    out = F.log_softmax(model(x), dim=1)\n", "", "TM502", True),
    # the probabilities also read after the loss: said, not fixed
    ("    out = F.softmax(model(x + 1), dim=1)\nelse:\n    out = F.softmax(model(x), dim=1)\n", "print(out.argmax(1))\n",
     "TM501", False),
    # look-alikes: one path gives logits; the two kinds mixed
    ("    out = F.softmax(model(x + 1), dim=1)\nelse:\n    out = model(x)\n", "", None, False),
    ("    out = F.softmax(model(x + 1), dim=1)\nelse:\n    out = F.log_softmax(model(x), dim=1)\n", "", None, False),
])
def test_a_softmax_on_every_path_to_the_loss(arms, tail, found, fixed):
    """(probe) ``if flag: out = F.softmax(...) else: out = F.softmax(...)`` then ``loss =
    criterion(out, y)``: the loss gets probabilities on every path."""
    src = "model = nn.Linear(10, 3)\ncriterion = nn.CrossEntropyLoss()\nif flag:\n" + arms + "loss = criterion(out, y)\n" + tail
    r, out = run(src)
    assert bugs(r) == ([found] if found else []), r.findings
    assert r.changed == fixed
    if fixed:
        assert "softmax" not in out and "    out = model(x + 1)\n" in out and "    out = model(x)\n" in out


@pytest.mark.parametrize("between, fixed", [
    ("out.clamp_(-1, 1)\n", False),  # changed in place after the softmax took it
    ("out[0] = 0\n", False),
    ("normalize(out)\n", False),  # an unknown callee may change it in place
    ("F.relu(out, inplace=True)\n", False),
    ("print(out.shape)\n", True),
    ("n = torch.numel(out)\n", True),
    # (review) ``*=`` works in place; a part changed in place; an alias; ``inplace`` by position
    ("out *= 0.5\n", False),
    ("out[:, 0].fill_(0)\n", False),
    ("out.data.clamp_(-1, 1)\n", False),
    ("o2 = out\no2.clamp_(-1, 1)\n", False),
    ("F.relu(out, True)\n", False),
    ("d = out.detach().numpy()\n", True),
    # (review) what is no tensor of its, or a new value; torch told True for no inplace;
    # in-place changes through a view
    ("B, C = out.shape\nbs = out.shape[0]\ndev = out.device\n", True),
    ("vals, idx = torch.max(out, 1, True)\nprint(out[0])\n", True),
    ("out.detach().zero_()\n", False),
    ("o2 = out.view(-1)\no2.clamp_(0, 1)\n", False),
    ("torch.clamp(out, 0, 1, out=out)\n", False),
    ("for row in out:\n    row.zero_()\n", False),
])
def test_logits_changed_in_place_before_the_loss_are_not_substituted(between, fixed):
    """(review) ``probs = F.softmax(out, 1)``, ``out.clamp_(-1, 1)``, ``loss = ce(probs, y)``:
    the loss of the logits is that of the unclamped ones; feeding ``out`` (or keeping
    ``probs = out``, the same tensor) would change it.  Said, not fixed."""
    r, out = run("ce = nn.CrossEntropyLoss()\nout = net(x)\nprobs = F.softmax(out, dim=1)\n" + between
                 + "loss = ce(probs, y)\n")
    assert bugs(r) == ["TM501"] and r.changed == fixed, r.findings


def test_a_use_sharing_its_line_with_the_next_statement():
    """(review) ``print('a'); loss = ce(probs, y)`` after the definition: one edit of
    that line (two collided, and the fix was refused)."""
    r, out = run("ce = nn.CrossEntropyLoss()\nout = net(x)\nprobs = F.softmax(out, dim=1)\nprint('a'); loss = ce(probs, y)\n")
    assert bugs(r) == ["TM501"] and r.changed and body(out).endswith("out = net(x)\nprint('a'); loss = ce(out, y)\n")



def test_logits_changed_in_place_later_in_the_loop_of_the_use():
    """(review) the softmax taken before the loop, the logits changed in place after the
    use in the loop's body: the next pass's loss would read them changed."""
    r, out = run("ce = nn.CrossEntropyLoss()\nout = net(x)\nprobs = F.softmax(out, dim=1)\nfor step in range(3):\n"
                 "    loss = ce(probs, y)\n    out.mul_(0.5)\n")
    assert bugs(r) == ["TM501"] and not r.changed
