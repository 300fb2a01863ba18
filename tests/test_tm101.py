"""TM101 on the semantic model: the shapes real training scripts take (issue 10 §2,
device) and the look-alike of each, plus the shared device queries of
``torchmend.rules._device`` that both device rules use."""

import ast
import os
import textwrap

import pytest

from torchmend.engine import Options, process_text
from torchmend.project import Project
from torchmend.rules import _device as D
from torchmend.semantic import SemanticModel
from tests.patching import apply_patch
from tests.siblings import unparsable_module

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
criterion = nn.CrossEntropyLoss()
"""


def run(body: str, unsafe: bool = False, head: str = HEAD):
    src = head + textwrap.dedent(body)
    res = process_text("t.py", src, Options(unsafe_fixes=unsafe, select=frozenset({"TM101"})))
    assert res.error is None, res.error
    out = apply_patch(src.encode(), res.diff).decode() if res.changed else src
    if res.changed:  # idempotent
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe, select=frozenset({"TM101"})))
        assert again.error is None and not again.changed, again.diff
    return res.findings, out, src


def added(src: str, out: str) -> list[str]:
    from torchmend.gitdiff import unified_diff

    diff = unified_diff(src.encode(), out.encode(), "t.py").decode()
    return [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


def codes(findings):
    return sorted(f.code for f in findings)


# ----------------------------------------------------------------------------- elements meeting the device


def test_labels_left_on_cpu_are_moved():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x = x.to(device)
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and f[0].applied
    assert "batch `y`" in f[0].message
    assert added(src, out) == ["y = y.to(device)"]


def test_criterion_parameter_still_meets_the_labels():
    # the old analysis took an unmoved loss module for "a model left on the CPU" and moved
    # only the inputs: the labels then met the output in the loss
    f, out, src = run(
        """
        def train(net, loss_fn, dl, dev):
            for x, y in dl:
                loss = loss_fn(net(x), y)

        train(nn.Linear(4, 2).to(device), nn.CrossEntropyLoss(), loader, device)
        """
    )
    assert added(src, out) == ["x, y = x.to(dev), y.to(dev)"]


@pytest.mark.parametrize("use", [
    "correct = (model(x).argmax(1) == y).sum()",
    "correct = model(x).argmax(1).eq(y).sum()",
    "correct = y.eq(model(x).argmax(1)).sum()",
    "loss = F.nll_loss(F.log_softmax(model(x), 1), y)",
    "loss = torch.sum(torch.max(model(x), 1)[1] == y.data)",
])
def test_every_kind_of_meeting(use):
    """Each operation that combines a CPU label with a device value needs the label moved."""
    f, out, src = run(
        f"""
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x = x.to(device)
            {use}
        """
    )
    assert added(src, out) == ["y = y.to(device)"], use


@pytest.mark.parametrize("use", [
    "picked = model(x)[torch.arange(len(y)), y]",  # a CPU index into a device tensor is legal
    "preds = model(x).argmax(1).cpu(); ok = (preds == y).sum()",
    "print(model(x).shape, y.shape, len(y))",
    "n = y.size(0) + y.numel()",
])
def test_labels_that_never_meet_the_device_stay(use):
    f, out, src = run(
        f"""
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x = x.to(device)
            {use}
        """
    )
    assert f == [] and out == src, use


def test_helper_computing_the_loss_is_read():
    f, out, src = run(
        """
        def step(net, a, b):
            return criterion(net(a), b)

        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            loss = step(model, x, y)
        """
    )
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]
    assert f[0].line == src.splitlines().index("    loss = step(model, x, y)") + 1


def test_helper_that_moves_is_trusted():
    f, out, src = run(
        """
        def step(net, a, b):
            a, b = a.to(device), b.to(device)
            return criterion(net(a), b)

        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            loss = step(model, x, y)
        """
    )
    assert f == [] and out == src


def test_unknown_loss_callee_makes_the_fix_unsafe():
    body = """
        def run_epoch(model, dl, loss_fn):
            for x, y in dl:
                loss = loss_fn(model(x), y)

        run_epoch(nn.Linear(4, 2).to(device), loader, lambda o, t: F.cross_entropy(o, t))
        """
    f, out, src = run(body)
    assert codes(f) == ["TM101"] and not f[0].applied and out == src
    assert "`y` also goes to `loss_fn()`" in f[0].message
    f, out, src = run(body, unsafe=True)
    assert added(src, out) == ["x, y = x.to(device), (y.to(device) if torch.is_tensor(y) else y)"]


def test_unknown_callee_after_the_batch_met_the_device_does_not_hide_it():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            out = model(batch[0])
            save_image(batch[0], "x.png")
        """
    )
    assert added(src, out) == ["batch = [(t.to(device) if torch.is_tensor(t) else t) for t in batch]"]


# ----------------------------------------------------------------------------- loaders, devices, models followed


def test_loader_built_by_helper_and_globals_read_by_function():
    f, out, src = run(
        """
        def make(n):
            return DataLoader(TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,))), batch_size=2)

        train_dl = make(8)
        model = nn.Linear(4, 2).to(device)

        def epoch():
            for x, y in train_dl:
                loss = criterion(model(x), y)

        epoch()
        """
    )
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_dict_of_loaders_and_phase_loop():
    f, out, src = run(
        """
        loaders = {p: DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))) for p in ["train", "val"]}
        model = nn.Linear(4, 2).to(device)
        for phase in ["train", "val"]:
            for inputs, labels in loaders[phase]:
                outputs = model(inputs)
                _, preds = torch.max(outputs, 1)
                loss = criterion(outputs, labels)
        """
    )
    assert added(src, out) == ["inputs, labels = inputs.to(device), labels.to(device)"]


def test_progress_bar_bound_to_a_name():
    f, out, src = run(
        """
        from tqdm import tqdm
        model = nn.Linear(4, 2).to(device)
        pbar = tqdm(loader, desc="train")
        for x, y in pbar:
            loss = criterion(model(x), y)
        """
    )
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_loader_kwargs_dict_is_looked_into():
    f, out, src = run(
        """
        kw = {"batch_size": 4}
        kw.update({"shuffle": True, "num_workers": 0})
        dl = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), **kw)
        bad = DataLoader(TensorDataset(torch.randn(8, 4)), **{"collate_fn": lambda b: [t.cuda() for t in b]})
        model = nn.Linear(4, 2).to(device)
        for x, y in dl:
            loss = criterion(model(x), y)
        for (x,) in bad:
            out = model(x)
        """
    )
    assert codes(f) == ["TM101"] and added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_device_passed_as_parameter_of_unknown_value():
    # the value of `device` is not a literal, but the loop's parameter is the very
    # variable the model was moved with (bound to it at the only call site)
    f, out, src = run(
        """
        def train(model, device, dl):
            for data, target in dl:
                loss = F.nll_loss(model(data), target)

        def main():
            if torch.accelerator.is_available():
                device = torch.accelerator.current_accelerator()
            else:
                device = pick_device()
            model = nn.Linear(4, 2).to(device)
            train(model, device, loader)

        main()
        """
    )
    assert added(src, out) == ["data, target = data.to(device), target.to(device)"]


def test_device_rebound_after_the_move_is_not_trusted():
    f, out, src = run(
        """
        def main():
            dev = pick_device()
            model = nn.Linear(4, 2).to(dev)
            dev = other_device()
            for x, y in loader:
                loss = criterion(model(x), y)

        main()
        """
    )
    assert codes(f) == ["TM101"] and not f[0].applied and out == src


def test_self_attribute_device_set_once():
    f, out, src = run(
        """
        class Runner:
            def __init__(self, model, gpu_id):
                self.gpu_id = gpu_id
                self.model = model.to(gpu_id)

            def epoch(self, dl):
                for source, targets in dl:
                    loss = F.cross_entropy(self.model(source), targets)

        Runner(nn.Linear(4, 2), 0).epoch(loader)
        """
    )
    assert added(src, out) == ["source, targets = source.to(self.gpu_id), targets.to(self.gpu_id)"]


def test_model_making_its_own_tensors_still_needs_its_inputs_moved():
    f, out, src = run(
        """
        class R(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(4, 3, batch_first=True)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), 3).to(device)
                return self.rnn(x, h0)[0]

        model = R().to(device)
        for x, y in loader:
            out = model(x.unsqueeze(1))
        """
    )
    assert added(src, out) == ["x = x.to(device)"]


def test_guarded_move_with_another_unmoved_model_is_report_only():
    f, out, src = run(
        """
        def evaluate(net, dl):
            for x, y in dl:
                out = net(x)

        model = nn.Linear(4, 2)
        if torch.cuda.is_available():
            model = model.cuda()
        evaluate(model, loader)
        evaluate(nn.Linear(4, 2), loader)
        """
    )
    assert codes(f) == ["TM101"] and not f[0].applied and out == src


def test_guarded_move_of_the_same_model_is_copied():
    f, out, src = run(
        """
        def evaluate(net, dl):
            for x, y in dl:
                out = net(x)

        model = nn.Linear(4, 2)
        if torch.cuda.is_available():
            model = model.cuda()
        evaluate(model, loader)
        """
    )
    assert "        if torch.cuda.is_available():\n            x = x.cuda()\n        out = net(x)" in out


def test_eval_loop_is_judged_on_its_own():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
        for x, y in loader:
            acc = (model(x).argmax(1) == y).float().mean()
        """
    )
    assert codes(f) == ["TM101"] and f[0].line == len(src.splitlines())
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_args_device_stays_unknown():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(args.device)
        for x, y in loader:
            x = x.to(args.device)
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and not f[0].applied and out == src
    assert "next(model.parameters()).device" in f[0].message


# ----------------------------------------------------------------------------- look-alikes

LOOKALIKES = {
    # (jeffheaton/app_deep_learning 04_3_kfold: the folds of tensors made on the device;
    # 08_2_ensembles: the splits moved with map(lambda t: t.to(device), ...))
    "dataset_of_indexed_device_tensors": """
        x = torch.randn(100, 4, device=device)
        y = torch.randint(0, 2, (100,), device=device)
        idx = torch.randperm(100)[:80]
        x_train, y_train = x[idx], y[idx]
        dl = DataLoader(TensorDataset(x_train, y_train), batch_size=16)
        model = nn.Linear(4, 2).to(device)
        for xb, yb in dl:
            loss = criterion(model(xb), yb)
        """,
    # (joosthub/PyTorchNLPBook chapter 6: ``classifier = classifier.to("cpu")`` before predicting;
    # the fix moved the input to the GPU for a model on the CPU)
    "model_moved_back_under_its_own_name": """
        model = nn.Linear(4, 2).to(device)
        model = model.to("cpu")

        def predict(model):
            x = torch.randn(1, 4)
            return model(x)

        print(predict(model))
        """,
    "dataset_named_in_a_fold_loop_of_device_tensors": """
        x = torch.tensor(values, dtype=torch.float32, device=device)
        y = torch.tensor(targets, device=device)
        for train_idx, test_idx in folds:
            x_train, y_train = x[train_idx], y[train_idx]
            train_dataset = TensorDataset(x_train, y_train)
            train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
            model = nn.Linear(4, 2).to(device)
            for xb, yb in train_loader:
                loss = criterion(model(xb), yb)
        """,
    "dataset_of_tensors_moved_by_map": """
        x_train, y_train = torch.randn(100, 4), torch.randint(0, 2, (100,))
        x_train, y_train = map(lambda t: t.clone().detach().to(device), (x_train, y_train))
        dl = DataLoader(TensorDataset(x_train, y_train), batch_size=16)
        model = nn.Linear(4, 2).to(device)
        for xb, yb in dl:
            loss = criterion(model(xb), yb)
        """,
    "cpu_device": """
        model = nn.Linear(4, 2).to("cpu")
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "cpu_device_object": """
        cpu = torch.device("cpu")
        model = nn.Linear(4, 2).to(cpu)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "moved_after_the_loop": """
        model = nn.Linear(4, 2)
        for x, y in loader:
            loss = criterion(model(x), y)
        model.to(device)
        """,
    "moved_back_to_cpu": """
        model = nn.Linear(4, 2).to(device)
        model.cpu()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "default_device": """
        torch.set_default_device(device)
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "dtype_only_to": """
        model = nn.Linear(4, 2).to(torch.float64)
        for x, y in loader:
            loss = criterion(model(x.double()), y)
        """,
    "distributed_wrapper": """
        model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2).to(device))
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "prepared": """
        model = nn.Linear(4, 2).to(device)
        model, dl = accelerator.prepare(model, loader)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "rnn_hidden_made_on_device_is_not_moving_inputs_but_batch_moved": """
        class R(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(4, 3, batch_first=True)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), 3).to(device)
                return self.rnn(x, h0)[0]

        model = R().to(device)
        for x, y in loader:
            x = x.to(device)
            out = model(x.unsqueeze(1))
        """,
    "forward_moves_inputs": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x.to(self.fc.weight.device))

        model = M().to(device)
        for x, y in loader:
            out = model(x)
        """,
    "preprocess_method_moves": """
        class Detector(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def preprocess(self, batched):
                return torch.stack([b.to(self.fc.weight.device) for b in batched])

            def forward(self, batched):
                return self.fc(self.preprocess(batched))

        model = Detector().to(device)
        for x, y in loader:
            out = model(x)
        """,
    "next_iter_moved": """
        model = nn.Linear(4, 2).to(device)
        x, y = next(iter(loader))
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        """,
    "next_of_unknown_iterator": """
        model = nn.Linear(4, 2).to(device)
        x, y = next(prefetcher)
        loss = criterion(model(x), y)
        """,
    "map_lambda_move": """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x, y = map(lambda t: t.to(device), (x, y))
            loss = criterion(model(x), y)
        """,
    "helper_in_place_before_use": """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            send_to(batch)
            loss = criterion(model(batch[0]), batch[1])
        """,
    "dataset_transform_moves": """
        tf = lambda t: t.to(device)
        dl = DataLoader(MyDataset(transform=tf), batch_size=2)
        model = nn.Linear(4, 2).to(device)
        for x, y in dl:
            loss = criterion(model(x), y)
        """,
    "loader_parameter_unknown_callers_elsewhere": """
        def evaluate(model, dl):
            for x, y in dl:
                out = model(x)
        """,
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_lookalike(name):
    for unsafe in (False, True):
        f, out, src = run(LOOKALIKES[name], unsafe=unsafe)
        assert f == [], [x.message for x in f]
        assert out == src


# ----------------------------------------------------------------------------- the shared queries


def _sem(code: str) -> SemanticModel:
    return SemanticModel(textwrap.dedent(code), "m.py", Project(standalone=True), lazy=False)


def _name(sem, name, nth=0):
    return [n for n in sem.find(ast.Name) if n.id == name][nth]


@pytest.mark.parametrize("value, known", [
    ('"cuda"', True),
    ("0", True),
    ('torch.device("cuda:0")', True),
    ('torch.device("cuda", 1)', True),
    ('"cuda" if torch.cuda.is_available() else "cpu"', True),
    ('torch.device("cuda" if torch.cuda.is_available() else "cpu")', True),
    ("torch.accelerator.current_accelerator()", True),
    ("args.device", False),
    ('f"cuda:{rank}"', False),
    ("torch.device(args.device)", False),
    ('torch.device("cuda", rank)', False),
])
def test_known_devices(value, known):
    sem = _sem(f"import torch\nd = {value}\nprint(d)\n")
    assert D.is_known_device(sem, _name(sem, "d", 1)) is known


def test_cpu_device():
    sem = _sem('import torch\na = "cpu"\nb = torch.device("cpu")\nc = "cuda" if x else "cpu"\nprint(a, b, c)\n')
    assert D.is_cpu_device(sem, _name(sem, "a", 1)) and D.is_cpu_device(sem, _name(sem, "b", 1))
    assert not D.is_cpu_device(sem, _name(sem, "c", 1))


def test_move_of():
    sem = _sem("import torch\nx.to(d)\nx.to(device=d)\nx.cuda()\nx.to(torch.float16)\nx.to(memory_format=torch.channels_last)\nx.to(d, torch.half)\n")
    calls = [c for c in sem.find(ast.Call) if sem.method_name(c) in ("to", "cuda")]
    got = [(m.style, sem.segment(m.device) if m.device is not None else None) if m else None for m in map(lambda c: D.move_of(sem, c), calls)]
    assert got == [("to", "d"), ("to", "d"), ("cuda", None), None, None, ("to", "d")]


def test_model_state_moves_and_guards():
    sem = _sem(
        """
        import torch
        import torch.nn as nn
        model = nn.Linear(2, 2)
        if torch.cuda.is_available():
            model.cuda()
        net = nn.Linear(2, 2)
        if flag:
            net = net.to("cuda")
        dp = nn.DataParallel(nn.Linear(2, 2)).cuda()
        other = make()
        model(x); net(x); dp(x); other(x)
        """
    )
    uses = {sem.segment(c.func): c for c in sem.find(ast.Call) if isinstance(c.func, ast.Name)}
    st = D.model_state(sem, uses["model"].func, uses["model"])
    assert st.moved and not st.unmoved and [sem.segment(g) for g in st.moves[0].guard] == ["torch.cuda.is_available()"]
    st = D.model_state(sem, uses["net"].func, uses["net"])
    assert st.moved and st.unmoved and st.moves[0].style == "to"
    assert D.model_state(sem, uses["dp"].func, uses["dp"]).handled
    assert D.model_state(sem, uses["other"].func, uses["other"]) is None


def test_device_text_at_prefers_the_functions_parameter():
    sem = _sem(
        """
        import torch
        device = torch.device("cuda")

        def train(model, dev):
            for x in data:
                pass

        m = Net().to(device)
        train(m, device)
        """
    )
    loop = sem.find(ast.For)[0]
    dev = _name(sem, "device", 1)  # the argument of .to()
    assert D.device_text_at(sem, dev, loop) == "dev"


def test_loader_of_follows_values_and_refuses_what_may_place_tensors():
    sem = _sem(
        """
        import torch
        from torch.utils.data import DataLoader
        def build():
            return DataLoader(ds, batch_size=2)
        a = build()
        b = {"t": DataLoader(ds), "v": DataLoader(ds)}
        c = DataLoader(ds, collate_fn=lambda xs: [x.cuda() for x in xs])
        d = DataLoader(TensorDataset(t.to("cuda")))
        e = DataLoader(ds, **opts)
        f = make_loader()
        for _ in a: pass
        for _ in b[k]: pass
        for _ in c: pass
        for _ in d: pass
        for _ in e: pass
        for _ in f: pass
        """
    )
    got = [D.loader_of(sem, loop.iter) is not None for loop in sem.find(ast.For)]
    assert got == [True, True, False, False, False, False]


def test_framework_in_file():
    assert D.framework_in_file(_sem("import lightning as L\n")) == "Lightning"
    assert D.framework_in_file(_sem("def f():\n    from accelerate import Accelerator\n")) == "Accelerate"
    assert D.framework_in_file(_sem("import torch\n")) is None


@pytest.mark.parametrize("make", ["DataLoader (ds, batch_size=4)", "torch.utils.data.DataLoader(\n        ds, batch_size=4)"])
def test_loader_made_in_a_function_after_chunks_that_only_name_the_class(make):
    """The loader may be made late in a long file whose earlier definitions only name
    ``DataLoader`` in type hints and docstrings (not parsed for it), spelled with a space
    before the bracket or across lines; its batches are still followed.  A file that
    only names the class makes no loader, and has no finding."""
    hint = "".join(
        f"\n\ndef helper{i}(loader: DataLoader) -> DataLoader:\n    \"\"\"Wraps a DataLoader.\"\"\"\n"
        + "    x = 1\n" * 200 + "    return loader\n" for i in range(3))
    head = "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader, TensorDataset\n" + hint
    body = f"""


    def train():
        device = torch.device("cuda")
        ds = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
        loader = {make}
        model = nn.Linear(4, 2).to(device)
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            x = x.to(device)
            loss = criterion(model(x), y)
    """
    f, out, src = run(body, head=head)
    assert codes(f) == ["TM101"] and "batch `y`" in f[0].message
    only_named = head + "\n\ndevice = torch.device('cuda')\nfor x, y in helper0(None):\n    x.to(device)\n"
    res = process_text("t.py", only_named, Options(select=frozenset({"TM101"})))
    assert res.error is None and [x.code for x in res.findings if "batch" in x.message] == []


# ----------------------------------------------------------------------------- Tensor.type moves
# (eriklindernoren/PyTorch-GAN: ``Tensor = torch.cuda.FloatTensor if cuda else
# torch.FloatTensor`` ... ``real_imgs = Variable(imgs.type(Tensor))`` in 30 scripts)
GAN_HEAD = HEAD + "cuda = torch.cuda.is_available()\nmodel = nn.Linear(4, 2)\nif cuda:\n    model.cuda()\n"


@pytest.mark.parametrize(
    "tensor, moved",
    [("Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor", True),
     ("Tensor = torch.cuda.FloatTensor", True),
     ("Tensor = 'torch.cuda.FloatTensor'", True),
     ("Tensor = get_type()", True),  # cannot be read: it may be a CUDA type
     ("Tensor = torch.FloatTensor", False),
     ("Tensor = 'torch.FloatTensor'", False),
     ("Tensor = torch.float32", False)],
)
def test_type_with_a_cuda_tensor_type_moves_the_batch(tensor, moved):
    f, _, _ = run(
        f"""
        {tensor}
        for x, y in loader:
            x = Variable(x.type(Tensor))
            loss = F.cross_entropy(model(x), y.type(torch.LongTensor if not cuda else torch.cuda.LongTensor))
        """,
        head=GAN_HEAD + "from torch.autograd import Variable\n",
    )
    assert codes(f) == ([] if moved else ["TM101"]), [x.message for x in f]


def test_type_moves():
    sem = SemanticModel(
        "import torch\nT = torch.cuda.FloatTensor if c else torch.FloatTensor\n"
        "a.type(T)\na.type(torch.cuda.HalfTensor)\na.type('torch.cuda.FloatTensor')\na.type(b.type())\na.type(*t)\n"
        "a.type(torch.float16)\na.type(torch.FloatTensor)\na.type('torch.LongTensor')\na.type(b.dtype)\na.type()\n"
        "a.type(dtype=torch.half)\na.to(T)\n"
    )
    calls = sorted((c for c in sem.find(ast.Call) if c.lineno > 2 and isinstance(c.func, ast.Attribute)
                    and isinstance(c.func.value, ast.Name) and c.func.value.id == "a"), key=lambda c: c.lineno)
    assert [D.type_moves(sem, c) for c in calls] == [True] * 5 + [False] * 7


# ----------------------------------------------------------------------------- host-side arguments
# (bentrevett/pytorch-sentiment-analysis: ``prediction = model(ids, length)`` with the lengths
# left on the CPU for ``pack_padded_sequence``, which raises on a CUDA lengths tensor)
RNN = """
class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.lstm = nn.LSTM(4, 4, batch_first=True)
        self.fc = nn.Linear(4, 2)

    def forward(self, ids, length):
        embedded = self.embedding(ids)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, {use}batch_first=True, enforce_sorted=False)
        _, (hidden, _) = self.lstm(packed)
        return self.fc(hidden[-1])


model = RNN()
model = model.to(device)


def train(dataloader, model):
    for batch in dataloader:
        ids = batch["ids"].to(device)
        length = batch["length"]
        label = batch["label"].to(device)
        loss = criterion(model(ids, {arg}), label)
        loss.backward()


train(loader, model)
"""


@pytest.mark.parametrize("use", ["length, ", "length.cpu(), ", "lengths=length.tolist(), ", "len(length) * [3], "])
@pytest.mark.parametrize("arg", ["length", "length=length"])
def test_lengths_the_forward_keeps_on_the_host_are_not_moved(use, arg):
    f, _, _ = run(RNN.format(use=use, arg=arg))
    assert f == [], [x.message for x in f]


def test_lengths_the_forward_uses_on_the_device_are_still_moved():
    src = RNN.replace("        return self.fc(hidden[-1])",
                      "        mask = torch.arange(8, device=ids.device)[None] < length[:, None]\n"
                      "        return self.fc(hidden[-1]) * mask[:, :2]")
    f, out, _ = run(src.format(use="length.cpu(), ", arg="length"))
    assert codes(f) == ["TM101"]


def test_a_batch_holding_host_lengths_is_not_moved_whole():
    """``ids`` left on the CPU beside the lengths in one dict batch: moving the dict would
    move the lengths too (pack_padded_sequence then raises): reported, not fixed."""
    src = RNN.replace('ids = batch["ids"].to(device)', 'ids = batch["ids"]')
    f, out, src = run(src.format(use="length, ", arg="length"), unsafe=True)
    assert codes(f) == ["TM101"] and f[0].fix is None and out == src
    assert "on the CPU on purpose" in f[0].message and "move the batch to" not in f[0].message


# ----------------------------------------------------------------------------- branches where the model is not moved
# (omerbsezer/Fast-Pytorch: ``if CUDA: correct += (p.cpu() == labels.cpu()).sum()
# else: correct += (p == labels).sum()`` with the model moved under ``if CUDA:``)
FLAG_HEAD = HEAD + "CUDA = torch.cuda.is_available()\nnet = nn.Linear(4, 2)\n"


@pytest.mark.parametrize(
    "move, branch, reported",
    [("if CUDA:\n    net = net.cuda()\n", "if CUDA:\n        c = (p.cpu() == y.cpu()).sum()\n    else:\n        c = (p == y).sum()\n", False),
     ("if CUDA:\n    net.cuda()\n", "if not CUDA:\n        c = (p == y).sum()\n", False),
     # another flag: the else branch may run with the model on the GPU
     ("if CUDA:\n    net = net.cuda()\n", "if DEBUG:\n        c = 0\n    else:\n        c = (p == y).sum()\n", True),
     # moved whatever the flag: its outputs are on the GPU in both branches
     ("net = net.cuda()\n", "if DEBUG:\n        c = 0\n    else:\n        c = (p == y).sum()\n", True),
     # ... unless the flag is CUDA's availability: without CUDA ``.cuda()`` raises first
     ("net = net.cuda()\n", "if CUDA:\n        c = 0\n    else:\n        c = (p == y).sum()\n", False)],
)
def test_a_comparison_where_the_model_is_not_moved(move, branch, reported):
    f, _, _ = run(f"{move}for x, y in loader:\n    if CUDA:\n        x = x.cuda()\n    _, p = torch.max(net(x).data, 1)\n    {branch}",
                  head=FLAG_HEAD + "DEBUG = False\n")
    assert codes(f) == (["TM101"] if reported else []), [x.message for x in f]


# (ritchieng/deep-learning-wizard: the model moved to ``"cuda" if available else "cpu"``
# unconditionally, ``if torch.cuda.is_available(): correct += (p.cpu() == y.cpu()).sum()
# else: correct += (p == y).sum()``: the else branch runs only where the device is the CPU)
@pytest.mark.parametrize(
    "head, branch, reported",
    [(HEAD, "if torch.cuda.is_available():\n        c = (p.cpu() == y.cpu()).sum()\n    else:\n        c = (p == y).sum()\n", False),
     (HEAD, "if not torch.cuda.is_available():\n        c = (p == y).sum()\n", False),
     (HEAD + "CUDA = torch.cuda.is_available()\n", "if CUDA:\n        c = 0\n    else:\n        c = (p == y).sum()\n", False),
     # the body of the test, not its else: the model is on the GPU there
     (HEAD, "if torch.cuda.is_available():\n        c = (p == y).sum()\n", True),
     # a device that may be MPS where CUDA is missing: the else branch may still mix devices
     (HEAD.replace('"cuda" if torch.cuda.is_available() else "cpu"',
                   '"cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"'),
      "if torch.cuda.is_available():\n        c = 0\n    else:\n        c = (p == y).sum()\n", True),
     # another test: the model is on ``device`` in both branches
     (HEAD + "VERBOSE = True\n", "if VERBOSE:\n        c = 0\n    else:\n        c = (p == y).sum()\n", True)],
)
def test_a_comparison_where_cuda_is_not_available(head, branch, reported):
    f, _, _ = run(f"net = nn.Linear(4, 2).to(device)\nfor x, y in loader:\n    x = x.to(device)\n"
                  f"    _, p = torch.max(net(x).data, 1)\n    {branch}", head=head)
    assert codes(f) == (["TM101"] if reported else []), [x.message for x in f]


# (a deep-sets training script: ``x = do_padding(x, batch_size)`` pads a short batch with
# ``torch.cat([x, torch.zeros(n, x.size(1))])`` before the model: moving the batch at the
# top of the loop makes that cat mix devices; reported, not fixed)
PAD = """\
def do_padding(x, size):
    if x.size(0) < size:
        pad = torch.zeros(size - x.size(0), x.size(1){device})
        return torch.cat([x, pad], dim=0)
    return x


net = nn.Linear(4, 2).to(device)
for x, y in loader:
    x = do_padding(x, 4)
    loss = criterion(net(x), y.to(device))
"""


def test_a_batch_padded_with_cpu_tensors_by_a_helper_is_reported_not_fixed():
    f, out, src = run(PAD.format(device=""), unsafe=True)
    assert codes(f) == ["TM101"] and f[0].fix is None and out == src
    assert "`do_padding()` gets `x` on its way to the model and makes a tensor on the CPU" in f[0].message
    assert "while the model is on `device`" in f[0].message and "next(" not in f[0].message  # no move hint


def test_a_metric_helper_after_the_model_does_not_stop_the_fix():
    """A helper given the labels that makes a CPU tensor but returns a number: not on the
    way to the model (the review's ``accuracy(out, y)``)."""
    f, out, _ = run("def accuracy(out, target):\n    hist = torch.zeros(2, 2)\n"
                    "    return (out.argmax(1) == target).float().mean().item()\n\n\n"
                    "net = nn.Linear(4, 2).to(device)\nfor x, y in loader:\n    out = net(x)\n"
                    "    loss = criterion(out, y)\n    acc = accuracy(out, y)\n")
    assert codes(f) == ["TM101"] and f[0].applied


def test_a_helper_that_makes_no_tensor_does_not_stop_the_fix():
    src = PAD.format(device="").replace("pad = torch.zeros(size - x.size(0), x.size(1))", "pad = x[-1:].repeat(size - x.size(0), 1)")
    f, out, _ = run(src)
    assert codes(f) == ["TM101"] and f[0].applied
    assert "x, y = x.to(device), y.to(device)" in out or "x = x.to(device)" in out


# (the PyTorch quickstart before pytorch/tutorials#1890: ``x, y = test_data[0][0],
# test_data[0][1]`` then ``pred = model(x)`` with the model on ``device``: a sample of the
# loader's dataset is on the CPU like its batches)
SAMPLE_HEAD = HEAD.replace(
    "loader = DataLoader(",
    "test_data = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))\nloader = DataLoader(test_data, batch_size=4)\n"
    "unused = DataLoader(",
)


@pytest.mark.parametrize(
    "take, use, move",
    [("x, y = test_data[0][0], test_data[0][1]\n", "pred = net(x)\n", "x = x.to(device)"),
     ("x, y = test_data[3]\n", "pred = net(x.unsqueeze(0))\n", "x = x.to(device)"),
     ("sample = test_data[3]\n", "pred = net(sample[0].unsqueeze(0))\n",
      "sample = [(t.to(device) if torch.is_tensor(t) else t) for t in sample]")],
)
def test_a_sample_of_the_loaders_dataset_is_moved(take, use, move):
    f, out, src = run(f"net = nn.Linear(4, 2).to(device)\n{take}with torch.no_grad():\n    {use}"
                      "    print(pred.argmax(-1) == y if 'y' in dir() else pred)\n", head=SAMPLE_HEAD)
    assert codes(f) == ["TM101"] and f[0].applied, [x.message for x in f]
    added_lines = added(src, out)
    assert added_lines == [move]
    assert f[0].message.startswith("sample `")


@pytest.mark.parametrize("loop", ["for img, label in test_data:", "for i, (img, label) in enumerate(test_data):",
                                  "for i, (img, label) in enumerate(tqdm(test_data)):"])
def test_the_samples_of_a_loop_over_the_loaders_dataset_are_moved(loop):
    """(Ham2Pose's predict.py, the notebooks that show a few predictions) ``for img, label
    in test_data: pred = net(img.unsqueeze(0))``: each sample is on the CPU."""
    f, out, src = run(f"net = nn.Linear(4, 2).to(device)\nwith torch.no_grad():\n    {loop}\n"
                      "        pred = net(img.unsqueeze(0))\n        print(pred.argmax(-1).item(), label)\n",
                      head=SAMPLE_HEAD.replace("import torch\n", "import torch\nfrom tqdm import tqdm\n", 1))
    assert codes(f) == ["TM101"] and f[0].applied, [x.message for x in f]
    assert f[0].message.startswith("sample `img`")
    assert added(src, out) == ["img = img.to(device)"]


@pytest.mark.parametrize("body", [
    # moved first; statistics of the data with no model; another iterable beside it
    "for img, label in test_data:\n    img = img.to(device)\n    print(net(img.unsqueeze(0)))\n",
    "total = 0\nfor img, label in test_data:\n    total += img.sum()\nprint(net(torch.zeros(1, 4, device=device)), total)\n",
    "for img, other in zip(test_data, range(3)):\n    print(net(other))\n",
])
def test_loops_over_the_dataset_that_move_or_feed_nothing_are_left_alone(body):
    f, _, _ = run("net = nn.Linear(4, 2).to(device)\n" + body, head=SAMPLE_HEAD)
    assert codes(f) == [], [x.message for x in f]


@pytest.mark.parametrize("unpack", ["a, b = samples", "[a, b] = samples", "(a, b) = samples"])
def test_a_batch_element_unpacked_as_a_sequence_is_reported_without_a_fix(unpack):
    """(Orienfish/ESC50-torch) each item is ``[wav, spec], label``: the default collate
    gives ``samples`` as a list, which ``samples.to(device)`` would break (AttributeError);
    the loop unpacks it, so it is said, not fixed.  Moving the parts is fixed as before."""
    src = ("net = nn.Linear(4, 2).to(device)\nfor samples, labels in loader:\n    labels = labels.to(device)\n"
           f"    {unpack}\n    out = net(a) + net(b)\n")
    f, out, orig = run(src)
    assert codes(f) == ["TM101"] and not f[0].applied and f[0].fix is None, [x.message for x in f]
    assert "`samples` is unpacked as a sequence" in f[0].message and out == orig
    f, out, orig = run(src.replace(f"    {unpack}\n", f"    {unpack}\n    a, b = a.to(device), b.to(device)\n"))
    assert codes(f) == []


_NP_DATASET = """\
import numpy as np


class NpData(torch.utils.data.Dataset):
    def __init__(self, X, y):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return {item}, self.y[i]


test_data = NpData(np.random.randn(8, 4).astype(np.float32), np.zeros(8, dtype=np.int64))
loader = DataLoader(test_data, batch_size=4)
net = nn.Linear(4, 2).to(device)
"""


@pytest.mark.parametrize("item, found", [
    ("self.X[i]", False),  # NumPy items: only the loader's collation makes them tensors
    ("torch.tensor(self.X[i])", True),
    ("torch.from_numpy(self.X[i]).float()", True),
])
@pytest.mark.parametrize("take", ["for x, y in test_data:\n    print(net(x))\n", "x, y = test_data[0]\nprint(net(x))\n"])
def test_the_samples_of_a_same_file_dataset_are_tensors_only_when_it_makes_them(item, found, take):
    """(review) a sample of a dataset whose ``__getitem__`` returns NumPy arrays is no
    tensor: ``x.to(device)`` on it raised AttributeError."""
    f, out, src = run(_NP_DATASET.format(item=item) + take)
    assert codes(f) == (["TM101"] if found else []), [x.message for x in f]
    if found:
        assert "x = x.to(device)" in added(src, out)


def test_a_samples_label_compared_with_the_output_is_not_a_meet():
    """A torchvision sample's label is a Python int: only what reaches the model counts."""
    f, _, _ = run("net = nn.Linear(4, 2).to(device)\nx, y = test_data[0]\nx = x.to(device)\n"
                  "print(net(x).argmax() == y)\n", head=SAMPLE_HEAD)
    assert codes(f) == []


def test_a_sample_of_a_dataset_that_places_tensors_is_left_alone():
    head = SAMPLE_HEAD.replace("TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))",
                               "TensorDataset(torch.randn(8, 4).to(device), torch.randint(0, 2, (8,)))")
    f, _, _ = run("net = nn.Linear(4, 2).to(device)\nx, y = test_data[0]\npred = net(x)\n", head=head)
    assert codes(f) == []


# (glam-imperial/cider: ``Conv_Model.__init__`` ends with ``self.to(device)``, device
# defaulting to 'cuda': the constructor moves the module)
SELF_TO = """\
class Net(nn.Module):
    def __init__(self, {param}):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.to(device)

    def forward(self, x):
        return self.fc(x)


net = Net({arg})
for x, y in loader:
    loss = criterion(net(x), y)
"""


@pytest.mark.parametrize(
    "param, arg, move",
    [('device="cuda"', "", 'x, y = x.to("cuda"), y.to("cuda")'),
     ("device", "device", "x, y = x.to(device), y.to(device)"),
     ("device", 'device="cuda:0"', 'x, y = x.to("cuda:0"), y.to("cuda:0")')],
)
def test_a_module_that_moves_itself_in_init(param, arg, move):
    f, out, src = run(SELF_TO.format(param=param, arg=arg))
    assert codes(f) == ["TM101"] and f[0].applied, [x.message for x in f]
    assert added(src, out) == [move]


def test_a_module_moved_to_none_in_init_is_not_moved():
    f, _, _ = run(SELF_TO.format(param="device=None", arg=""))
    assert codes(f) == []


# (the Windows ML training tutorial: ``train()`` moves the global ``model`` and calls
# ``testAccuracy()`` every epoch; ``__main__`` rebinds ``model = Network()`` before
# ``testBatch()``: only the first sees the moved model)
GLOBAL = """\
net = nn.Linear(4, 2)


def test_accuracy():
    for x, y in loader:
        print((net(x).argmax(1) == y).sum())


def test_batch():
    x, y = next(iter(loader))
    print(net(x))


def train():
    net.to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(net(x), y)
    test_accuracy()


if __name__ == "__main__":
    train()
{between}    test_batch()
"""


@pytest.mark.parametrize(
    "between, batch_reported",
    [("    net = nn.Linear(4, 2)\n    net.load_state_dict(torch.load('net.pth'))\n", False),
     ("", True),  # the moved model
     ("    net = nn.Linear(4, 2)\n    train()\n", True),  # moved again before the call
     ("    net = nn.Linear(4, 2).to(device)\n", True)],  # a new model, moved
)
def test_a_global_model_rebound_before_a_helper_runs(between, batch_reported):
    f, _, _ = run(GLOBAL.format(between=between))
    lines = sorted(x.line for x in f)
    accuracy_line = HEAD.count("\n") + 6
    batch_line = HEAD.count("\n") + 11
    assert accuracy_line in lines, [x.message for x in f]  # called from train(), after the move
    assert (batch_line in lines) == batch_reported, [x.message for x in f]


# (lukemelas/EfficientNet-PyTorch#52: ``img = tfms(Image.open('img.png')).unsqueeze(0)``
# then ``img.to(device)`` on its own line: the result of a tensor-only method is a tensor)
@pytest.mark.parametrize("made, reported", [("tfms(image).unsqueeze(0)", True), ("tfms(image).permute(2, 0, 1)", True),
                                            ("tfms(image)", False), ("np.asarray(image).reshape(1, -1)", False)])
def test_a_dropped_move_of_a_tensor_method_result(made, reported):
    f, out, src = run(f"img = {made}\nimg.to(device)\n")
    got = [x for x in f if "does nothing" in x.message]
    assert len(got) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert got[0].fix is None and out == src  # likely a tensor: reported, not rewritten


# (daniilidis-group/neural_renderer look.py: ``elif torch.is_tensor(direction):
# direction.to(device)`` leaves the caller's tensor on the CPU)
@pytest.mark.parametrize("fn, reported", [
    ("def f(x, device):\n    if torch.is_tensor(x):\n        x.to(device)\n    return x\n", True),
    ("def f(x, device):\n    if isinstance(x, list):\n        x = torch.tensor(x)\n    elif isinstance(x, torch.Tensor):\n"
     "        x.cuda()\n    return x\n", True),
    ("def f(x: torch.Tensor, device):\n    x.to(device)\n    return x\n", True),
    # rebound inside the branch by an unknown call, in the other branch, a module, a rebound parameter
    ("def f(x, device):\n    if torch.is_tensor(x):\n        x = g(x)\n        x.to(device)\n    return x\n", False),
    ("def f(x, device):\n    if not torch.is_tensor(x):\n        x.to(device)\n    return x\n", False),
    ("def f(x, device):\n    if torch.is_tensor(x):\n        pass\n    else:\n        x.to(device)\n    return x\n", False),
    ("def f(m, device):\n    if isinstance(m, nn.Module):\n        m.to(device)\n    return m\n", False),
    ("def f(x: torch.Tensor, device):\n    x = g(x)\n    x.to(device)\n    return x\n", False),
])
def test_a_dropped_move_of_a_value_the_code_shows_is_a_tensor(fn, reported):
    f, out, src = run(fn)
    got = [x for x in f if "does nothing" in x.message]
    assert len(got) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert got[0].fix is not None
        stmt = src.splitlines()[got[0].line - 1].strip()
        assert f"{stmt.split('.')[0]} = {stmt}" in out


@pytest.mark.parametrize("cast", ["x.to(torch.float16)", "x.to(q.dtype)", "x.to(dtype=torch.long)"])
def test_a_dropped_dtype_cast_is_not_a_device_finding(cast):
    f, out, src = run(f"x = torch.zeros(3)\nq = torch.ones(2)\n{cast}\n")
    assert [x for x in f if "does nothing" in x.message] == [] and out == src


@pytest.mark.parametrize(
    "extra, between",
    [  # the helper moves the model itself
        ("", "    net = nn.Linear(4, 2)\n"),
        # a method moves it between the rebinding and the call
        ("class Setup:\n    def go(self):\n        net.cuda()\n\n\n", "    net = nn.Linear(4, 2)\n    Setup().go()\n"),
        # through an alias
        ("", "    net = nn.Linear(4, 2)\n    m = net\n    m.to(device)\n"),
        # four calls deep
        ("def a():\n    net.to(device)\n\n\ndef b():\n    a()\n\n\ndef c():\n    b()\n\n\ndef d():\n    c()\n\n\n",
         "    net = nn.Linear(4, 2)\n    d()\n"),
    ],
)
def test_a_rebound_global_moved_again_before_the_call_is_reported(extra, between):
    src = GLOBAL.format(between=between)
    if extra:
        src = src.replace("def train():", extra + "def train():")
    else:
        src = src.replace("def test_batch():\n", "def test_batch():\n    net.to(device)\n") if "m = net" not in between else src
    f, _, _ = run(src)
    assert any("`x`" in x.message and "reaches `net`" in x.message for x in f), [x.message for x in f]


@pytest.mark.parametrize("init", ['device="cpu"', "dtype=torch.float64"])
def test_a_module_moved_to_the_cpu_or_cast_in_init_is_not_moved(init):
    f, _, _ = run(SELF_TO.format(param=init, arg="").replace("self.to(device)", "self.to(" + init.split("=")[0] + ")"))
    assert codes(f) == []


# ----------------------------------------------------------------------------- tensors the script makes

MADE_HEAD = """\
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
arr = np.zeros((8, 4), dtype=np.float32)
"""


def test_full_batch_tensors_are_moved_where_made():
    f, out, src = run(
        """
        X = torch.from_numpy(arr)
        y = torch.tensor(arr[:, 0] > 0, dtype=torch.long)
        model = nn.Linear(4, 2).to(device)
        for epoch in range(3):
            loss = nn.CrossEntropyLoss()(model(X), y)
        """,
        head=MADE_HEAD,
    )
    assert codes(f) == ["TM101", "TM101"]
    assert added(src, out) == ["X = X.to(device)", "y = y.to(device)"]


@pytest.mark.parametrize("make", [
    "torch.randn(2, 4)", "torch.rand(2, 4).float()", "torch.FloatTensor(arr)", "torch.tensor([[1.0, 2.0, 3.0, 4.0]])",
    "torch.from_numpy(arr).unsqueeze(0)", "torch.as_tensor(arr.tolist())",
])
def test_made_tensor_shapes(make):
    f, out, src = run(f"model = nn.Linear(4, 2).cuda()\nx = {make}\nprint(model(x))\n", head=MADE_HEAD)
    assert codes(f) == ["TM101"]
    assert added(src, out) == ["x = x.cuda()"]


@pytest.mark.parametrize("imp, make", [
    ("import torch as th", "th.from_numpy(arr)"), ("import numpy, torch as T", "T.randn(2, 4)"),
    ("import torch as th", "torch.randn(2, 4)"),
])
def test_made_tensor_through_another_name_of_torch(imp, make):
    f, out, src = run(f"{imp}\nmodel = nn.Linear(4, 2).cuda()\nx = {make}\nprint(model(x))\n", head=MADE_HEAD)
    assert codes(f) == ["TM101"]
    assert added(src, out) == ["x = x.cuda()"]


RNN_HEAD = MADE_HEAD + """
class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 8, batch_first=True)

    def forward(self, x, h):
        return self.gru(x, h)

"""


@pytest.mark.parametrize("body, fixed", [
    # an initial state made in a function that calls the model the module-level code moves
    ("model = RNN().to(device)\n\n\ndef step(x):\n    h = torch.zeros(1, x.size(0), 8)\n    return model(x.to(device), h)\n",
     ["h = h.to(device)"]),
    # in a method of a trainer class (not a module) that moves its model in __init__
    ("class Trainer:\n    def __init__(self):\n        self.net = RNN().to(device)\n\n    def step(self, x):\n"
     "        h0 = torch.zeros(1, x.size(0), 8)\n        return self.net(x.to(device), h0)\n", ["h0 = h0.to(device)"]),
    ("model = RNN().cuda()\nfor i in range(3):\n    h = torch.ones(1, 2, 8)\n    out = model(torch.randn(2, 3, 4).cuda(), h)\n",
     ["h = h.cuda()"]),
])
def test_initial_states_the_script_makes(body, fixed):
    f, out, src = run(body, head=RNN_HEAD)
    assert codes(f) == ["TM101"]
    assert added(src, out) == fixed


@pytest.mark.parametrize("body", [
    # a module's own method: TM102's
    "class Seq(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.rnn = RNN().to(device)\n\n"
    "    def go(self, x):\n        h = torch.zeros(1, x.size(0), 8)\n        return self.rnn(x, h)\n",
    # made on the device, or moved before the call
    "model = RNN().to(device)\n\n\ndef step(x):\n    h = torch.zeros(1, x.size(0), 8, device=device)\n    return model(x.to(device), h)\n",
    "model = RNN().to(device)\n\n\ndef step(x):\n    h = torch.zeros(1, x.size(0), 8)\n    return model(x.to(device), h.to(device))\n",
    # an accumulator the device values are brought back to
    "model = nn.Linear(4, 2).to(device)\ntotal = torch.zeros(2)\nfor i in range(3):\n"
    "    total += model(torch.randn(5, 4).to(device)).sum(0).cpu()\n",
    # a model the module-level code never moves
    "model = RNN()\n\n\ndef step(x):\n    h = torch.zeros(1, x.size(0), 8)\n    return model(x, h)\n",
])
def test_initial_state_lookalikes(body):
    f, out, src = run(body, head=RNN_HEAD)
    assert [x for x in f if x.code == "TM101"] == [] and out == src


def test_a_name_spelled_like_a_torch_alias_is_not_torch():
    f, out, src = run("import mathlib as th\nmodel = nn.Linear(4, 2).cuda()\nx = th.randn(2, 4)\nprint(model(x))\n",
                      head=MADE_HEAD)
    assert f == []


@pytest.mark.parametrize("body", [
    "x = torch.randn(2, 4, device=device)\nmodel = nn.Linear(4, 2).to(device)\nprint(model(x))\n",
    "x = torch.randn(2, 4).to(device)\nmodel = nn.Linear(4, 2).to(device)\nprint(model(x))\n",
    "x = torch.randn(2, 4)\nmodel = nn.Linear(4, 2).to(device)\nx = x.to(device)\nprint(model(x))\n",
    "x = torch.randn(2, 4)\nmodel = nn.Linear(4, 2)\nprint(model(x))\n",
    "x = torch.randn(2, 4)\nmodel = nn.Linear(4, 2).to('cpu')\nprint(model(x))\n",
    "x = torch.randn(2, 4)\nmodel = nn.DataParallel(nn.Linear(4, 2).cuda())\nprint(model(x))\n",
    # a 0-dim tensor mixes with device tensors
    "s = torch.tensor(2.0)\nmodel = nn.Linear(4, 2).to(device)\nprint(model(torch.ones(1, 4, device=device)) * s)\n",
    # ``torch.tensor`` of something that may already be a tensor keeps its device
    "def f(t):\n    x = torch.tensor(t)\n    return model(x)\nmodel = nn.Linear(4, 2).to(device)\n",
    # into a dataset: the loader's batches are what meets the model
    "from torch.utils.data import TensorDataset\nX = torch.from_numpy(arr)\nds = TensorDataset(X)\n"
    "model = nn.Linear(4, 2).to(device)\nfor (xb,) in ds:\n    print(model(xb.to(device)))\n",
    # a method of a module class: TM102's domain
    "class M(nn.Module):\n    def go(self):\n        x = torch.randn(2, 4)\n        return self.fc(x)\n",
])
def test_made_tensor_lookalikes(body):
    f, out, src = run(body, head=MADE_HEAD)
    assert f == [] and out == src


def test_made_tensor_used_on_the_host_is_report_only():
    f, out, src = run(
        "model = nn.Linear(4, 2).to(device)\nx = torch.from_numpy(arr)\nprint(model(x))\nprint(x.numpy().sum())\n",
        head=MADE_HEAD,
    )
    assert codes(f) == ["TM101"] and f[0].fix is None and "used on the host (line" in f[0].message
    assert out == src


def test_made_tensor_before_the_device_is_bound_is_report_only():
    f, out, src = run(
        "x = torch.randn(2, 4)\ndev = 'cuda'\nmodel = nn.Linear(4, 2).to(dev)\nprint(model(x))\n", head=MADE_HEAD,
    )
    assert codes(f) == ["TM101"] and f[0].fix is None and "`dev` is not bound yet" in f[0].message


def test_made_tensor_gate_matches_the_analysis():
    """The text screen lets every file through in which the analysis finds a made tensor:
    module code or a function where something moved is also called, not a class;
    ``x = Variable(...)``."""
    def _made_outside_classes(text):
        return next(D.made_lines_outside_classes(text), None) is not None

    call = "model = Net().to(d)\nmodel(z)\n"
    yes = [
        "x = torch.randn(2)\n" + call,
        "class A:\n    pass\nx = torch.randn(2)\n" + call,
        "def f():\n    x = torch.from_numpy(a)\n    m.to(d)\n    m(x)\n",
        "@dec\ndef f():\n    x = Variable(torch.FloatTensor(a))\n    self.net.cuda()\n    return self.net(x)\n",
        "class A:\n    def g(self):\n        x = torch.randn(2)\n\nif True:\n    y = torch.rand(3)\n    net.cuda()\n"
        "def h():\n    pass\nnet(y)\n",
    ]
    no = [
        "class A:\n    def g(self):\n        x = torch.randn(2)\n        y = x.to(d)\n",
        "def f():\n    x = torch.randn(2)\n    return x\n",
        "y = f(torch.randn(2))\n",
        # what is moved is never called: no moved model here
        "x = torch.randn(2)\ny = x.to(d)\nprint(f(y))\n",
        "def f():\n    x = torch.from_numpy(a)\n    y = x.to(d)\n    return g(y)\n",
    ]
    yes += [
        "x = transforms.ToTensor()(img)\n" + call,
        "x = TF.to_tensor(img)\n" + call,
        "t = transforms.Compose([transforms.ToTensor()])\nx = t(img).unsqueeze(0)\n" + call,
    ]
    for text in yes:
        assert _made_outside_classes(text), text
        sem = SemanticModel("import torch\nimport torchvision.transforms as transforms\n"
                            "import torchvision.transforms.functional as TF\n" + text)
        assert D.made_tensors(sem) or "Variable" in text, text
    for text in no:
        assert not _made_outside_classes(text), text


# ----------------------------------------------------------------------------- loaders passed in

TRAINER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Trainer:
    def __init__(self, model: nn.Module, train_loader, valid_loader):
        self.model = model.to(DEVICE)
        self.train_loader = train_loader
        self.valid_loader = valid_loader
        self.criterion = nn.CrossEntropyLoss()

    def train(self):
        for x, y in self.train_loader:
            {train_move}
            loss = self.criterion(self.model(x), y)

    def validate(self):
        for x, y in self.valid_loader:
            {valid_move}
            loss = self.criterion(self.model(x), y)
"""


def test_a_loader_passed_in_is_plain_when_another_loop_of_the_class_moves_its_batch():
    src = TRAINER.format(train_move="x, y = x.to(DEVICE), y.to(DEVICE)", valid_move="pass")
    f, out, src = run(src, head="")
    assert codes(f) == ["TM101"] and f[0].line == 23
    assert added(src, out) == ["x, y = x.to(DEVICE), y.to(DEVICE)"]
    # no loop of the class moves its batch: where the loaders come from is not known
    f, out, _ = run(TRAINER.format(train_move="pass", valid_move="pass"), head="")
    assert f == []
    # both move: nothing to report
    both = "x, y = x.to(DEVICE), y.to(DEVICE)"
    f, _, _ = run(TRAINER.format(train_move=both, valid_move=both), head="")
    assert f == []


# ----------------------------------------------------------------------------- real repositories' shapes

def test_a_module_moving_itself_to_an_expression_is_not_known_to_be_on_a_device():
    """``self.to(next(net.parameters()).device)`` in ``__init__``: wherever ``net`` is,
    the CPU included (a crash before: the move had no device to print)."""
    f, out, src = run(
        "class Wrap(nn.Module):\n    def __init__(self, net):\n        super().__init__()\n"
        "        self.to(next(net.parameters()).device)\n\n"
        "learner = Wrap(nn.Linear(4, 1))\nimages = torch.randn(8, 4)\nloss = learner(images)\n",
        head=MADE_HEAD,
    )
    assert f == [] and out == src
    # the same through a local of __init__ (vit-pytorch's LeJEPA: ``device =
    # get_module_device(net); self.to(device)``), with a projector moved and called elsewhere
    f, out, src = run(
        "def get_device(m):\n    return next(m.parameters()).device\n\n"
        "class Wrap(nn.Module):\n    def __init__(self, net, **kwargs):\n        super().__init__()\n"
        "        device = get_device(net)\n        self.to(device)\n\n"
        "    def project(self, h):\n        p = nn.Linear(4, 4)\n        p.to(h)\n        return p(h)\n\n"
        "learner = Wrap(nn.Linear(4, 1))\nimages = torch.randn(8, 4)\nloss = learner(images)\n",
        head=MADE_HEAD,
    )
    assert f == [] and out == src
    # a module-level device: a move (its value is known), here of a loader's batch
    f, _, _ = run(
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n"
        "        self.to(device)\n\nnet = Net()\nfor x, y in loader:\n    print(net(x))\n",
    )
    assert codes(f) == ["TM101"]


def test_what_a_moved_models_own_method_returns_is_not_followed():
    """``result += model.test(...)``: a metric method of a model (PyG's RE-Net) returns
    CPU numbers; its result is no device tensor for a tensor made beside it to meet."""
    f, out, src = run(
        "from mylib import Net\nmodel = Net().to(device)\nx = torch.randn(2, 4, device=device)\n"
        "result = torch.tensor([0.0, 0.0])\nresult += model.stats(model(x))\n",
        head=MADE_HEAD,
    )
    assert f == [] and out == src


def test_an_argument_forward_moves_to_the_cpu_itself_stays_there():
    """``pack_padded_sequence(emb, lengths.to("cpu"))`` in ``forward``: the lengths are
    host values on purpose (the sentiment-analysis notebook's ``length_tensor``)."""
    f, out, src = run(
        "class RNN(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.emb = nn.Embedding(10, 4)\n        self.rnn = nn.LSTM(4, 4)\n"
        "    def forward(self, text, lengths):\n"
        "        packed = nn.utils.rnn.pack_padded_sequence(self.emb(text), lengths.to('cpu'))\n"
        "        return self.rnn(packed)[1][0]\n\n"
        "model = RNN()\nmodel = model.to(device)\ntext = torch.LongTensor([1, 2, 3]).to(device).unsqueeze(1)\n"
        "length_tensor = torch.LongTensor([3])\nmodel(text, length_tensor)\n",
        head=MADE_HEAD,
    )
    assert f == [] and out == src


def test_made_tensor_before_the_moves_condition_is_bound_is_report_only():
    f, out, src = run(
        "x = torch.randn(2, 4)\nuse_cuda = torch.cuda.is_available()\nmodel = nn.Linear(4, 2)\n"
        "if use_cuda:\n    model.cuda()\nprint(model(x))\n",
        head=MADE_HEAD,
    )
    assert codes(f) == ["TM101"] and f[0].fix is None and "`use_cuda` is not known yet" in f[0].message
    f, out, src = run(
        "use_cuda = torch.cuda.is_available()\nx = torch.randn(2, 4)\nmodel = nn.Linear(4, 2)\n"
        "if use_cuda:\n    model.cuda()\nprint(model(x))\n",
        head=MADE_HEAD,
    )
    assert codes(f) == ["TM101"] and added(src, out) == ["if use_cuda:", "x = x.cuda()"]


# ----------------------------------------------------------------------------- loaders annotated as DataLoader
# (JeiKeiLim/kindle trainer.py: ``def train(self, train_dataloader: DataLoader, ...)`` moves
# only the input inline, ``self.model(data.to(self.device))``; the labels meet the output)
ANNOTATED = """\
from typing import Optional
import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, device="cpu"):
        self.model = model.to(device)
        self.device = device

    def train(self, loader{ann}):
        for data, labels in loader:
            out = self.model(data.to(self.device))
            correct = (out.argmax(1) == labels).sum()
"""


@pytest.mark.parametrize("ann", [": DataLoader", ": Optional[DataLoader]", ": DataLoader | None", ": 'DataLoader'",
                                 ": torch.utils.data.DataLoader"])
def test_a_loader_parameter_annotated_as_a_dataloader_is_one(ann):
    src = ANNOTATED.format(ann=ann)
    r = process_text("t.py", src, Options())
    assert [f.code for f in r.findings] == ["TM101"]
    assert "labels = labels.to(self.device)" in apply_patch(src.encode(), r.diff).decode()


@pytest.mark.parametrize("ann", ["", ": list", ": Optional[list]", ": 'Iterable'"])
def test_a_loader_parameter_without_that_annotation_is_not_taken(ann):
    r = process_text("t.py", ANNOTATED.format(ann=ann), Options())
    assert r.findings == []


# ----------------------------------------------------------------------------- a model fed a moved tensor
# (JeiKeiLim/kindle trainer.py, fixed by its PR #4: the trainer is given its model, moves
# only the input inline, ``self.model(data.to(self.device))``; the labels meet the output)
FED = """\
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


class Trainer:
    def __init__(self, model, criterion, device="cpu"):
        self.model = model
        self.criterion = criterion
        self.device = device

    def train(self, loader: DataLoader):
        pbar = tqdm(enumerate(loader))
        for i, (data, labels) in pbar:
            out = self.model({arg})
            loss = self.criterion(out, labels)
            correct = (out.argmax(1) == labels).sum()
"""


def test_a_model_given_a_moved_tensor_runs_on_that_device():
    src = FED.format(arg="data.to(self.device)")
    r = process_text("t.py", src, Options())
    assert [f.code for f in r.findings] == ["TM101"]
    out = apply_patch(src.encode(), r.diff).decode()
    assert "        for i, (data, labels) in pbar:\n            labels = labels.to(self.device)\n" in out


@pytest.mark.parametrize("arg, init", [
    ("data", "self.model = model"),  # nothing moved: the model's device is not known
    ("data.to('cpu')", "self.model = model"),  # moved to the CPU
    ("data.to(self.device), labels", "self.model = model"),  # the labels go in as they are
    ("data.to(self.device)", "self.model = make_model()"),  # not a parameter: an unknown builder
])
def test_a_model_given_a_moved_tensor_look_alikes(arg, init):
    src = FED.format(arg=arg).replace("self.model = model", init)
    r = process_text("t.py", src, Options())
    assert [f for f in r.findings if f.fix is not None and f.fix.safety.value == "safe"] == []
    assert not r.changed


def test_a_model_given_a_moved_tensor_under_a_condition_is_report_only():
    src = FED.format(arg="data.to(self.device)").replace(
        "            out = self.model(data.to(self.device))\n            loss = self.criterion(out, labels)\n"
        "            correct = (out.argmax(1) == labels).sum()\n",
        "            if i % 2 == 0:\n                out = self.model(data.to(self.device))\n"
        "                correct = (out.argmax(1) == labels).sum()\n")
    assert "if i % 2 == 0:" in src
    r = process_text("t.py", src, Options())
    assert [f.code for f in r.findings] == ["TM101"] and r.findings[0].fix is None and not r.changed


DICT_HEAD = HEAD + """\
model = nn.Linear(4, 2).to(device)


class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": torch.randn(4), "y": torch.tensor(i % 2)}


def keep_rows(rows):
    return torch.utils.data.default_collate(rows)


dict_loader = DataLoader(Rows(), batch_size=4{collate})
"""

_DICT_LOOP = "for batch in dict_loader:\n{moves}    loss = criterion(model(batch['x']), batch['y'])\n"


# a dict batch moved item by item: each result stored back is a move of that item (every
# item when the store runs over the batch's own keys); what is left on the CPU still meets
# the model's output
@pytest.mark.parametrize("moves, reported", [
    ("    for k, v in batch.items():\n        batch[k] = v.to(device)\n", False),
    ("    for k in batch:\n        batch[k] = batch[k].to(device)\n", False),
    ("    for k in list(batch.keys()):\n        if torch.is_tensor(batch[k]):\n            batch[k] = batch[k].to(device)\n", False),
    ("    batch['x'] = batch['x'].to(device)\n    batch['y'] = batch['y'].to(device)\n", False),
    ("    batch['x'] = batch['x'].to(device)\n", True),  # the labels stay on the CPU
    ("    batch['x'] = batch['x'].to(device)\n    batch['y'] = batch['y'].to(device)\n    batch['y'] = batch['y'].long()\n", False),
    ("", True),
])
def test_a_dict_batch_moved_item_by_item(moves, reported):
    f, out, src = run(_DICT_LOOP.format(moves=moves), head=DICT_HEAD.replace("{collate}", ""))
    got = [x for x in f if "reaches" in x.message]
    assert bool(got) == reported, [x.message for x in f]


# (a dict batch "moved" by calls whose results are dropped: ``Tensor.to`` is not in-place)
@pytest.mark.parametrize("moves, stored, collate", [
    ("    for k, v in batch.items():\n        v.to(device)\n", "batch[k] = v.to(device)", ""),
    ("    for key in batch:\n        batch[key].to(device)\n", "batch[key] = batch[key].to(device)", ""),
    ("    batch['x'].cuda()\n    batch['y'] = batch['y'].cuda()\n", "batch['x'] = batch['x'].cuda()", ""),
    # report only: an integer index (a namedtuple batch cannot be assigned to), a collate_fn
    # that may put objects with an in-place ``.to`` in the batch
    ("    batch[0].to(device)\n", None, ""),
    ("    for key in batch:\n        batch[key].to(device)\n", None, ", collate_fn=keep_rows"),
])
def test_a_dropped_move_of_a_batch_item(moves, stored, collate):
    f, out, src = run(_DICT_LOOP.format(moves=moves), head=DICT_HEAD.replace("{collate}", collate))
    got = [x for x in f if "does nothing" in x.message]
    assert len(got) == 1, [x.message for x in f]
    assert not [x for x in f if "reaches" in x.message]  # one finding for one bug
    if stored is None:
        assert got[0].fix is None and out == src
    else:
        assert got[0].fix is not None and stored in out and out.count("\n") == src.count("\n")


def test_a_dropped_move_of_an_item_of_something_else_is_left_alone():
    # a dict that is no loader batch (its values may be modules, whose ``.to`` is in place)
    f, out, src = run("parts = {'enc': nn.Linear(4, 4)}\nfor k in parts:\n    parts[k].to(device)\n")
    assert not [x for x in f if "does nothing" in x.message] and out == src


HIDDEN_HEAD = HEAD + """\


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{cell}(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 2)

    def init_hidden(self, bs):
{make}

    def forward(self, x, h):
        out, h = self.rnn(x, h)
        return self.fc(out[:, -1]), h


def make_hidden(bs):
    return torch.zeros(1, bs, 8)


net = RNN().to(device)
"""
_RNN_LOOP = "for x, y in loader:\n    x, y = x.to(device), y.to(device)\n    h = {call}\n    out, h = net(x.unsqueeze(1), h)\n    loss = criterion(out, y)\n"


# (the classic ``init_hidden``: a method or function of the script that makes the hidden
# state on the CPU, called in the loop and given to the model on the GPU)
@pytest.mark.parametrize("cell, make, call, expect", [
    ("GRU", "        return torch.zeros(1, bs, 8)", "net.init_hidden(x.size(0))", "fix"),
    ("GRU", "        return Variable(torch.zeros(1, bs, 8))", "net.init_hidden(x.size(0))", "fix"),
    ("GRU", "        return torch.zeros(1, bs, 8)", "make_hidden(x.size(0))", "fix"),
    ("LSTM", "        return (torch.zeros(1, bs, 8), torch.zeros(1, bs, 8))", "net.init_hidden(x.size(0))", "report"),
    # made on the device, moved, or a path that returns something else: left alone
    ("GRU", "        return torch.zeros(1, bs, 8, device=device)", "net.init_hidden(x.size(0))", None),
    ("GRU", "        return torch.zeros(1, bs, 8).to(device)", "net.init_hidden(x.size(0))", None),
    ("GRU", "        return self.fc.weight.new_zeros(1, bs, 8)", "net.init_hidden(x.size(0))", None),
    ("GRU", "        return torch.zeros(1, bs, 8)", "net.init_hidden(x.size(0)).to(device)", None),
    ("GRU", "        if bs:\n            return torch.zeros(1, bs, 8)\n        return self.h0", "net.init_hidden(x.size(0))", None),
])
def test_a_hidden_state_made_by_a_call_on_the_cpu(cell, make, call, expect):
    head = "from torch.autograd import Variable\n" + HIDDEN_HEAD.replace("{cell}", cell).replace("{make}", make)
    f, out, src = run(_RNN_LOOP.format(call=call), head=head)
    got = [x for x in f if "tensor `h`" in x.message]
    if expect is None:
        assert not got, [x.message for x in f]
        return
    assert len(got) == 1, [x.message for x in f]
    if expect == "fix":
        assert "    h = " + call + "\n    h = h.to(device)\n" in out
    else:
        assert got[0].fix is None and "a tuple" in got[0].message and out == src


# (Michaelvll/DeepCCA#17: ``Solver.fit(self, x1, x2)`` starts with ``x1.to(self.device)``
# on its own line; the function uses ``x1.size(0)`` and ``x2[idx, :]``: tensors)
@pytest.mark.parametrize("use, reported", [
    ("d = x.dim()", True), ("b = x[idx, :]", True), ("y = x.unsqueeze(0)", True), ("n = x.numel()", True),
    # a module's ``.to`` works in place: a parameter not shown to be a tensor is left alone
    # (PyTorch Geometric's ``Data`` has ``size()`` and an in-place ``.to``)
    ("y = x(idx)", False), ("n = len(x)", False), ("b = x[0]", False), ("n = x.size(0)", False),
    ("x = x.float()\n    n = x.dim()", False),  # rebound: the use is of another value
])
def test_a_dropped_move_of_a_parameter_used_as_a_tensor(use, reported):
    f, out, src = run(f"def fit(x, idx, device):\n    x.to(device)\n    {use}\n    return x\n")
    got = [x for x in f if "does nothing" in x.message]
    assert len(got) == (1 if reported else 0), [x.message for x in f]
    assert out == src  # the caller's tensor: rebinding the name is unsafe (writes in place would miss it)
    if reported:
        assert got[0].fix is not None and got[0].fix.safety.value == "unsafe"
        f, out, src = run(f"def fit(x, idx, device):\n    x.to(device)\n    {use}\n    return x\n", unsafe=True)
        assert "    x = x.to(device)\n" in out


# a tensor made on the CPU as a moved model's argument (an evaluation after training, a
# dummy input): it gets the model's move
@pytest.mark.parametrize("body, fixed", [
    ("model = nn.Linear(4, 2).to(device)\nout = model(torch.from_numpy(np.ones((3, 4), 'float32')))\n",
     "model(torch.from_numpy(np.ones((3, 4), 'float32')).to(device))"),
    ("model = nn.Linear(4, 2).to(device)\nout = model(torch.FloatTensor([[1, 2, 3, 4]]).float())\n",
     "model(torch.FloatTensor([[1, 2, 3, 4]]).float().to(device))"),
    ("model = nn.Linear(4, 2).cuda()\nout = model(torch.randn(1, 4))\n", "model(torch.randn(1, 4).cuda())"),
    # the device is bound after the model's move statement, before the call: still bound
    ("model = nn.Linear(4, 2)\nmodel.to(device)\nwith torch.no_grad():\n    out = model(torch.randn(2, 4))\n",
     "model(torch.randn(2, 4).to(device))"),
])
def test_a_tensor_made_as_a_moved_models_argument(body, fixed):
    f, out, src = run("import numpy as np\n" + body)
    got = [x for x in f if "makes a tensor on the CPU" in x.message]
    assert len(got) == 1 and got[0].fix is not None, [x.message for x in f]
    assert fixed in out


@pytest.mark.parametrize("body", [
    "model = nn.Linear(4, 2).to(device)\nout = model(torch.randn(1, 4, device=device))\n",
    "model = nn.Linear(4, 2).to(device)\nout = model(torch.randn(1, 4).to(device))\n",
    "model = nn.Linear(4, 2)\nout = model(torch.randn(1, 4))\n",  # not moved
    "model = nn.Linear(4, 2).to(device)\nw = nn.Parameter(torch.zeros(4))\nh = torch.cat(torch.zeros(2, 4))\n",
    "model = nn.Linear(4, 2).to(device)\nlayer = nn.Linear(4, 4)\nout = layer(torch.randn(1, 4))\n",  # another, unmoved module
])
def test_a_tensor_made_as_an_argument_lookalikes(body):
    f, out, src = run(body)
    assert not [x for x in f if "makes a tensor on the CPU" in x.message], [x.message for x in f]
    assert out == src


def test_a_dataset_of_indexed_cpu_tensors_is_still_on_the_cpu():
    """What the indexed tensors are made from is followed: CPU tensors stay a finding."""
    on_cpu = LOOKALIKES["dataset_of_indexed_device_tensors"].replace(", device=device)", ")")
    assert "device=" not in on_cpu.split("dl =")[0]
    f, out, _ = run(on_cpu)
    assert [x.code for x in f] == ["TM101"] and "xb, yb = xb.to(device), yb.to(device)" in out, out


# (jeffheaton/app_deep_learning 11_2_critical_errors: the mismatch shown on purpose, caught)
@pytest.mark.parametrize("handler, expected", [
    ("except RuntimeError as e:", True), ("except (ValueError, RuntimeError):", True), ("except ValueError:", False),
])
def test_a_call_under_try_except_runtime_error_is_reported_not_fixed(handler, expected):
    body = f"""
        model = nn.Linear(4, 2).to(device)
        cpu_input = torch.randn(3, 4)
        try:
            output = model(cpu_input)
        {handler}
            print("the error")
        """
    f, out, src = run(body, unsafe=True)
    assert [x.code for x in f] == ["TM101"]
    if expected:
        assert f[0].fix is None and "expects a failure: not fixed" in f[0].message and out == src
    else:
        assert f[0].fix is not None and out != src


# (gilbutITbook/080289 chap07, chap10: ``model.cuda()`` on a first model, then ``model =
# LSTM(...)``, a new model never moved, trained on CPU tensors: the in-place move was
# another object's; moving the inputs would break it on a GPU)
REBOUND = """\
model = nn.Linear(4, 2)
model.cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
model = nn.Linear(4, 2)
opt = torch.optim.Adam(model.parameters())
for x, y in loader:
    loss = criterion(model(x), y)
"""


def test_an_in_place_move_of_a_model_the_name_held_before_is_not_this_ones():
    findings, out, src = run(REBOUND)
    assert findings == [] and out == src, [f.message for f in findings]
    # the same name moved after it is bound again: the second model is on the device
    findings, _, _ = run(REBOUND.replace("opt = torch.optim", "model.cuda()\nopt = torch.optim"))
    assert codes(findings) == ["TM101"] and findings[0].line == HEAD.count("\n") + 9
    # a function moving the global model may run after the binding: still a move of it
    findings, _, _ = run("def setup():\n    model.cuda()\n\n\n" + REBOUND.replace("opt = torch.optim", "setup()\nopt = torch.optim"))
    assert codes(findings) == ["TM101"]



# (gilbutITbook/080289 chap05: ``img = ToTensor()(img).unsqueeze(0)`` into a model moved to
# ``device``; the inference demo's ``transform(image).unsqueeze(0)`` of a Compose)
DEMO = """\
import torch
import torchvision.models as models
import torchvision.transforms as transforms

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = models.resnet18(weights="IMAGENET1K_V1").to(device)
transform = transforms.Compose([transforms.Resize(256), transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
img = transform(image).unsqueeze(0)
out = model(img)
"""


def test_an_image_made_a_tensor_by_torchvision_reaches_a_moved_model():
    f, out, src = run(DEMO, head="")
    assert codes(f) == ["TM101"] and "img = transform(image).unsqueeze(0)\nimg = img.to(device)\n" in out
    f, out, _ = run(DEMO.replace("transform(image)", "transforms.ToTensor()(image)"), head="")
    assert codes(f) == ["TM101"] and "\nimg = img.to(device)\n" in out
    # a step of the user's own (it may move the tensor), a Lambda, a moved image: silent
    for other in ("transforms.ToTensor(), ToCuda()", "transforms.ToTensor(), transforms.Lambda(lambda x: x.cuda())"):
        f, out, src = run(DEMO.replace("transforms.ToTensor()", other), head="")
        assert f == [] and out == src, other
    f, _, _ = run(DEMO.replace(".unsqueeze(0)", ".unsqueeze(0).to(device)"), head="")
    assert f == []


# ----------------------------------------------------------------- loops over a loader passed in
ENGINE_HEAD = "import torch\nimport torch.nn.functional as F\n"  # (no DataLoader spelled: an engine.py)

TRAIN_ONE_EPOCH = """
def train_one_epoch(model, loader, optimizer, device):
    for images, labels in loader:
        images = images.to(device)
        outputs = model(images)
        loss = {loss}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("loss", [
    "F.cross_entropy(outputs, labels)",
    "criterion(outputs, labels) + (outputs.argmax(1) != labels).float().mean()",
])
def test_item_left_behind_by_a_loop_that_moves_its_sibling(loss):
    # the loop moves one item of the batch and feeds it to the model: the model runs on
    # that device, and the item it does not move meets its output on the CPU
    findings, out, src = run(TRAIN_ONE_EPOCH.format(loss=loss), head=ENGINE_HEAD)
    assert [f.code for f in findings] == ["TM101"]
    assert "`labels`" in findings[0].message and findings[0].fix is not None
    assert added(src, out) == ["labels = labels.to(device)"]


@pytest.mark.parametrize("body", [
    # the other item goes to a callable that is not known here (it may move it)
    TRAIN_ONE_EPOCH.format(loss="criterion(outputs, labels)"),
    # the moved tensor was bound before the loop: nothing says the loop's batch is on the CPU
    TRAIN_ONE_EPOCH.format(loss="F.cross_entropy(outputs, labels)").replace(
        "    for images, labels in loader:\n        images = images.to(device)\n        outputs = model(images)\n",
        "    images = probe.to(device)\n    for _, labels in loader:\n        outputs = model(images)\n"),
])
def test_item_left_behind_lookalikes(body):
    findings, out, src = run(body, head=ENGINE_HEAD)
    assert findings == [] and out == src


def test_dropped_move_of_a_tuple_item_from_a_loader_passed_in():
    body = """
    def train_step(model, loader, loss_fn, optimizer, device):
        for x, y in loader:
            x.to(device)
            y.to(device)
            loss = loss_fn(model(x), y)
    """
    findings, out, src = run(body, head=ENGINE_HEAD)
    assert [f.code for f in findings] == ["TM101", "TM101"] and out == src
    assert all("does nothing" in f.message and f.fix.safety.value == "unsafe" for f in findings)
    findings, out, src = run(body, unsafe=True, head=ENGINE_HEAD)
    assert added(src, out) == ["x = x.to(device)", "y = y.to(device)"]


def test_dropped_move_of_a_whole_batch_from_a_loader_passed_in_is_silent():
    # a graph batch or a tokenizer's encoding moves in place: not unpacked, not reported
    body = """
    def train_step(model, loader, device):
        for data in loader:
            data.to(device)
            model(data)
    """
    findings, out, src = run(body, head=ENGINE_HEAD)
    assert findings == []


DATASET_MODULE = """\
import torch
from torch.utils.data import Dataset


class Windows(Dataset):
    def __init__(self, data):
        self.x = torch.FloatTensor(data){move}

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]
"""

TRAIN_ON_WINDOWS = """\
import torch.nn as nn
from torch.utils.data import DataLoader
from ds import Windows


def train(data):
    model = nn.Linear(4, 1).to("cuda")
    loader = DataLoader(Windows(data), batch_size=32)
    for x in loader:
        out = model(x)
        out.sum().backward()
"""


@pytest.mark.parametrize("move,found", [('.to("cuda")  # the whole dataset on the GPU', []), ("", ["TM101"])])
def test_dataset_of_a_sibling_module_that_keeps_its_tensors_on_the_device(tmp_path, move, found):
    (tmp_path / "ds.py").write_text(DATASET_MODULE.format(move=move))
    path = tmp_path / "main.py"
    path.write_text(TRAIN_ON_WINDOWS)
    r = process_text(str(path), TRAIN_ON_WINDOWS, Options(select=frozenset({"TM101"})))
    assert [f.code for f in r.findings] == found


# ----------------------------------------------------------------- review: loops over loaders passed in


@pytest.mark.parametrize("cast", ["weight_dtype", "self.precision", "torch.float16", "args.amp_dtype"])
def test_a_cast_is_no_move_of_the_batch(cast):
    # ``images.to(weight_dtype)`` says nothing of the model's device: the labels stay
    body = TRAIN_ONE_EPOCH.format(loss="F.cross_entropy(outputs, labels)").replace(
        "images.to(device)", f"images.to({cast})")
    findings, out, src = run(body, head=ENGINE_HEAD)
    assert findings == [] and out == src


def test_a_module_moved_in_place_in_a_loop_over_a_parameter_is_not_a_dropped_move():
    body = """
    def place(named_models, device, x):
        for name, model in named_models:
            model.to(device)
            model.eval()
        for i, (name, net) in enumerate(named_models):
            net.cuda()
            print(net(x))
    """
    findings, out, src = run(body, head=ENGINE_HEAD)
    assert findings == []


def test_a_trainer_class_defined_in_a_function_is_read_with_shortcuts(tmp_path):
    # a witness loop in a class inside a function; the file is long enough to be cut
    from tests.test_equivalence import _compare

    path = tmp_path / "trainer.py"
    path.write_text(open(os.path.join(os.path.dirname(__file__), "data", "nested_trainer.py")).read())
    shipped, _ = _compare([str(path)], modes=("check",))
    assert [f.code for r in shipped["check"].results for f in r.findings] == ["TM101"]


def test_a_sibling_dataset_module_that_does_not_parse_is_not_followed(tmp_path):
    # (Python 2 code in the sibling's dataset class: a part a lazy parse reaches only when it is read)
    (tmp_path / "ds.py").write_text(unparsable_module(
        "import torch\n", "class Windows(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
        "        print 'x'\n        return torch.zeros(3), 0\n"))
    src = HEAD + ("from ds import Windows\n\ndevice = torch.device('cuda')\nmodel = nn.Linear(3, 2).to(device)\n"
                  "loader = DataLoader(Windows())\nfor x, y in loader:\n    out = model(x)\n")
    (tmp_path / "train.py").write_text(src)
    r = process_text(str(tmp_path / "train.py"), src, Options())
    assert r.error is None, r.error


# (hunkim/PyTorchZeroToAll 11_3_hello_rnn_gpu.py before "solved the cuda error":
# ``inputs = Variable(torch.Tensor(rows))`` then ``inputs.cuda()`` under ``if
# torch.cuda.is_available():``; the upstream fix stores the result)
@pytest.mark.parametrize("made, fixed", [
    ("Variable(torch.Tensor(rows))", True),
    ("torch.autograd.Variable(torch.LongTensor(rows))", True),
    ("torch.from_numpy(np.array(rows)).float()", True),
    ("Variable(make(rows))", False),  # nothing shows a tensor
])
def test_a_dropped_move_of_a_tensor_made_on_the_host(made, fixed):
    head = HEAD + "import numpy as np\nfrom torch.autograd import Variable\n"
    f, out, src = run(f"rows = [[1.0, 0.0], [0.0, 1.0]]\ninputs = {made}\nif torch.cuda.is_available():\n"
                      "    inputs.cuda()\n", head=head)
    got = [x for x in f if "does nothing" in x.message]
    if fixed:
        assert len(got) == 1 and got[0].fix is not None, [x.message for x in f]
        assert "    inputs = inputs.cuda()\n" in out
    else:
        assert all(x.fix is None for x in got) and out == src


# (huanfengAI/pytorch-learning NN/ActivationNet.py and its copies: ``if
# torch.cuda.is_available(): inputs = img.cuda() ... else: inputs = img`` with the model
# moved under the same test: the else runs only without CUDA, where nothing is on a GPU)
@pytest.mark.parametrize("branch, reported", [
    ("    if torch.cuda.is_available():\n        inputs, target = img.cuda(), label.cuda()\n"
     "    else:\n        inputs, target = img, label\n", False),
    ("    if not torch.cuda.is_available():\n        inputs, target = img, label\n"
     "    else:\n        inputs, target = img.cuda(), label.cuda()\n", False),
    ("    use = torch.cuda.is_available()\n    if use:\n        inputs, target = img.cuda(), label.cuda()\n"
     "    else:\n        inputs, target = img, label\n", False),
    # another test: the else may run on a GPU machine
    ("    if args.fast:\n        inputs, target = img.cuda(), label.cuda()\n    else:\n        inputs, target = img, label\n",
     True),
    # the CUDA branch binds only one of them
    ("    if torch.cuda.is_available():\n        inputs = img.cuda()\n    else:\n        inputs, target = img, label\n",
     True),
])
def test_the_branch_that_runs_without_cuda_binds_no_cpu_batch(branch, reported):
    body = ("model = nn.Linear(4, 2)\nif torch.cuda.is_available():\n    model = model.cuda()\n"
            "criterion = nn.CrossEntropyLoss()\nloader = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8).long()))\n"
            "for img, label in loader:\n" + branch + "    loss = criterion(model(inputs), target)\n")
    f, out, src = run(body, unsafe=True)
    assert bool([x for x in f if x.code == "TM101"]) == reported, [x.message for x in f]


# (gitabcworld/MatchingNetworks experiments/OneShotBuilder.py: ``if self.isCudaAvailable:
# net(x.cuda()) else: net(x)``, the net moved under the same flag in ``__init__``)
@pytest.mark.parametrize("flag, reported", [
    ("torch.cuda.is_available()", False),
    ("args.cuda", False),  # the model's own guard
    ("args.other", True),
])
def test_a_model_called_with_cpu_tensors_where_it_is_not_moved(flag, reported):
    body = (f"use = {flag}\nmodel = nn.Linear(4, 2)\nif args.cuda:\n    model.cuda()\n" if flag == "args.cuda" else
            f"use = {flag}\nmodel = nn.Linear(4, 2)\nif torch.cuda.is_available():\n    model.cuda()\n")
    body += ("loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8).long()))\nfor x, y in loader:\n"
             f"    if {'args.cuda' if flag == 'args.cuda' else 'use'}:\n        out = model(x.cuda())\n"
             "    else:\n        out = model(x)\n")
    f, out, src = run(body, unsafe=True)
    assert bool([x for x in f if x.code == "TM101"]) == reported, [x.message for x in f]


TRAIN_MODULE = """\
import torch
import torch.nn as nn


def train(model, loader, opt, device):
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()


def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            correct += (out.argmax(1) == y).sum().item()
    return correct
"""


@pytest.mark.parametrize("main, found", [
    ("net = Net().to(device)\ntrain(net, loader, opt, device)\nevaluate(net, loader)\n", "moves it to `device`"),
    ("net = Net().cuda()\ntrainer.evaluate(model=net, loader=loader)\n", "moves it to `cuda`"),
    # look-alikes: the model the script passes stays on the CPU; another module's evaluate
    ("net = Net()\nevaluate(net, loader)\n", None),
    ("net = Net().to(device)\nother.evaluate(net, loader)\n", None),
])
def test_a_model_the_importing_script_moves_and_passes(tmp_path, main, found):
    """The evaluation function of a training module loops over its loader parameter
    without moving the batch (its training loop does: its loaders give CPU batches), and
    its model parameter comes only from the script that imports it, which moves it:
    reported, not fixed (the device is the script's)."""
    (tmp_path / "trainer.py").write_text(TRAIN_MODULE)
    (tmp_path / "main.py").write_text(
        "import torch\nimport other\nimport trainer\nfrom trainer import train, evaluate\nfrom model import Net\n\n"
        "device = torch.device('cuda')\n" + main)
    r = process_text(str(tmp_path / "trainer.py"), TRAIN_MODULE, Options(unsafe_fixes=True), Project(roots=(str(tmp_path),)))
    got = [f for f in r.findings if f.code == "TM101"]
    assert len(got) == (1 if found else 0)
    if found:
        f = got[0]
        assert f.line == 19 and f.fix is None and not r.changed
        assert f"`model` comes from main.py line {7 + main.count(chr(10))}, which {found}" in f.message


@pytest.mark.parametrize("model_py, found", [
    ("class VAE(nn.Module):\n    def __init__(self, opt):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
     "    def forward(self, x):\n        return self.fc(x)\n", True),
    # look-alikes: it moves itself when built; its forward moves what it gets; no module
    ("class VAE(nn.Module):\n    def __init__(self, opt):\n        super().__init__()\n        self.cuda()\n\n"
     "    def forward(self, x):\n        return x\n", False),
    ("class VAE(nn.Module):\n    def __init__(self, opt):\n        super().__init__()\n\n"
     "    def forward(self, x):\n        x = x.cuda()\n        return x\n", False),
    ("class VAE:\n    def __init__(self, opt):\n        pass\n\n    def __call__(self, x):\n        return x\n", False),
])
def test_a_module_level_model_of_another_files_class_used_in_a_function(tmp_path, model_py, found):
    """rohithreddy024/VAE-Text-Generation (before fbf9f4f), reduced: ``vae = VAE(opt)``
    (model.py) then ``vae = vae.cuda()`` at module level, called in a function with a
    batch the loop never moves: as for a class of the same file, the function sees both
    bindings (reported, not fixed)."""
    (tmp_path / "model.py").write_text("import torch.nn as nn\n\n\n" + model_py)
    src = ("import torch\nfrom torch.utils.data import DataLoader\nfrom model import VAE\n\n"
           "vae = VAE(None)\nvae = vae.cuda()\nloader = DataLoader(ds, batch_size=4)\n\n\n"
           "def training():\n    for x in loader:\n        out = vae(x)\n        print(out)\n\n\ntraining()\n")
    (tmp_path / "main.py").write_text(src)
    r = process_text(str(tmp_path / "main.py"), src, Options(unsafe_fixes=True), Project(roots=(str(tmp_path),)))
    got = [f for f in r.findings if f.code == "TM101"]
    assert len(got) == (1 if found else 0)
    if found:
        assert got[0].line == 12 and got[0].fix is None and "`vae` reaches the loop both moved and not moved" in got[0].message


POLICY = """\
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Linear(9, 2)

    def forward(self, obs, masks):
        return self.base(torch.cat([obs, masks], 1))

    def act(self, obs, masks, deterministic=False):
        value = self.base(obs, masks)
        return value.argmax(1)

    def remember(self, masks):
        self.saved = masks
"""

ROLLOUT = """\
device = torch.device("cuda:0")
actor_critic = Policy()
actor_critic.to(device)
obs = torch.zeros(4, 8, device=device)
eval_masks = torch.zeros(4, 1, device=device)
rewards = []
while len(rewards) < 10:
    with torch.no_grad():
        action = {call}
    obs, reward, done = envs.step(action)
    eval_masks = torch.FloatTensor([[0.0] if done_ else [1.0] for done_ in done])
    rewards.append(reward)
"""


@pytest.mark.parametrize("call, found", [
    ("actor_critic.act(obs, eval_masks, deterministic=True)", True),
    ("actor_critic.act(obs, masks=eval_masks)", True),
    ("actor_critic(obs, eval_masks)", True),
    # look-alikes: a method that keeps its argument (no layer gets it); a module API method
    ("actor_critic.remember(eval_masks)", False),
    ("actor_critic.load_state_dict(eval_masks)", False),
])
@pytest.mark.parametrize("sibling", [False, True])
def test_a_tensor_made_for_the_next_iteration_of_a_rollout(tmp_path, call, found, sibling):
    """ikostrikov/pytorch-a2c-ppo-acktr-gail main.py (before 89f7d3f): ``eval_masks =
    torch.FloatTensor(...)`` at the end of the evaluation loop goes to
    ``actor_critic.act(obs, hidden, eval_masks)`` on the next iteration, whose
    ``self.base(inputs, rnn_hxs, masks)`` runs the moved model: the made tensor is
    followed around the loop, and a method of the module that hands an argument to its
    layers is a call of the model (the class of this file, or of an imported one)."""
    body = ROLLOUT.format(call=call)
    if sibling:
        (tmp_path / "model.py").write_text(POLICY)
        src = "import torch\nfrom model import Policy\n" + body
    else:
        src = POLICY + "\n\n" + body
    (tmp_path / "main.py").write_text(src)
    r = process_text(str(tmp_path / "main.py"), src, Options(), Project(roots=(str(tmp_path),)))
    got = [f for f in r.findings if f.code == "TM101"]
    assert len(got) == (1 if found else 0)
    if found:
        assert "tensor `eval_masks` reaches `actor_critic` on the CPU" in got[0].message and got[0].applied
        out = apply_patch(src.encode(), r.diff).decode()
        assert "for done_ in done])\n    eval_masks = eval_masks.to(device)\n" in out


def test_a_tensor_made_in_a_for_loop_whose_target_rebinds_it():
    """The loop-carried made tensor (review): ``for z in batches: model(z); z =
    torch.zeros(...)`` rebinds ``z`` from the loop's header before the next call."""
    src = ("import torch\nimport torch.nn as nn\n\ndevice = torch.device('cuda')\nmodel = nn.Linear(4, 2).to(device)\n"
           "for z in [torch.randn(8, 4, device=device) for _ in range(3)]:\n    out = model(z)\n"
           "    z = torch.zeros(8, 4)\n    print(z.sum())\n")
    r = process_text("t.py", src, Options())
    assert [f.code for f in r.findings] == []
    # a while loop (nothing rebinds it before the call): reported
    src2 = src.replace("for z in [torch.randn(8, 4, device=device) for _ in range(3)]:",
                       "z = torch.randn(8, 4, device=device)\nwhile True:")
    r = process_text("t.py", src2, Options())
    assert [f.code for f in r.findings] == ["TM101"]


# ----------------------------------------------------------------- loaders another module makes

LOADERS_MODULE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def get_loaders(batch_size):
    ds = TensorDataset(torch.randn(100, 4), torch.randint(0, 2, (100,)))
    train = DataLoader(ds, batch_size=batch_size, shuffle=True{collate})
    test = DataLoader(ds, batch_size=batch_size)
    return train, test


class DataProcesser:
    def data_processer(self):
        ds = TensorDataset(torch.randn(100, 4), torch.randint(0, 2, (100,)))
        return DataLoader(ds, batch_size=8{collate}), DataLoader(ds, batch_size=8)


def batches():
    return [torch.randn(8, 4)]
"""

# no DataLoader named, no statement that moves: only the project lets the gate through
SCRIPT_OF_SIBLING_LOADERS = """\
import torch
import torch.nn as nn
{imp}

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{made}
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for i, data in enumerate(train_loader):
        x, y = data
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("imp, made, collate, found", [
    ("from data import get_loaders", "train_loader, test_loader = get_loaders(32)", "", True),
    ("import data", "train_loader, _ = data.get_loaders(32)", "", True),
    ("from data import DataProcesser", "dp = DataProcesser()\ntrain_loader, valid_loader = dp.data_processer()", "", True),
    ("from data import DataProcesser", "train_loader, valid_loader = DataProcesser().data_processer()", "", True),
    # look-alikes: a collate_fn of that module (what it puts in a batch is not known here),
    # a device handed to the builder, a function that returns no loader, no project file
    ("from data import get_loaders", "train_loader, test_loader = get_loaders(32)", ", collate_fn=pad", False),
    ("from data import get_loaders", "train_loader, test_loader = get_loaders(device)", "", False),
    ("from data import batches", "train_loader = batches()", "", False),
    ("from loaders import get_loaders", "train_loader, test_loader = get_loaders(32)", "", False),
])
def test_loaders_a_function_of_another_module_makes(tmp_path, imp, made, collate, found):
    """Xiongzd/graduation-lstm lstm_train.py: ``train_loader, valid_loader =
    data_processer.data_processer()`` (a method of a class of data_processer.py that
    returns two DataLoaders), the model moved, the batch never: the same as loaders the
    file makes (fixed: the default collation gives tensors)."""
    (tmp_path / "data.py").write_text(LOADERS_MODULE.format(collate=collate))
    src = SCRIPT_OF_SIBLING_LOADERS.format(imp=imp, made=made)
    (tmp_path / "train.py").write_text(src)
    from torchmend.rules.tm101_device_batch_not_moved import DeviceBatchNotMoved

    assert not DeviceBatchNotMoved.may_match(src)  # the text alone does not open the gate
    r = process_text(str(tmp_path / "train.py"), src, Options(), Project(roots=(str(tmp_path),)))
    got = [f for f in r.findings if f.code == "TM101"]
    assert len(got) == (1 if found else 0)
    if found:
        assert got[0].line == src.splitlines().index("        out = model(x)") + 1
        out = apply_patch(src.encode(), r.diff).decode()
        assert "        x, y = data\n        x, y = x.to(device), y.to(device)\n        out = model(x)\n" in out
    # without the project (one text on its own) nothing is known of the loaders
    alone = process_text(str(tmp_path / "train.py"), src, Options())
    assert [f for f in alone.findings if f.code == "TM101"] == []


def test_gate_of_loaders_another_module_makes_reads_the_imported_files(tmp_path):
    """``may_match_project`` lets a file through when one of its imports (absolute, relative,
    a submodule named in ``from pkg import mod``) reaches a file holding ``DataLoader``; the
    files it read are dependencies of the result."""
    from torchmend.rules.tm101_device_batch_not_moved import DeviceBatchNotMoved as R

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "loaders.py").write_text("from torch.utils.data import DataLoader\n")
    (pkg / "sub" / "other.py").write_text("x = 1\n")
    script = pkg / "train.py"
    script.write_text("")
    head = "import torch\nmodel = model.to('cuda')\nfor x in y:\n    model(x)\n"
    for imp, opened in [("from .sub import loaders", True), ("from .sub.loaders import get", True),
                        ("from pkg.sub import loaders", True), ("import pkg.sub.loaders", True),
                        ("from .sub import other", False), ("from .sub.other import x", False),
                        ("import numpy", False)]:
        project = Project(roots=(str(tmp_path),))
        project.start_file()
        assert R.may_match_project(str(script), head + imp + "\n", None, project) is opened, imp
        if opened:
            assert str(pkg / "sub" / "loaders.py") in {os.path.normpath(d) for d in project.deps}
    # no move in the file, or a library module (no ``__main__``, no loop at module level):
    # not let through, nothing read
    for text in ("import torch\nfrom .sub import loaders\nfor x in y:\n    f(x)\n",
                 "import torch\nfrom .sub import loaders\n\ndef f(model, y):\n    model.to('cuda')\n    for x in y:\n"
                 "        model(x)\n"):
        project = Project(roots=(str(tmp_path),))
        assert not R.may_match_project(str(script), text, None, project)
        assert not project.deps


# ----------------------------------------------------------------- Hugging Face tokenizer outputs

HF_HEAD = """\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokenizer = AutoTokenizer.from_pretrained("gpt2")
"""


@pytest.mark.parametrize("body, fixed", [
    # a BatchEncoding into generate: moved by its own ``.to`` (a dict would lose its attributes)
    ('model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
     'inputs = tokenizer("Hello", return_tensors="pt")\nout = model.generate(**inputs, max_new_tokens=20)\n',
     "inputs = inputs.to(device)"),
    ('model = AutoModelForCausalLM.from_pretrained("gpt2")\nmodel.cuda()\n'
     'enc = tokenizer(["a", "b"], return_tensors="pt", padding=True)\nout = model.generate(enc.input_ids)\n',
     'enc = enc.to("cuda")'),
    # one tensor from ``encode``, into the model or its generate, over two lines too
    ('model = AutoModelForCausalLM.from_pretrained("gpt2")\nmodel.to(device)\n'
     'ids = tokenizer.encode(\n    "Hello",\n    return_tensors="pt",\n)\nlogits = model(ids).logits\n',
     "ids = ids.to(device)"),
])
def test_a_tokenizer_output_into_a_moved_hugging_face_model(body, fixed):
    """renatoviolin/Bart_T5-summarization app.py (before 064dae5): ``tokenizer.encode(...,
    return_tensors='pt')`` makes the input on the CPU, ``model.generate(input_ids)`` runs the
    moved model on it."""
    findings, out, src = run(body, head=HF_HEAD)
    assert [f.code for f in findings] == ["TM101"]
    assert fixed in out


@pytest.mark.parametrize("body", [
    # moved: its own ``.to`` in place, at once, item by item, the items at the call
    'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
    'inputs = tokenizer("Hello", return_tensors="pt")\ninputs.to(device)\nout = model.generate(**inputs)\n',
    'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
    'inputs = tokenizer("Hello", return_tensors="pt").to(device)\nout = model.generate(**inputs)\n',
    'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
    'inputs = tokenizer("Hello", return_tensors="pt")\ninputs = {k: v.to(device) for k, v in inputs.items()}\n'
    'out = model(**inputs)\n',
    'model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()\n'
    'enc = tokenizer("Hello", return_tensors="pt")\nout = model.generate(enc["input_ids"].cuda())\n',
    # the model stays on the CPU, or accelerate's hooks place its inputs (device_map)
    'model = AutoModelForCausalLM.from_pretrained("gpt2")\n'
    'inputs = tokenizer("Hello", return_tensors="pt")\nout = model.generate(**inputs)\n',
    'model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto").to(device)\n'
    'inputs = tokenizer("Hello", return_tensors="pt")\nout = model.generate(**inputs)\n',
    # numpy arrays, or a tokenizer this file does not load
    'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
    'inputs = tokenizer("Hello", return_tensors="np")\nout = model.generate(**inputs)\n',
    'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n\n\ndef run(tok, text):\n'
    '    inputs = tok(text, return_tensors="pt")\n    return model.generate(**inputs)\n',
])
def test_a_tokenizer_output_that_is_moved_or_meets_no_device(body):
    findings, out, src = run(body, head=HF_HEAD)
    assert findings == []


def test_a_global_model_moved_under_the_main_guard_is_moved_in_the_functions_it_calls():
    """The model is loaded at module level and moved under ``if __name__ == "__main__":``
    before the functions that use it run: they see it moved."""
    body = ('model = AutoModelForCausalLM.from_pretrained("gpt2")\n\n\ndef summarize(text):\n'
            '    ids = tokenizer.encode(text, return_tensors="pt")\n    return model.generate(ids)\n\n\n'
            'if __name__ == "__main__":\n    model.to(device)\n    print(summarize("hello"))\n')
    findings, out, src = run(body, head=HF_HEAD)
    assert [(f.code, f.line) for f in findings] == [("TM101", 11)]
    assert "    ids = ids.to(device)\n" in out


TRAINER_HEAD = """\
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
"""
TRAINED = (
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased"{load})\n'
    'args = TrainingArguments(output_dir="out", per_device_train_batch_size=8{args})\n'
    'trainer = Trainer(model=model, args=args, train_dataset=train_ds)\ntrainer.train()\n'
)


@pytest.mark.parametrize("body, fixed", [
    # the encoding into the model after training: moved to where the trainer put it
    (TRAINED.format(load="", args="") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
     "with torch.no_grad():\n    logits = model(**inputs).logits\n", "inputs = inputs.to(trainer.args.device)"),
    # one tensor of the encoding, into generate; the model given as the first argument,
    # default training arguments
    ('model = AutoModelForSequenceClassification.from_pretrained("t5-small")\n'
     "trainer = Trainer(model, train_dataset=train_ds)\ntrainer.train()\n"
     'ids = tokenizer("Hello", return_tensors="pt").input_ids\nout = model.generate(ids, max_new_tokens=40)\n',
     "ids = ids.to(trainer.args.device)"),
    # a function called after the module-level training (a same-file subclass of Trainer)
    ("class WeightedTrainer(Trainer):\n    pass\n\n\n"
     'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
     "trainer = WeightedTrainer(model=model, args=TrainingArguments(output_dir='o'))\ntrainer.train()\n\n\n"
     'def predict(text):\n    inputs = tokenizer(text, return_tensors="pt")\n    return model(**inputs).logits\n\n\n'
     'print(predict("hi"))\n', "    inputs = inputs.to(trainer.args.device)"),
    # the model first, a comment before it; the script also loops over a DataLoader (its
    # batches are left to the trainer's kind of script: not read)
    ('from torch.utils.data import DataLoader\n'
     'net = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
     "trainer = Trainer(  # the model, then its arguments\n    net,\n    TrainingArguments(output_dir='o'),\n"
     "    train_dataset=ds,\n)\ntrainer.train()\nfor batch in DataLoader(test_ds, batch_size=8):\n"
     "    print(net(**batch).logits)\n"
     'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = net(**inputs).logits\n',
     "inputs = inputs.to(trainer.args.device)"),
])
def test_a_model_a_hugging_face_trainer_moved_meets_a_tokenizer_output(body, fixed):
    """muellerzr/minimal-trainer-zoo token_classification.py and translation.py (before
    PR #4): ``Trainer(model=model, ...)`` moves the model to ``args.device`` (the GPU when
    there is one); the tokenizer's output for the inference after training stays on the
    CPU."""
    findings, out, src = run(body, head=TRAINER_HEAD)
    assert [f.code for f in findings] == ["TM101"]
    assert fixed + "\n" in out


@pytest.mark.parametrize("body", [
    # the trainer puts the model on the CPU (also one moved to the GPU before), or its
    # arguments are not known, or it does not place it (a half-precision evaluation)
    TRAINED.format(load="", args=", use_cpu=True") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
    "logits = model(**inputs).logits\n",
    TRAINED.format(load=').to("cuda"', args=", no_cuda=True") + 'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n',
    TRAINED.format(load="", args=", fp16_full_eval=True") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
    "logits = model(**inputs).logits\n",
    TRAINED.format(load="", args=", **extra") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
    "logits = model(**inputs).logits\n",
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
    "trainer = Trainer(model=model, args=make_args(), train_dataset=train_ds)\n"
    'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n',
    # the model places itself (accelerate's hooks, quantization): the trainer does not move it
    TRAINED.format(load=', device_map="auto"', args="") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
    "logits = model(**inputs).logits\n",
    TRAINED.format(load=", quantization_config=bnb", args="") + 'inputs = tokenizer("Hello", return_tensors="pt")\n'
    "logits = model(**inputs).logits\n",
    # the encoding is moved; the model runs before the trainer is made
    TRAINED.format(load="", args="") + 'inputs = tokenizer("Hello", return_tensors="pt").to(trainer.args.device)\n'
    "logits = model(**inputs).logits\n",
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
    'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n'
    'trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=train_ds)\n',
    # called before the training
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n\n\n'
    'def predict(text):\n    inputs = tokenizer(text, return_tensors="pt")\n    return model(**inputs).logits\n\n\n'
    'print(predict("hi"))\ntrainer = Trainer(model=model, args=TrainingArguments(output_dir="o"))\ntrainer.train()\n',
    # a trainer made in a lambda that never runs; a subclass with an ``__init__`` of its own
    # given another model first
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
    "make = lambda: Trainer(model=model, args=TrainingArguments(output_dir='o'))\n"
    'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n',
    "class DistillTrainer(Trainer):\n    def __init__(self, teacher, *args, **kwargs):\n"
    "        super().__init__(*args, **kwargs)\n        self.teacher = teacher\n\n\n"
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
    'teacher = AutoModelForSequenceClassification.from_pretrained("bert-large-uncased")\n'
    "trainer = DistillTrainer(teacher, model=model, args=TrainingArguments(output_dir='o'))\ntrainer.train()\n"
    'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = teacher(**inputs).logits\n',
    # not a trainer of Hugging Face's
    'from mylib import Trainer as MyTrainer\n'
    'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
    "trainer = MyTrainer(model=model)\ntrainer.fit()\n"
    'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n',
])
def test_a_trained_model_that_the_trainer_did_not_move_or_that_gets_moved_inputs(body):
    findings, out, src = run(body, head=TRAINER_HEAD)
    assert findings == []


def test_a_trainer_made_in_a_function_is_no_name_to_fix_with():
    """The trainer is made where its name is not visible at the inference: reported, with
    no fix (its ``args.device`` cannot be named there)."""
    body = ('model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n\n\n'
            "def train():\n    trainer = Trainer(model=model, args=TrainingArguments(output_dir='o'))\n"
            "    trainer.train()\n\n\ntrain()\n"
            'inputs = tokenizer("Hello", return_tensors="pt")\nlogits = model(**inputs).logits\n')
    findings, out, src = run(body, head=TRAINER_HEAD)
    assert [f.code for f in findings] == ["TM101"]
    assert "Trainer(...).args.device" in findings[0].message
    assert out == src


@pytest.mark.parametrize("wrap, found", [
    ("if torch.cuda.device_count() > 1:\n    model = nn.DataParallel(model)\nmodel = model.cuda()\n", True),
    # look-alikes: always wrapped (it scatters its CPU inputs to the GPUs itself); never moved
    ("model = nn.DataParallel(model).cuda()\n", False),
    ("if torch.cuda.device_count() > 1:\n    model = nn.DataParallel(model)\n", False),
])
def test_a_model_wrapped_in_data_parallel_only_with_several_gpus(wrap, found):
    """zihaomu/Gait_recognition_baseline_for_HID2020 (issue #1), reduced: the model is wrapped
    in ``DataParallel`` only when there is more than one GPU, then moved; on one GPU the
    CPU input meets the bare module's weights."""
    body = ("model = nn.Linear(4, 2)\n" + wrap +
            "for row in rows:\n    x = torch.from_numpy(row).float()\n    out = model(x)\n")
    findings, out, src = run(body, head="import torch\nimport torch.nn as nn\n")
    assert [f.code for f in findings] == (["TM101"] if found else [])
    if found:
        assert "    x = x.cuda()\n" in out


CLIP_SERVICE = """\
from transformers import CLIPModel, CLIPProcessor


class ClipInference:
{annotations}
    def __init__(self, device):
        self.clip_model = CLIPModel.from_pretrained("openai/clip"{load}){move}
        self.processor = CLIPProcessor.from_pretrained("openai/clip")

    def vectorize(self, texts):
        inputs = self.processor(
            text=texts,
            return_tensors="pt",
            padding=True,
        )
        text_outputs = self.clip_model.text_model(**inputs)
        return text_outputs[1]
"""


@pytest.mark.parametrize("annotations, load, move, found", [
    ("", "", ".to(device)", True),
    # weaviate/multi2vec-clip-inference clip.py (before 84bb771): the attributes are declared
    # on the class, without a value, and set by __init__
    ("    clip_model: CLIPModel\n    processor: CLIPProcessor\n", "", ".to(device)", True),
    # the whole model on one GPU by device_map: no hook places its inputs
    ("", ', device_map="cuda"', "", True),
    ("", ', device_map={"": 0}', "", True),
    # look-alikes: a device_map that may split it (its hooks place the inputs); not moved
    ("", ', device_map="auto"', "", False),
    ("", "", "", False),
])
def test_a_processor_output_into_a_submodule_of_a_moved_hugging_face_model(annotations, load, move, found):
    src = CLIP_SERVICE.format(annotations=annotations, load=load, move=move)
    r = process_text("clip.py", src, Options(select=frozenset({"TM101"})))
    at = src.splitlines().index("        text_outputs = self.clip_model.text_model(**inputs)") + 1
    assert [f.line for f in r.findings] == ([at] if found else [])


def test_a_dataclass_field_without_a_value_is_set_by_its_constructor():
    """In a dataclass, ``model: nn.Module`` is a field the constructor sets: its value is
    not known (so nothing is reported of it), unlike a plain class's declaration."""
    src = ("import dataclasses\nimport torch\nimport torch.nn as nn\n\n\n@dataclasses.dataclass\nclass Runner:\n"
           "    model: nn.Module\n\n    def setup(self):\n        self.model = nn.Linear(4, 2).cuda()\n\n"
           "    def run(self):\n        x = torch.randn(3, 4)\n        return self.model(x)\n")
    r = process_text("runner.py", src, Options(select=frozenset({"TM101"})))
    assert r.findings == []
    r = process_text("runner.py", src.replace("@dataclasses.dataclass\n", ""), Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [14]


def test_a_star_import_of_transformers_brings_its_classes():
    """cisnlp/simalign (issue #16): ``from transformers import *``, ``AutoModel`` and
    ``AutoTokenizer`` loaded in a class that moves the model; the tokenizer's output is not."""
    src = ("import torch\nfrom transformers import *\n\n\nclass EmbeddingLoader:\n    def __init__(self, model, device):\n"
           "        self.device = device\n        self.emb_model = None\n        self.tokenizer = None\n"
           "        self.emb_model = AutoModel.from_pretrained(model)\n        self.emb_model.to(self.device)\n"
           "        self.tokenizer = AutoTokenizer.from_pretrained(model)\n\n    def embed(self, pairs):\n"
           "        inputs = self.tokenizer(pairs, padding=True, return_tensors=\"pt\")\n"
           "        return self.emb_model(**inputs)[0]\n")
    r = process_text("simalign.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [16]


@pytest.mark.parametrize("call, fixed", [
    ('out = model(**tokenizer("hello", return_tensors="pt"))\n',
     'out = model(**tokenizer("hello", return_tensors="pt").to(device))\n'),
    ('ids = model.generate(tokenizer.encode("hi", return_tensors="pt"), max_new_tokens=5)\n',
     'ids = model.generate(tokenizer.encode("hi", return_tensors="pt").to(device), max_new_tokens=5)\n'),
    # look-alikes: moved right there; a model left on the CPU
    ('out = model(**tokenizer("hello", return_tensors="pt").to(device))\n', None),
    ('out = AutoModelForCausalLM.from_pretrained("gpt2")(**tokenizer("hello", return_tensors="pt"))\n', None),
])
def test_a_tokenizer_output_made_in_the_call_of_a_moved_hugging_face_model(call, fixed):
    body = 'model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n' + call
    findings, out, src = run(body, head=HF_HEAD)
    assert [f.code for f in findings] == (["TM101"] if fixed else [])
    if fixed:
        assert fixed in out


# ----------------------------------------------------------------- review of the Hugging Face paths


@pytest.mark.parametrize("body", [
    # a BatchEncoding's ``.to`` moves it in place whatever becomes of the result
    'inputs = tokenizer("hi", return_tensors="pt")\nids = inputs.to(device)["input_ids"]\nout = model.generate(**inputs)\n',
    'inputs = tokenizer("hi", return_tensors="pt")\n_ = inputs.to(device)\nout = model.generate(**inputs)\n',
    # methods of the model that compute nothing with its weights
    'inputs = tokenizer("hi", return_tensors="pt")\nprint(model.floating_point_ops(inputs))\n',
    'inputs = tokenizer("hi", return_tensors="pt")\nprint(model.warn_if_padding_and_no_attention_mask(inputs["input_ids"], None))\n',
])
def test_hugging_face_uses_that_meet_no_device(body):
    findings, out, src = run('model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n' + body, head=HF_HEAD)
    assert findings == []


def test_an_encoding_whose_items_are_used_on_the_host_is_not_moved_where_it_is_made():
    body = ('model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)\n'
            'enc = tokenizer("hi", return_tensors="pt")\nids = enc["input_ids"].numpy()\nout = model.generate(**enc)\n')
    findings, out, src = run(body, head=HF_HEAD)
    assert [f.code for f in findings] == ["TM101"] and findings[0].fix is None and "used on the host" in findings[0].message


@pytest.mark.parametrize("load", [
    'asr = pipeline("automatic-speech-recognition", model="openai/whisper-small", device_map="cuda")\n',
    'asr = StableDiffusionPipeline.from_pretrained("sd", torch_dtype=torch.float16).to("cuda")\n',
    # an Ultralytics model: calling it predicts, and its predictor moves a tensor to the model's device
    'asr = YOLO("yolov8n.pt")\nasr.to("cuda")\n',
    'asr = ultralytics.RTDETR("rtdetr-l.pt")\nif torch.cuda.is_available():\n    asr = asr.cuda()\n',
])
def test_a_pipeline_places_its_own_inputs(load):
    src = ("import numpy as np\nimport torch\nimport ultralytics\nfrom transformers import pipeline\n"
           "from diffusers import StableDiffusionPipeline\nfrom ultralytics import YOLO\n\n"
           + load + 'audio = torch.from_numpy(np.load("a.npy"))\nprint(asr(audio))\n')
    r = process_text("p.py", src, Options(select=frozenset({"TM101"})))
    assert r.findings == []
    if "YOLO(" in load or "RTDETR(" in load:  # a model of another library, moved the same way, is reported
        other = src.replace("ultralytics.RTDETR(", "SomeNet(").replace("YOLO(", "SomeNet(").replace(
            "from ultralytics import YOLO", "from zoo import SomeNet")
        r = process_text("p.py", other, Options(select=frozenset({"TM101"})))
        assert [f.code for f in r.findings] == ["TM101"]


@pytest.mark.parametrize("test", ["device == 'cuda'", "torch.cuda.is_available()"])
def test_a_model_wrapped_in_data_parallel_whenever_it_is_on_a_gpu(test):
    """The bare module runs only on a machine without CUDA, where everything is on the CPU."""
    body = ("device = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = nn.Linear(4, 2).to(device)\n"
            f"if {test}:\n    model = nn.DataParallel(model)\n"
            "for row in rows:\n    x = torch.from_numpy(row).float()\n    out = model(x)\n")
    findings, out, src = run(body, head="import torch\nimport torch.nn as nn\n")
    assert findings == []


def test_loaders_of_another_module_given_device_tensors(tmp_path):
    (tmp_path / "data.py").write_text(
        "from torch.utils.data import DataLoader\n\n\ndef get_loaders(train_set, bs):\n"
        "    return DataLoader(train_set, batch_size=bs), DataLoader(train_set, batch_size=bs)\n")
    src = ("import torch\nfrom torch.utils.data import TensorDataset\nfrom data import get_loaders\n\n"
           "X = torch.randn(100, 4).cuda()\ny = torch.randint(0, 2, (100,)).cuda()\ntrain_set = TensorDataset(X, y)\n"
           "model = torch.nn.Linear(4, 2).cuda()\ntrain_loader, test_loader = get_loaders(train_set, 32)\n"
           "for x, t in train_loader:\n    loss = torch.nn.functional.cross_entropy(model(x), t)\n")
    (tmp_path / "train.py").write_text(src)
    r = process_text(str(tmp_path / "train.py"), src, Options(), Project(roots=(str(tmp_path),)))
    assert [f for f in r.findings if f.code == "TM101"] == []
    cpu = src.replace(".cuda()\ny", "\ny").replace("(100,)).cuda()", "(100,))")
    (tmp_path / "train.py").write_text(cpu)
    r = process_text(str(tmp_path / "train.py"), cpu, Options(), Project(roots=(str(tmp_path),)))
    assert [f.code for f in r.findings] == ["TM101"]


@pytest.mark.parametrize("main, found", [
    ('if __name__ == "__main__":\n    model.to("cuda")\n    print(evaluate())\n', True),
    # look-alikes: the function runs before the move, or on the branch without it
    ('if __name__ == "__main__":\n    print(evaluate())\n    model.to("cuda")\n', False),
    ('print(evaluate())\nmodel.to("cuda")\n', False),
    ('if __name__ == "__main__":\n    if mode == "train":\n        model.cuda()\n        train()\n    else:\n'
     '        print(evaluate())\n', False),
])
def test_a_module_level_move_and_the_calls_of_the_function_that_uses_the_model(main, found):
    body = ("model = nn.Linear(4, 2)\n\n\ndef evaluate():\n    x = torch.zeros(1, 4)\n    return model(x)\n\n\n"
            "def train():\n    pass\n\n\n" + main)
    findings, out, src = run(body, head="import torch\nimport torch.nn as nn\n")
    assert [f.code for f in findings] == (["TM101"] if found else [])


def test_a_star_import_of_torchvision_models_through_a_project_module(tmp_path):
    (tmp_path / "utils.py").write_text("import torch\nfrom torchvision.models import *\n")
    src = "import torchvision\nfrom utils import *\n\nmodel = resnet18(pretrained=True, num_classes=10)\n"
    (tmp_path / "train.py").write_text(src)
    r = process_text(str(tmp_path / "train.py"), src, Options(select=frozenset({"TM401"})), Project(roots=(str(tmp_path),)))
    assert [f.code for f in r.findings] == ["TM401"]


# ----------------------------------------------------------------- the screens' shortcuts for many names

from hypothesis import given, settings, strategies as st  # noqa: E402

_PIECES = ["m0", "m1", "mx", "self.m1", "net", ".", "(", ")", "to", "act", "cuda", " ", "\n", "=", "x", "_", "2", "é"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.sets(st.sampled_from(
    ["m0", "m1", "mx", "self.m1", "net", "x", "é", "2x", "m0.m1"]), max_size=9), st.integers(0, 10), st.integers(0, 10))
def test_any_called_answers_as_the_name_by_name_search(pieces, names, a, b):
    """``_any_called`` (one scan of the text for many names) says what asking
    ``_calls_name`` of each name says, at any bounds."""
    text = "".join(pieces)
    start, end = min(a, len(text)), min(len(text), max(a, len(text) - b))
    assert D._any_called(text, names, start, end) == any(D._calls_name(text, n, start, end) for n in names)


def _tm101_of_the_tree(tmp_path) -> list:
    """TM101's findings in every file of the project at ``tmp_path`` (one run, in process)."""
    from torchmend.runner import run as run_tree

    out = run_tree([str(tmp_path)], Options(select=frozenset({"TM101"}), roots=(str(tmp_path),)), isolate=False)
    return [f for r in out.results for f in r.findings]


def test_many_dropped_moves_are_found_as_a_few_are():
    """Past 64 distinct statement moves, the statements are found by their endings
    (``_exprs_holding``): the same statements as the search by every word, in linear time."""
    from torchmend.rules.tm101_device_batch_not_moved import _exprs_holding, _statement_moves

    lines = [f"m{i}.to(device)" if i % 3 else f"b{i}[0].cuda()" for i in range(100)]
    lines += ["y.to(m5.to(device))", "print(q.to(device))", "foo(x).to(device)", "z = m7.to(device)"]
    text = "import torch\ndevice = 'cuda'\n" + "\n".join(lines) + "\n"
    sem = SemanticModel(text, "t.py")
    words = _statement_moves(text)
    assert len(words) > 64
    got = _exprs_holding(sem, words)
    assert [e.lineno for e in got] == [e.lineno for e in sem.find(ast.Expr, containing=words)]
    assert len(got) == 101  # (every statement move, ``y.to(m5.to(device))`` too; not ``print(q.to(``, ``foo(x).to(``)


def test_a_trainer_of_the_importing_script_is_named_short(tmp_path):
    """The script that imports the evaluation module trains the model with a Hugging Face
    trainer written over several lines, then hands it over: the finding names the
    trainer's device in one line (``Trainer(...).args.device``)."""
    (tmp_path / "evaluator.py").write_text(
        "# evaluates on the model's device\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
        "def evaluate(model, loader: DataLoader):\n    preds = []\n    for batch in loader:\n        out = model(input_ids=batch['input_ids'])\n"
        "        preds.append(out.logits.argmax(-1))\n    return preds\n")
    (tmp_path / "main.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
        "from evaluator import evaluate\n\n"
        "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
        "trainer = Trainer(\n    model=model,\n    args=TrainingArguments(output_dir='out'),\n)\ntrainer.train()\n"
        "evaluate(model, DataLoader(test_ds, batch_size=8))\n")
    [f] = _tm101_of_the_tree(tmp_path)
    assert f.path.endswith("evaluator.py") and "\n" not in f.message and "main.py line 11, which moves it to `Trainer(...).args.device`" in f.message


def test_a_trainer_class_given_its_model_by_the_script_that_imports_it(tmp_path):
    """A class of its own file keeps the model its constructor gets (``self.model =
    model``); the script that imports it builds it with a moved model: the batches its
    loop gives ``self.model`` are reported there (report only: the device is the script's)."""
    (tmp_path / "evaluator.py").write_text(
        "# evaluates on the device of the model\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
        "class Evaluator:\n    def __init__(self, model, loader: DataLoader):\n        self.model = model\n"
        "        self.loader = loader\n\n    def run(self):\n        correct = 0\n        for x, y in self.loader:\n"
        "            out = self.model(x)\n            correct += (out.argmax(1) == y).sum().item()\n"
        "        return correct\n")
    (tmp_path / "main.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nfrom evaluator import Evaluator\n\n"
        "device = torch.device('cuda')\nmodel = torch.nn.Linear(4, 2).to(device)\n"
        "loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8, dtype=torch.long)), batch_size=4)\n"
        "Evaluator(model, loader).run()\n")
    [f] = _tm101_of_the_tree(tmp_path)
    assert f.path.endswith("evaluator.py") and f.line == 14 and f.fix is None
    assert "`self.model` comes from main.py line 8, which moves it to `device`" in f.message


def _may_witness_by_each_line(text):
    """The witness screen as it read each move line's definition from its start (the
    reference for the one that reads each definition's loops once)."""
    lines = D._move_lines(text)
    defs = D._def_starts(text)
    for ls in lines:
        le = text.find("\n", ls)
        le = len(text) if le < 0 else le
        j = k = min(x for x in (text.find(".to(", ls, le), text.find(".cuda(", ls, le)) if x >= 0)
        while k > ls and (text[k - 1].isalnum() or text[k - 1] == "_"):
            k -= 1
        name = text[k:j]
        i = __import__("bisect").bisect_right(defs, ls) - 1
        if i < 0 or not name:
            continue
        for m in D._matches_on_lines(D._FOR_TARGET, text, "for", defs[i], ls):
            if D.has_word(m.group(1), name) and not D._NOT_A_LOADER.match(text, m.end()):
                return True
    return False


_WITNESS_LINES = [
    "def f(loader):", "def g(x):", "class T:", "    def run(self, loader):", "for x in loader:",
    "    for x, y in loader:", "    for (x,", "        y) in loader:", "    for i in range(3):",
    "    for k, v in d.items():", "        x = x.to(dev)", "    x = x.cuda()", "        y = y.to(dev)",
    "x = x.to(dev)", "    z = 1", "'''", "    for x in zip(a, b):", "        xs = xs.to(d)", "    for xs in loader:",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WITNESS_LINES), max_size=16))
def test_the_witness_screen_reads_each_definition_once_with_the_same_answer(lines):
    text = "\n".join(lines) + "\n"
    D.may_witness.cache_clear()
    assert D.may_witness(text) == _may_witness_by_each_line(text)


# ----------------------------------------------------------------------------- models of other files, wrappers


_NET_PY = ("import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self, device):\n        super().__init__()\n"
           "        self.device = device\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n{body}"
           "        return self.fc(x)\n")


def _main_of_a_project(tmp_path, src: str, files: dict):
    """``main.py`` (``src``) processed in a project of it and ``files`` (name -> text):
    the result and its TM101 findings."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "main.py").write_text(src)
    r = process_text(str(tmp_path / "main.py"), src, Options(), Project(roots=(str(tmp_path),)))
    return r, [f for f in r.findings if f.code == "TM101"]


@pytest.mark.parametrize("build", ['Net("cuda").cuda()', 'net.Net("cuda").cuda()'])
@pytest.mark.parametrize("body, found", [
    ("", True),
    # look-alike: its forward moves what it gets (a model that places its inputs)
    ("        x = x.to(self.device)\n", False),
])
def test_a_model_of_another_file_that_places_its_inputs(tmp_path, build, body, found):
    src = ("import torch\nimport net\nfrom net import Net\nfrom torch.utils.data import DataLoader\n\n\n"
           f"def main(ds):\n    loader = DataLoader(ds, batch_size=4)\n    model = {build}\n"
           "    for x, y in loader:\n        out = model(x)\n        print(out)\n")
    r, got = _main_of_a_project(tmp_path, src, {"net.py": _NET_PY.format(body=body)})
    assert len(got) == (1 if found else 0)
    if found:
        assert got[0].line == 11 and "x = x.cuda()" in r.diff.decode()


@pytest.mark.parametrize("module, found", [
    (None, True),  # the module is not in the tree: read as a plain module, as where it is moved (an unsafe fix)
    ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
     "    def forward(self, x):\n        return self.fc(x)\n", True),
    # look-alike: the class of the tree moves what it gets
    ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
     "    def forward(self, x):\n        return self.fc(x.cuda())\n", False),
])
def test_a_model_of_another_file_moved_under_a_condition(tmp_path, module, found):
    """zylo117/Yet-Another-EfficientDet-Pytorch train.py, reduced: the model is moved only
    when there is a GPU (``if params.num_gpus > 0: model = model.cuda()``) and the
    validation loop gives it the batch unmoved; the fix moves the batch under the same
    condition."""
    src = ("import torch\nfrom torch.utils.data import DataLoader\nfrom backbone import Net\n\n\n"
           "def validate(params, ds):\n    loader = DataLoader(ds, batch_size=4)\n    model = Net()\n"
           "    if params.num_gpus > 0:\n        model = model.cuda()\n    for x, y in loader:\n"
           "        out = model(x)\n        print(out)\n")
    files = {} if module is None else {"backbone.py": "import torch.nn as nn\n\n\n" + module}
    r, got = _main_of_a_project(tmp_path, src, files)
    assert len(got) == (1 if found else 0)
    if found:
        assert got[0].line == 12
        fix = r.diff.decode() if module is not None else r.suggestions[0].diff.decode()
        assert "    for x, y in loader:\n+        if params.num_gpus > 0:\n+            x = x.cuda()\n" in fix
        # (a class no file of the tree defines may place its inputs itself: offered, not applied)
        assert r.changed == (module is not None)



_TESTER = """\
import numpy as np
import torch
from models import get_model


class Tester:
    def __init__(self, config):
        self.config = config
{placeholder}
    def initialization(self):
        self.model = get_model(self.config)
        if torch.cuda.device_count() > 1:
            self.model = torch.nn.DataParallel(self.model)
        self.model = self.model.cuda()
{again}
    def extract(self, data):
        feats = []
        for i in range(len(data)):
            seq = torch.from_numpy(np.asarray(data[i]))
            fc = self.model(seq)
            feats.append(fc)
        return feats
"""

_NETS = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc({x})
"""

# a module of the class and a factory function of it
_FACTORY = _NETS + """

def get_model(config):
    model = Net()
    return model
"""


@pytest.mark.parametrize("placeholder, again, models, found", [
    # the model module is not in the tree
    ("", "", None, True),
    # ``self.model = None`` until ``initialization`` builds it (calling None would fail)
    ("        self.model = None\n", "", None, True),
    # a method that puts it in evaluation mode: ``self.model = self.model.eval()``
    ("        self.model = None\n", "\n    def run(self):\n        self.model = self.model.eval()\n", None, True),
    # a factory of the tree, re-exported by the package, whose model stays where it is made
    ("        self.model = None\n", "", _FACTORY.format(x="x"), True),
    # look-alikes: the factory's model moves what it gets; the factory wraps it in
    # DataParallel, which scatters its inputs itself
    ("        self.model = None\n", "", _FACTORY.format(x="x.cuda()"), False),
    ("        self.model = None\n", "", _FACTORY.format(x="x").replace(
        "    model = Net()\n", "    model = Net()\n    model = nn.DataParallel(model)\n"), False),
])
def test_a_tensor_an_evaluation_class_makes_for_a_model_its_factory_built(tmp_path, placeholder, again, models, found):
    """zihaomu/Gait_recognition_baseline_for_HID2020 test.py, reduced: ``self.model =
    get_model(config)`` (a factory of the project, re-exported by ``models/__init__.py``),
    maybe wrapped in ``DataParallel`` when there are several GPUs, then ``.cuda()``; another
    method gives it ``torch.from_numpy(...)`` unmoved."""
    files = {}
    if models is not None:
        (tmp_path / "models").mkdir()
        files = {"models/__init__.py": "from .factory import get_model\n", "models/factory.py": models}
    src = _TESTER.format(placeholder=placeholder, again=again)
    r, got = _main_of_a_project(tmp_path, src, files)
    assert [f.line for f in got] == ([src.splitlines().index("            fc = self.model(seq)") + 1] if found else [])
    if found:
        assert "move the batch to `next(self.model.parameters()).device`" in got[0].message


_SERVER = """\
import numpy as np
import torch


class Inference({base}):
    def __init__(self):
{init}
    def {method}(self, data):
        x = torch.from_numpy(np.asarray(data, dtype=np.float32))
        with torch.no_grad():
            return self.model(x).tolist()
"""


_MOVED = "        self.model = torch.nn.Linear(4, 2)\n        self.model.to(self.device)\n"


@pytest.mark.parametrize("method", ["predict", "__call__"])
@pytest.mark.parametrize("base, init, fixed", [
    ("object", "        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n" + _MOVED, True),
    ("object", "        super().__init__()\n        self.device = torch.device('cuda')\n" + _MOVED, True),
    # look-alikes for the fix (reported only): a method of its own may run before the device
    # is set (called; the object handed to a function; a base's __init__ that may call an
    # override); the device is set under a condition
    ("object", "        self.load()\n        self.device = torch.device('cuda')\n" + _MOVED, False),
    ("object", "        register(self)\n        self.device = torch.device('cuda')\n" + _MOVED, False),
    ("Worker", "        super().__init__()\n        self.device = torch.device('cuda')\n" + _MOVED, False),
    ("object", "        if torch.cuda.is_available():\n            self.device = torch.device('cuda')\n"
     "        else:\n            self.device = torch.device('cpu')\n" + _MOVED, False),
])
def test_a_tensor_a_serving_worker_makes_for_its_moved_model(method, base, init, fixed):
    """An inference wrapper (mosecorg/mosec's examples before 92f4548, reduced) moves its
    model in ``__init__`` and gives it a tensor made on the CPU; ``self.device``, set by
    ``__init__`` before anything else runs, holds the device in every other method.  (A
    class that defines ``forward`` is left to TM102, as a module whose base is not known
    may be one.)"""
    src = "from mosec import Worker\n" + _SERVER.format(base=base, init=init, method=method)
    r = process_text("server.py", src, Options(select=frozenset({"TM101"})))
    line = src.splitlines().index("            return self.model(x).tolist()") + 1
    assert [f.line for f in r.findings] == [line] and r.changed == fixed
    if fixed:
        out = apply_patch(src.encode(), r.diff).decode()
        assert "        x = torch.from_numpy(np.asarray(data, dtype=np.float32))\n        x = x.to(self.device)\n" in out
    else:
        assert not r.changed and r.findings[0].fix is None


# ----------------------------------------------------------------------------- CLIP


_CLIP = """\
import torch
import clip
from PIL import Image

device = "cuda" if torch.cuda.is_available() else "cpu"
model, preprocess = clip.load("ViT-B/32"{dev})
image = preprocess(Image.open("CLIP.png")).unsqueeze(0){imove}
text = clip.tokenize(["a diagram", "a dog", "a cat"]){tmove}
with torch.no_grad():
    image_features = model.encode_image(image)
    text_features = model.encode_text(text)
"""


@pytest.mark.parametrize("dev, imove, tmove, expect", [
    (", device=device", ".to(device)", ".to(device)", []),
    (", device=device", "", ".to(device)", ["image = image.to(device)"]),
    (", device", "", "", ["image = image.to(device)", "text = text.to(device)"]),
    ("", "", ".to(device)", None),  # its default device (the GPU when there is one): reported only
    (', device="cpu"', "", "", []),  # on the CPU: the tensors too
])
def test_a_clip_models_inputs(dev, imove, tmove, expect):
    """OpenAI's CLIP (``clip.load`` returns the model on ``device``, the GPU by default,
    and ``preprocess``, a Compose ending in ToTensor; ``clip.tokenize`` makes a CPU
    tensor): an image or text not moved before ``encode_image``/``encode_text``."""
    src = _CLIP.format(dev=dev, imove=imove, tmove=tmove)
    r = process_text("c.py", src, Options(select=frozenset({"TM101"})))
    assert r.error is None, r.error
    if expect is None:
        assert [f.line for f in r.findings] == [10] and not r.changed
        return
    assert len(r.findings) == len(expect), [f.message for f in r.findings]
    out = apply_patch(src.encode(), r.diff).decode() if r.changed else src
    assert added(src, out) == expect


def test_an_open_clip_models_inputs():
    src = ("import torch\nimport open_clip\nfrom PIL import Image\n\ndevice = 'cuda'\n"
           "model, _, preprocess = open_clip.create_model_and_transforms('ViT-B-32', pretrained='laion2b_s34b_b79k')\n"
           "{move}image = preprocess(Image.open('cat.png')).unsqueeze(0)\n"
           "with torch.no_grad():\n    feats = model.encode_image(image)\n")
    moved = process_text("o.py", src.format(move="model = model.to(device)\n"), Options(select=frozenset({"TM101"})))
    assert [f.line for f in moved.findings] == [10] and "image = image.to(device)" in moved.diff.decode()
    # not moved: the model stays on the CPU, with the image
    assert process_text("o.py", src.format(move=""), Options(select=frozenset({"TM101"}))).findings == []


# ----------------------------------------------------------------------------- library image transforms


_TRANSFORMS = {
    # timm's model-card inference: create_transform gives a Compose ending in ToTensor
    "timm": ("import timm\nfrom timm.data import resolve_data_config, create_transform\n",
             "model = timm.create_model('resnet50', pretrained=True).to(device)\n"
             "transform = create_transform(**resolve_data_config({}, model=model))\n"),
    # torchvision's weights API: weights.transforms() makes a tensor of an image
    "weights": ("from torchvision.models import resnet50, ResNet50_Weights\n",
                "weights = ResNet50_Weights.DEFAULT\nmodel = resnet50(weights=weights).to(device)\n"
                "transform = weights.transforms()\n"),
    "compose": ("from torchvision import transforms as T\n",
                "model = torch.nn.Linear(4, 2).to(device)\ntransform = T.Compose([T.Resize(256), T.ToTensor()])\n"),
}


@pytest.mark.parametrize("lib", sorted(_TRANSFORMS))
@pytest.mark.parametrize("use, fixed", [
    ("batch = transform(img).unsqueeze(0)\nout = model(batch)\n", "batch = batch.to(device)"),
    ("out = model(transform(img).unsqueeze(0))\n", "out = model(transform(img).unsqueeze(0).to(device))"),
    # look-alikes: moved; a tensor already on the device given to the weights' transforms
    ("batch = transform(img).unsqueeze(0).to(device)\nout = model(batch)\n", None),
])
def test_an_image_made_a_tensor_by_a_library_transform(lib, use, fixed):
    imports, setup = _TRANSFORMS[lib]
    src = ("import torch\nfrom PIL import Image\n" + imports + "\ndevice = torch.device('cuda')\n" + setup
           + "img = Image.open('dog.jpg')\n" + use)
    r = process_text("t.py", src, Options(select=frozenset({"TM101"})))
    assert r.error is None, r.error
    assert len(r.findings) == (fixed is not None), [f.message for f in r.findings]
    if fixed is not None:
        assert fixed in apply_patch(src.encode(), r.diff).decode()


def test_an_image_read_by_torchvision_given_to_the_weights_transforms():
    """torchvision's detection example, with the model moved: ``read_image`` makes a CPU
    tensor, which the weights' transforms keep on the CPU."""
    src = ("import torch\nfrom torchvision.io import read_image\n"
           "from torchvision.models.detection import fasterrcnn_resnet50_fpn_v2, FasterRCNN_ResNet50_FPN_V2_Weights\n\n"
           "device = torch.device('cuda')\nimg = read_image('grace_hopper.jpg')\n"
           "weights = FasterRCNN_ResNet50_FPN_V2_Weights.DEFAULT\n"
           "model = fasterrcnn_resnet50_fpn_v2(weights=weights).to(device)\npreprocess = weights.transforms()\n"
           "batch = preprocess(img).unsqueeze(0)\nprediction = model(batch)[0]\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [11] and "batch = batch.to(device)" in r.diff.decode()


def test_a_device_tensor_given_to_the_weights_transforms():
    src = ("import torch\nfrom torchvision.io import read_image\nfrom torchvision.models import resnet50, ResNet50_Weights\n\n"
           "device = torch.device('cuda')\nweights = ResNet50_Weights.DEFAULT\nmodel = resnet50(weights=weights).to(device)\n"
           "preprocess = weights.transforms()\nimg = read_image('dog.jpg').to(device)\nout = model(preprocess(img).unsqueeze(0))\n")
    assert process_text("t.py", src, Options(select=frozenset({"TM101"}))).findings == []


def test_a_loader_of_a_dataset_given_clips_preprocess():
    """yangjianxin1/ClipCap-Chinese predict.py (issue #10), reduced: the dataset gets CLIP's
    ``preprocess`` (a Compose ending in ToTensor), whose loader line names the device: its
    batches are still made on the CPU."""
    src = ("import torch\nimport clip\nfrom torch.utils.data import DataLoader\nfrom dataset import ImageDataset\n\n\n"
           "def main(args):\n    clip_model, preprocess = clip.load(args.clip_model_path, device='cuda', jit=False)\n"
           "    dataloader = DataLoader(ImageDataset(args.image_path, preprocess), batch_size=8)\n"
           "    for batch_idx, data in enumerate(dataloader):\n        images, image_names = data\n"
           "        clip_embeds = clip_model.encode_image(images)\n        print(clip_embeds)\n")
    r = process_text("p.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [12]
    assert "        images = images.to('cuda')\n" in r.diff.decode()


def test_a_clip_module_of_the_project_is_not_clip(tmp_path):
    """(review) A project's own ``clip.py`` (an ONNX wrapper whose ``encode_image`` calls
    ``x.numpy()``): its ``load`` is no OpenAI CLIP, nothing is known of what it returns."""
    (tmp_path / "clip.py").write_text("def load(name, device='cpu'):\n    return None, None\n\n\n"
                                      "def tokenize(texts):\n    return texts\n")
    src = _CLIP.format(dev=", device=device", imove="", tmove="")
    (tmp_path / "main.py").write_text(src)
    r = process_text(str(tmp_path / "main.py"), src, Options(select=frozenset({"TM101"})), Project(roots=(str(tmp_path),)))
    assert r.findings == []


def test_open_clip_moved_by_its_loader_only():
    """(review) ``create_model_and_transforms(..., device="cuda")`` and no ``.to(`` in the
    file: the text gate lets it through (the loader's name is one of its words)."""
    src = ("import torch\nimport open_clip\nfrom PIL import Image\n\n"
           "model, _, preprocess = open_clip.create_model_and_transforms('ViT-B-32', pretrained='x', device='cuda')\n"
           "image = preprocess(Image.open('cat.png')).unsqueeze(0)\nwith torch.no_grad():\n    f = model.encode_image(image)\n")
    r = process_text("o.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [8] and "image = image.to('cuda')" in r.diff.decode()


@pytest.mark.parametrize("lib", ["timm", "weights"])
def test_a_gpu_tensor_given_to_a_library_transform(lib):
    """(review) timm's eval transforms end in MaybeToTensor, torchvision's weights'
    transforms take tensors: a tensor already on the device stays there."""
    imports, setup = _TRANSFORMS[lib]
    src = ("import torch\nfrom torchvision.io import read_image\n" + imports + "\ndevice = torch.device('cuda')\n" + setup
           + "img = read_image('dog.jpg').to(device).float() / 255\nout = model(transform(img).unsqueeze(0))\n")
    assert process_text("t.py", src, Options(select=frozenset({"TM101"}))).findings == []


def test_a_device_shadowed_where_the_tensor_is_made_in_the_call():
    """(review) the model is moved to the module's ``device``; the function's own
    parameter ``device="cpu"`` is another value: reported, not fixed with it."""
    src = ("import torch\nimport numpy as np\n\ndevice = torch.device('cuda')\nmodel = torch.nn.Linear(4, 2).to(device)\n\n\n"
           "def predict(arr, device='cpu'):\n    return model(torch.from_numpy(arr))\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [9] and not r.changed


def test_clip_inputs_made_right_in_the_encode_call():
    """``model.encode_image(preprocess(img).unsqueeze(0))``, ``model.encode_text(clip.tokenize(t))``:
    made in the call, moved there; one already moved is left."""
    src = ("import torch\nimport clip\nfrom PIL import Image\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
           "model, preprocess = clip.load('ViT-B/32', device=device)\nwith torch.no_grad():\n"
           "    image_features = model.encode_image(preprocess(Image.open('CLIP.png')).unsqueeze(0))\n"
           "    text_features = model.encode_text(clip.tokenize(['a dog', 'a cat']))\n"
           "    ok = model.encode_text(clip.tokenize(['a dog']).to(device))\n")
    r = process_text("c.py", src, Options(select=frozenset({"TM101"})))
    assert [f.line for f in r.findings] == [8, 9]
    out = apply_patch(src.encode(), r.diff).decode()
    assert "model.encode_image(preprocess(Image.open('CLIP.png')).unsqueeze(0).to(device))" in out
    assert "model.encode_text(clip.tokenize(['a dog', 'a cat']).to(device))" in out


# ----------------------------------------------------------------------------- TensorBoard, host uses


_GRAPH = """\
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter("runs/mnist")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
test_loader = DataLoader(ds, batch_size=64)
examples = iter(test_loader)
example_data, example_targets = {take}
{show}model = nn.Linear(784, 10).to(device)
writer.add_graph(model, example_data.reshape(-1, 28 * 28))
"""


@pytest.mark.parametrize("take", ["next(examples)", "examples.next()"])
@pytest.mark.parametrize("show, fixed", [
    ("", True),
    # the batch is also shown with matplotlib: a CUDA tensor fails there (report only)
    ("for i in range(6):\n    plt.imshow(example_data[i][0], cmap='gray')\n", False),
    # (TensorBoard and torchvision take device tensors)
    ("writer.add_image('images', example_data[0])\n", True),
    # (review) seaborn reads a NumPy array; a grid of the batch keeps its device, and a
    # helper reads it with ``.numpy()``
    ("import seaborn as sns\nsns.heatmap(example_data[0][0])\n", False),
    ("import torchvision\n\n\ndef show(img):\n    plt.imshow(img.numpy())\n\n\n"
     "show(torchvision.utils.make_grid(example_data))\n", False),
])
def test_a_batch_given_to_tensorboards_add_graph(take, show, fixed):
    """patrickloeber/pytorchTutorial 16_tensorboard.py (and microsoft/AI-System's lab 1):
    ``writer.add_graph(model, images)`` traces the moved model on a batch taken from the
    loader on the CPU (``examples.next()``: older PyTorch's iterator method)."""
    src = _GRAPH.format(take=take, show=show)
    res = process_text("t.py", src, Options(select=frozenset({"TM101"})))
    line = src.splitlines().index("writer.add_graph(model, example_data.reshape(-1, 28 * 28))") + 1
    assert [f.line for f in res.findings] == [line] and res.changed == fixed
    if fixed:
        out = apply_patch(src.encode(), res.diff).decode()
        assert f"example_data, example_targets = {take}\nexample_data = example_data.to(device)\n" in out
    else:
        assert "`example_data` on the host: move it only where the device needs it" in res.findings[0].message


def test_a_label_read_as_a_numpy_array_keeps_the_fix_from_moving_it():
    # the fix would move ``y`` for the loss at the top of the loop: ``y.numpy()`` then fails
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        crit = nn.CrossEntropyLoss()
        for x, y in loader:
            out = model(x)
            loss = crit(out, y)
            acc = np.mean(out.argmax(1).cpu().numpy() == y.numpy())
        """,
        head=HEAD + "import numpy as np\n",
    )
    assert codes(f) == ["TM101"] and f[0].fix is None and out == src
    assert "`y.numpy()` reads `y` on the host" in f[0].message
    # look-alike for the fix: the label read back after a move of its own
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            out = model(x)
            print(y.numpy())
        """,
        head=HEAD + "import numpy as np\n",
    )
    assert codes(f) == ["TM101"] and "x = x.to(device)" in out



@pytest.mark.parametrize("init, factory, x, found", [
    # a factory whose class comes from a third file of the package
    ("from .factory import get_model\n", "from .nets import Net\n\n\ndef get_model(config):\n    model = Net()\n    return model\n",
     "x", True),
    ("from .factory import get_model\n", "from .nets import Net\n\n\ndef get_model(config):\n    model = Net()\n    return model\n",
     "x.cuda()", False),  # (review) that class moves what it gets
    # (review) a class, not a factory, re-exported by the package: not read there, not guessed
    ("from .nets import Net as get_model\n", None, "x.cuda()", False),
])
def test_a_factory_whose_class_is_imported_from_a_third_file(tmp_path, init, factory, x, found):
    (tmp_path / "models").mkdir()
    files = {"models/__init__.py": init, "models/nets.py": _NETS.format(x=x)}
    if factory is not None:
        files["models/factory.py"] = factory
    src = _TESTER.format(placeholder="        self.model = None\n", again="")
    r, got = _main_of_a_project(tmp_path, src, files)
    assert [f.line for f in got] == ([src.splitlines().index("            fc = self.model(seq)") + 1] if found else [])


@pytest.mark.parametrize("fill", [".random_(0, 10)", ".uniform_(0, 1)", ".bernoulli_(0.5)"])
def test_a_made_tensor_filled_in_place_stays_on_the_host(fill):
    # (triage: dsp6414/ml-for-nlp HW4, ``c = torch.zeros(SAMPLES).long().random_(0, 10).float()``)
    f, out, src = run(
        f"model = nn.Linear(4, 2).to(device)\nc = torch.zeros(8, 4){fill}\nprint(model(c))\n", head=MADE_HEAD,
    )
    assert codes(f) == ["TM101"] and f"c = torch.zeros(8, 4){fill}\nc = c.to(device)\n" in out


@pytest.mark.parametrize("index, fixed", [
    # the timestep indexes a host schedule whose item is moved after: kept on the host on
    # purpose (the model's forward may take it there too: ``self.table[t].to(x.device)``)
    ("a = alpha[t].view(8, 1).cuda()", False),
    ("a = alpha[t, None].to(device)", False),
    # look-alikes for the fix: the item is not moved after (a host value either way), or
    # the schedule is indexed by something else
    ("a = alpha[0].item()", True),
    ("a = alpha[t.cpu()].view(8, 1).cuda()", True),
])
def test_a_made_index_of_a_host_schedule(index, fixed):
    """venkatKrishnan86 diffusion train.py: ``t = torch.randint(0, T, (b,))`` stays on the
    CPU to index ``scheduler.alpha`` (moved after) and a plain tensor attribute in the
    model's time embedding: moving it where it is made broke both (a safe fix)."""
    f, out, src = run(f"""
    model = nn.Linear(4, 4).to(device)
    alpha = torch.linspace(0.1, 1.0, 10)
    for x, _ in loader:
        x = x.to(device)
        t = torch.randint(0, 10, (8,))
        {index}
        out = model(x, t)
    """, unsafe=True)
    assert codes(f) == ["TM101"]
    assert (out != src) == fixed
    if not fixed:
        assert "`t` also indexes `alpha` on the host (line 15), whose item is moved after" in f[0].message
        assert f[0].severity.value == "warning"


@pytest.mark.parametrize("loop", [
    "    with tqdm(loader, desc='TRAIN') as bar:\n        for x, y in bar:\n            out = model(x)\n",
    "    with tqdm(loader) as bar:\n        for i, (x, y) in enumerate(bar):\n            out = model(x)\n",
])
def test_a_batch_of_a_progress_bar_of_a_with(loop):
    """``with tqdm(loader) as bar: for x, y in bar:`` (tqdm's ``__enter__`` returns itself):
    the batch is the loader's."""
    f, out, src = run("from tqdm import tqdm\nmodel = nn.Linear(4, 2).to(device)\n\n\ndef train():\n" + loop)
    assert codes(f) == ["TM101"]
    assert "x = x.to(device)" in out


_WRAPPER = """
class DenseModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Predictor:
    def __init__(self):
        self.model = DenseModel(){cast}
        self.device = torch.device("cuda")
        self.model = self.model.to(self.device)

    def predict(self, x_test):
        return {use}
"""


@pytest.mark.parametrize("cast, use, found, fixed", [
    # dipy HistoResDNN: a module cast to float64 (the same module), then moved in ``__init__``
    (".type(torch.float64)", "self.model(torch.from_numpy(x_test))", True, True),
    ("", "self.model(torch.from_numpy(x_test))", True, True),
    # its output read with ``.numpy()``: moving the input only moves the failure there
    (".type(torch.float64)", "self.model(torch.from_numpy(x_test)).detach().numpy()", True, False),
    (".type(torch.float64)", "self.model(torch.from_numpy(x_test)).detach().cpu().numpy()", True, True),
    # a legacy tensor type names a device too (``torch.FloatTensor`` puts a moved module
    # back on the CPU): what the module is then is not read
    (".type(torch.cuda.FloatTensor)", "self.model(torch.from_numpy(x_test))", False, False),
    (".type(torch.FloatTensor)", "self.model(torch.from_numpy(x_test))", False, False),
])
def test_a_wrapper_that_casts_then_moves_its_model(cast, use, found, fixed):
    f, out, src = run(_WRAPPER.format(cast=cast, use=use), unsafe=True)
    assert codes(f) == (["TM101"] if found else [])
    assert (out != src) == fixed
    if found and not fixed:
        assert "and the output to the host before `.numpy()`" in f[0].message


@pytest.mark.parametrize("read, fixed", [
    ("    preds.append(out.detach().numpy())\n", False),
    ("    preds.append(out.data.numpy())\n", False),
    ("    preds.append(out.detach().cpu().numpy())\n", True),
    ("    preds.append(out.argmax(1))\n", True),
])
def test_a_model_output_read_as_numpy_in_the_loop(read, fixed):
    """``out = model(x)`` then ``out.detach().numpy()``: moving the batch alone makes the
    output a CUDA tensor, which ``.numpy()`` refuses (report only)."""
    f, out, src = run("model = nn.Linear(4, 2).to(device)\npreds = []\nfor x, y in loader:\n    out = model(x)\n" + read)
    assert codes(f) == ["TM101"]
    assert (out != src) == fixed
    if not fixed:
        assert "the output of `model` is read with `.numpy()` (line 13)" in f[0].message


@pytest.mark.parametrize("made, found, fixed", [
    # made in both branches of an ``if`` (asahi417/lmppl: the tokenizer's output with or
    # without ``max_length``), read after it: each branch gets its move
    ("    if small:\n        x = torch.from_numpy(a[:10])\n    else:\n        x = torch.from_numpy(a)\n", True, 2),
    ("    with torch.no_grad():\n        x = torch.from_numpy(a)\n", True, 1),
    # the ``else`` of ``if torch.cuda.is_available():`` runs only without a GPU
    ("    if torch.cuda.is_available():\n        x = torch.from_numpy(a).cuda()\n    else:\n"
     "        x = torch.from_numpy(a)\n", False, 0),
])
def test_a_tensor_made_in_a_branch_and_read_after_it(made, found, fixed):
    f, out, src = run("model = nn.Linear(4, 2).to(device)\n\n\ndef predict(a, small):\n" + made + "    return model(x)\n")
    assert codes(f) == (["TM101"] if found else [])
    assert out.count("x = x.to(device)") == fixed


def test_a_wrapper_whose_move_is_in_another_method():
    """(review) ``__init__`` makes the model on the CPU; only ``use_gpu()``, which may never
    run, moves it: the inline tensor is not moved (the safe fix broke the CPU run)."""
    src = _WRAPPER.format(cast="", use="self.model(torch.from_numpy(x_test))").replace(
        "        self.model = self.model.to(self.device)\n",
        "\n    def use_gpu(self):\n        self.model = self.model.to(self.device)\n")
    f, out, src = run(src, unsafe=True)
    assert codes(f) == [] and out == src


def _evaluation(moves: str) -> str:
    """A model on the device evaluated by a function whose first lines are ``moves``; a
    metric module on the device gets the model's output."""
    return ("model = nn.Linear(4, 3).to(device)\n"
            "metric = nn.Linear(3, 3).to(device)\n\n\n"
            "def evaluate(model, test_loader, save=False):\n" + moves +
            "    for inputs, labels in test_loader:\n"
            "        output = model(inputs)\n"
            "        scores = metric(output)\n\n\n"
            "evaluate(model, loader)\n")


@pytest.mark.parametrize("back", ['model.to("cpu")', "model.cpu()", 'model = model.to(torch.device("cpu"))', None])
def test_a_module_moved_back_to_the_cpu_keeps_its_batch_there(back):
    """(AsserElfeki's notebook) the model is moved to the CPU for evaluation, a metric
    lives on the device: moving the batch would break ``model(inputs)``; report only."""
    findings, out, src = run(_evaluation(f"    {back}\n" if back else ""))
    assert codes(findings) == ["TM101"], [f.message for f in findings]
    if back:
        assert out == src and "on the CPU on purpose (it was moved to the CPU above)" in findings[0].message
    else:
        assert out != src


@pytest.mark.parametrize("moves, fixed", [
    # (review) moved to the CPU for a snapshot, then back to the device before the loop
    ("    model.cpu()\n    torch.save(model.state_dict(), 'last.pt')\n    model.to(device)\n", True),
    # a move to the CPU only on one branch: it may hold at the call: said, not fixed
    ("    if save:\n        model.cpu()\n", False),
    ("    model.cpu()\n", False),
    # (review) in a block that always runs; chained; a dtype cast after it is no move back
    ("    with torch.no_grad():\n        model.cpu()\n", False),
    ("    model.eval().cpu()\n", False),
    ("    model.cpu()\n    model.to(torch.float64)\n", False),
    # moved back to the device in a branch after it: not fixed either (it may stay on the CPU)
    ("    model.cpu()\n    if gpu:\n        model.to(device)\n", False),
    # (review) the name bound again to a model on the device; a move in a branch that returns;
    # a move in a lambda never called
    ("    torch.save(model.cpu().state_dict(), 'm.pt')\n    model = nn.Linear(4, 3).to(device)\n", True),
    ("    if save:\n        model.cpu()\n        return\n", True),
    ("    export = lambda: torch.save(model.cpu().state_dict(), 'm.pt')\n", True),
])
def test_a_module_moved_back_to_the_cpu_only_when_that_is_its_last_move(moves, fixed):
    findings, out, src = run(_evaluation(moves))
    assert codes(findings) == ["TM101"], [f.message for f in findings]
    assert (out != src) == fixed, findings[0].message


@pytest.mark.parametrize("make, found", [
    # (TaylorT1997's collate_fn returns lists) the batch rebound as a tensor made on the device
    ("labels = torch.tensor(labels, dtype=torch.float, device=device)", False),
    ("labels = torch.as_tensor(labels, device=device)", False),
    # made on the CPU: still meets the model's output there
    ("labels = torch.tensor(labels, dtype=torch.float)", True),
    ("labels = torch.tensor(labels, device='cpu')", True),
])
def test_a_batch_element_rebound_as_a_tensor_made_on_the_device(make, found):
    body = (
        "model = nn.Linear(4, 1).to(device)\n\n\n"
        "def train():\n"
        "    for xs, labels in loader:\n"
        "        inputs = xs.to(device)\n"
        f"        {make}\n"
        "        loss = (model(inputs) - labels).pow(2).mean()\n"
        "        loss.backward()\n"
    )
    findings, out, src = run(body)
    assert codes(findings) == (["TM101"] if found else []), [f.message for f in findings]


@pytest.mark.parametrize("obs, found", [
    ("env = gym.make('CartPole-v1')\nstate, info = env.reset()\n", True),
    ("env = gym.make('CartPole-v1')\nstate = env.reset()[0]\n", True),
    ("X_tr, X_te = train_test_split(np.random.randn(8, 4))\nstate = X_tr\n", True),
    # look-alikes: an environment of another library (it may hand out device tensors);
    # a part of something unknown
    ("env = make_env('CartPole-v1')\nstate, info = env.reset()\n", False),
    ("state, info = load_state()\n", False),
    # (review) parts of a builtin's result (here tensors already moved); a simulator told a GPU backend
    ("state, other = map(lambda t: t.to(device), (torch.zeros(1, 4), torch.zeros(1)))\n", False),
    ("env = gym.make('PickCube-v1', sim_backend='gpu')\nstate, info = env.reset()\n", False),
])
def test_a_tensor_of_a_gym_observation_is_made_on_the_cpu(obs, found):
    """(the PyTorch DQN tutorial without its ``device=device``) ``state, info =
    env.reset()`` of a Gym environment is a NumPy array: ``torch.tensor(state)`` is on the
    CPU and the moved network fails on it."""
    head = HEAD.replace("import torch\n", "import torch\nimport numpy as np\nimport gymnasium as gym\n"
                        "from sklearn.model_selection import train_test_split\n", 1)
    f, out, src = run("policy_net = nn.Linear(4, 2).to(device)\n" + obs +
                      "state = torch.tensor(state, dtype=torch.float32).unsqueeze(0)\nq = policy_net(state)\n", head=head)
    assert codes(f) == (["TM101"] if found else []), [x.message for x in f]
    if found:
        assert added(src, out) == ["state = state.to(device)"]



@pytest.mark.parametrize("transform, found", [
    ("transform=ToTensor()", True),
    ("transform=Compose([Resize(28), ToTensor()])", True),
    # (review) no transform (PIL images), or torchvision's own that make no tensor
    ("transform=None", False),
    ("transform=Resize(28)", False),
    ("transform=Compose([Resize(28)])", False),
    # (review) what cannot be read may make them: a list built elsewhere, a function
    ("transform=Compose(steps)", True),
    ("transform=make_transform()", True),
])
def test_the_samples_of_a_torchvision_dataset_are_tensors_with_a_to_tensor_transform(transform, found):
    head = HEAD.replace("import torch\n", "import torch\nfrom torchvision import datasets\n"
                        "from torchvision.transforms import Compose, Resize, ToTensor\n", 1)
    f, out, src = run(f"test_data = datasets.MNIST('data', train=False, {transform})\n"
                      "test_loader = DataLoader(test_data, batch_size=4)\nnet = nn.Linear(784, 10).to(device)\n"
                      "for img, label in test_data:\n    print(net(img.view(1, -1)))\n", head=head)
    assert codes(f) == (["TM101"] if found else []), [x.message for x in f]


@pytest.mark.parametrize("ret, found", [
    ("np.random.randn(4).astype(np.float32)", True),
    ("[0.0, 1.0, 0.0, 1.0]", True),
    # look-alikes: a tensor (made here, on the device) or something unknown
    ("torch.zeros(4, device=device)", False),
    ("self.sim.observe()", False),
])
def test_a_tensor_of_what_a_same_file_environment_returns(ret, found):
    """(probe, a DQN with a toy environment) ``obs = env.reset()`` of a same-file class
    whose ``reset`` returns a NumPy array: ``torch.tensor(obs)`` is on the CPU."""
    head = HEAD.replace("import torch\n", "import torch\nimport numpy as np\n", 1)
    f, out, src = run(f"class ToyEnv:\n    def reset(self):\n        return {ret}\n\n\n"
                      "policy_net = nn.Linear(4, 2).to(device)\nenv = ToyEnv()\nobs = env.reset()\n"
                      "state = torch.tensor(obs, dtype=torch.float32).unsqueeze(0)\nq = policy_net(state)\n", head=head)
    assert codes(f) == (["TM101"] if found else []), [x.message for x in f]


@pytest.mark.parametrize("env", [
    # (review) a toy environment simulated in torch: a tuple of device tensors
    "class ToyEnv:\n    def reset(self):\n        return torch.zeros(4, device=device), 0.0\n\n\n"
    "env = ToyEnv()\nobs, _ = env.reset()\n",
    # (review) a subclass that returns a device tensor instead: the instance may be one
    "class ToyEnv:\n    def reset(self):\n        return np.zeros(4)\n\n\nclass GpuEnv(ToyEnv):\n"
    "    def reset(self):\n        return torch.rand(4, device=device)\n\n\nenv = GpuEnv()\nobs = env.reset()\n",
    # (review) a GPU simulator imported (not only a word in a comment)
    "import mani_skill.envs\nenv = gym.make('PickCube-v1')\nobs, info = env.reset()\n",
])
def test_what_an_environment_returns_is_not_host_data_when_it_may_be_a_device_tensor(env):
    head = HEAD.replace("import torch\n", "import torch\nimport numpy as np\nimport gymnasium as gym\n", 1)
    f, _, _ = run("policy_net = nn.Linear(4, 2).to(device)\n" + env
                  + "state = torch.as_tensor(obs, dtype=torch.float32)\nq = policy_net(state)\n", head=head)
    assert codes(f) == [], [x.message for x in f]


def test_a_word_in_a_comment_does_not_make_a_gym_environment_a_simulator():
    head = HEAD.replace("import torch\n", "import torch\nimport gymnasium as gym\n", 1)
    f, _, _ = run("# the genesis of this script: isaac's notes\npolicy_net = nn.Linear(4, 2).to(device)\n"
                  "env = gym.make('CartPole-v1')\nobs, info = env.reset()\n"
                  "state = torch.tensor(obs, dtype=torch.float32)\nq = policy_net(state)\n", head=head)
    assert codes(f) == ["TM101"]
