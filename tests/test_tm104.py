"""TM104 model-not-moved: a tensor moved to a device goes into a model that never is (the
reverse of TM101); the shapes it reports, how it fixes them, and look-alikes that must
produce no finding at all."""

import textwrap

import pytest

from torchmend.engine import Options, process_text
from torchmend.rules.tm104_model_not_moved import ModelNotMoved
from tests.patching import apply_patch

HEAD = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


def run(body: str, unsafe: bool = False, head: str = HEAD):
    src = head + textwrap.dedent(body)
    res = process_text("t.py", src, Options(unsafe_fixes=unsafe))
    assert res.error is None, res.error
    out = apply_patch(src.encode(), res.diff).decode() if res.changed else src
    if res.changed:  # idempotent
        again = process_text("t.py", out, Options(unsafe_fixes=unsafe))
        assert again.error is None and not again.changed, again.diff
        assert not [f for f in again.findings if f.code == "TM104"]
    return [f for f in res.findings if f.code == "TM104"], out


def _safety(f):
    return (f.fix.safety if f.fix is not None else f.safety).value


BUGS = {
    "module script, same-file class": (
        """
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
        """,
        "model = Net().to(device)\n",
    ),
    "a torch.nn layer, .cuda() unconditionally": (
        """
        model = nn.Linear(4, 2)
        x = torch.randn(3, 4).cuda()
        print(model(x))
        """,
        "model = nn.Linear(4, 2).cuda()\n",
    ),
    "nn.Sequential passed to a training function": (
        """
        def train(net, loader, dev):
            for images, labels in loader:
                images, labels = images.to(dev), labels.to(dev)
                out = net(images)

        def main():
            model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
            train(model, loader, device)
        """,
        "    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)\n",
    ),
    "a guarded .cuda() move: the guard is copied": (
        """
        use_cuda = torch.cuda.is_available()
        model = Net()
        for x, y in loader:
            if use_cuda:
                x = x.cuda()
            out = model(x)
        """,
        "model = Net()\nif use_cuda:\n    model = model.cuda()\n",
    ),
    "a torchvision builder, the input through a view": (
        """
        import torchvision.models as models
        model = models.resnet18(num_classes=10)
        model.eval()
        x = torch.randn(1, 3, 32, 32).to(device)
        with torch.no_grad():
            print(model(x.float()))
        """,
        "model = models.resnet18(num_classes=10).to(device)\n",
    ),
    "a trainer class builds the model in __init__": (
        """
        class Trainer:
            def __init__(self, device):
                self.device = device
                self.model = Net()
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def step(self, x):
                return self.model(x.to(self.device))

        Trainer(device).step(torch.randn(3, 4))
        """,
        "        self.model = Net().to(device)\n",
    ),
    # (dsgiitr/d2l-pytorch Sequence_to_Sequence: ``X, X_vlen, Y, Y_vlen = [x.to(device) for x
    # in batch]`` into a model that is never moved)
    "a batch moved by a list comprehension": (
        """
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            x, y = [t.to(device) for t in batch]
            loss = nn.functional.cross_entropy(model(x), y)
        """,
        "model = Net().to(device)\n",
    ),
    "a batch moved by a generator in tuple()": (
        """
        model = Net()
        for batch in loader:
            x, y = tuple(t.to(device) for t in batch)
            print(model(x))
        """,
        "model = Net().to(device)\n",
    ),
    "a head fed by a moved encoder's output": (
        """
        encoder = Net().to(device)
        head = nn.Linear(2, 1)
        feats = encoder(torch.randn(3, 4).to(device))
        print(head(feats))
        """,
        "head = nn.Linear(2, 1).to(device)\n",
    ),
}


@pytest.mark.parametrize("name", list(BUGS))
def test_reports_and_fixes(name):
    body, want = BUGS[name]
    found, out = run(body)
    assert len(found) == 1, found
    assert "never moved" in found[0].message
    assert found[0].fix is not None or found[0].safety is not None
    assert want in out, out


def test_safe_when_every_call_gets_a_moved_tensor_unsafe_otherwise():
    found, _ = run("""
        model = Net()
        print(model(torch.randn(3, 4).to(device)))
    """)
    assert _safety(found[0]) == "safe"
    found, out = run("""
        model = Net()
        print(model(torch.randn(3, 4)))  # a CPU call: moving the model breaks it
        print(model(torch.randn(3, 4).to(device)))
    """)
    assert _safety(found[0]) == "unsafe"
    assert "model = Net()\n" in out  # not applied without --unsafe-fixes
    _, out = run("""
        model = Net()
        print(model(torch.randn(3, 4)))
        print(model(torch.randn(3, 4).to(device)))
    """, unsafe=True)
    assert "model = Net().to(device)\n" in out


REPORT_ONLY = {
    "the device is bound after the model is built": """
        model = Net()
        dev = torch.device("cuda")
        print(model(torch.randn(3, 4).to(dev)))
    """,
    "two ways of moving": """
        model = Net()
        print(model(torch.randn(3, 4).to(device)))
        print(model(torch.randn(3, 4).cuda()))
    """,
    "a guard that is not bound where the model is built": """
        model = Net()
        for i, (x, y) in enumerate(loader):
            if i > 3:
                x = x.cuda()
            out = model(x)
    """,
}


@pytest.mark.parametrize("name", list(REPORT_ONLY))
def test_report_only(name):
    found, out = run(REPORT_ONLY[name])
    assert len(found) == 1, found
    assert found[0].fix is None and found[0].safety is None
    assert out == HEAD + textwrap.dedent(REPORT_ONLY[name])


LOOKALIKES = {
    "a comprehension that converts dtypes only": """
        model = Net()
        for batch in loader:
            x, y = [t.to(torch.float32) for t in batch]
            print(model(x))
        """,
    "a comprehension of moves to the CPU": """
        model = Net()
        for batch in loader:
            x, y = [t.to("cpu") for t in batch]
            print(model(x))
        """,
    "moved where built": """
        model = Net().to(device)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "moved by a statement later": """
        model = Net()
        opt = torch.optim.Adam(model.parameters())
        model.to(device)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "moved under a condition": """
        model = Net()
        if torch.cuda.is_available():
            model = model.cuda()
        print(model(torch.randn(3, 4).cuda()))
    """,
    "moved in a helper": """
        def setup(m):
            m.cuda()
        model = Net()
        setup(model)
        print(model(torch.randn(3, 4).cuda()))
    """,
    "accelerate prepare": """
        model = Net()
        model, opt = accelerator.prepare(model, opt)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "DistributedDataParallel": """
        model = Net()
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
        print(ddp(torch.randn(3, 4).to(device)))
    """,
    "an unknown function gets the model": """
        from helpers import prepare_model
        model = Net()
        prepare_model(model)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "fabric.setup": """
        model = Net()
        model = fabric.setup(model)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "apply": """
        model = Net()
        model.apply(init_fn)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "stored in a container": """
        model = Net()
        models = [model]
        print(model(torch.randn(3, 4).to(device)))
    """,
    "built under with torch.device": """
        with torch.device("cuda"):
            model = Net()
        print(model(torch.randn(3, 4).to("cuda")))
    """,
    "a default device": """
        torch.set_default_device("cuda")
        model = Net()
        print(model(torch.randn(3, 4).to("cuda")))
    """,
    "built with device=": """
        model = nn.Linear(4, 2, device=device)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "a CPU device": """
        model = Net()
        print(model(torch.randn(3, 4).to("cpu")))
    """,
    "a cast, not a move": """
        dtype = torch.float16
        model = Net()
        print(model(torch.randn(3, 4).to(dtype)))
    """,
    "a CPU input": """
        model = Net()
        print(model(torch.randn(3, 4)))
    """,
    "no parameters": """
        act = nn.ReLU()
        print(act(torch.randn(3, 4).to(device)))
    """,
    "a norm without parameters": """
        norm = nn.LayerNorm(4, elementwise_affine=False)
        print(norm(torch.randn(3, 4).to(device)))
    """,
    "rebound to a moved model before the call": """
        model = Net()
        model.load_state_dict(torch.load("w.pt"))
        model = Net().cuda()
        print(model(torch.randn(3, 4).cuda()))
    """,
    "a Lightning file": """
        import lightning as L
        model = Net()
        print(model(torch.randn(3, 4).to(device)))
    """,
}


@pytest.mark.parametrize("name", list(LOOKALIKES))
def test_lookalikes(name):
    found, out = run(LOOKALIKES[name])
    assert found == [], found


CLASS_LOOKALIKES = {
    "the class moves its inputs": """
        class Mover(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                x = x.cpu()
                return self.fc(x)

        model = Mover()
        print(model(torch.randn(3, 4).to(device)))
    """,
    "the class moves itself": """
        class Self(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
                self.to(device)

            def forward(self, x):
                return self.fc(x)

        model = Self()
        print(model(torch.randn(3, 4).to(device)))
    """,
    "the class places its layers itself": """
        class Placed(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.fc = nn.Linear(4, 2, device=device)

            def forward(self, x):
                return self.fc(x)

        model = Placed(device)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "a same-file base class moves its inputs": """
        class Base(nn.Module):
            def prepare(self, x):
                return x.to(self.dev)

        class Child(Base):
            def __init__(self):
                super().__init__()
                self.dev = "cpu"
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(self.prepare(x))

        model = Child()
        print(model(torch.randn(3, 4).to(device)))
    """,
    "a submodule of a moved model": """
        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Net()

            def forward(self, x):
                h = torch.zeros(3, 4).to(device)
                return self.inner(x + h)

        model = Outer().to(device)
        print(model(torch.randn(3, 4).to(device)))
    """,
    "a trainer class that moves the model it builds": """
        class Trainer:
            def __init__(self, device):
                self.device = device
                self.model = Net()
                self.model.to(device)

            def step(self, x):
                return self.model(x.to(self.device))

        Trainer(device).step(torch.randn(3, 4))
    """,
    "held by a wrapper module that is moved": """
        class Wrapper(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x.to(device))

        model = Net()
        wrapper = Wrapper(model)
        wrapper.to(device)
        print(wrapper(torch.randn(3, 4)))
    """,
    "a layer built in a module's own method": """
        class Lazy(nn.Module):
            def forward(self, x):
                layer = nn.Linear(4, 2)
                return layer(x.to(device))

        model = Lazy().to(device)
    """,
}


@pytest.mark.parametrize("name", list(CLASS_LOOKALIKES))
def test_class_lookalikes(name):
    found, _ = run(CLASS_LOOKALIKES[name], head="import torch\nimport torch.nn as nn\n\n"
                   "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n"
                   "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n")
    assert found == [], found


def test_gate_lets_through_what_the_check_reports():
    for body, _ in BUGS.values():
        assert ModelNotMoved.may_match(HEAD + textwrap.dedent(body))
    for body in REPORT_ONLY.values():
        assert ModelNotMoved.may_match(HEAD + textwrap.dedent(body))
    # no constructor assigned to a plain name: nothing to look at
    assert not ModelNotMoved.may_match("import torch\nx = torch.randn(3).to('cuda')\nprint(x)\n")


def test_fix_keeps_arguments_and_comments():
    found, out = run("""
        model = Net(  # the model
        )  # built here
        print(model(torch.randn(3, 4).to(device, non_blocking=True)))
    """)
    assert "model = Net(  # the model\n).to(device)  # built here\n" in out


# (PacktPublishing/Mastering-PyTorch transfer_learning_alexnet: ``classifier[6] = ...``)
@pytest.mark.parametrize("head", ["model.fc", "model.classifier[6]", "model.features[0].conv"])
def test_a_head_replaced_after_the_model_is_built_is_report_only(head):
    found, out = run(f"""
        import torchvision.models as models
        model = models.resnet18(weights="IMAGENET1K_V1")
        {head} = nn.Linear(512, 2)
        print(model(torch.randn(1, 3, 32, 32).to(device)))
    """)
    assert len(found) == 1 and found[0].fix is None
    assert f"`{head}` is set after it is built" in found[0].message


def test_a_submodule_read_by_item_is_no_store():
    found, out = run("""
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        model.extra = None
        print(model.extra, model._modules["0"])
        print(model(torch.randn(1, 4).to(device)))
    """)
    assert len(found) == 1 and found[0].fix is not None, [f.message for f in found]


def test_a_tensor_kept_in_an_attribute_does_not_block_the_fix():
    found, out = run("""
        model = Net()
        model.hidden = None
        for x, y in loader:
            x = x.to(device)
            out = model(x)
            model.hidden = model.fc.weight.detach()
    """)
    assert len(found) == 1 and "model = Net().to(device)\n" in out


def test_a_class_that_hands_itself_to_other_code_is_left_alone():
    found, _ = run("""
        class Registered(nn.Module):
            def __init__(self):
                super(Registered, self).__init__()
                self.fc = nn.Linear(4, 2)
                register(self)

            def forward(self, x):
                return self.fc(x)

        model = Registered()
        print(model(torch.randn(3, 4).to(device)))
    """)
    assert found == []


def test_an_unconditional_cuda_copied_from_another_function_is_unsafe():
    found, out = run("""
        def evaluate(m):
            return m(torch.randn(3, 4).cuda())

        model = Net()
        print(evaluate(model))
    """)
    assert len(found) == 1 and _safety(found[0]) == "unsafe"
    assert "model = Net()\n" in out


ARGS_DEVICE = """\
import argparse

import torch
import torch.nn as nn


def train(FLAGS):
    device = FLAGS.cuda
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    for x in batches:
        x = x.to(device)
        out = net(x)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", type=bool, default=False)
    FLAGS, unparsed = parser.parse_known_args()
    FLAGS.cuda = {value}
    train(FLAGS)
"""


def test_a_device_the_script_stores_on_its_argument_namespace():
    # iArunava/ENet-Real-Time-Semantic-Segmentation #5: ``FLAGS.cuda = torch.device(...)``
    # after parsing, ``device = FLAGS.cuda`` in ``train(FLAGS)``; the batches are moved there,
    # the model never is
    found, out = run("", head=ARGS_DEVICE.format(value='torch.device("cuda:0" if torch.cuda.is_available() and FLAGS.cuda else "cpu")'))
    assert [f.line for f in found] == [9]
    assert "net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).to(device)" in out


@pytest.mark.parametrize("value", [
    'torch.device("cpu")',  # the CPU: nothing to move
    "pick_device(FLAGS)",  # a value nothing says is a device
])
def test_a_namespace_attribute_that_is_no_known_device(value):
    found, _ = run("", head=ARGS_DEVICE.format(value=value))
    assert found == []


def test_a_namespace_handed_to_other_code_before_its_device_is_set():
    src = ARGS_DEVICE.format(value='torch.device("cuda")').replace(
        "    FLAGS.cuda =", "    configure(FLAGS)\n    FLAGS.cuda =")
    found, _ = run("", head=src)
    assert found == []


# (graviraja/pytorch-sample-codes conditional_vae.py: ``model.decoder(z)`` after training
# runs a submodule the class builds in ``__init__``; it moves nothing)
def test_a_call_of_a_submodule_the_class_builds_does_not_hide_the_model():
    head = HEAD + (
        "\n\nclass VAE(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.encoder = nn.Linear(4, 2)\n        self.decoder = nn.Linear(2, 4)\n\n"
        "    def forward(self, x):\n        return self.decoder(self.encoder(x))\n"
    )
    body = """
    model = VAE()
    for x, y in loader:
        x = x.to(device)
        out = model(x)
    z = torch.randn(1, 2).to(device)
    sample = model.decoder(z)
    """
    f, out = run(body, unsafe=True, head=head)
    assert len(f) == 1 and "model = VAE().to(device)\n" in out
    # a name the class defines as a method, or that no method sets, may be anything
    for other in ("    def decoder(self, z):\n        return self.to('cuda')(z)\n", ""):
        h = head.replace("        self.decoder = nn.Linear(2, 4)\n", "") + (
            "\n    " + other.replace("\n    ", "\n        ").lstrip() if other else "")
        f, out = run(body, unsafe=True, head=h)
        assert f == [], (other, [x.message for x in f])


# (kyegomez/LiqudNet train.py: ``model = VisionLiquidNet(...)`` imported from the
# repository's package, its parameters given to Adam, never moved; the batch is)
IMPORTED = """\
import torch
import torch.nn as nn
from liquidnet.vision_liquidnet import VisionLiquidNet

device = "cuda" if torch.cuda.is_available() else "cpu"
model = VisionLiquidNet({args})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for images, labels in loader:
    images = images.to(device)
    outputs = model(images)
"""


@pytest.mark.parametrize("args, optimized, reported", [
    ("num_units=64, num_classes=10", True, True),
    ("num_units=64, num_classes=10", False, False),  # nothing shows it is a module with parameters
    ("64, device=device", True, False),  # told where to go
    ("64, args.gpu", True, False),
    ("**cfg", True, False),
])
def test_a_model_class_of_a_module_not_read_here(args, optimized, reported):
    src = IMPORTED.format(args=args)
    if not optimized:
        src = src.replace("optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)\n", "")
    res = process_text("t.py", src, Options(unsafe_fixes=True))
    f = [x for x in res.findings if x.code == "TM104"]
    assert len(f) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert f[0].fix.safety.value == "unsafe" and "unless it places itself" in f[0].message
        assert "model = VisionLiquidNet(num_units=64, num_classes=10).to(device)\n" in apply_patch(
            src.encode(), res.diff).decode()
        assert not [x for x in process_text("t.py", src, Options()).findings if x.fix is not None and x.code == "TM104"
                    and x.fix.safety.value == "safe"]


@pytest.mark.parametrize("cls, reported", [
    ("class VisionLiquidNet(nn.Module):\n    def __init__(self, **kw):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 2)\n", True),
    # it places itself, or has no parameters, or is no class of that module
    ("class VisionLiquidNet(nn.Module):\n    def __init__(self, **kw):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 2)\n        self.to('cuda' if torch.cuda.is_available() else 'cpu')\n", False),
    ("class VisionLiquidNet(nn.Module):\n    def __init__(self, **kw):\n        super().__init__()\n", False),
    ("def VisionLiquidNet(**kw):\n    return build(**kw)\n", False),
])
def test_a_model_class_of_a_module_of_the_project(tmp_path, cls, reported):
    from torchmend.engine import process_file

    pkg = tmp_path / "liquidnet"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "vision_liquidnet.py").write_text("import torch\nimport torch.nn as nn\n\n\n" + cls)
    script = tmp_path / "train.py"
    script.write_text(IMPORTED.format(args="num_units=64, num_classes=10"))
    res = process_file(str(script), Options(unsafe_fixes=True))
    f = [x for x in res.findings if x.code == "TM104"]
    assert len(f) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert "a module class of `liquidnet.vision_liquidnet`" in f[0].message
        assert _safety(f[0]) == "safe"



# (asappresearch/dynamic-classification train.py: the batch moved element by element,
# ``batch = tuple(t.to(device) for t in batch)``; the device the user's ``--device`` or the
# GPU where there is one; the model, a class of the project's model.py whose submodules
# and methods the script calls too, never moved)
_PROTO_MODEL = """\
import torch.nn as nn


class Proto(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(weights)
        self.encoder = nn.Linear(8, 8)

    def compute_prototypes(self, x, y):
        return x.mean(0)

    def forward(self, x):
        return self.encoder(self.embedding(x))
"""

_PROTO_TRAIN = """\
import torch
from model import Proto


def train(args, sampler, weights):
{device}    model = Proto(weights)
    optimizer = torch.optim.Adam(model.parameters())
    for batch in sampler:
        batch = tuple(t.to(device) for t in batch)
        x, y = batch
        optimizer.zero_grad()
        enc = model.encoder(model.embedding(x))
        protos = model.compute_prototypes(enc, y)
        loss = model(x).sum() + protos.sum()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("device, fixed", [
    ("    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n", True),
    # some way is the user's choice: the GPU where there is one by default (report only)
    ("    if args.device is None:\n        device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "    else:\n        device = args.device\n", False),
])
def test_a_model_of_the_project_given_a_batch_moved_element_by_element(tmp_path, device, fixed):
    from torchmend.engine import process_file

    (tmp_path / "model.py").write_text(_PROTO_MODEL)
    script = tmp_path / "train.py"
    src = _PROTO_TRAIN.format(device=device)
    script.write_text(src)
    res = process_file(str(script), Options(unsafe_fixes=True))
    f = [x for x in res.findings if x.code == "TM104"]
    assert [x.line for x in f] == [src.splitlines().index("    model = Proto(weights)") + 1]
    # (unsafe: ``model.encoder`` gets the output of another submodule, not a moved tensor)
    assert (f[0].safety is not None) == fixed
    if fixed:
        assert "    model = Proto(weights).to(device)\n" in apply_patch(src.encode(), res.diff).decode()
    # look-alike: a method of the class moves it
    (tmp_path / "model.py").write_text(_PROTO_MODEL.replace("        return x.mean(0)", "        self.cuda()\n        return x.mean(0)"))
    assert not [x for x in process_file(str(script), Options()).findings if x.code == "TM104"]


# (huanfengAI/pytorch-learning Regression/LinearRegression.py: ``if
# torch.cuda.is_available(): model = Net().cuda() else: model = Net()``)
def test_a_model_built_where_cuda_is_not_available_is_not_reported():
    body = """
    if torch.cuda.is_available():
        model = Net().cuda()
    else:
        model = Net()
    for x, y in loader:
        if torch.cuda.is_available():
            x = x.cuda()
        out = model(x)
    """
    f, _ = run(body, unsafe=True)
    assert f == [], [x.message for x in f]
    f, _ = run(body.replace("if torch.cuda.is_available():\n        model = Net().cuda()\n    else:\n",
                            "if args.big:\n        model = Net().cuda()\n    else:\n"), unsafe=True)
    assert len(f) == 1, [x.message for x in f]


@pytest.mark.parametrize("src", [
    "class S:\n    def f(self, x):\n        return x.to(1)\n",
    "class A(nn.Module):\n    x = 1\n\n\nclass B:\n    def f(self, x):\n        return x.cuda()\n",
])
def test_a_file_that_starts_with_a_class_is_read_to_its_end(src):
    """(triage of rosacry/nptop models/seq2seq.py) the class layout read by the text gate
    started over at the top of a file whose first line starts a class: the run never
    ended.  Read in a child process, so that a loop cannot hang the suite."""
    import subprocess
    import sys

    code = ("import sys\nfrom torchmend.rules.tm104_model_not_moved import _layout\n"
            "starts, ends, kinds, _ = _layout(sys.stdin.read())\nprint(len(starts), ends[-1])\n")
    out = subprocess.run([sys.executable, "-c", code], input=src, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == [str(src.count("class ")), str(len(src))]


_GENERATE = """\
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def main():
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    noise = torch.randn(2, 4, device={dev})
    netG = Generator()
    netG.load_state_dict(torch.load("netG.pth", map_location=torch.device("cpu")))
    with torch.no_grad():
        fake = netG(noise).cpu()
    return fake
"""


@pytest.mark.parametrize("dev, found", [
    ("device", True),  # (zhangxs131/DCGAN generate.py)
    # look-alikes: made on the CPU; on a device this code does not name
    ('"cpu"', False),
    ("noise_device", False),
])
def test_a_tensor_made_on_the_device_goes_into_a_model_never_moved(dev, found):
    src = _GENERATE.format(dev=dev)
    if dev == "noise_device":
        src = src.replace("def main():\n", "def main(noise_device):\n")
    res = process_text("generate.py", src, Options(select=frozenset({"TM104"})))
    assert [f.line for f in res.findings] == ([src.splitlines().index("    netG = Generator()") + 1] if found else [])
    if found:
        assert "gets a tensor made with `device=device`" in res.findings[0].message
        assert "    netG = Generator().to(device)\n" in apply_patch(src.encode(), res.diff).decode()

_LIQUIDNET_CLASS = (
    "import torch\nimport torch.nn as nn\n\n\nclass VisionLiquidNet(nn.Module):\n    def __init__(self, **kw):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n")


def _liquidnet_findings(tmp_path, init: str, imports: str, extra=None) -> list:
    """The TM104 findings of ``IMPORTED`` importing the class by ``imports`` from a
    package ``liquidnet`` whose ``__init__`` is ``init`` (and the modules ``extra``)."""
    from torchmend.engine import process_file

    pkg = tmp_path / "liquidnet"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    (pkg / "vision_liquidnet.py").write_text(_LIQUIDNET_CLASS)
    for name, text in (extra or {}).items():
        (pkg / name).write_text(text)
    script = tmp_path / "train.py"
    script.write_text(IMPORTED.format(args="num_units=64").replace(
        "from liquidnet.vision_liquidnet import VisionLiquidNet", imports))
    res = process_file(str(script), Options(unsafe_fixes=True))
    return [x for x in res.findings if x.code == "TM104"]


@pytest.mark.parametrize("init, imports, reported", [
    # the package re-exports the class (``from .vision_liquidnet import VisionLiquidNet``)
    ("from .vision_liquidnet import VisionLiquidNet\n", "from liquidnet import VisionLiquidNet", True),
    ("from .vision_liquidnet import *\n", "from liquidnet import VisionLiquidNet", True),
    # look-alike: the package binds the name to something else (a builder function)
    ("from .vision_liquidnet import VisionLiquidNet as _V\n\n\ndef VisionLiquidNet(**kw):\n"
     "    return _V(**kw).to('cuda')\n", "from liquidnet import VisionLiquidNet", False),
])
def test_a_model_class_a_package_re_exports(tmp_path, init, imports, reported):
    """``from models import Net`` with ``models/__init__.py`` re-exporting ``Net`` of
    ``models/net.py``: the class is read where it is defined (it has layers and places
    nothing itself), and the model that gets moved inputs is reported."""
    f = _liquidnet_findings(tmp_path, init, imports)
    assert len(f) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert "a module class of `liquidnet` with layers that own parameters" in f[0].message
        assert _safety(f[0]) == "safe"


def test_a_re_export_a_later_star_import_may_replace(tmp_path):
    """(review) ``from .net import Net`` then ``from .net_v2 import *`` in the package: the
    star import runs last and may rebind ``Net`` (here to a builder that moves the model)."""
    v2 = ("from .vision_liquidnet import VisionLiquidNet as _V\n\n\n"
          "def VisionLiquidNet(**kw):\n    return _V(**kw).to('cuda')\n")
    assert _liquidnet_findings(tmp_path, "from .vision_liquidnet import VisionLiquidNet\nfrom .v2 import *\n",
                               "from liquidnet import VisionLiquidNet", {"v2.py": v2}) == []


@pytest.mark.parametrize("init, script_import, reported", [
    # ``from models import *`` with the package re-exporting the class (kuangliu/pytorch-cifar's
    # layout): the class is read where it is defined
    ("from .vision_liquidnet import *\n", "from liquidnet import *", True),
    ("from .vision_liquidnet import VisionLiquidNet\n", "from liquidnet import *", True),
    # look-alikes: a star import that may bring something else after it; the name bound here
    ("from .vision_liquidnet import *\n", "from liquidnet import *\nfrom elsewhere import *", False),
    ("from .vision_liquidnet import *\n", "from liquidnet import *\nVisionLiquidNet = lambda **kw: None", False),
])
def test_a_model_class_a_star_import_brings(tmp_path, init, script_import, reported):
    f = _liquidnet_findings(tmp_path, init, script_import)
    assert len(f) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert "vision_liquidnet` with layers that own parameters" in f[0].message


_BUILDER_SCRIPT = """\
import torch
import torch.nn as nn
from models import *

device = 'cuda' if torch.cuda.is_available() else 'cpu'
net = ResNet18()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for inputs, targets in loader:
    inputs, targets = inputs.to(device), targets.to(device)
    outputs = net(inputs)
"""
_RESNET = (
    "import torch.nn as nn\n\n\nclass ResNet(nn.Module):\n    def __init__(self, block, layers, num_classes=10):\n"
    "        super().__init__()\n        self.linear = nn.Linear(512, num_classes)\n\n"
    "    def forward(self, x):\n        return self.linear(x)\n\n\n")


@pytest.mark.parametrize("builder, reported", [
    # kuangliu/pytorch-cifar: ``def ResNet18(): return ResNet(BasicBlock, [2, 2, 2, 2])``
    ("def ResNet18():\n    return ResNet(None, [2, 2, 2, 2])\n", True),
    ('def ResNet18(**kwargs):\n    """ResNet-18."""\n    return ResNet(None, [2, 2, 2, 2], **kwargs)\n', True),
    ("def ResNet18():\n    model = ResNet(None, [2, 2, 2, 2])\n    return model\n", True),
    ("def ResNet18():\n    model = ResNet(None, [2, 2, 2, 2])\n    return net\n", False),
    # look-alikes: the builder places the model, is told a device, does more, or is wrapped
    ("def ResNet18():\n    return ResNet(None, [2, 2, 2, 2]).cuda()\n", False),
    ("def ResNet18(device='cuda'):\n    return ResNet(None, [2, 2, 2, 2], device=device)\n", False),
    ("def ResNet18():\n    m = ResNet(None, [2, 2, 2, 2])\n    m.cuda()\n    return m\n", False),
    ("@register\ndef ResNet18():\n    return ResNet(None, [2, 2, 2, 2])\n", False),
    ("def ResNet18():\n    return ResNet(None, [2, 2, 2, 2], **CFG)\n", False),
    ("def ResNet18():\n    return Wrapper(ResNet(None, [2, 2, 2, 2]))\n", False),
])
def test_a_model_a_builder_function_of_the_project_returns(tmp_path, builder, reported):
    """``net = ResNet18()`` where the project's ``models`` package defines ``ResNet18``
    as a function returning a fresh ``ResNet(...)``: the class it builds is the model."""
    from torchmend.engine import process_file

    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .resnet import *\n")
    (pkg / "resnet.py").write_text(_RESNET + builder)
    script = tmp_path / "main.py"
    script.write_text(_BUILDER_SCRIPT)
    res = process_file(str(script), Options(unsafe_fixes=True))
    f = [x for x in res.findings if x.code == "TM104"]
    assert len(f) == (1 if reported else 0), [x.message for x in f]
    if reported:
        assert "`net` (a `ResNet`, a module class of `resnet` with layers that own parameters)" in f[0].message
        assert "net = ResNet18().to(device)\n" in apply_patch(_BUILDER_SCRIPT.encode(), res.diff).decode()


def test_a_builder_function_returning_a_class_it_imports(tmp_path):
    """The builder's module imports the class from another module of the package."""
    from torchmend.engine import process_file

    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .zoo import ResNet18\n")
    (pkg / "resnet.py").write_text(_RESNET)
    (pkg / "zoo.py").write_text("from .resnet import ResNet\n\n\ndef ResNet18():\n    return ResNet(None, [2, 2])\n")
    script = tmp_path / "main.py"
    script.write_text(_BUILDER_SCRIPT)
    f = [x for x in process_file(str(script), Options()).findings if x.code == "TM104"]
    assert len(f) == 1 and "a `ResNet`, a module class of `resnet`" in f[0].message
    # the class places itself: nothing to say
    (pkg / "resnet.py").write_text(_RESNET.replace("super().__init__()\n", "super().__init__()\n        self.cuda()\n"))
    assert [x for x in process_file(str(script), Options()).findings if x.code == "TM104"] == []


def test_a_package_that_binds_the_name_by_a_star_import_of_a_library(tmp_path):
    """(review) ``models/__init__.py`` doing ``from torchvision.models import *``: the name
    has no binding in the project's module; nothing to read (it crashed the file)."""
    from torchmend.engine import process_file

    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from torchvision.models import *\n")
    script = tmp_path / "main.py"
    script.write_text(_BUILDER_SCRIPT.replace("from models import *", "from models import ResNet18"))
    res = process_file(str(script), Options(unsafe_fixes=True))
    assert res.error is None and [f for f in res.findings if f.code == "TM104"] == []


@pytest.mark.parametrize("move, found", [
    # (YuxuanZhao23's VGG) ``__init__`` moves the Sequential that holds every layer
    ("        self.network.to(device)\n", False),
    ("        self.network.cuda()\n", False),
    ("", True),
    # an initialiser applied to a submodule places nothing; (review) a dtype cast; a module
    # without parameters moved while the layers stay
    ("        self.network.apply(lambda m: None)\n", True),
    ("        self.network.to(torch.float64)\n", True),
    ("        self.criterion = nn.CrossEntropyLoss()\n        self.criterion.to(device)\n", True),
])
def test_a_class_that_moves_its_own_submodule(move, found):
    src = ("import torch\nfrom torch import nn\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.network = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n" + move +
           "\n    def forward(self, x):\n        return self.network(x)\n\n\n"
           "net = Net()\nopt = torch.optim.Adam(net.parameters())\nfor x, y in loader:\n"
           "    x, y = x.to(device), y.to(device)\n    out = net(x)\n")
    res = process_text("t.py", src, Options(select=frozenset({"TM104"})))
    assert [f.code for f in res.findings] == (["TM104"] if found else [])


def test_a_class_that_moves_its_submodules_under_a_condition_places_itself():
    """(review) ``if use_cuda: self.network.cuda()`` in ``__init__`` is a move too."""
    src = ("import torch\nfrom torch import nn\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
           "class Net(nn.Module):\n    def __init__(self, use_cuda=True):\n        super().__init__()\n"
           "        self.network = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"
           "        if use_cuda:\n            self.network.cuda()\n"
           "\n    def forward(self, x):\n        return self.network(x)\n\n\n"
           "net = Net()\nopt = torch.optim.Adam(net.parameters())\nfor x, y in loader:\n"
           "    x, y = x.to(device), y.to(device)\n    out = net(x)\n")
    assert process_text("t.py", src, Options(select=frozenset({"TM104"}))).findings == []
