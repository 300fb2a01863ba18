"""Unit tests of the device rule TM101 (TM102: tests/test_tm102.py): one snippet per variant class, and
look-alikes that must produce no finding at all."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch

HEAD = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
criterion = nn.CrossEntropyLoss()
"""


def run(body: str, unsafe: bool = False, head: str = HEAD):
    src = head + textwrap.dedent(body)
    res = process_text("t.py", src, Options(unsafe_fixes=unsafe))
    assert res.error is None, res.error
    out = apply_patch(src.encode(), res.diff).decode() if res.changed else src
    if res.changed:  # idempotent
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe))
        assert again.error is None and not again.changed, again.diff
    return res.findings, out, src


def codes(findings):
    return sorted(f.code for f in findings)


def fixable(findings):
    return [f for f in findings if f.applied]


def added(src: str, out: str) -> list[str]:
    """Lines the fix inserted or rewrote (stripped), in order."""
    from torchmend.gitdiff import unified_diff

    diff = unified_diff(src.encode(), out.encode(), "t.py").decode()
    return [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


# ----------------------------------------------------------------------------- TM101 bugs


def test_tuple_batch_model_to_device():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and fixable(f)
    assert "batch `x, y` reaches `model` on the CPU while the model is on `device`" in f[0].message
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]
    # inserted as the first statement of the loop body
    assert "for x, y in loader:\n    x, y = x.to(device), y.to(device)\n    loss" in out


def test_enumerate_nested_tuple_and_label_only_in_loss():
    f, out, src = run(
        """
        model = nn.Linear(4, 2)
        model = model.to(device)
        for i, (images, labels) in enumerate(loader):
            outputs = model(images)
            loss = criterion(outputs, labels)
        """
    )
    assert added(src, out) == ["images, labels = images.to(device), labels.to(device)"]


def test_cuda_style_guarded_by_same_condition():
    f, out, src = run(
        """
        model = nn.Linear(4, 2)
        if torch.cuda.is_available():
            model.cuda()
        for data, target in loader:
            loss = criterion(model(data), target)
        """
    )
    assert "    if torch.cuda.is_available():\n        data, target = data.cuda(), target.cuda()\n" in out


def test_cuda_style_unconditional():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).cuda()
        for data, target in loader:
            loss = criterion(model(data), target)
        """
    )
    assert added(src, out) == ["data, target = data.cuda(), target.cuda()"]


def test_main_guard_is_not_copied():
    f, out, src = run(
        """
        def train(model):
            for x, y in loader:
                loss = criterion(model(x), y)

        if __name__ == "__main__":
            net = nn.Linear(4, 2).cuda()
            train(net)
        """
    )
    assert added(src, out) == ["x, y = x.cuda(), y.cuda()"]


def test_cuda_move_in_else_branch_is_report_only():
    f, out, src = run(
        """
        model = nn.Linear(4, 2)
        if not torch.cuda.is_available():
            pass
        else:
            model.cuda()
        for x, y in loader:
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f) and out == src


def test_unpacked_list_batch_moved_after_unpacking():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for data in loader:
            inputs, labels = data
            loss = criterion(model(inputs), labels)
        """
    )
    assert "    inputs, labels = data\n    inputs, labels = inputs.to(device), labels.to(device)\n" in out


def test_indexed_batch():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            loss = criterion(model(batch[0]), batch[1])
        """
    )
    assert added(src, out) == ["batch = [(t.to(device) if torch.is_tensor(t) else t) for t in batch]"]


def test_dict_batch_kwargs_and_keys():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            out = model(**batch)
        for batch in loader:
            loss = criterion(model(batch["x"]), batch["y"])
        """
    )
    assert codes(f) == ["TM101", "TM101"]
    assert added(src, out) == ["batch = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in batch.items()}"] * 2


def test_whole_batch_passed_is_report_only():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            out = model(batch)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f)


def test_string_device_and_non_blocking_kept():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to("cuda")
        for x, y in loader:
            loss = criterion(model(x), y)
        for x, y in loader:
            x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            loss = criterion(model(x), y)
        """
    )
    assert added(src, out) == ['x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)']
    assert codes(f) == ["TM101"]


def test_functions_receiving_model_loader_device():
    f, out, src = run(
        """
        def train(model, dev, data_loader, optimizer):
            for x, y in data_loader:
                loss = criterion(model(x), y)

        def evaluate(model, dev, data_loader):
            correct = 0
            for x, y in data_loader:
                pred = model(x).argmax(1)
                correct += pred.eq(y).sum().item()

        net = nn.Linear(4, 2).to(device)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        train(net, device, loader, opt)
        evaluate(net, device, loader)
        """
    )
    assert codes(f) == ["TM101", "TM101"]
    assert added(src, out) == ["x, y = x.to(dev), y.to(dev)"] * 2


def test_global_model_used_in_function_and_global_device():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)

        def epoch():
            for x, y in loader:
                loss = criterion(model(x), y)

        epoch()
        """
    )
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_shadowed_device_is_report_only():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)

        def epoch(device_id):
            device = f"cuda:{device_id}"
            for x, y in loader:
                loss = criterion(model(x), y)

        epoch(0)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f)


def test_eval_loop_label_meets_output():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        with torch.no_grad():
            for x, y in loader:
                correct = (model(x).argmax(1) == y).sum().item()
        """
    )
    assert added(src, out) == ["x, y = x.to(device), y.to(device)"]


def test_only_names_reaching_model_are_moved():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            out = model(x)
            print(len(y), y.shape)
        """
    )
    assert added(src, out) == ["x = x.to(device)"]


def test_unknown_device_reports_with_hint():
    for move in ("args.device", "cfg.device", "local_rank"):
        f, out, src = run(
            f"""
            model = nn.Linear(4, 2).to({move})
            for x, y in loader:
                loss = criterion(model(x), y)
            """
        )
        assert codes(f) == ["TM101"] and not fixable(f) and out == src
        assert "next(model.parameters()).device" in f[0].message


def test_model_built_by_helper_with_device_is_report_only():
    f, out, src = run(
        """
        def build(dev):
            return nn.Linear(4, 2).to(dev)

        model = build(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f)


def test_noop_to_on_loader_tensor_and_factory():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        mask = torch.ones(4)
        mask.to(device)
        for x, y in loader:
            x.to(device)
            y.cuda()
            loss = criterion(model(x * mask), y)
        """
    )
    assert codes(f) == ["TM101"] * 3 and len(fixable(f)) == 3
    assert added(src, out) == ["mask = mask.to(device)", "x = x.to(device)", "y = y.cuda()"]
    assert "is not in-place" in f[0].message


def test_noop_to_on_unknown_object_is_ignored():
    f, out, src = run(
        """
        enc = tokenizer("hello")
        enc.to(device)
        model = nn.Linear(4, 2)
        model.to(device)
        """,
        head=HEAD + "tokenizer = lambda s: {}\n",
    )
    assert f == [] and out == src


# ----------------------------------------------------------------------------- TM101 look-alikes

LOOKALIKES = {
    "already_moved": """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
        """,
    "moved_conditionally": """
        use_cuda = torch.cuda.is_available()
        model = nn.Linear(4, 2)
        if use_cuda:
            model.cuda()
        for x, y in loader:
            if use_cuda:
                x, y = x.cuda(), y.cuda()
            loss = criterion(model(x), y)
        """,
    "tuple_comprehension": """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            batch = tuple(t.to(device) for t in batch)
            x, y = batch
            loss = criterion(model(x), y)
        """,
    "dict_comprehension": """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            out = model(**batch)
        """,
    "helper_with_device": """
        def move(b, d):
            return [t.to(d) for t in b]

        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            x, y = move(batch, device)
            loss = criterion(model(x), y)
        """,
    "helper_in_place_no_assignment": """
        model = nn.Linear(4, 2).to(device)
        for batch in loader:
            batch_to_device(batch, device)
            loss = criterion(model(batch[0]), batch[1])
        """,
    "unknown_helper_without_device": """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            x, y = cudaify(x, y)
            loss = criterion(model(x), y)
        """,
    "cpu_only": """
        model = nn.Linear(4, 2)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "copy_into_device_buffer": """
        model = nn.Linear(4, 2).to(device)
        buf = torch.empty(4, 4, device=device)
        for x, y in loader:
            buf.copy_(x)
            out = model(buf)
        """,
    "prefetcher": """
        model = nn.Linear(4, 2).to(device)
        prefetcher = Prefetcher(loader)
        for x, y in prefetcher:
            loss = criterion(model(x), y)
        """,
    "collate_fn_loader": """
        model = nn.Linear(4, 2).to(device)
        dl = DataLoader(TensorDataset(torch.randn(8, 4)), collate_fn=lambda b: b)
        for x in dl:
            out = model(x)
        """,
    "dataset_on_device": """
        model = nn.Linear(4, 2).to(device)
        ds = TensorDataset(torch.randn(8, 4).to(device), torch.randint(0, 2, (8,)).to(device))
        dl = DataLoader(ds, batch_size=4)
        for x, y in dl:
            loss = criterion(model(x), y)
        """,
    "accelerate_prepare": """
        model = nn.Linear(4, 2)
        model, loader2 = accelerator.prepare(model, loader)
        model.to(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    "data_parallel": """
        model = nn.DataParallel(nn.Linear(4, 2)).to(device)
        for x, y in loader:
            y = y.to(device)
            loss = criterion(model(x), y)
        """,
    "data_parallel_inputs_only": """
        model = nn.DataParallel(nn.Linear(4, 2)).to(device)
        for x, y in loader:
            preds = model(x).argmax(1).cpu()
        """,
    "device_map": """
        model = AutoModel.from_pretrained("m", device_map="auto")
        model.to(device)
        for x, y in loader:
            out = model(x)
        """,
    "moved_after_loop_unknown_model": """
        model = make_model()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_tm101_lookalike(name):
    for unsafe in (False, True):
        f, out, src = run(LOOKALIKES[name], unsafe=unsafe)
        assert f == [], [x.message for x in f]
        assert out == src


def test_data_parallel_outputs_meet_cpu_labels():
    """``nn.DataParallel(model).to(device)`` scatters its CPU inputs itself but gathers its
    outputs on the GPU: labels left on the CPU meet them in the loss (the inputs are left
    where they are)."""
    f, out, src = run("""
        model = nn.DataParallel(nn.Linear(4, 2)).to(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """)
    assert [x.code for x in f] == ["TM101"] and "`y`" in f[0].message, [x.message for x in f]
    assert "    y = y.to(device)\n" in out and "x = x.to" not in out


def test_data_parallel_moved_on_one_path_is_reported_only():
    # moved under a condition: where its outputs are cannot be named at the loop
    f, out, src = run("""
        model = nn.Linear(4, 2)
        if torch.cuda.is_available():
            model = nn.DataParallel(model).cuda()
        for x, y in loader:
            loss = criterion(model(x), y)
        """)
    assert [x.code for x in f] == ["TM101"] and f[0].fix is None and out == src, [x.message for x in f]


SELF_PLACING = """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            x = x.to(device)
            return {ret}

    net = Net().to(device)
    for x, y in loader:
        out = net(x)
        acc = (out.argmax(1) == y).float().mean()
    """


@pytest.mark.parametrize("ret, reported", [("self.fc(x)", True), ("self.fc(x).cpu()", False)])
def test_a_model_placing_its_inputs_returns_device_tensors(ret, reported):
    """A moved model whose forward moves its inputs takes CPU batches, but what it returns
    is on the device: labels that meet it there are reported (not when it returns them to
    the host)."""
    f, out, src = run(SELF_PLACING.format(ret=ret))
    assert bool(f) == reported, [x.message for x in f]
    if reported:
        assert "`y`" in f[0].message and "\n    y = y.to(device)\n    out = net(x)\n" in out


def test_lightning_file_is_left_alone():
    src = """\
import torch
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
model = torch.nn.Linear(4, 2).cuda()
for (x,) in loader:
    out = model(x)
"""
    res = process_text("t.py", src, Options())
    assert res.findings == [] and not res.changed


def test_aliases_resolve_dataloader():
    src = """\
import torch
from torch.utils import data as tud
from torch import nn as N

dl = tud.DataLoader(tud.TensorDataset(torch.randn(8, 4)), batch_size=4)
net = N.Linear(4, 2).cuda()
for (x,) in dl:
    out = net(x)
"""
    res = process_text("t.py", src, Options())
    assert [f.code for f in res.findings] == ["TM101"]
    assert b"+    x = x.cuda()" in res.diff


def test_user_class_named_dataloader_is_not_torch():
    src = """\
import torch

class DataLoader(list):
    pass

loader = DataLoader([torch.randn(2, 4)])
model = torch.nn.Linear(4, 2).cuda()
for x in loader:
    out = model(x)
"""
    res = process_text("t.py", src, Options())
    assert res.findings == []


# TM102 (tensor-created-without-device): tests/test_tm102.py

HF_HEAD = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding
from tqdm.auto import tqdm

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
model.to(device)
"""


def test_hf_loop_with_collator_and_tqdm():
    f, out, src = run(
        """
        collator = DataCollatorWithPadding(tokenizer=tok)
        train_dataloader = DataLoader(ds, shuffle=True, batch_size=8, collate_fn=collator)
        for epoch in range(2):
            for step, batch in enumerate(tqdm(train_dataloader)):
                outputs = model(**batch)
                outputs.loss.backward()
        """,
        head=HF_HEAD,
    )
    assert codes(f) == ["TM101"]
    assert added(src, out) == [
        "batch = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in batch.items()}"
    ]


def test_collate_fn_that_moves_is_left_alone():
    f, out, src = run(
        """
        def collate(items):
            xs = torch.stack([i[0] for i in items]).to(device)
            return xs

        def plain(items):
            return torch.stack([i[0] for i in items])

        dl = DataLoader(list(range(3)), collate_fn=collate)
        for x in dl:
            out = model(x)
        dl2 = DataLoader(list(range(3)), collate_fn=plain)
        for x, y in dl2:
            out = model(x)
        """,
        head=HF_HEAD,
    )
    assert codes(f) == ["TM101"] and f[0].line > 15


def test_unknown_callee_with_output_and_batch_part_is_not_rewritten():
    # `images` certainly reaches the moved model on the CPU; `paths` goes to a callee that
    # cannot be read together with the output: the fix moves it too (if it is a tensor)
    # and is therefore unsafe, never applied by default
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for images, paths in loader:
            out = model(images)
            save_predictions(out, paths)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f) and out == src
    assert "`paths` also goes to `save_predictions()`" in f[0].message
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for images, paths in loader:
            out = model(images)
            save_predictions(out, paths)
        """,
        unsafe=True,
    )
    assert added(src, out) == [
        "images, paths = images.to(device), (paths.to(device) if torch.is_tensor(paths) else paths)"
    ]


def test_collecting_labels_in_a_list_does_not_hide_the_bug():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        seen = []
        for x, y in loader:
            seen.append(y)
            print(model(x), y)
        """
    )
    assert added(src, out) == ["x = x.to(device)"]


def test_model_moved_inside_builder_function_is_report_only():
    f, out, src = run(
        """
        def build():
            net = nn.Linear(4, 2)
            return net.cuda()

        model = build()
        for x, y in loader:
            loss = criterion(model(x), y)
        """
    )
    assert codes(f) == ["TM101"] and not fixable(f)
    assert "built and moved by a helper" in f[0].message


def test_noop_to_on_probable_tensor_is_report_only():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        emb = torch.load("weights.pt") if False else torch.hann_window(4)
        h = torch.hann_window(4)
        h.to(device)
        for x, y in loader:
            xf = x.float()
            xf.to(device)
            out = model(x.to(device))
        """
    )
    assert codes(f) == ["TM101", "TM101"] and not fixable(f) and out == src
    st = """
        s = torch.stack([torch.ones(2)])
        s.to(device)
        """
    f, out, src = run(st)
    assert added(src, out) == ["s = s.to(device)"]


def test_pytorch_lightning_import_leaves_file_alone():
    f, out, src = run(
        """
        model = nn.Linear(4, 2).to(device)
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
        head="import pytorch_lightning as pl\n" + HEAD,
    )
    assert f == [] and out == src
