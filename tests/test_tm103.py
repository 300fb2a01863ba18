"""TM103 loss-weight-not-moved: the shapes it reports (and how it fixes them), and
look-alikes that must produce no finding at all."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch

HEAD = """\
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def run(body: str, unsafe: bool = False, head: str = HEAD):
    src = head + textwrap.dedent(body)
    res = process_text("t.py", src, Options(unsafe_fixes=unsafe))
    assert res.error is None, res.error
    out = apply_patch(src.encode(), res.diff).decode() if res.changed else src
    if res.changed:  # idempotent
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe))
        assert again.error is None and not again.changed, again.diff
        assert not [f for f in again.findings if f.code == "TM103"]
    return [f for f in res.findings if f.code == "TM103"], out


BUGS = {
    "inline literal weight": """
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
        x, y = torch.randn(2, 4).to(device), torch.tensor([0, 2]).to(device)
        loss = criterion(model(x), y)
    """,
    "weight from numpy counts, through a name": """
        counts = np.bincount(np.array([0, 0, 1, 2]))
        w = torch.from_numpy(1.0 / counts).float()
        model = nn.Linear(4, 3).to(device)
        criterion = nn.NLLLoss(weight=w / w.sum())
        out = model(torch.randn(2, 4).to(device)).log_softmax(dim=1)
        loss = criterion(out, torch.tensor([0, 2]).to(device))
    """,
    "positional weight, the loss passed to a training function": """
        def step(model, criterion, x, y):
            return criterion(model(x.to(device)), y.to(device))

        model = nn.Linear(4, 3).to(device)
        loss_fn = nn.CrossEntropyLoss(torch.ones(3))
        step(model, loss_fn, torch.randn(2, 4), torch.tensor([0, 2]))
    """,
    "pos_weight, legacy constructor, called inline": """
        model = nn.Linear(4, 1).to(device)
        out = model(torch.randn(2, 4).to(device))
        loss = nn.BCEWithLogitsLoss(pos_weight=torch.FloatTensor([3.0]))(out, torch.ones(2, 1).to(device))
    """,
}


@pytest.mark.parametrize("body", BUGS.values(), ids=BUGS.keys())
def test_reported_and_moved_where_built(body):
    found, out = run(body)
    assert len(found) == 1 and found[0].applied, found
    assert ".to(device)" in out.replace(textwrap.dedent(body), "") or "Loss(" in out
    # the loss, not the weight, is moved: exactly one line changed, ending with the move
    changed = [ln for ln in out.splitlines() if ln not in (HEAD + textwrap.dedent(body)).splitlines()]
    assert len(changed) == 1 and ".to(device)" in changed[0], changed


def test_cuda_style_script_gets_cuda_and_keeps_comments():
    body = """
        model = nn.Linear(4, 1)
        model.cuda()
        criterion = nn.BCEWithLogitsLoss(
            pos_weight=torch.FloatTensor([3.0]),  # rare positives
        )
        loss = criterion(model(torch.randn(2, 4).cuda()), torch.ones(2, 1).cuda())
    """
    found, out = run(body)
    assert len(found) == 1 and found[0].applied
    assert "    pos_weight=torch.FloatTensor([3.0]),  # rare positives\n).cuda()\n" in out


def test_a_device_that_cannot_be_named_where_the_loss_is_built_is_report_only():
    body = """
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))

        def evaluate(model, x, y):
            dev = "cuda"
            model = model.to(dev)
            return criterion(model(x.to(dev)), y.to(dev))
    """
    found, out = run(body, unsafe=True)
    assert len(found) == 1 and found[0].fix is None and "move the loss to the device" in found[0].message
    assert out == HEAD + textwrap.dedent(body)


def test_a_loss_also_called_with_cpu_tensors_is_an_unsafe_fix():
    body = """
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        x, y = torch.randn(2, 4), torch.tensor([0, 2])
        train_loss = criterion(model(x.to(device)), y.to(device))
        baseline = criterion(torch.zeros(2, 3), y)
    """
    found, out = run(body)
    assert len(found) == 1 and not found[0].applied and found[0].fix is not None
    found, out = run(body, unsafe=True)
    assert found[0].applied and "nn.CrossEntropyLoss(weight=torch.ones(3)).to(device)" in out


LOOKALIKES = {
    "weight made on the device": """
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0], device=device))
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "weight moved before the loss is built": """
        w = torch.tensor([1.0, 2.0, 3.0])
        w = w.to(device)
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=w)
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "loss moved in place later": """
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        criterion.to(device)
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "loss moved where it is built": """
        model = nn.Linear(4, 3).cuda()
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3)).cuda()
        loss = criterion(model(torch.randn(2, 4).cuda()), torch.tensor([0, 2]).cuda())
    """,
    "a submodule of the model": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
                self.loss = nn.CrossEntropyLoss(weight=torch.ones(3))

            def forward(self, x, y):
                return self.loss(self.fc(x), y)

        model = Net().to(device)
        loss = model(torch.randn(2, 4).to(device), torch.tensor([0, 2]).to(device))
    """,
    "the model is not moved": """
        model = nn.Linear(4, 3)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        loss = criterion(model(torch.randn(2, 4)), torch.tensor([0, 2]))
    """,
    "moved to the CPU": """
        cpu = torch.device("cpu")
        model = nn.Linear(4, 3).to(cpu)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        loss = criterion(model(torch.randn(2, 4).to(cpu)), torch.tensor([0, 2]).to(cpu))
    """,
    "a weight of unknown origin": """
        def make(weights):
            return nn.CrossEntropyLoss(weight=weights)

        model = nn.Linear(4, 3).to(device)
        criterion = make(torch.ones(3).to(device))
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "a copy of a tensor that may be on the device": """
        def weights_of(t):
            return torch.tensor(t)

        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.tensor(model.weight.sum(dim=1)))
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "the loss handed to code this file does not show": """
        import trainer_lib

        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        trainer_lib.fit(model, criterion)
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "no weight": """
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(ignore_index=-100, reduction="mean")
        loss = criterion(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device))
    """,
    "a default device set": """
        torch.set_default_device(device)
        model = nn.Linear(4, 3).to(device)
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        loss = criterion(model(torch.randn(2, 4)), torch.tensor([0, 2]))
    """,
}


@pytest.mark.parametrize("body", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_lookalikes_are_silent(body):
    found, out = run(body, unsafe=True)
    assert found == [] and out == HEAD + textwrap.dedent(body)


@pytest.mark.parametrize("text,may", [
    ("nn.CrossEntropyLoss()", False),
    ("nn.CrossEntropyLoss(ignore_index=-100, reduction='mean')", False),
    ("nn.CrossEntropyLoss(\n    reduction='none',\n)", False),
    ("nn.CrossEntropyLoss(weight=w)", True),
    ("nn.CrossEntropyLoss(w)", True),
    ("nn.BCEWithLogitsLoss(reduction='none', pos_weight=pw)", True),
    ("nn.CrossEntropyLoss(reduction=f'{x}')  # weight", False),
    ("nn.CrossEntropyLoss(reduction='mean'  # )\n)", True),
    ("nn.CrossEntropyLoss(**kw)", True),
    ("nn.CrossEntropyLoss(reduction='a\\'b')", True),
    ("(nn.CrossEntropyLoss)(w)", True),
])
def test_the_text_screen_keeps_every_call_that_may_pass_a_weight(text, may):
    """The screen of the gate and of the parse keeps a call when its brackets may hold a
    weight (a keyword first and no ``weight`` between them is all it rules out)."""
    from torchmend.rules.tm103_loss_weight_not_moved import _text_may_pass_weight

    assert _text_may_pass_weight(text) is may


def test_a_functional_loss_gets_its_weight_moved_to_the_inputs_device():
    body = """
        import torch.nn.functional as F

        model = nn.Linear(4, 3).to(device)
        w = torch.tensor([1.0, 2.0, 3.0])
        x, y = torch.randn(2, 4).to(device), torch.tensor([0, 2]).to(device)
        out = model(x)
        loss = F.cross_entropy(out, y, weight=w)
        loss2 = F.nll_loss(model(x).log_softmax(1), y, weight=w / w.sum())
        fine = F.cross_entropy(out, y, weight=w.to(device))
        cpu_only = F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), weight=w)
    """
    found, out = run(body)
    assert len(found) == 2 and all(f.applied for f in found)
    assert "loss = F.cross_entropy(out, y, weight=w.to(out.device))\n" in out
    assert "loss2 = F.nll_loss(model(x).log_softmax(1), y, weight=(w / w.sum()).to(device))\n" in out
    assert "fine = F.cross_entropy(out, y, weight=w.to(device))\n" in out  # untouched
    assert "cpu_only = F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 1]), weight=w)\n" in out


def test_a_functional_loss_in_a_helper_with_a_weight_parameter_is_silent():
    body = """
        import torch.nn.functional as F

        def weighted(out, y, w):
            return F.cross_entropy(out, y, weight=w)

        model = nn.Linear(4, 3).to(device)
        loss = weighted(model(torch.randn(2, 4).to(device)), torch.tensor([0, 2]).to(device), torch.ones(3).to(device))
    """
    found, out = run(body, unsafe=True)
    assert found == []


def test_no_fix_names_a_device_bound_only_after_the_loss_is_built():
    """A loss built before the line that binds the device: `.to(device)` there would be a
    NameError; reported only.  A module device bound before a function that builds the
    loss is bound when the function runs: fixed."""
    late = """
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
        dev = torch.device("cuda")
        model = nn.Linear(4, 3).to(dev)
        loss = criterion(model(torch.randn(2, 4).to(dev)), torch.tensor([0, 2]).to(dev))
    """
    found, out = run(late, unsafe=True)
    assert len(found) == 1 and found[0].fix is None and out == HEAD + textwrap.dedent(late)
    early = """
        def train(model, x, y):
            criterion = nn.CrossEntropyLoss(weight=torch.ones(3))
            return criterion(model(x.to(device)), y.to(device))

        train(nn.Linear(4, 3).to(device), torch.randn(2, 4), torch.tensor([0, 2]))
    """
    found, out = run(early)
    assert len(found) == 1 and found[0].applied
    assert "criterion = nn.CrossEntropyLoss(weight=torch.ones(3)).to(device)\n" in out


# (a GNN script: ``weight = torch.tensor([number_of_zeros / number_of_ones])`` of counts
# taken from device labels: a list is read element by element into a new tensor on the
# default device, the CPU; a tensor given whole keeps its device)
@pytest.mark.parametrize("made, reported", [
    ("torch.tensor([n0 / n1])", True),
    ("torch.tensor((n1 / n0, ))", True),
    ("torch.as_tensor([n0 / n1])", True),
    ("torch.tensor(n0 / n1)", False),  # a 0-d copy of a device tensor: on the device
    ("torch.tensor([n0 / n1], device=device)", False),
])
def test_a_weight_made_from_a_list_of_device_values(made, reported):
    f, out = run(f"""
        model = nn.Linear(4, 1).to(device)
        x = torch.randn(8, 4).to(device)
        y = (torch.rand(8) > 0.5).float().to(device)
        n0, n1 = (y == 0).sum(), (y == 1).sum()
        criterion = nn.BCEWithLogitsLoss(pos_weight={made})
        loss = criterion(model(x).squeeze(1), y)
        """)
    assert bool(f) == reported, [x.message for x in f]


@pytest.mark.parametrize("wrap, found", [
    ("Variable({}, requires_grad=True)", True),
    ("autograd.Variable({})", True),
    ("{}", True),
    ("Variable({}.cpu())", False),  # moved back to the host before it is wrapped
])
def test_inputs_moved_inside_a_variable(wrap, found):
    """pytorch/pytorch#3879: ``x = Variable(torch.randn(2, 2).cuda(), requires_grad=True)``
    (and the target too): the tensor a ``Variable`` wraps is where it was moved."""
    x = wrap.format("torch.randn(2, 2).cuda()")
    t = wrap.format("torch.LongTensor([0, 1]).cuda()")
    f, out = run(f"""
        from torch import autograd
        from torch.autograd import Variable
        x = {x}
        t = {t}
        weight = torch.randn(2)
        m = nn.CrossEntropyLoss(weight=weight)
        loss = m(x, t)
    """)
    assert len(f) == (1 if found else 0)
    if found:
        assert "m = nn.CrossEntropyLoss(weight=weight).cuda()\n" in out
