"""TM401: strict load_state_dict(torch.load(...)) after the model's head was replaced."""

import os
import textwrap

import pytest

from torchmend.engine import Options, process_text
from torchmend.rules.tm401_strict_load_after_head_change import HELPER
from torchmend.rule import Safety
from tests.patching import apply_patch
from tests.siblings import unparsable_module

HEAD = """\
import torch
import torch.nn as nn

model = Backbone()
"""


def run(src, **kw):
    src = textwrap.dedent(src)
    r = process_text("finetune.py", src, Options(select=frozenset({"TM401"}), **kw))
    assert r.error is None, r.error
    out = apply_patch(src.encode(), r.diff).decode() if r.changed else src
    return r, out


def one(src, safety, **kw):
    r, out = run(src, **kw)
    assert len(r.findings) == 1, r.findings
    f = r.findings[0]
    assert f.code == "TM401" and f.fix is not None and f.fix.safety is safety
    return f, out


def fixed(src):
    """A safe fix: applied by default; the output is a fixpoint."""
    f, out = one(src, Safety.SAFE)
    assert f.applied and out != textwrap.dedent(src)
    assert out.count(f"def {HELPER}(") == 1 and "import warnings" in out
    again, out2 = run(out, unsafe_fixes=True)
    assert not again.findings and out2 == out
    return f, out


def silent(src):
    r, out = run(src, unsafe_fixes=True)
    assert r.findings == [] and out == textwrap.dedent(src)


# ---------------------------------------------------------------------- safe fixes
@pytest.mark.parametrize(
    "head",
    ["model.fc = nn.Linear(512, 3)", "model.classifier[-1] = nn.Linear(64, 3)", "model.classifier = nn.Linear(64, 3)",
     "model.head = nn.Linear(64, 3)", "model.heads.head = nn.Linear(64, 3)",
     "model.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(512, 3))"],
)
def test_head_forms(head):
    f, out = fixed(HEAD + head + "\nmodel.load_state_dict(torch.load('resnet50_imagenet.pth', map_location='cpu'))\n")
    assert out.endswith(f"{head}\n{HELPER}(model, torch.load('resnet50_imagenet.pth', map_location='cpu'))\n")
    assert head.split(" =")[0] in f.message


def test_user_torch_load_arguments_kept_exactly_and_strict_dropped():
    _, out = fixed(HEAD + "model.fc = nn.Linear(512, 3)\n"
                   "model.load_state_dict(torch.load(PATH, map_location=device, weights_only=False), strict=False)\n"
                   .replace("PATH", "'vit_pretrained.pt'"))
    assert out.endswith(f"{HELPER}(model, torch.load('vit_pretrained.pt', map_location=device, weights_only=False))\n")


@pytest.mark.parametrize("path", ["'backbone.pt'", "os.path.join(ckpt_dir, 'backbone.pt')", "'swin_backbone.pth'"])
def test_a_backbone_checkpoint_is_a_pretrained_one(path):
    f, out = fixed(HEAD + f"model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load({path}))\n")
    assert out.endswith(f"{HELPER}(model, torch.load({path}))\n")


def test_strict_false_is_still_a_finding():
    f, _ = fixed(HEAD + "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('imagenet.pth'), strict=False)\n")
    assert "strict=False does not skip shape mismatches" in f.message


@pytest.mark.parametrize(
    "imp, load",
    [("import torch as T", "T.load"), ("from torch import load", "load"), ("from torch import load as tl", "tl"),
     ("import torch.serialization", "torch.serialization.load")],
)
def test_torch_load_resolved_by_qualified_name(imp, load):
    fixed(f"{imp}\nimport torch.nn as nn\nmodel = Net()\nmodel.fc = nn.Linear(4, 2)\nmodel.load_state_dict({load}('resnet.pt'))\n")


def test_user_function_named_load_is_not_torch_load():
    silent("import torch.nn as nn\n\ndef load(p):\n    return {}\n\nmodel = Net()\nmodel.fc = nn.Linear(4, 2)\n"
           "model.load_state_dict(load('resnet.pt'))\n")


def test_through_variables_and_indexing():
    _, out = fixed(HEAD + "model.fc = nn.Linear(512, 3)\nckpt = torch.load('resnet_pretrain.pth')\n"
                   "model.load_state_dict(ckpt['state_dict'])\n")
    assert out.endswith(f"{HELPER}(model, ckpt['state_dict'])\n")
    _, out = fixed(HEAD + "model.fc = nn.Linear(512, 3)\nckpt = torch.load('resnet_pretrain.pth')\n"
                   "sd = ckpt['model']\nmissing, unexpected = model.load_state_dict(sd)\n")
    assert out.endswith(f"missing, unexpected = {HELPER}(model, sd)\n")
    _, out = fixed(HEAD + "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('vgg16_pretrained.pth')['state_dict'])\n")
    assert out.endswith(f"{HELPER}(model, torch.load('vgg16_pretrained.pth')['state_dict'])\n")


def test_path_through_variable_bound_once_and_os_path_join():
    fixed("import os\nimport torch\nimport torch.nn as nn\nWEIGHTS = os.path.join(root, 'imagenet', 'r18.pth')\n"
          "model = Net()\nmodel.fc = nn.Linear(4, 2)\nmodel.load_state_dict(torch.load(WEIGHTS))\n")


@pytest.mark.parametrize(
    "imp, call",
    [("import torch", "torch.hub.load_state_dict_from_url(URL)"),
     ("from torch.hub import load_state_dict_from_url", "load_state_dict_from_url(URL, progress=False)"),
     ("import torch.utils.model_zoo as model_zoo", "model_zoo.load_url(URL)")],
)
def test_hub_downloads_are_foreign(imp, call):
    _, out = fixed(f"{imp}\nimport torch.nn as nn\nURL = get_url()\nmodel = Net()\nmodel.fc = nn.Linear(4, 2)\n"
                   f"model.load_state_dict({call})\n")
    assert out.endswith(f"{HELPER}(model, {call})\n")


def test_helper_added_once_for_two_loads_and_in_methods():
    src = HEAD + """\
model.fc = nn.Linear(512, 3)
model.load_state_dict(torch.load("resnet_imagenet.pth"))


class FineTuned(Backbone):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(512, 3)
        self.load_state_dict(torch.load("resnet_imagenet.pth"))
"""
    r, out = run(src)
    assert len(r.findings) == 2 and all(f.applied for f in r.findings)
    assert out.count(f"def {HELPER}(") == 1
    assert f"{HELPER}(self, torch.load(\"resnet_imagenet.pth\"))" in out


def test_helper_really_loads_matching_weights():
    import warnings

    import torch
    import torch.nn as nn

    from torchmend.rules.tm401_strict_load_after_head_change import HELPER_SOURCE

    ns = {"warnings": warnings}
    exec(HELPER_SOURCE, ns)
    src, dst = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 10)), nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    with pytest.warns(UserWarning, match="skipped 2 checkpoint keys"):
        res = ns[HELPER](dst, src.state_dict())
    assert torch.equal(dst[0].weight, src[0].weight) and res.missing_keys == ["1.weight", "1.bias"]


# ---------------------------------------------------------------------- unsafe / report
TRAIN = "loss = model(x).sum()\nloss.backward()\n"


@pytest.mark.parametrize("path", ["'weights.pt'", "args.ckpt", "'resnet50_finetuned.pth'", "'best_resnet.pt'"])
def test_no_pretrained_evidence_is_unsafe(path):
    src = HEAD + f"model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load({path}))\n" + TRAIN
    f, out = one(src, Safety.UNSAFE)
    assert not f.applied and out == src
    assert "move the load above the head replacement" in f.message and "keep it" in f.message
    r, out = run(src, unsafe_fixes=True)
    assert out.endswith(f"{HELPER}(model, torch.load({path}))\n" + TRAIN)
    assert r.suggestions == []  # applied, so no suggestion left
    r, _ = run(src)
    assert len(r.suggestions) == 1 and HELPER.encode() in r.suggestions[0].diff


@pytest.mark.parametrize("path", ["'model.pth'", "args.ckpt"])
def test_an_inference_script_loading_without_pretrained_evidence_is_silent(path):
    """Nothing is trained in the file: the replaced head's weights can only come from the
    checkpoint, so it is the project's own fine-tuned one (the load is right)."""
    silent(HEAD + f"model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load({path}))\nmodel.eval()\n")
    # a download or a name filter says the checkpoint is another model's: still reported
    r, _ = run(HEAD + "model.fc = nn.Linear(512, 3)\nsd = torch.load('pretrained.pth')\n"
               "model.load_state_dict({k: v for k, v in sd.items() if k in model.state_dict()})\n")
    assert [f.code for f in r.findings] == ["TM401"]


def test_extra_load_state_dict_arguments_are_report_only():
    r, out = run(HEAD + "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('imagenet.pt'), assign=True)\n")
    (f,) = r.findings
    assert f.fix is None and "not fixed" in f.message and not r.changed


# ---------------------------------------------------------------------- look-alikes
@pytest.mark.parametrize(
    "body",
    [
        # load before the head replacement (canonical order)
        "model.load_state_dict(torch.load('resnet.pth'))\nmodel.fc = nn.Linear(512, 3)\n",
        # same architecture
        "model.load_state_dict(torch.load('resnet.pth'))\n",
        # another receiver
        "student.fc = nn.Linear(512, 3)\nteacher.load_state_dict(torch.load('resnet.pth'))\n",
        # the model is rebuilt after the head change
        "model.fc = nn.Linear(512, 3)\nmodel = Backbone()\nmodel.load_state_dict(torch.load('resnet.pth'))\n",
        # already filtered
        "model.fc = nn.Linear(512, 3)\nsd = torch.load('resnet.pth')\nown = model.state_dict()\n"
        "sd = {k: v for k, v in sd.items() if k in own and v.shape == own[k].shape}\nmodel.load_state_dict(sd, strict=False)\n",
        # keys popped / deleted / filtered by a helper
        "model.fc = nn.Linear(512, 3)\nsd = torch.load('resnet.pth')\nsd.pop('fc.weight')\nsd.pop('fc.bias')\nmodel.load_state_dict(sd, strict=False)\n",
        "model.fc = nn.Linear(512, 3)\nsd = torch.load('resnet.pth')\ndel sd['fc.weight']\nmodel.load_state_dict(sd, strict=False)\n",
        "model.fc = nn.Linear(512, 3)\nsd = torch.load('resnet.pth')\nremove_head(sd)\nmodel.load_state_dict(sd)\n",
        # resume: the checkpoint also carries the optimizer state
        "model.fc = nn.Linear(512, 3)\nckpt = torch.load('resnet_run.pth')\nmodel.load_state_dict(ckpt['model'])\n"
        "optimizer.load_state_dict(ckpt['optimizer'])\n",
        "model.fc = nn.Linear(512, 3)\nckpt = torch.load('resnet_run.pth')\nmodel.load_state_dict(ckpt['state_dict'])\nstart = ckpt.get('epoch', 0)\n",
        # not a torch.load result
        "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(other.state_dict())\n",
        # an assignment to a non-head attribute
        "model.dropout = nn.Dropout(0.5)\nmodel.load_state_dict(torch.load('resnet.pth'))\n",
    ],
)
def test_lookalikes_are_silent(body):
    silent(HEAD + body)


def test_head_set_in_another_scope_is_silent():
    silent("""\
import torch
import torch.nn as nn


def build(n):
    net = Backbone()
    net.fc = nn.Linear(512, n)
    return net


net = build(3)
net.load_state_dict(torch.load("resnet_finetuned.pt"))
""")


def test_framework_head_swaps_are_silent():
    silent("from transformers import AutoModelForSequenceClassification as M\n"
           "model = M.from_pretrained('bert-base-uncased', num_labels=3, ignore_mismatched_sizes=True)\n"
           "model.load_state_dict(model.state_dict())\n")
    silent("import timm\nmodel = timm.create_model('resnet18', pretrained=True, num_classes=3)\n"
           "model.load_state_dict(model.state_dict())\n")


def test_head_and_load_in_exclusive_branches_are_silent():
    silent(HEAD + "if finetune:\n    model.fc = nn.Linear(512, 3)\nelse:\n    model.load_state_dict(torch.load('resnet.pth'))\n")
    silent(HEAD + "if a:\n    model.fc = nn.Linear(512, 3)\nelif b:\n    model.load_state_dict(torch.load('resnet.pth'))\n")
    # a conditional head change before an unconditional load is still evidence
    fixed(HEAD + "if num_classes != 1000:\n    model.fc = nn.Linear(512, num_classes)\nmodel.load_state_dict(torch.load('resnet.pth'))\n")


# ---------------------------------------------------------------------- heads changed elsewhere (issue 10)
BACKBONE = """\
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.fc = nn.Linear(4, num_classes)

"""


def test_builder_that_replaces_the_head():
    src = BACKBONE + "\ndef build(n):\n    net = Backbone()\n    net.fc = nn.Linear(4, n)\n    return net\n\n\nmodel = build(3)\n"
    f, out = fixed(src + "model.load_state_dict(torch.load('resnet18_imagenet.pth'))\n")
    assert "`build()` replaced `net.fc`" in f.message
    assert out.endswith(f"{HELPER}(model, torch.load('resnet18_imagenet.pth'))\n")
    # nothing says the checkpoint is pretrained: the builder's own fine-tuned weights
    silent(src + "model.load_state_dict(torch.load(args.checkpoint))\n")


@pytest.mark.parametrize("ctor, fires", [
    ("Backbone(num_classes=3)", True), ("Backbone(num_classes=1000)", False), ("Backbone()", False),
    ("Backbone(num_classes=N)", True), ("Backbone(num_classes=K)", False),
])
def test_constructor_class_count(ctor, fires):
    src = BACKBONE + f"N = 7\nK = 1000\nmodel = {ctor}\nmodel.load_state_dict(torch.load('imagenet_backbone.pth'))\n"
    if fires:
        f, _ = fixed(src)
        assert "was built with num_classes=" in f.message
    else:
        silent(src)


def test_subclass_init_replaces_an_inherited_head():
    src = BACKBONE + ("\nclass Mine(Backbone):\n    def __init__(self):\n        super().__init__()\n"
                      "        self.fc = nn.Linear(4, 2)\n\n\nmodel = Mine()\n"
                      "model.load_state_dict(torch.load('resnet_pretrained.pt'))\n")
    f, _ = fixed(src)
    assert "`Mine.__init__` replaced the inherited `self.fc`" in f.message
    # a class that only defines its head is not a replacement
    silent(BACKBONE + "\nclass Own(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.fc = nn.Linear(4, 2)\n\n\nmodel = Own()\nmodel.load_state_dict(torch.load('resnet_pretrained.pt'))\n")


@pytest.mark.parametrize("state", [
    "torchvision.models.resnet18(pretrained=True).state_dict()",
    "torchvision.models.resnet18(weights=torchvision.models.ResNet18_Weights.DEFAULT).state_dict()",
    "torchvision.models.ResNet18_Weights.IMAGENET1K_V1.get_state_dict(progress=True)",
    "model_zoo.load_url(model_urls['resnet18'])",
    "torch.hub.load_state_dict_from_url('https://download.pytorch.org/models/resnet18-f37072fd.pth')",
])
def test_pretrained_sources_however_loaded(state):
    src = ("import torch\nimport torch.nn as nn\nimport torchvision\nimport torch.utils.model_zoo as model_zoo\n"
           "model_urls = {'resnet18': 'https://download.pytorch.org/models/resnet18-f37072fd.pth'}\n"
           "model = torchvision.models.resnet18(num_classes=10)\n"
           f"model.load_state_dict({state})\n")
    f, out = fixed(src)
    assert "num_classes=10" in f.message
    assert out.endswith(f"{HELPER}(model, {state})\n")


def test_a_zoo_model_with_an_adapted_head_is_not_the_original():
    # timm adapts the pretrained weights to num_classes=3: its state fits a 3-class head
    silent("import timm\nimport torch.nn as nn\nsrc = timm.create_model('resnet18', pretrained=True, num_classes=3)\n"
           "model = Net()\nmodel.fc = nn.Linear(512, 3)\nmodel.load_state_dict(src.state_dict())\n")


def test_own_checkpoint_saved_to_the_same_path_is_never_rewritten():
    body = HEAD + "model.fc = nn.Linear(512, 3)\n"
    # saved from this very model, before or after (a later run loads what the training wrote)
    silent(body + "torch.save(model.state_dict(), 'resnet_params.ckpt')\nmodel.load_state_dict(torch.load('resnet_params.ckpt'))\n")
    silent(body + "model.load_state_dict(torch.load(os.path.join(out, 'resnet.pt')))\n\n\ndef train():\n"
           "    torch.save(model.state_dict(), os.path.join(out, 'resnet.pt'))\n")
    # through a name bound to the path, and a dict holding the state
    silent(body + "P = f'{root}/vgg_weights.pth'\ntorch.save({'model': model.state_dict()}, P)\nmodel.load_state_dict(torch.load(P)['model'])\n")
    # a checkpoint saved from an unmodified model to that path is the original's
    f, _ = fixed(body + "orig = Backbone()\ntorch.save(orig.state_dict(), 'resnet_imagenet.pth')\n"
                 "model.load_state_dict(torch.load('resnet_imagenet.pth'))\n")
    # a path named like the file's own run
    silent(body + "model.load_state_dict(torch.load(args.resume))\n")
    silent(body + "best_model_path = get_path()\nmodel.load_state_dict(torch.load(best_model_path))\n")
    # the file trains and saves this model elsewhere, no sign of a pretrained checkpoint: its own
    silent(body + "torch.save(model.state_dict(), args.out)\nmodel.load_state_dict(torch.load(args.resume))\n")


def test_a_neighbour_that_saves_the_checkpoint(tmp_path):
    from torchmend import runner

    (tmp_path / "train.py").write_text(HEAD + "model.fc = nn.Linear(512, 3)\ntorch.save(model.state_dict(), 'classifier_resnet.pth')\n")
    (tmp_path / "predict.py").write_text(HEAD + "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('classifier_resnet.pth'))\n")
    opts = Options(select=frozenset({"TM401"}), unsafe_fixes=True)
    res = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=1).results}
    assert not res["predict.py"].findings and not res["predict.py"].changed
    # the neighbour saves an unmodified model there: the load is of the original head
    (tmp_path / "train.py").write_text(HEAD + "torch.save(Backbone().state_dict(), 'classifier_resnet.pth')\n")
    res = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=1).results}
    assert res["predict.py"].changed


def test_a_neighbour_that_does_not_parse_is_not_followed(tmp_path):
    # (Python 2 code in the neighbour's saving function: a part a lazy parse reaches only when it is read)
    from torchmend import runner

    (tmp_path / "train.py").write_text(unparsable_module(
        HEAD, "def save():\n    print 'x'\n    torch.save(model.state_dict(), 'classifier_resnet.pth')\n"))
    (tmp_path / "predict.py").write_text(HEAD + "model.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('classifier_resnet.pth'))\n")
    opts = Options(select=frozenset({"TM401"}), unsafe_fixes=True)
    res = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=1).results}
    assert res["predict.py"].error is None, res["predict.py"].error
    assert res["predict.py"].changed  # (the neighbour is not read: the load is taken as a pretrained one)


# ---------------------------------------------------------------------- torchvision builders told another class count
TV = "import torch\nimport torchvision.models as models\n"


@pytest.mark.parametrize("ctor, head", [
    ("models.resnet18(pretrained=True, num_classes=10)", "fc"),
    ("models.vgg16(weights=models.VGG16_Weights.IMAGENET1K_V1, num_classes=10)", "classifier[6]"),
    ("models.vit_b_16(weights='DEFAULT', num_classes=10)", "heads.head"),
    ("models.efficientnet_b0(num_classes=10, weights=models.EfficientNet_B0_Weights.DEFAULT)", "classifier[1]"),
])
def test_pretrained_builder_with_another_class_count(ctor, head):
    f, out = fixed_builder(TV + f"net = {ctor}\nprint(net)\n")
    assert "expected value 1000" in f.message
    call = ctor.replace(", num_classes=10", "").replace("num_classes=10, ", "")
    assert f"net = {call}\nnet.{head} = torch.nn.Linear(net.{head}.in_features, 10)\nprint(net)\n" in out


def fixed_builder(src):
    f, out = one(src, Safety.SAFE)
    assert f.applied
    again, out2 = run(out, unsafe_fixes=True)
    assert not again.findings and out2 == out
    return f, out


def test_pretrained_builder_variants():
    # a variable class count may be 1000: unsafe; so is a weights variable (may be None)
    f, out = one(TV + "net = models.resnet50(pretrained=True, num_classes=n)\n", Safety.UNSAFE)
    assert "(if n is not 1000)" in f.message
    r, out = run(TV + "net = models.resnet50(pretrained=True, num_classes=n)\n", unsafe_fixes=True)
    assert "net.fc = torch.nn.Linear(net.fc.in_features, n)" in out
    one(TV + "net = models.resnet50(weights=args.weights, num_classes=10)\n", Safety.UNSAFE)
    # self attributes; torch imported under another name; torch not imported at all
    _, out = fixed_builder(TV + "class M:\n    def __init__(self):\n        self.backbone = models.densenet121(pretrained=True, num_classes=3)\n")
    assert "        self.backbone.classifier = torch.nn.Linear(self.backbone.classifier.in_features, 3)\n" in out
    _, out = fixed_builder("import torch as T\nfrom torchvision.models import resnet18\nm = resnet18(pretrained=True, num_classes=2)\n")
    assert "m.fc = T.nn.Linear(m.fc.in_features, 2)" in out
    _, out = fixed_builder("from torchvision import models\nm = models.resnet18(pretrained=True, num_classes=2)\n")
    assert "\nimport torch\n" in out and "m.fc = torch.nn.Linear(m.fc.in_features, 2)" in out
    # report only: not assigned, a head that is no Linear layer
    r, _ = run(TV + "return_it = [models.resnet18(pretrained=True, num_classes=3)]\n")
    assert r.findings[0].fix is None and "not assigned" in r.findings[0].message
    r, _ = run(TV + "m = models.squeezenet1_1(pretrained=True, num_classes=3)\n")
    assert r.findings[0].fix is None and "replace `classifier[1]` afterwards (not fixed: its head is a Conv2d)" in r.findings[0].message
    # (pytorch/vision#480: inception_v3(num_classes=1, pretrained=True, aux_logits=False))
    r, _ = run(TV + "m = models.inception_v3(num_classes=1, pretrained=True, aux_logits=False)\n")
    assert r.findings[0].fix is None and "replace `fc` (and `AuxLogits.fc`) afterwards (not fixed: it has two heads" \
        in r.findings[0].message


@pytest.mark.parametrize("src, found", [
    # the ImageNet scripts' idiom: the architecture chosen by name when the code runs
    (TV + "net = models.__dict__[args.arch](pretrained=True, num_classes=10)\n", "(not fixed: the architecture is chosen"),
    ("import torchvision\n\n\ndef create(arch, pretrained, num_classes):\n"
     "    return torchvision.models.__dict__[arch](pretrained=pretrained, num_classes=num_classes)\n",
     "(if the weights are pretrained) (if num_classes is not 1000)"),
    # look-alikes: 1000 classes, no pretrained weights, a package of the project's own
    (TV + "net = models.__dict__[args.arch](pretrained=True, num_classes=1000)\n", None),
    (TV + "net = models.__dict__[args.arch](pretrained=False, num_classes=10)\n", None),
    ("import models\nnet = models.__dict__[args.arch](pretrained=True, num_classes=10)\n", None),
])
def test_a_torchvision_builder_chosen_by_name(src, found):
    """neuralmagic/sparseml torchvision/train.py (before PR #1455):
    ``torchvision.models.__dict__[arch_key](pretrained=pretrained, num_classes=num_classes)``
    loads the 1000-class weights into a head built for another count."""
    r, out = run(src)
    if found is None:
        assert r.findings == []
        return
    [f] = r.findings
    assert f.code == "TM401" and f.fix is None and found in f.message and "expected value 1000" in f.message


@pytest.mark.parametrize("ctor", [
    "models.resnet18(pretrained=True, num_classes=1000)", "models.resnet18(num_classes=10)",
    "models.resnet18(weights=None, num_classes=10)", "models.resnet18(pretrained=False, num_classes=10)",
    "timm.create_model('resnet18', pretrained=True, num_classes=10)",
    "models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone='DEFAULT', num_classes=3)",
    "models.detection.fasterrcnn_resnet50_fpn(weights='DEFAULT', num_classes=91)",
    "models.segmentation.fcn_resnet50(pretrained=True, num_classes=21)",
    "models.detection.keypointrcnn_resnet50_fpn(weights='DEFAULT', num_classes=2)",
])
def test_builders_that_do_not_raise(ctor):
    silent("import timm\n" + TV + f"net = {ctor}\n")


@pytest.mark.parametrize("ctor, expected", [
    ("models.detection.fasterrcnn_resnet50_fpn(weights='DEFAULT', num_classes=3)", 91),
    ("models.segmentation.fcn_resnet101(pretrained=True, num_classes=512)", 21),
    ("models.detection.keypointrcnn_resnet50_fpn(pretrained=True, num_classes=5)", 2),
])
def test_detection_and_segmentation_builders_are_reported(ctor, expected):
    r, out = run(TV + f"net = {ctor}\n", unsafe_fixes=True)
    (f,) = r.findings
    assert f.fix is None and f"expected value {expected}" in f.message and "weights_backbone=" in f.message
    assert not r.changed


@pytest.mark.parametrize(
    "src, passes",
    [
        ("import torch\nmodel = Net()\nmodel.load_state_dict(torch.load('resnet50_imagenet.pth'))\n", False),
        ("import torch\nmodel = Net()\nmodel.fc = nn.Linear(512, 3)\nmodel.load_state_dict(torch.load('r.pth'))\n", True),
        ("import torch\nmodel = Net()\nmodel.classifier[6] = nn.Linear(4096, 3)\nmodel.load_state_dict(torch.load('r.pth'))\n", True),
        ("import torch\nmodel = Net(n_classes=3)\nmodel.load_state_dict(torch.load('r.pth'))\n", True),
        ("import torchvision\nm = torchvision.models.resnet18(pretrained=True, num_classes=10)\n", True),
        # a comparison is not an assignment, but the gate may let it through (a superset)
        ("import torch\nmodel = Net()\nif model.fc == x:\n    model.load_state_dict(torch.load('r.pth'))\n", False),
    ],
)
def test_gate_needs_a_head_change_somewhere(src, passes):
    """TM401's gate: a load can only be reported after a head change, so a file with
    no head assignment and no number-of-classes keyword is not analysed; every file the
    rule reports in passes it."""
    from torchmend.rules.tm401_strict_load_after_head_change import StrictLoadAfterHeadChange as R

    assert R.may_match(src) == passes
    ref = process_text("finetune.py", src, Options(fix=False, shortcuts=False, select=frozenset({"TM401"})))
    if ref.findings:
        assert passes


def test_head_assignments_are_found_by_the_head_attribute_not_by_the_words():
    """``Heads.assigns``: the one-target assignments whose target is a head attribute
    (itself or indexed), however the value is spelled; not the assignments that only
    mention a head word (``num_heads``, ``head_dim``, a value that reads ``model.fc``)."""
    from torchmend.rules._filtered_load import Heads
    from torchmend.semantic.model import SemanticModel

    src = textwrap.dedent("""\
        import torch.nn as nn
        model = Net()
        model.num_heads = 8
        head_dim = 64
        model.fc = nn.Linear(512, 3)
        model.classifier[6] = nn.Linear(4096, 3)
        model.heads.head = nn.Linear(768, 3)
        features = model.fc
        a = model.fc = nn.Identity()
        model.classifier[6][0] = None
        def build():
            m = Net()
            m.last_linear = nn.Linear(2, 3)
            return m
        """)
    got = [(a.lineno, type(a.targets[0]).__name__) for a in Heads(SemanticModel(src, lazy_min_chars=0)).assigns()]
    assert got == [(5, "Attribute"), (6, "Subscript"), (7, "Attribute"), (13, "Attribute")]


def test_pretrained_builder_in_a_long_file_among_other_uses_of_num_classes():
    """In a long file (read definition by definition), a builder call is read in the
    definition that also says ``weights=``/``pretrained=`` (what a report needs); the
    other definitions that only mention ``num_classes`` are not."""
    others = "".join(
        f"\n\ndef head{i}(num_classes):\n    \"\"\"num_classes: how many.\"\"\"\n" + "    x = 1\n" * 150
        + "    return torch.nn.Linear(8, num_classes)\n" for i in range(3))
    src = TV + others + "\n\ndef build():\n    net = models.resnet50(pretrained=True, num_classes=10)\n    return net\n"
    f, out = fixed_builder(src)
    assert "expected value 1000" in f.message
    assert "    net.fc = torch.nn.Linear(net.fc.in_features, 10)\n" in out
    from torchmend.semantic import SemanticModel
    from torchmend.rules.tm401_strict_load_after_head_change import StrictLoadAfterHeadChange
    from torchmend.rule import Context
    sem = SemanticModel(src)
    assert len(sem.source.chunks) > 3
    list(StrictLoadAfterHeadChange().check(Context("t.py", src, sem)))
    assert [c.name for c in sem.source.chunks if c.kind == "def" and c.stmts is not None] == ["build"]


# ---------------------------------------------------------------------- a removed head
# (facebookresearch/dino hubconf.py and eval scripts: backbone checkpoints, no head)
@pytest.mark.parametrize("strict", ["", ", strict=True", ", strict=False"])
@pytest.mark.parametrize(
    "build",
    ["model = vits.__dict__['vit_small'](patch_size=16, num_classes=0)",
     "NC = 0\nmodel = vits.__dict__['vit_small'](patch_size=16, num_classes=NC)",
     "model = resnet50(pretrained=False)\nmodel.fc = torch.nn.Identity()",
     "model = resnet50(pretrained=False)\nmodel.fc = nn.Identity(2048)",
     "model = resnet50(pretrained=False)\nmodel.head = None",
     "model = resnet50(pretrained=False)\nmodel.classifier = nn.Sequential()"],
)
def test_removed_head_is_silent(build, strict):
    """A head with no parameters cannot mismatch a checkpoint's shapes: not reported."""
    silent("import torch\nimport torch.nn as nn\nimport vits\nfrom torchvision.models import resnet50\n"
           f"{build}\nsd = torch.hub.load_state_dict_from_url(url='https://dl.fbaipublicfiles.com/dino/dino_resnet50_pretrain.pth')\n"
           f"model.load_state_dict(sd{strict})\n")


@pytest.mark.parametrize(
    "build",
    ["model = vits.__dict__['vit_small'](patch_size=16, num_classes=5)",
     "model = resnet50(pretrained=False)\nmodel.fc = nn.Linear(2048, 5)",
     "model = resnet50(pretrained=False)\nmodel.classifier = nn.Sequential(nn.Linear(2048, 5))",
     # a same-file class called Identity is no parameter-free torch module
     "class Identity(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = nn.Linear(2048, 5)\n\n\n"
     "model = resnet50(pretrained=False)\nmodel.fc = Identity()"],
)
def test_head_with_parameters_beside_a_removed_one_is_reported(build):
    """The same code with a head that has parameters is still a finding."""
    f, _ = one("import torch\nimport torch.nn as nn\nimport vits\nfrom torchvision.models import resnet50\n"
               f"{build}\nsd = torch.hub.load_state_dict_from_url(url='https://dl.fbaipublicfiles.com/dino/dino_resnet50_pretrain.pth')\n"
               "model.load_state_dict(sd)\n", Safety.SAFE)
    assert "load the matching weights only" in f.message


# ---------------------------------------------------------------------- a hub entry point
# (facebookresearch/detr hubconf.py: ``def detr_resnet50(pretrained=False, num_classes=91)``)
HUB = """\
import torch


def detr_resnet50(pretrained=False, num_classes=91):
    model = DETR(backbone, transformer, num_classes=num_classes, num_queries=100)
    if pretrained:
        checkpoint = torch.hub.load_state_dict_from_url(url="https://dl.fbaipublicfiles.com/detr/detr-r50-e632da11.pth")
        model.load_state_dict(checkpoint["model"])
    return model
"""


def test_head_sized_by_the_entry_points_parameter_is_silent():
    """The number of classes is the caller's: the checkpoint fits the default."""
    silent(HUB)


def test_head_sized_by_a_parameter_the_file_passes_is_reported():
    f, _ = one(HUB + "\n\nmodel = detr_resnet50(pretrained=True, num_classes=5)\n", Safety.SAFE)
    assert "num_classes=num_classes" in f.message


# (Project-MONAI/tutorials, RANZCR: ``self.head = nn.Linear(...)`` made in ``__init__`` of
# an ``nn.Module``, then ``self.load_state_dict(torch.load(cfg.pretrained_weights)["model"])``:
# the checkpoint is one of this very class, whose head was never anything else)
OWN_INIT = """\
import torch
import torch.nn as nn


class {name}({base}):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = make_backbone(cfg)
{before}        {target} = nn.Linear(512, cfg.num_classes)
        if cfg.pretrained_weights is not None:
            self.load_state_dict(torch.load(cfg.pretrained_weights, map_location="cpu")["model"], strict=True)
"""


def test_a_head_defined_by_the_class_that_loads_is_silent():
    silent(OWN_INIT.format(name="Net", base="nn.Module", before="", target="self.head"))


@pytest.mark.parametrize(
    "base, before, target",
    [  # a model class whose head its own __init__ made first: replaced
        ("nn.Module", "        self.head = nn.Linear(512, 1000)\n", "self.head"),
        # part of a layer made before
        ("nn.Module", "        self.classifier = nn.Sequential(nn.Linear(512, 1000))\n", "self.classifier[0]"),
        # a library model class: its __init__ made a head with its own class count
        ("torchvision.models.ResNet", "", "self.fc"),
    ],
)
def test_a_head_the_class_replaces_is_reported(base, before, target):
    src = OWN_INIT.format(name="Net", base=base, before=before, target=target)
    if "torchvision" in base:
        src = "import torchvision\n" + src
    r, _ = run(src)
    assert [f.code for f in r.findings] == ["TM401"], r.findings


# (the transfer-learning recipe of forum answers and blogs: keep the checkpoint's entries
# whose names the model has, ``model_dict.update(...)``, load: a head replaced under its
# old name keeps its entry, and the load still fails with "size mismatch for fc.weight")
KEYS = """\
import torch
import torch.nn as nn
import torchvision.models as models

model = models.resnet18()
model.fc = nn.Linear(512, 10)
pretrained_dict = torch.load("resnet18-imagenet.pth")
model_dict = model.state_dict()
pretrained_dict = {{k: v for k, v in pretrained_dict.items() if {cond}}}
{load}
"""
UPDATE = "model_dict.update(pretrained_dict)\nmodel.load_state_dict(model_dict)"
DIRECT = "model.load_state_dict(pretrained_dict)"


@pytest.mark.parametrize("cond", ["k in model_dict", "k in model.state_dict()", "k in model_dict.keys()"])
@pytest.mark.parametrize("load", [UPDATE, DIRECT])
def test_a_checkpoint_filtered_by_name_only_still_mismatches(cond, load):
    f, out = one(KEYS.format(cond=cond, load=load), Safety.SAFE)
    assert "load_matching_state_dict(model, " in out


@pytest.mark.parametrize(
    "cond",
    ["k in model_dict and v.shape == model_dict[k].shape",  # the shapes are compared
     "k in model_dict and v.size() == model_dict[k].size()",
     "'fc' not in k",  # the head dropped by name
     "not k.startswith('fc.')"],
)
@pytest.mark.parametrize("load", [UPDATE, DIRECT])
def test_a_checkpoint_filtered_by_shape_or_without_the_head_is_silent(cond, load):
    silent(KEYS.format(cond=cond, load=load))


def test_an_own_state_changed_otherwise_is_not_followed():
    silent(KEYS.format(cond="k in model_dict", load="model_dict.pop('fc.weight')\n" + UPDATE))


def test_a_head_with_other_parameter_names_takes_no_entry_of_the_merge():
    """``fc = nn.Sequential(...)`` has ``fc.0.weight``: the name filter drops the
    checkpoint's ``fc.weight`` and the merged state loads (the direct load still lacks keys)."""
    src = KEYS.format(cond="k in model_dict", load=UPDATE).replace(
        "model.fc = nn.Linear(512, 10)", "model.fc = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))")
    silent(src)
    direct = KEYS.format(cond="k in model_dict", load=DIRECT).replace(
        "model.fc = nn.Linear(512, 10)", "model.fc = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))")
    r, _ = run(direct)
    assert [f.code for f in r.findings] == ["TM401"]


@pytest.mark.parametrize(
    "src",
    [  # another method replaces the head __init__ made, then loads
        OWN_INIT.format(name="Net", base="nn.Module", before="", target="self.head").replace(
            "    def __init__(self, cfg):", "    def finetune(self, cfg):"),
        # a download is never a checkpoint of this very class
        OWN_INIT.format(name="Net", base="nn.Module", before="", target="self.head").replace(
            "torch.load(cfg.pretrained_weights, map_location=\"cpu\")[\"model\"]",
            "torch.hub.load_state_dict_from_url(\"https://download.pytorch.org/models/resnet18-5c106cde.pth\")"),
    ],
)
def test_a_head_the_class_defines_is_still_a_change_for_other_loads(src):
    r, _ = run(src)
    assert [f.code for f in r.findings] == ["TM401"], r.findings


def test_an_unfiltered_merge_into_a_renamed_head_is_still_reported():
    """``model_dict.update(pretrained)`` without the name filter brings the checkpoint's
    ``fc.weight`` in as an unexpected key: the load fails (the review's l1.py)."""
    src = KEYS.format(cond="True", load=UPDATE).replace(
        "pretrained_dict = {k: v for k, v in pretrained_dict.items() if True}\n", "").replace(
        "model.fc = nn.Linear(512, 10)", "model.fc = nn.Sequential(nn.Dropout(0.5), nn.Linear(512, 10))")
    r, _ = run(src)
    assert [f.code for f in r.findings] == ["TM401"], r.findings


# ----------------------------------------------------------------------------- counts set out of sight

SUBCLASS = """\
import torch
from torchvision.models.resnet import ResNet, BasicBlock

class Small(ResNet):
    def __init__(self):
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes={n})

model = Small()
model.load_state_dict(torch.load("resnet18-f37072fd.pth"))
"""


def test_a_subclass_building_its_base_with_another_class_count():
    r, out = run(SUBCLASS.format(n=10))
    assert [f.code for f in r.findings] == ["TM401"]
    assert "`Small.__init__` builds `ResNet` with num_classes=10" in r.findings[0].message
    for same in ("1000", "n"):  # the base's default; a parameter (the outer call's choice)
        src = SUBCLASS.format(n=same)
        if same == "n":
            src = src.replace("def __init__(self):", "def __init__(self, n=1000):")
        r, out = run(src)
        assert r.findings == [], same


SEG = """\
import torchvision.models as models

class Seg:
    def __init__(self, n_class={n}):
        self.n_class = n_class
        self.model = models.segmentation.deeplabv3_resnet50(pretrained=True, num_classes=self.n_class)
"""


def test_a_segmentation_count_known_through_a_parameter_default():
    r, _ = run(SEG.format(n=13))
    assert [f.code for f in r.findings] == ["TM401"]
    assert "(if self.n_class is not 21)" in r.findings[0].message  # callers elsewhere may pass another
    r, _ = run(SEG.format(n=21))
    assert r.findings == []


def test_a_first_lenient_load_does_not_hide_the_state_dict():
    """``model.load_state_dict(sd, strict=False)`` reads ``sd``: the later name-only
    filter still comes from the same checkpoint."""
    r, _ = run("""\
        import torch
        import torchvision.models as models
        model = models.resnet50(weights=None)
        model.fc = torch.nn.Linear(2048, 10)
        sd = torch.load("resnet50-imagenet.pth")
        try:
            model.load_state_dict(sd, strict=False)
        except RuntimeError:
            own = model.state_dict()
            sd = {k: v for k, v in sd.items() if k in own}
            own.update(sd)
            model.load_state_dict(own)
        """)
    assert [f.line for f in r.findings if f.code == "TM401"][-1] == 12


# a model definition that sizes a zoo builder for a download of its own (pytorch-fid's
# Inception: 1008 classes, the port of Google's weights) trains nothing: nothing says
# the download holds the architecture's original head
FID = """\
import torch
from torchvision import models
from torch.hub import load_state_dict_from_url

WEIGHTS_URL = {url}


def fid_inception_v3():
    inception = models.inception_v3(num_classes=1008, aux_logits=False, pretrained=False)
    state_dict = load_state_dict_from_url(WEIGHTS_URL, progress=True)
    inception.load_state_dict(state_dict)
    return inception
"""
THIRD_PARTY = "'https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth'"


def test_a_class_count_sized_for_a_third_party_download_is_silent():
    silent(FID.format(url=THIRD_PARTY))


@pytest.mark.parametrize("url", [
    "'https://download.pytorch.org/models/inception_v3_google-0cc3c7bd.pth'",  # torchvision's own weights: 1000 classes
    "'https://example.org/inception_v3_imagenet.pth'",
    "models.inception.model_urls['inception_v3_google']",
])
def test_a_class_count_with_the_original_weights_downloaded_is_fixed(url):
    f, _ = fixed(FID.format(url=url))
    assert "num_classes=1008" in f.message


def test_a_third_party_download_into_a_sized_model_that_is_trained_is_fixed():
    # a training script: the count is the user's dataset's, the download another model's
    fixed(FID.format(url=THIRD_PARTY) + "\nmodel = fid_inception_v3()\nmodel(x).sum().backward()\n")


KWARGS_BUILDER = """\
import torch.nn as nn
from torch.hub import load_state_dict_from_url


class Net(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Conv2d(3, 64, 3)
        self.classifier = nn.Conv2d(64, num_classes, kernel_size=1)


def net(pretrained=False, **kwargs):
    model = Net(**kwargs)
    if pretrained:
        model.load_state_dict(load_state_dict_from_url("https://x/net_imagenet-1000.pth"))
    return model


model = net({args})
"""


def test_class_count_through_a_builders_kwargs():
    # the timm/torchvision builder shape: the count a call passes reaches the constructor
    r, out = run(KWARGS_BUILDER.format(args="num_classes=16, pretrained=True"))
    assert [f.code for f in r.findings] == ["TM401"]
    assert "num_classes=16 (through `**kwargs` from line 19)" in r.findings[0].message


@pytest.mark.parametrize("args", [
    "num_classes=1000, pretrained=True", "pretrained=True", "pretrained=True, width=2",
    "num_classes=16", "num_classes=16, pretrained=False",  # no load runs: the builder's ``if pretrained:``
])
def test_builders_kwargs_without_another_count_is_silent(args):
    r, out = run(KWARGS_BUILDER.format(args=args))
    assert r.findings == []


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("call, found", [
    ("net(pretrained=True, num_classes=16)", True),
    ("models.net(num_classes=16, pretrained=True)", True),
    # look-alikes: the default count; no load runs; the builder of another module
    ("net(pretrained=True, num_classes=1000)", False),
    ("net(num_classes=16)", False),
    ("other.net(pretrained=True, num_classes=16)", False),
    # (review) a test that expects the strict load to fail is no user of the builder
    ("net(pretrained=True, num_classes=16)  # test", False),
])
def test_class_count_through_a_builders_kwargs_from_an_importer(tmp_path, jobs, call, found):
    """VectXmy/FCOS.Pytorch-style: a copied torchvision ``resnet.py`` whose builders no
    code of its own file calls; the script that imports it asks for another class count
    with the pretrained weights."""
    from torchmend import runner

    builder = KWARGS_BUILDER.split("\n\nmodel = net(")[0] + "\n"
    (tmp_path / "models.py").write_text(builder)
    (tmp_path / "other.py").write_text("def net(**kwargs):\n    return None\n")
    script = "test_models.py" if call.endswith("# test") else "train.py"
    (tmp_path / script).write_text(f"import models\nimport other\nfrom models import net\n\nmodel = {call}\n")
    opts = Options(select=frozenset({"TM401"}))
    res = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=jobs).results}
    got = res["models.py"].findings
    assert len(got) == (1 if found else 0) and not res[script].findings
    if found:
        assert got[0].line == builder.splitlines().index(
            '        model.load_state_dict(load_state_dict_from_url("https://x/net_imagenet-1000.pth"))') + 1
        assert "num_classes=16 (through `**kwargs` from train.py line 5)" in got[0].message


def test_a_count_that_binds_a_parameter_of_the_builder_is_not_in_its_kwargs():
    # yhenon/pytorch-retinanet: ``def resnet18(num_classes, pretrained=False, **kwargs)``
    # builds ``ResNet(num_classes, BasicBlock, [2, 2, 2, 2], **kwargs)``; the count a call
    # passes binds the named parameter (the detection head's), never ``**kwargs``
    src = KWARGS_BUILDER.format(args="num_classes=16, pretrained=True").replace(
        "def net(pretrained=False, **kwargs):\n    model = Net(**kwargs)\n",
        "def net(num_classes, pretrained=False, **kwargs):\n    model = Net(**kwargs)\n")
    assert "def net(num_classes," in src
    r, out = run(src)
    assert r.findings == []


def test_builder_that_changes_its_kwargs_is_not_read():
    # ``kwargs.pop("num_classes")``: the count the call passes may not reach the constructor
    src = KWARGS_BUILDER.format(args="num_classes=16, pretrained=True").replace(
        "    model = Net(**kwargs)\n", "    n = kwargs.pop(\"num_classes\", 1000)\n    model = Net(**kwargs)\n")
    r, out = run(src)
    assert r.findings == []


# (WZMIAOMIAO/deep-learning-for-image-processing and its many copies: predict, export and
# analysis scripts build ``resnet34(num_classes=5)`` and load ``./resNet34.pth``, the model
# their train.py fine-tuned and saved; ``FasterRCNN(num_classes=91)`` loads the COCO
# checkpoint, whose head has 91 classes)
INFER = """\
import torch
from model import resnet34

def main():
    model = resnet34(num_classes=5)
    model.load_state_dict(torch.load({path}, map_location="cpu"))
    model.eval()
{train}"""


@pytest.mark.parametrize("path, train, reported", [
    ('"./resNet34.pth"', "", False),  # an inference script: its own fine-tuned model
    ('"./resNet34.pth"', "    loss.backward()\n", True),  # a training script: the architecture's weights
    ('"./resnet34-333f7ec4.pth"', "", True),  # torchvision's download
    ('"./resnet34_imagenet.pth"', "", True),
    ('"./pretrained/resnet34.pth"', "", True),
])
def test_an_inference_script_loading_a_file_named_after_the_architecture(path, train, reported):
    r, _ = run(INFER.format(path=path, train=train), unsafe_fixes=True)
    assert len(r.findings) == (1 if reported else 0), [f.message for f in r.findings]


def test_a_load_in_a_plain_class_is_an_inference_script_too():
    src = ("import torch\nfrom model import resnet34\n\nclass Service:\n    def load(self):\n"
           "        model = resnet34(num_classes=6)\n        model.load_state_dict(torch.load('resNet34.pth'))\n"
           "        return model\n")
    silent(src)


@pytest.mark.parametrize("count, reported", [(91, False), (81, False), (3, True)])
def test_a_class_count_of_the_dataset_the_checkpoint_names(count, reported):
    src = ("import torch\nfrom network_files import FasterRCNN\n\ndef create_model(backbone):\n"
           f"    model = FasterRCNN(backbone=backbone, num_classes={count})\n"
           "    weights = torch.load('./backbone/fasterrcnn_resnet50_fpn_coco.pth', map_location='cpu')\n"
           "    model.load_state_dict(weights, strict=False)\n    return model\n\nloss.backward()\n")
    r, _ = run(src, unsafe_fixes=True)
    assert len(r.findings) == (1 if reported else 0), [f.message for f in r.findings]


@pytest.mark.parametrize("build, found", [
    # Helias/Car-Model-Recognition main.py (the code its issue #2 ran)
    ("classes = {'num_classes': len(names)}\nnet = models.resnet152(pretrained=True, **classes)\n", "len(names)"),
    ("net = models.resnet18(pretrained=True, **{'num_classes': 10})\n", "10"),
    ("def build():\n    kw = dict(num_classes=7)\n    return models.resnet18(pretrained=True, **kw)\n", "7"),
    # (a dict written in another block is not read: the call is found in the chunk that holds its words)
    ("kw = dict(num_classes=7)\n\n\ndef build():\n    return models.resnet18(pretrained=True, **kw)\n", None),
    # look-alikes: 1000 classes; no class count in the dict; a dict that cannot be read
    ("net = models.resnet18(pretrained=True, **{'num_classes': 1000})\n", None),
    ("opts = {'progress': False}\nnet = models.resnet18(pretrained=True, **opts)\n", None),
    ("net = models.resnet18(pretrained=True, **vars(args))\n", None),
])
def test_pretrained_builder_given_its_class_count_in_a_dict(build, found):
    r, out = run(TV + "names = ['a', 'b', 'c']\n" + build, unsafe_fixes=True)
    assert [f.code for f in r.findings] == (["TM401"] if found else [])
    if found:
        f = r.findings[0]
        assert f"num_classes={found}" in f.message and f.fix is None and out.endswith(build)
        assert "(not fixed: the class count is passed in a `**` dict)" in f.message


@pytest.mark.parametrize("change", ["kwargs.pop('num_classes')", "del kwargs['num_classes']", "kwargs.clear()"])
def test_a_class_count_dict_changed_in_place_is_not_read(change):
    """(review) ``kwargs = {"num_classes": n}; kwargs.pop("num_classes")`` before
    ``resnet18(pretrained=True, **kwargs)``: the entry may be gone."""
    silent(TV + f"def build(n):\n    kwargs = {{'num_classes': n}}\n    {change}\n"
                "    return models.resnet18(pretrained=True, **kwargs)\n")


WRAPPER = """\
import torchvision

IMAGENET_OUTPUT_SIZE = 1000


class Wrapper:
    def __init__(self, num_classes):
        self.num_classes = num_classes

    def build(self, network_type, pretrained):
{guard}
        if network_type == "resnet-18":
            model = torchvision.models.resnet18(pretrained=pretrained, num_classes=self.num_classes)
        else:
            model = torchvision.models.alexnet(pretrained=pretrained, num_classes=self.num_classes)
        return model
"""


@pytest.mark.parametrize("guard, found", [
    ("        pass", 2),
    # PaulCCCCCCH/Robustar_implementation (before 63fcd5c): the mismatch is refused first
    ("        if pretrained and self.num_classes != IMAGENET_OUTPUT_SIZE:\n            raise Exception('1000 classes')", 0),
    ("        if self.num_classes != 1000:\n            return None", 0),
    ("        assert self.num_classes == IMAGENET_OUTPUT_SIZE", 0),
    # look-alikes of a guard: it only warns, or it tests something else too
    ("        if pretrained and self.num_classes != IMAGENET_OUTPUT_SIZE:\n            print('1000 classes')", 2),
    ("        if network_type == 'x' and self.num_classes != 1000:\n            raise Exception('no')", 2),
    ("        if pretrained and self.num_classes != 10:\n            raise Exception('no')", 2),
])
def test_a_builder_after_a_guard_that_refuses_another_class_count(guard, found):
    src = WRAPPER.format(guard=guard)
    r = process_text("wrapper.py", src, Options(select=frozenset({"TM401"})))
    assert len(r.findings) == found


@pytest.mark.parametrize("path, reported", [
    # a directory named after the architecture, the file's name not: where the project
    # keeps its own fine-tuned checkpoints (chihina eval_all.py, which trains nothing)
    ('"../runs/model/resnet/" + name', False),
    ('os.path.join("checkpoints/resnet18/", name)', False),
    ('f"../runs/resnet/{name}"', False),
    # the file's name says the architecture; pretraining or ImageNet said anywhere
    ('os.path.join("weights", "resnet18.pth")', True),
    ('"../runs/resnet/" + "resnet18.pth"', True),
    ('"../pretrained/" + name', True),
    ('os.path.join("imagenet", name)', True),
])
def test_an_architecture_named_only_by_a_directory(path, reported):
    r, _ = run(f"""
    import os
    import torch
    import torch.nn as nn
    from torchvision import models


    def evaluate(name):
        model = models.resnet18(pretrained=True)
        model.fc = nn.Linear(model.fc.in_features, 2)
        model.load_state_dict(torch.load({path}))
        return model
    """)
    assert [f.code for f in r.findings] == (["TM401"] if reported else [])


def test_a_checkpoint_a_neighbour_saves_from_a_moved_model_of_the_same_build(tmp_path):
    """AISafety-HKUST BTIDBF: pretrain.py saves ``UNet(n_channels=3, num_classes=3).to(device)``'s
    state dict, which finetune.py loads strictly into ``UNet(..., num_classes=3)``: the
    same build (``num_classes`` is the output channels), no head change."""
    from torchmend.engine import process_file

    (tmp_path / "pretrain.py").write_text(
        "import torch\nfrom unet import UNet\n\nif __name__ == '__main__':\n"
        "    generator = UNet(n_channels=3, num_classes=3).to('cpu')\n"
        "    opt = torch.optim.Adam(generator.parameters())\n    loss = generator(torch.randn(2, 3, 8, 8)).sum()\n"
        "    loss.backward()\n    opt.step()\n    torch.save(generator.state_dict(), 'pretrain/init_generator.pt')\n")
    src = ("import torch\nfrom unet import UNet\n\n\ndef main():\n    gen = UNet(n_channels=3, num_classes=3)\n"
           "    gen.load_state_dict(torch.load('pretrain/init_generator.pt'))\n"
           "    opt = torch.optim.Adam(gen.parameters())\n    loss = gen(torch.randn(2, 3, 8, 8)).sum()\n"
           "    loss.backward()\n    opt.step()\n")
    (tmp_path / "finetune.py").write_text(src)
    res = process_file(str(tmp_path / "finetune.py"), Options(select=frozenset({"TM401"})))
    assert res.error is None and res.findings == []


_GLOBAL_MODEL = """\
import torch
from torchvision import models

model = models.regnet_x_800mf()
model.fc = torch.nn.Linear(672, 42)
{between}

def pre_launch_setup(loader):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{inside}    model.load_state_dict(torch.load("weight_cnn/before_regnet_x_800mf.pt", map_location=device))
    opt = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        opt.step()
"""


@pytest.mark.parametrize("between, inside, found", [
    # stolzor/classification_simpsons: the head replaced at module level, the ImageNet
    # weights loaded into the global model in a function
    ("", "", True),
    # look-alikes: the name bound again at module level; the function binds its own model;
    # the function loads the very model the file trains and saves
    ("model = models.regnet_x_800mf()\n", "", False),
    ("", "    model = models.regnet_x_800mf()\n", False),
    ("\n\ndef save():\n    torch.save(model.state_dict(), 'weight_cnn/before_regnet_x_800mf.pt')\n", "", False),
])
def test_a_head_replaced_at_module_level_before_a_load_in_a_function(between, inside, found):
    src = _GLOBAL_MODEL.format(between=between, inside=inside)
    if not found:
        r, out = run(src)
        assert r.findings == [] and out == src
        return
    f, out = fixed(src)
    assert "after `model.fc` was replaced at module level (line 5)" in f.message
    assert "    load_matching_state_dict(model, torch.load(" in out


_OWN_CHECKPOINT = """\
import torch
from torch import nn
from torchvision import models


def load_checkpoint(filepath):
    checkpoint = torch.load(filepath)
    model = models.vgg16(weights="DEFAULT")
    model.classifier = {head}
    model.load_state_dict(checkpoint['model_state_dict'])
{extra}    return model


def train_model(model, loader, criterion, optimizer):
    for images, labels in loader:
        optimizer.zero_grad()
        criterion(model(images), labels).backward()
        optimizer.step()
"""


@pytest.mark.parametrize("head, extra, found", [
    # the Udacity image-classifier project: the head is built from the checkpoint itself,
    # or the checkpoint carries the run's metadata (class_to_idx, epochs): the file's own
    ("nn.Sequential(nn.Linear(25088, checkpoint['n_hidden']), nn.ReLU(), nn.Linear(512, 102))", "", False),
    ("checkpoint['classifier']", "", False),
    ("nn.Linear(25088, 102)", "    model.class_to_idx = checkpoint['class_to_idx']\n", False),
    # the control: nothing says whose checkpoint it is
    ("nn.Linear(25088, 102)", "", True),
])
def test_a_checkpoint_that_sizes_the_head_or_carries_its_run(head, extra, found):
    r, _ = run(_OWN_CHECKPOINT.format(head=head, extra=extra))
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]


_INFERENCE_LOAD = """\
# Inference only ({comment}): loads the author's fine-tuned network.
import torch
import torch.nn as nn
from torchvision import models
from torchvision.models import ResNet18_Weights


def load_model(num_classes=10):
    model = models.resnet18(weights=ResNet18_Weights.IMAGENET1K_V1)
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    model.load_state_dict(torch.load("{path}"))
{after}    return model
{train}"""


@pytest.mark.parametrize("comment, path, after, train, found", [
    # AsserElfeki's GUI: a file that trains nothing loads and evaluates: the head's weights
    # can only come from that checkpoint, whatever its name says
    ("nothing is trained", "./READY-MODELS/RESNET.pth", "    model.eval()\n", "", False),
    ("nothing is trained", "./READY-MODELS/RESNET.pth", "    model.train(False)\n", "", False),
    # the word in a comment is no training
    ("no backward pass here", "./READY-MODELS/final.pth", "", "", False),
    # the controls: the file trains (a backward call), or nothing puts the model in eval mode
    ("nothing is trained", "./READY-MODELS/RESNET.pth", "    model.eval()\n",
     "\n\ndef step(loss):\n    loss.backward()\n", True),
    ("nothing is trained", "./READY-MODELS/RESNET.pth", "", "", True),
])
def test_an_inference_load_in_a_file_that_trains_nothing(comment, path, after, train, found):
    r, _ = run(_INFERENCE_LOAD.format(comment=comment, path=path, after=after, train=train))
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]


@pytest.mark.parametrize("stem, found", [
    # AsserElfeki's notebook: the grayscale stem replaced too: only a checkpoint of this
    # very model fits (its "pretrained_resnet18.pt" is the author's fine-tuned one)
    ("model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)\n", False),
    ("model.features[0] = nn.Conv2d(1, 64, kernel_size=3, padding=1)\n", False),
    # controls: no stem replaced; another model's stem; a later layer of ``features``
    ("", True),
    ("other.conv1 = nn.Conv2d(1, 64, kernel_size=7)\n", True),
    ("model.features[3] = nn.Conv2d(64, 64, kernel_size=3, padding=1)\n", True),
])
def test_a_stem_replaced_with_the_head(stem, found):
    src = ("import torch\nimport torch.nn as nn\nfrom torchvision import models\n\n"
           "model = models.resnet18(weights='IMAGENET1K_V1')\nmodel.fc = nn.Linear(512, 10)\n" + stem +
           "model.load_state_dict(torch.load('./pretrained_resnet18.pt'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(x).sum()\nloss.backward()\n")
    r, _ = run(src)
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]


def test_a_head_that_reads_only_a_weight_shape_of_the_checkpoint_is_still_a_change():
    """(review) ``nn.Linear(state["fc.weight"].shape[1], 10)`` sizes the head's input from
    the checkpoint, not its classes: the strict load still fails on ``fc.weight``."""
    src = ("import torch\nimport torch.nn as nn\nfrom torchvision import models\n\n\ndef finetune(path):\n"
           "    state = torch.load(path)\n    model = models.resnet18()\n"
           "    model.fc = nn.Linear(state['fc.weight'].shape[1], 10)\n    model.load_state_dict(state)\n"
           "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    model(x).sum().backward()\n")
    r, _ = run(src)
    assert [f.code for f in r.findings] == ["TM401"]


_DEPLOY = """\
import torch
import torchvision
from torch import nn
from going_modular.utils import save_model

vit_model = torchvision.models.vit_b_16(weights=torchvision.models.ViT_B_16_Weights.DEFAULT)
vit_model.heads = nn.Sequential(nn.Linear(in_features=768, out_features=3))
opt = torch.optim.Adam(vit_model.heads.parameters(), lr=1e-3)
nn.functional.cross_entropy(vit_model(x), y).backward()
opt.step()
save_model(model=vit_model, target_dir="models", model_name="{saved}")

vit_model = torchvision.models.vit_b_16(weights=torchvision.models.ViT_B_16_Weights.DEFAULT)
vit_model.heads = nn.Sequential(nn.Linear(in_features=768, out_features=3))
vit_model.load_state_dict(torch.load("models/vit_model.pth", map_location="cpu"))
"""


@pytest.mark.parametrize("saved, body, found", [
    # learnpytorch's deployment notebook: the fine-tuned model saved through the project's
    # ``save_model`` helper, told the very file name, then loaded into the same build
    ("vit_model.pth", "    torch.save(obj=model.state_dict(), f=target_dir + '/' + model_name)\n", False),
    # controls: another file name; a helper that saves something else
    ("other.pth", "    torch.save(obj=model.state_dict(), f=target_dir + '/' + model_name)\n", True),
    ("vit_model.pth", "    torch.save(obj={'name': model_name}, f=target_dir + '/' + model_name)\n", True),
])
def test_a_checkpoint_saved_by_a_helper_of_the_project(tmp_path, saved, body, found):
    from torchmend.engine import process_file

    pkg = tmp_path / "going_modular"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("import torch\n\n\ndef save_model(model, target_dir, model_name):\n" + body)
    script = tmp_path / "deploy.py"
    script.write_text(_DEPLOY.format(saved=saved))
    r = process_file(str(script), Options(select=frozenset({"TM401"})))
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]


@pytest.mark.parametrize("reset, found", [
    # timm's way to replace a head, before a strict load of the ImageNet weights
    ("model.reset_classifier(5)\n", True),
    ("model.reset_classifier(num_classes=5)\n", True),
    # look-alikes: the head removed (a backbone); the head reset after the load; another model
    ("model.reset_classifier(0)\n", False),
    ("", False),
    ("other.reset_classifier(5)\n", False),
])
def test_a_head_replaced_by_timms_reset_classifier(reset, found):
    src = ("import torch\nimport timm\n\nmodel = timm.create_model('resnet50', pretrained=False)\n" + reset +
           "model.load_state_dict(torch.load('resnet50_imagenet_pretrained.pth'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nmodel(x).sum().backward()\n")
    r, _ = run(src)
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]
    ref = process_text("finetune.py", textwrap.dedent(src), Options(fix=False, shortcuts=False, select=frozenset({"TM401"})))
    assert [f.code for f in ref.findings] == [f.code for f in r.findings]


@pytest.mark.parametrize("path, found", [
    # a checkpoint of CIFAR-100 loaded into a 10-class head: ``cifar100`` is not ``cifar10``
    ("./save/resnet_small_cifar100_pretrain/ckpt.pth", True),
    ("./save/resnet_small_cifar10_pretrain/ckpt.pth", False),
])
def test_a_dataset_named_in_the_path_is_read_whole(path, found):
    src = ("import torch\nimport torch.nn as nn\n\n\nclass ResNet(nn.Module):\n    def __init__(self, num_classes=100):\n"
           "        super().__init__()\n        self.linear = nn.Linear(16, num_classes)\n\n\n"
           f"model = ResNet(num_classes=10)\nmodel.load_state_dict(torch.load('{path}'), strict=False)\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nmodel(x).sum().backward()\n")
    r, _ = run(src)
    assert [f.code for f in r.findings] == (["TM401"] if found else []), [f.message for f in r.findings]


@pytest.mark.parametrize("size", ["state['fc.weight'].shape[0]", "state['fc.weight'].size(0)", "len(state['fc.bias'])"])
def test_a_head_sized_by_the_checkpoints_class_count(size):
    """(review) the new head takes the checkpoint's class count: it fits, the strict load works."""
    src = ("import torch\nimport torch.nn as nn\nfrom torchvision import models\n\n\ndef finetune(path):\n"
           "    state = torch.load(path)\n    model = models.resnet18()\n"
           f"    model.fc = nn.Linear(512, {size})\n    model.load_state_dict(state)\n"
           "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    model(x).sum().backward()\n")
    r, _ = run(src)
    assert r.findings == []


@pytest.mark.parametrize("path, count", [
    ("fcn_voc2012_pretrained.pth", 21), ("maskrcnn_coco2017_pretrained.pth", 91), ("x_cifar10_pretrained.pth", 10)])
def test_a_dataset_with_a_year_in_the_checkpoints_name(path, count):
    src = ("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self, num_classes=1000):\n"
           "        super().__init__()\n        self.fc = nn.Linear(16, num_classes)\n\n\n"
           f"model = Net(num_classes={count})\nmodel.load_state_dict(torch.load('{path}'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nmodel(x).sum().backward()\n")
    r, _ = run(src)
    assert r.findings == []


@pytest.mark.parametrize("reset", ["model.reset_classifier()\n", "model.reset_classifier(1000)\n"])
def test_a_reset_classifier_that_keeps_the_head(reset):
    src = ("import torch\nimport timm\n\nmodel = timm.create_model('resnet50', pretrained=False)\n" + reset +
           "model.load_state_dict(torch.load('resnet50_imagenet_pretrained.pth'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nmodel(x).sum().backward()\n")
    r, _ = run(src)
    assert r.findings == []


def test_a_stem_replaced_before_a_download_is_said_not_fixed():
    """(review) conv1 and fc replaced, then torchvision's download loaded: it fails on both;
    a filtered load would leave the stem untrained: report only."""
    src = ("import torch\nimport torch.nn as nn\nfrom torchvision import models\n\nmodel = models.resnet18()\n"
           "model.fc = nn.Linear(512, 10)\nmodel.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3)\n"
           "model.load_state_dict(torch.load('resnet18-f37072fd.pth'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel(x).sum().backward()\n")
    r, out = run(src)
    assert [f.code for f in r.findings] == ["TM401"] and r.findings[0].fix is None and not r.changed
    assert "the input stem was replaced too" in r.findings[0].message


def test_an_imagenet21k_checkpoint_does_not_fit_a_1000_class_head():
    src = ("import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self, num_classes=21843):\n"
           "        super().__init__()\n        self.fc = nn.Linear(16, num_classes)\n\n\n"
           "model = Net(num_classes=1000)\nmodel.load_state_dict(torch.load('checkpoints/imagenet21k_net.pth'))\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nmodel(x).sum().backward()\n")
    r, _ = run(src)
    assert [f.code for f in r.findings] == ["TM401"]
