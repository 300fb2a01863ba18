"""What TM401 needs: where a loaded state dict comes from (a checkpoint file, a hub or
model-zoo download, a zoo model's weights), whether the model it goes into had its head
changed before (an assignment in the same scope, a builder function that replaces the
head, or a constructor told another number of classes), whether the checkpoint is
recognisably a pretrained one, and whether it is the file's own (saved from a model with
the same head, to the same path, in this file or a neighbouring one).

Values are followed through the semantic model: names (their reaching bindings),
parameters (their call-site values), builders (their return values), containers.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Optional

from ..semantic import BindingKind, OriginKind, SemanticModel
from ..semantic import names as N
from ._tensor_device import is_test_path

HEADS = ("fc", "classifier", "head", "heads", "last_linear")
# constructor keywords that set the number of classes (the size of the head)
CLASS_KWARGS = ("num_classes", "n_classes", "nclasses", "num_class", "n_class", "class_num", "classes_num")
STATE_KEYS = ("state_dict", "model", "model_state_dict", "net", "model_state", "weights", "params")
RESUME_KEYS = ("optimizer", "optimizer_state_dict", "optim", "epoch", "scheduler", "lr_scheduler", "step",
               "optimizer_state", "global_step", "best_acc", "best_prec1",
               # a run's own metadata, saved beside the weights (the Udacity image-classifier
               # project's ``{'arch': ..., 'hidden_units': ..., 'class_to_idx': ...}``)
               "epochs", "num_epochs", "class_to_idx", "idx_to_class", "hidden_units", "hidden_layers",
               "learning_rate")
FILE_LOADS = frozenset({"torch.load", "torch.serialization.load", "safetensors.torch.load_file"})
SAVES = frozenset({"torch.save", "torch.serialization.save", "safetensors.torch.save_file"})
HUB_FILES = frozenset({"huggingface_hub.hf_hub_download", "huggingface_hub.file_download.hf_hub_download"})
_FOREIGN = re.compile(
    r"pre-?train|imagenet|resnet|resnext|vgg|vit|bert|densenet|mobilenet|efficientnet|alexnet|inception|"
    r"convnext|swin|deit|regnet|squeezenet|shufflenet|googlenet|mnasnet|roberta|download\.pytorch\.org|"
    r"model_zoo|modelzoo|/hub/|huggingface\.co|backbone",
    re.I,
)
# a download known to hold its architecture's pretrained weights (the original head, or
# none: a backbone's)
_ORIGINAL_HEAD = re.compile(r"pre-?train|imagenet|download\.pytorch\.org", re.I)
# a checkpoint that was downloaded (or says it holds pretrained weights)
_DOWNLOADED = re.compile(
    r"pre-?train|imagenet|backbone|download\.pytorch\.org|model_zoo|modelzoo|/hub/|huggingface\.co"
    r"|-[0-9a-f]{8}\.(?:pth|pt)\b",
    re.I,
)
# a download for sure: a zoo, a hub, torchvision's hashed file name (not the words
# "pretrained" or "imagenet", which people also put in their own checkpoints' names)
_FETCHED_NAME = re.compile(
    r"download\.pytorch\.org|model_zoo|modelzoo|/hub/|huggingface\.co|-[0-9a-f]{8}\.(?:pth|pt)\b", re.I)
# datasets a checkpoint's name may give, and their class counts (with and without a
# background class)
_DATASET_CLASSES = (
    ("coco", (80, 81, 91)), ("voc", (20, 21)), ("imagenet(?!-?2[12]k)", (1000, 1001)), ("cityscapes", (19, 34)),
    ("ade20k", (150, 151)), ("cifar100", (100,)), ("cifar10(?!0)", (10,)), ("mnist", (10,)),
)
_OWN = re.compile(r"fine-?tun|fine_tun|best|epoch|resume|last|finetun|checkpoint_\d|ckpt_\d", re.I)
# module methods that return the module itself (``model.to(device)``, ``model.eval()``)
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "double", "half", "bfloat16",
                          "requires_grad_", "share_memory"})
# methods that read a dict without changing it
_READ_ONLY = ("keys", "items", "values", "get", "copy", "__contains__")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
TV_DEFAULT_CLASSES = 1000

# torchvision classification builders: the attribute path of their final Linear layer
_TV_HEADS = (
    (re.compile(r"(resnet\d+|resnext\d+_\w+|wide_resnet\d+_2|regnet_[xy]_\w+|shufflenet_v2_x\w+|googlenet)$"), "fc"),
    (re.compile(r"densenet\d+$"), "classifier"),
    (re.compile(r"(vgg\d+(_bn)?|alexnet)$"), "classifier[6]"),
    (re.compile(r"convnext_\w+$"), "classifier[2]"),
    (re.compile(r"(efficientnet_b\d|efficientnet_v2_[sml]|mobilenet_v2|mnasnet\w+)$"), "classifier[1]"),
    (re.compile(r"mobilenet_v3_(large|small)$"), "classifier[3]"),
    (re.compile(r"maxvit_t$"), "classifier[5]"),
    (re.compile(r"vit_\w+$"), "heads.head"),
    (re.compile(r"swin_(v2_)?[tsb]$"), "head"),
)


def may_be_torchvision_builder(func) -> bool:
    """The callee's last name is one of a torchvision classification builder (a cheap
    test before the qualified name is resolved)."""
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if last is None:
        return False
    return any(rx.fullmatch(last) for rx, _ in (*_TV_HEADS, *_TV_TASKS)) or bool(re.fullmatch(r"squeezenet1_[01]|inception_v3", last))


def builder_by_name(sem, func) -> bool:
    """``func`` is a torchvision classification builder chosen by name when the code runs:
    ``torchvision.models.__dict__[arch]`` (the ImageNet training scripts' idiom), whose
    entries that take ``pretrained=``/``weights=`` are the classification builders (the
    detection and segmentation ones live in submodules)."""
    if not isinstance(func, ast.Subscript):
        return False
    d = func.value
    return isinstance(d, ast.Attribute) and d.attr == "__dict__" and "torchvision.models" in sem.qualnames(d.value)


_TV_TASKS = (  # (builder name, the class count its pretrained weights have)
    (re.compile(r"keypointrcnn_\w+"), 2),
    (re.compile(r"(fasterrcnn|maskrcnn|retinanet|fcos|ssd|ssdlite)\w*"), 91),
    (re.compile(r"(deeplabv3|fcn|lraspp)_\w+"), 21),
)


def torchvision_task_classes(q: Optional[str]) -> Optional[int]:
    """The class count of a torchvision detection/segmentation builder's pretrained
    weights (91 COCO categories, 21 VOC ones), None for anything else."""
    if not q or not q.startswith(("torchvision.models.detection.", "torchvision.models.segmentation.")):
        return None
    last = q.rsplit(".", 1)[-1]
    for rx, n in _TV_TASKS:
        if rx.fullmatch(last):
            return n
    return None


# builders whose head is not one Linear layer (``torchvision_head`` gives ''): what to
# replace, and why the rule does not
TV_OTHER_HEADS = {
    "inception_v3": ("`fc` (and `AuxLogits.fc`)", "it has two heads, `fc` and the auxiliary `AuxLogits.fc`"),
    "squeezenet1_0": ("`classifier[1]`", "its head is a Conv2d"),
    "squeezenet1_1": ("`classifier[1]`", "its head is a Conv2d"),
}


def torchvision_head(q: Optional[str]) -> Optional[str]:
    """The head path of a torchvision classification builder (``fc`` for resnet50),
    '' for one whose head is not a single Linear layer (squeezenet, inception_v3), None
    for anything else."""
    if not q or not q.startswith("torchvision.models."):
        return None
    parts = q.split(".")
    if len(parts) not in (3, 4) or any(p in ("detection", "segmentation", "video", "quantization", "optical_flow")
                                        for p in parts):
        return None
    last = parts[-1]
    for rx, head in _TV_HEADS:
        if rx.fullmatch(last):
            return head
    if re.fullmatch(r"squeezenet1_[01]|inception_v3", last):
        return ""
    return None


@dataclass
class Source:
    """Where a state dict comes from: ``call`` reads it (torch.load, a hub download, a
    weights enum's ``get_state_dict``, ``zoo_model.state_dict()``); ``kind`` is
    ``file``, ``hub`` (a download) or ``zoo`` (a pretrained model's weights); ``path``
    the file/URL expression; ``ckpt`` the checkpoint variable (``ckpt`` of
    ``ckpt["state_dict"]``) when there is one."""

    call: ast.Call
    kind: str
    path: Optional[ast.AST] = None
    ckpt: Optional[ast.Name] = None
    # merged by name into the model's own state (``model_dict.update(sd)``): only the
    # entries under names the model still has are loaded
    merged: bool = False
    # kept by name (``{k: v for k, v in sd.items() if k in model_dict}``): whoever wrote it
    # expects the checkpoint to hold entries the model does not have
    filtered: bool = False


class Values:
    """Value-following for TM401 on one file."""

    def __init__(self, sem: SemanticModel):
        self.sem = sem

    # ------------------------------------------------------------------ the state source
    def source(self, expr, at, depth: int = 0, into: Optional[str] = None) -> Optional[Source]:
        """Where the state dict ``expr`` loaded at ``at`` (the ``load_state_dict`` call)
        comes from; ``into``: the model it is loaded into (``at``'s receiver)."""
        sem = self.sem
        if depth > 6 or expr is None:
            return None
        if depth == 0:
            into = sem.dotted(sem.receiver(at))
        if isinstance(expr, ast.Call):
            qs = sem.qualnames(expr.func)
            if qs & FILE_LOADS:
                return Source(expr, "file", self._path_arg(expr))
            if qs & N.HUB_LOADERS:
                return Source(expr, "hub", self._path_arg(expr, ("url",)))
            m = sem.method_name(expr)
            if m == "get_state_dict" and any(q.startswith("torchvision.models.") for q in sem.qualnames(expr.func.value)):
                return Source(expr, "hub")
            if m == "state_dict" and not expr.args and self.pretrained_model(sem.receiver(expr)):
                if sem.dotted(sem.receiver(expr)) == sem.dotted(sem.receiver(at)):
                    return None  # a model's own state
                return Source(expr, "zoo")
            if m == "get" and expr.args and isinstance(expr.args[0], ast.Constant) and expr.args[0].value in STATE_KEYS:
                inner = self.source(sem.receiver(expr), at, depth + 1, into)
                if inner is not None:
                    r = sem.receiver(expr)
                    return Source(inner.call, inner.kind, inner.path, r if isinstance(r, ast.Name) else inner.ckpt)
            return None
        if isinstance(expr, ast.Subscript):
            k = expr.slice
            if isinstance(k, ast.Constant) and k.value in STATE_KEYS:
                inner = self.source(expr.value, at, depth + 1, into)
                if inner is not None:
                    ckpt = expr.value if isinstance(expr.value, ast.Name) else inner.ckpt
                    return Source(inner.call, inner.kind, inner.path, ckpt)
            return None
        if isinstance(expr, ast.DictComp):
            inner = self._key_filtered(expr, into)
            got = self.source(inner, at, depth + 1, into) if inner is not None else None
            return dataclasses.replace(got, filtered=True) if got is not None else None
        if isinstance(expr, ast.Name):
            bs = sem.reaching(expr)
            if len(bs) != 1:
                return None
            b = bs[0]
            if b.kind not in (BindingKind.ASSIGNMENT, BindingKind.NAMED_EXPR) or b.value is None:
                return None
            update = self._own_state_updated(b, at, into)
            if update is not None:
                inner = self.source(update, at, depth + 1, into)
                if inner is None:
                    return None
                # only name-filtered entries merged: a head under new names takes none of them
                named = self._name_filtered(update, into)
                return Source(inner.call, inner.kind, inner.path, inner.ckpt, merged=named, filtered=named or inner.filtered)
            if self._mutated_between(b, at):
                return None
            inner = self.source(b.value, b.stmt or at, depth + 1, into)
            if inner is None:
                return None
            return Source(inner.call, inner.kind, inner.path, inner.ckpt or expr, inner.merged, inner.filtered)
        return None

    def _own_state(self, expr, into: Optional[str]) -> bool:
        """``expr`` is the state dict of the model ``into`` (``model.state_dict()``, its
        ``keys()``, or a name bound only to one of those)."""
        sem = self.sem
        target = into
        if target is None:
            return False
        for _ in range(3):
            if isinstance(expr, ast.Call) and sem.method_name(expr) == "keys" and not expr.args:
                expr = sem.receiver(expr)
                continue
            if isinstance(expr, ast.Call):
                return sem.method_name(expr) == "state_dict" and not expr.args and sem.dotted(sem.receiver(expr)) == target
            if not isinstance(expr, ast.Name):
                return False
            bs = sem.reaching(expr)
            if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or bs[0].value is None:
                return False
            expr = bs[0].value
        return False

    def _key_filtered(self, comp: ast.DictComp, into: Optional[str]) -> Optional[ast.AST]:
        """``{k: v for k, v in sd.items() if k in model_dict}``: the entries of ``sd``
        whose names the model has, whatever their shapes (a head replaced under its old
        name keeps its entry and still mismatches); ``sd`` then.  None for any other
        comprehension (one that tests shapes, or drops keys by name, filters for real)."""
        sem = self.sem
        if len(comp.generators) != 1:
            return None
        g = comp.generators[0]
        t = g.target
        if g.is_async or not (isinstance(t, ast.Tuple) and len(t.elts) == 2 and all(isinstance(e, ast.Name) for e in t.elts)):
            return None
        k, v = t.elts[0].id, t.elts[1].id
        if not (isinstance(comp.key, ast.Name) and comp.key.id == k and isinstance(comp.value, ast.Name) and comp.value.id == v):
            return None
        it = g.iter
        if not (isinstance(it, ast.Call) and sem.method_name(it) == "items" and not it.args and not it.keywords):
            return None
        for cond in g.ifs:
            if not (isinstance(cond, ast.Compare) and len(cond.ops) == 1 and isinstance(cond.ops[0], ast.In)
                    and isinstance(cond.left, ast.Name) and cond.left.id == k and self._own_state(cond.comparators[0], into)):
                return None
        return sem.receiver(it)

    def _name_filtered(self, expr, into: Optional[str]) -> bool:
        """``expr`` is (a name bound only to) ``{k: v for k, v in sd.items() if k in model_dict}``."""
        if isinstance(expr, ast.Name):
            bs = self.sem.reaching(expr)
            if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT:
                return False
            expr = bs[0].value
        return isinstance(expr, ast.DictComp) and self._key_filtered(expr, into) is not None

    def _own_state_updated(self, b, at, into: Optional[str]) -> Optional[ast.AST]:
        """``model_dict = model.state_dict(); model_dict.update(pretrained); model.load_state_dict(model_dict)``:
        the argument of the one ``update`` between the binding and the load (what overrides
        the model's own entries), when nothing else changes the dict."""
        sem = self.sem
        if not self._own_state(b.value, into):
            return None
        got = None
        end = (at.lineno, at.col_offset)
        for ref in sem.references(b):
            if not b.order <= (ref.lineno, ref.col_offset) < end or not any(x is b for x in sem.reaching(ref)):
                continue
            parent = sem.parent(ref)
            if isinstance(parent, ast.Attribute) and parent.value is ref:
                call = sem.parent(parent)
                if parent.attr == "update" and isinstance(call, ast.Call) and call.func is parent and got is None \
                        and len(call.args) == 1 and not call.keywords and isinstance(sem.parent(call), ast.Expr):
                    got = call.args[0]
                    continue
                if parent.attr in _READ_ONLY:
                    continue
                return None
            if isinstance(parent, ast.Compare) or (isinstance(parent, ast.Call) and parent.func is ref):
                continue
            if isinstance(parent, ast.Call) and at is parent:
                continue
            return None
        return got

    @staticmethod
    def _path_arg(call: ast.Call, names=("f", "filename")):
        if call.args and not isinstance(call.args[0], ast.Starred):
            return call.args[0]
        for k in call.keywords:
            if k.arg in names:
                return k.value
        return None

    def _mutated_between(self, b, at) -> bool:
        """The state-dict variable is changed or handed to an unknown call between its
        binding and ``at``: ``sd.pop(k)``, ``del sd[k]``, ``sd[k] = v``, ``filter(sd)``."""
        sem = self.sem
        start = b.order
        end = (at.lineno, at.col_offset)
        for ref in sem.references(b):
            p = (ref.lineno, ref.col_offset)
            if not start <= p < end:
                continue
            parent = sem.parent(ref)
            if isinstance(parent, ast.Attribute) and parent.value is ref:
                if parent.attr not in _READ_ONLY:
                    return True
            elif isinstance(parent, ast.Subscript) and parent.value is ref:
                if not isinstance(parent.ctx, ast.Load):
                    return True
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "update" \
                    and parent.args == [ref] and not parent.keywords:
                continue  # ``model_dict.update(sd)`` reads it
            elif isinstance(parent, ast.Call) and sem.method_name(parent) == "load_state_dict" and parent.args \
                    and parent.args[0] is ref:
                continue  # ``model.load_state_dict(sd, strict=False)`` (a first try) reads it
            elif isinstance(parent, (ast.Call, ast.keyword)):
                return True
        return False

    def is_resume(self, ckpt: ast.Name) -> bool:
        """The checkpoint also carries optimizer/epoch state: resuming a run of this very
        model, not loading foreign weights."""
        sem = self.sem
        for b in sem.resolve(ckpt):
            for ref in sem.references(b):
                parent = sem.parent(ref)
                if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and parent.slice.value in RESUME_KEYS:
                    return True
                if isinstance(parent, ast.Attribute) and parent.attr == "get":
                    call = sem.parent(parent)
                    if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Constant) \
                            and call.args[0].value in RESUME_KEYS:
                        return True
                if isinstance(parent, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in RESUME_KEYS
                                                           for c in [parent.left, *parent.comparators]):
                    return True
        return False

    # ------------------------------------------------------------------ pretrained evidence
    def pretrained_model(self, expr) -> bool:
        """``expr`` is a model zoo model built with pretrained weights (torchvision
        ``weights=``/``pretrained=True``, timm ``pretrained=True``, ``torch.hub.load``,
        ``from_pretrained``)."""
        sem = self.sem
        if expr is None:
            return False
        origins = sem.origins(expr)
        if not origins:
            return False
        for o in origins:
            if o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call):
                return False
            if not self.pretrained_call(o.node):
                return False
            if any(k.arg in CLASS_KWARGS for k in o.node.keywords):
                return False  # its weights were adapted to another head: not the original's
        return True

    def pretrained_call(self, call: ast.Call) -> bool:
        sem = self.sem
        q = sem.call_qualname(call)
        if not N.is_model_zoo(q):
            return False
        if q == "torch.hub.load" or (q or "").endswith(".from_pretrained"):
            return True
        w = sem.keyword(call, "weights")
        if w is not None and not (isinstance(w, ast.Constant) and w.value is None):
            return True
        p = sem.keyword(call, "pretrained")
        return isinstance(p, ast.Constant) and p.value is True

    def texts(self, expr, depth: int = 0) -> list[str]:
        """The string constants a path expression is built from (through names,
        parameters' call-site values, f-strings, joins)."""
        sem = self.sem
        out: list[str] = []
        if expr is None or depth > 4:
            return out
        for n in sem.walk(expr):
            if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)):
                v = n.value
                out.append(v if isinstance(v, str) else v.decode("latin-1"))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not isinstance(sem.parent(n), ast.Attribute):
                for o in sem.origins(n):
                    if o.kind is OriginKind.VALUE and o.node is not None and o.node is not n:
                        out.extend(self.texts(o.node, depth + 1))
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                vals = sem.element_values(n)
                for v in vals or ():
                    out.extend(self.texts(v, depth + 1))
        return out

    def names_pretrained(self, path) -> bool:
        """The path/URL names a pretrained checkpoint: a string in it mentions pretrain,
        imagenet, a backbone or a model zoo, or its last component (a file's name) an
        architecture (and none mentions fine-tuning/best/epoch/resume)."""
        texts = self.texts(path)
        text = " ".join(texts)
        if _OWN.search(text):
            return False
        # an architecture's name is evidence in a file's name, not in a directory's
        # (``../runs/model/resnet/`` + a name: where a project keeps its own fine-tuned
        # checkpoints); pretraining, ImageNet, a backbone, a zoo or a hub count anywhere
        return any(_DOWNLOADED.search(t) is not None
                   or _FOREIGN.search(re.split(r"[/\\]", t)[-1]) is not None for t in texts)

    def names_a_download(self, src: Source) -> bool:
        """Stronger than :meth:`foreign` for a file: the checkpoint comes from a
        download (a hub, a zoo, the Hugging Face hub) or its path names pretraining,
        ImageNet, a model zoo or a hub, or ends like torchvision's downloads
        (``resnet18-f37072fd.pth``).  A name that only mentions an architecture or a
        backbone (``resNet34.pth``) is how people name their own fine-tuned models too."""
        if self._fetched(src):
            return True
        return src.path is not None and _DOWNLOADED.search(" ".join(self.texts(src.path))) is not None

    def surely_fetched(self, src: Source) -> bool:
        """Stronger than :meth:`names_a_download`: a download (:meth:`_fetched`), or a path
        that names a zoo or a hub, or ends like torchvision's downloads."""
        if self._fetched(src):
            return True
        return src.path is not None and _FETCHED_NAME.search(" ".join(self.texts(src.path))) is not None

    def _fetched(self, src: Source) -> bool:
        """A download (a hub, a zoo, a Hugging Face hub file), a zoo model's weights, or
        a checkpoint the code keeps only the model's entries of."""
        if src.kind in ("hub", "zoo") or src.filtered:
            return True
        if src.path is None:
            return False
        if isinstance(src.path, ast.Call) and self.sem.qualnames(src.path.func) & HUB_FILES:
            return True
        return any(
            o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)
            and self.sem.qualnames(o.node.func) & (HUB_FILES | N.HUB_LOADERS)
            for o in self.sem.origins(src.path)
        )

    def fits_dataset(self, src: Source, count: Optional[int]) -> bool:
        """The checkpoint's path names a dataset (COCO, VOC, ImageNet, ...) and
        ``count`` is a class count of that dataset: the head was sized for it."""
        if count is None or src.path is None:
            return False
        text = " ".join(self.texts(src.path)).lower()
        # (a pattern each: ``cifar100`` is not ``cifar10``; ``voc2012`` is VOC)
        return any(count in counts and re.search(word, text) for word, counts in _DATASET_CLASSES)

    def named_own(self, path) -> bool:
        """The path is held in a variable or attribute named like the file's own run
        (``args.resume``, ``best_model_path``, ``finetuned_ckpt``): used only to stay
        silent, never as evidence for a fix."""
        for n in self.sem.walk(path):
            word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
            if word and _OWN.search(word):
                return True
        return False

    def foreign(self, src: Source) -> bool:
        """The checkpoint is recognisably a pretrained one (or one of another model: the
        code keeps only its entries under the model's names)."""
        if self._fetched(src):
            return True
        return src.path is not None and self.names_pretrained(src.path)

    def original_head(self, src: Source) -> bool:
        """The checkpoint is known to hold its architecture's pretrained weights (its
        original head, or none): a zoo model's weights, torchvision's own (a weights
        enum, its ``model_urls``, a download.pytorch.org URL), a URL naming ImageNet or
        pretraining, or a download whose URL this file does not spell (then nothing
        says otherwise)."""
        if src.kind == "zoo" or src.path is None:
            return True
        sem = self.sem
        for n in sem.walk(src.path):
            if isinstance(n, (ast.Name, ast.Attribute)) and any(q.startswith("torchvision.") for q in sem.qualnames(n)):
                return True
        texts = self.texts(src.path)
        return not texts or _ORIGINAL_HEAD.search(" ".join(texts)) is not None

    # ------------------------------------------------------------------ path identity
    def path_keys(self, expr, depth: int = 0) -> set:
        """Canonical forms of a path expression (one per value it may take): string
        constants by value, names by their values, parameters by their call-site values,
        other expressions by their structure."""
        sem = self.sem
        if expr is None:
            return set()
        if depth > 4:
            return {("dump", ast.dump(expr))}
        if isinstance(expr, ast.Constant):
            return {("s", expr.value)}
        if isinstance(expr, ast.Name):
            out = set()
            for o in sem.origins(expr):
                if o.kind is OriginKind.VALUE and o.node is not None and o.node is not expr:
                    out |= self.path_keys(o.node, depth + 1)
                else:
                    out.add(("name", id(o.binding) if o.binding is not None else expr.id))
            return out
        if isinstance(expr, ast.JoinedStr):
            parts = []
            for v in expr.values:
                if isinstance(v, ast.Constant):
                    parts.append(("s", v.value))
                else:
                    ks = self.path_keys(v.value, depth + 1)
                    parts.append(min(ks, key=repr) if len(ks) == 1 else ("dump", ast.dump(v.value)))
            return {("f", tuple(parts))}
        if isinstance(expr, ast.Call):
            args = []
            for a in expr.args:
                ks = self.path_keys(a, depth + 1)
                args.append(next(iter(ks)) if len(ks) == 1 else ("dump", ast.dump(a)))
            return {("call", sem.qualname(expr.func) or ast.dump(expr.func), tuple(args))}
        if isinstance(expr, ast.BinOp):
            lk, rk = self.path_keys(expr.left, depth + 1), self.path_keys(expr.right, depth + 1)
            if len(lk) == 1 and len(rk) == 1:
                return {("op", type(expr.op).__name__, next(iter(lk)), next(iter(rk)))}
        return {("dump", ast.dump(expr))}

    def basenames(self, expr) -> set[str]:
        """The file names a path expression ends with, where a string gives them."""
        out = set()
        for k in self.path_keys(expr):
            b = _tail(k)
            if b:
                out.add(b)
        return out

    def same_path(self, a, b) -> bool:
        """The two path expressions may name the same file."""
        ka, kb = self.path_keys(a), self.path_keys(b)
        if ka & kb:
            return True
        ba, bb = self.basenames(a), self.basenames(b)
        return bool(ba & bb)


def _tail(key) -> str:
    """The trailing file name of a canonical path form."""
    if key[0] == "s" and isinstance(key[1], str):
        return os.path.basename(key[1].replace("\\", "/")) if "." in key[1] else ""
    if key[0] == "f" and key[1] and key[1][-1][0] == "s":
        return _tail(key[1][-1])
    if key[0] == "call" and key[2]:
        return _tail(key[2][-1])
    if key[0] == "op" and key[1] in ("Add", "Div"):
        return _tail(key[3])
    return ""


@dataclass
class HeadChange:
    """Evidence that the model's head differs from the one its checkpoint was made for:
    ``node`` (an assignment or a constructor call), ``text`` for messages, and ``local``:
    the change is in the same scope as the load, before it."""

    node: ast.AST
    text: str
    local: bool
    # the new head holds no parameters (``nn.Identity()``, ``None``, ``num_classes=0``):
    # no shape of the checkpoint can mismatch it
    removed: bool = False
    # the head was sized by a literal class count given to its constructor (not replaced
    # after it was built, nor sized by a parameter whose default the checkpoint fits)
    sized: bool = False
    # that literal class count (an int), when there is one
    count: Optional[int] = None


# modules that hold no parameters, assigned as a head: the head is removed
_EMPTY_MODULES = frozenset({"torch.nn.Identity", "torch.nn.modules.linear.Identity"})
_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})


def removes_head(sem: SemanticModel, value) -> bool:
    """``value``, assigned to a head attribute, holds no parameters: ``None``,
    ``nn.Identity(...)`` (its arguments are ignored), an empty ``nn.Sequential()``
    (by qualified name: a same-file class called ``Identity`` may have weights)."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if not isinstance(value, ast.Call):
        return False
    q = sem.qualnames(value.func)
    return bool(q & _EMPTY_MODULES) or (bool(q & _CONTAINERS) and not value.args and not value.keywords)


def is_head_target(sem: SemanticModel, target, recv: str) -> bool:
    """``recv.fc``, ``recv.classifier[-1]``, ``recv.heads.head``."""
    if isinstance(target, ast.Subscript):
        target = target.value
    if not isinstance(target, ast.Attribute) or target.attr not in HEADS:
        return False
    if sem.dotted(target.value) == recv:
        return True
    return isinstance(target.value, ast.Attribute) and target.value.attr in HEADS and sem.dotted(target.value.value) == recv


def exclusive(sem: SemanticModel, a, b) -> bool:
    """``a`` and ``b`` sit in different branches of one ``if`` (so never both run)."""
    chain_a = [a, *sem.ancestors(a)]
    pos = {id(n): i for i, n in enumerate(chain_a)}
    prev = b
    for n in sem.ancestors(b):
        i = pos.get(id(n))
        if i is not None:
            child_a = chain_a[i - 1] if i else None
            if isinstance(n, ast.If) and child_a is not None:
                in_body = lambda c: any(s is c for s in n.body)  # noqa: E731
                in_else = lambda c: any(s is c for s in n.orelse)  # noqa: E731
                return (in_body(child_a) and in_else(prev)) or (in_else(child_a) and in_body(prev))
            return False
        prev = n
    return False


# the attributes that hold a model's input stem (torchvision's ResNet ``conv1``, VGG and
# DenseNet ``features[0]``, timm's ``conv_stem`` / ``stem`` / ``patch_embed``)
_STEMS = ("conv1", "conv_stem", "stem", "patch_embed", "features")


class Heads:
    """Where a model's head was changed before a load."""

    def __init__(self, sem: SemanticModel):
        self.sem = sem
        self._assigns: Optional[list] = None

    def assigns(self) -> list:
        """The one-target assignments to a head attribute (``x.fc = ...``,
        ``x.classifier[6] = ...``, ``x.heads.head = ...``), in source order: found from
        the attributes named like a head (``num_heads`` is not one)."""
        if self._assigns is None:
            sem = self.sem
            out = {}
            for a in sem.find_named((ast.Attribute,), HEADS):
                t = a
                p = sem.parent(t)
                if isinstance(p, ast.Subscript) and p.value is t:
                    t, p = p, sem.parent(p)
                if isinstance(p, ast.Assign) and len(p.targets) == 1 and p.targets[0] is t:
                    out[id(p)] = p
            self._assigns = sorted(out.values(), key=lambda n: (n.lineno, n.col_offset))
        return self._assigns

    def stem_replaced(self, recv_code: str, at) -> bool:
        """Before the load ``at``, in its scope, the model's input stem was replaced by a
        new layer too (``model.conv1 = nn.Conv2d(1, 64, ...)``, ``model.features[0] =
        ...``): no checkpoint of the original architecture fits it either, so the
        checkpoint is one made from this very model (and a filtered load would leave
        the stem untrained as well)."""
        sem = self.sem
        scope = sem.scope_of(at)
        pos = (at.lineno, at.col_offset)
        for a in sem.find_named((ast.Attribute,), _STEMS):
            t = a
            p = sem.parent(t)
            if isinstance(p, ast.Subscript) and p.value is t:
                if not (isinstance(p.slice, ast.Constant) and p.slice.value == 0 and t.attr == "features"):
                    continue
                t, p = p, sem.parent(p)
            elif t.attr == "features":
                continue
            if not (isinstance(p, ast.Assign) and len(p.targets) == 1 and p.targets[0] is t
                    and isinstance(p.value, ast.Call)):
                continue
            if sem.dotted(a.value) == recv_code and sem.scope_of(p) is scope and (p.lineno, p.col_offset) < pos:
                return True
        return False

    def change(self, recv, at, own_file: bool = False) -> Optional[HeadChange]:
        """The head change before the load ``at`` into ``recv``; ``own_file``: the
        checkpoint is a file (not a download), which may be one of this very class."""
        sem = self.sem
        recv_code = sem.dotted(recv)
        if recv_code is None:
            return None
        local = self.local_assignment(recv_code, at)
        if local is not None and recv_code == "self" and own_file and self._defines(local):
            return None
        if local is not None:
            return HeadChange(local, f"`{sem.segment(local.targets[0])}` was replaced (line {local.lineno})", True,
                              removes_head(sem, local.value))
        reset = self._reset_classifier(recv_code, at)
        if reset is not None:
            n = reset.args[0] if reset.args else next((k.value for k in reset.keywords if k.arg == "num_classes"), None)
            # (timm's ``reset_classifier(num_classes)``; without a count it is another method;
            # 1000 classes is the ImageNet head the checkpoint has)
            if n is not None and not (isinstance(n, ast.Constant) and n.value == 1000):
                removed = isinstance(n, ast.Constant) and n.value == 0
                return HeadChange(reset, f"`{sem.segment(reset)}` replaced the head (line {reset.lineno})", True,
                                  removed)
        top = self._module_level(recv, at)
        if top is not None:
            return HeadChange(top, f"`{sem.segment(top.targets[0])}` was replaced at module level (line {top.lineno})",
                              True, removes_head(sem, top.value))
        return self.elsewhere(recv, at)

    def _reset_classifier(self, recv_code: str, at) -> Optional[ast.Call]:
        """The last ``recv.reset_classifier(n)`` (timm's way to replace a model's head)
        before the load ``at`` in its scope, unless ``recv`` is bound again after it."""
        sem = self.sem
        if "reset_classifier" not in sem.text:
            return None
        scope = sem.scope_of(at)
        pos = (at.lineno, at.col_offset)
        last = None
        for c in sem.find(ast.Call, containing=("reset_classifier",)):
            if sem.method_name(c) == "reset_classifier" and sem.dotted(sem.receiver(c)) == recv_code \
                    and sem.scope_of(c) is scope and (c.lineno, c.col_offset) < pos and not exclusive(sem, c, at):
                last = c if last is None or (c.lineno, c.col_offset) > (last.lineno, last.col_offset) else last
        if last is None:
            return None
        p = (last.lineno, last.col_offset)
        if any(p < (r.lineno, r.col_offset) < pos and sem.scope_of(r) is scope for r in self._rebinds(recv_code)):
            return None
        return last

    def _module_level(self, recv, at) -> Optional[ast.Assign]:
        """A load in a top-level function into a global model (``model =
        models.regnet_x_800mf()`` then ``model.fc = nn.Linear(672, 42)`` at module level,
        above ``def pre_launch_setup():``): the module-level head replacement above the
        function's ``def``, which ran before any call of it; the name bound once in the
        module, and not in the function."""
        sem = self.sem
        fn = sem.enclosing_function(at)
        if not isinstance(recv, ast.Name) or fn is None or sem.parent(fn) is not sem.module:
            return None
        bs = sem.reaching(recv)
        if len(bs) != 1 or bs[0].scope is not sem.module_scope or len(sem.module_scope.get(recv.id)) != 1:
            return None
        return self.local_assignment(recv.id, fn)

    def local_assignment(self, recv_code: str, at) -> Optional[ast.Assign]:
        """The last assignment replacing ``recv_code``'s head before ``at`` in the same
        scope, unless ``recv_code`` itself is rebound after it."""
        sem = self.sem
        scope = sem.scope_of(at)
        pos = (at.lineno, at.col_offset)
        head, rebound = None, None
        for node in self.assigns() + self._rebinds(recv_code):
            if (node.lineno, node.col_offset) >= pos or sem.scope_of(node) is not scope:
                continue
            p = (node.lineno, node.col_offset)
            for t in node.targets:
                if sem.dotted(t) == recv_code:
                    rebound = p if rebound is None or p > rebound else rebound
                elif is_head_target(sem, t, recv_code) and not exclusive(sem, node, at):
                    if head is None or p > (head.lineno, head.col_offset):
                        head = node
        if head is None or (rebound is not None and rebound > (head.lineno, head.col_offset)):
            return None
        return head

    def _defines(self, assign: ast.Assign) -> bool:
        """``self.head = ...`` in a method of a class deriving from ``nn.Module`` alone,
        with no earlier assignment to it in that method: the head is defined there, not
        replaced (nothing but this class can have made another; ``self.load_state_dict``
        after it loads a checkpoint of this very class)."""
        sem = self.sem
        t = assign.targets[0]
        if not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"):
            return False  # ``self.classifier[6] = ...``, ``self.heads.head = ...``: part of a layer made before
        fn = sem.enclosing_function(assign)
        cls = sem.parent(fn) if fn is not None else None
        if not isinstance(cls, ast.ClassDef) or not cls.bases or fn.name != "__init__":
            return False  # (another method replaces what ``__init__`` made)
        for b in cls.bases:
            if sem.class_def(b) is not None or not sem.qualnames(b) or not sem.qualnames(b) <= N.MODULE_BASES:
                return False
        text = sem.segment(t)
        return not any(
            a is not assign and (a.lineno, a.col_offset) < (assign.lineno, assign.col_offset)
            and sem.enclosing_function(a) is fn and sem.segment(a.targets[0]) == text
            for a in self.assigns()
        )

    def _rebinds(self, recv_code: str) -> list:
        last = recv_code.rsplit(".", 1)[-1]
        return [a for a in self.sem.find(ast.Assign, containing=(last,)) if any(self.sem.dotted(t) == recv_code for t in a.targets)]

    def elsewhere(self, recv, at, depth: int = 0) -> Optional[HeadChange]:
        """A builder function that replaces the head of the model it returns, a
        same-file class whose ``__init__`` replaces an inherited head, or a constructor
        told another number of classes than its default."""
        sem = self.sem
        if depth > 3:
            return None
        if isinstance(recv, ast.Name):
            for b in sem.reaching(recv):
                v = b.value if b.kind is BindingKind.ASSIGNMENT else None
                if isinstance(v, ast.Call):
                    fn = sem.callee(v)
                    if isinstance(fn, _DEFS):
                        got = self._builder(fn, depth)
                        if got is not None:
                            return got
        for o in sem.origins(recv):
            if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
                node = o.node
                # ``UNet(..., num_classes=3).to(device)``: the module the moves return is the one built
                while isinstance(node.func, ast.Attribute) and node.func.attr in _SAME_MODULE \
                        and isinstance(node.func.value, ast.Call):
                    node = node.func.value
                got = self.constructor_change(node)
                if got is not None:
                    return got
        return None

    def _builder(self, fn, depth: int) -> Optional[HeadChange]:
        sem = self.sem
        for r in sem.returns(fn):
            if r is None:
                continue
            code = sem.dotted(r)
            if code is not None:
                a = self.local_assignment(code, r)
                if a is not None:
                    return HeadChange(a, f"`{fn.name}()` replaced `{sem.segment(a.targets[0])}` (line {a.lineno})", False,
                                      removes_head(sem, a.value))
            if isinstance(r, ast.Name):
                got = self.elsewhere(r, r, depth + 1)
                if got is not None:
                    return got
        return None

    def constructor_change(self, call: ast.Call) -> Optional[HeadChange]:
        sem = self.sem
        cls = sem.callee(call)
        for kw in call.keywords:
            if kw.arg is None:
                got = self._through_kwargs(call, cls, kw)
                if got is not None:
                    return got
                continue
            if kw.arg not in CLASS_KWARGS:
                continue
            origins = sem.origins(kw.value)
            if any(o.kind is OriginKind.PARAMETER for o in origins):
                # the caller's choice (``def detr_resnet50(pretrained=False, num_classes=91)``):
                # a hub entry point sized by its parameter loads the checkpoint its default fits
                continue
            got = _sized_head(call, f"`{sem.segment(call.func)}` was built with {kw.arg}={sem.segment(kw.value)}",
                              origins, self._default(call, cls, kw.arg), kw.value)
            if got is not None:
                return got
        if isinstance(cls, ast.ClassDef):
            init = sem.method(cls, "__init__")
            if init is not None and sem.parent(init) is cls:
                for a in self.assigns():
                    t = a.targets[0]
                    if sem.enclosing_function(a) is init and isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                            and t.value.id == "self" and t.attr in HEADS and self._inherited(cls, t.attr):
                        return HeadChange(a, f"`{cls.name}.__init__` replaced the inherited `self.{t.attr}` (line {a.lineno})", False,
                                          removes_head(sem, a.value))
                return self._base_init_count(cls, init)
        return None

    def _through_kwargs(self, call: ast.Call, cls, kw: ast.keyword) -> Optional[HeadChange]:
        """``Net(**kwargs)`` in a builder ``def net(pretrained=False, **kwargs)`` that the
        file calls with a class count (``net(num_classes=16, pretrained=True)``): the
        count the calls pass reaches the constructor (the timm/torchvision builder shape)."""
        sem = self.sem
        if not isinstance(kw.value, ast.Name):
            return None
        bs = sem.resolve(kw.value)
        if len(bs) != 1 or bs[0].kind is not BindingKind.PARAMETER:
            return None
        fn = bs[0].scope.node
        if not isinstance(fn, _DEFS) or fn.args.kwarg is None or fn.args.kwarg.arg != kw.value.id:
            return None
        name = kw.value.id
        for n in sem.walk(fn):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) \
                    and not (isinstance(sem.parent(n), ast.keyword) and sem.parent(n).arg is None):
                return None  # the builder reads or changes its kwargs (``kwargs.pop("num_classes")``)
        # the parameters the builder's ``if`` tests read (``if pretrained:``): a call loads
        # only when it passes them true
        guards = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} & {
            x.id for n in sem.walk(fn) if isinstance(n, (ast.If, ast.IfExp)) for x in ast.walk(n.test)
            if isinstance(x, ast.Name)}
        # the calls of this file, then (a builder no code of its file calls: a copied
        # torchvision ``resnet.py``) those of the scripts that import it, not of their tests
        # (``with pytest.raises(RuntimeError): net(pretrained=True, num_classes=16)`` expects
        # the strict load to fail)
        # a keyword that names one of the builder's own parameters binds it, not ``**kwargs``
        # (``def resnet18(num_classes, pretrained=False, **kwargs)``; RetinaNet's builders
        # give it to their constructor's detection head, which no ImageNet checkpoint has)
        named = {a.arg for a in (*fn.args.args, *fn.args.kwonlyargs)}
        sites = [(sem, site, f"line {site.lineno}") for site in sem.file_calls(fn)]
        if not sites and sem.parent(fn) is sem.module:
            sites = [(other, site, f"{os.path.basename(other.path)} line {site.lineno}")
                     for other, site in sem.importer_calls(fn) if not is_test_path(other.path)]
        for where, site, at in sites:
            given = {k.arg: k.value for k in site.keywords if k.arg}
            if any(not (isinstance(given.get(g), ast.Constant) and given[g].value) for g in guards):
                continue  # (this call does not load: ``net(num_classes=16)``, ``pretrained=False``)
            for k in site.keywords:
                if k.arg not in CLASS_KWARGS or k.arg in named:
                    continue
                if any(x.arg == k.arg for x in call.keywords if x is not kw):
                    return None  # (passing it twice fails: not this shape)
                got = _sized_head(call, f"`{sem.segment(call.func)}` was built with {k.arg}={where.segment(k.value)}"
                                        f" (through `**{kw.value.id}` from {at})",
                                  where.origins(k.value), self._default(call, cls, k.arg), k.value)
                if got is not None:
                    return got
        return None

    def _base_init_count(self, cls: ast.ClassDef, init) -> Optional[HeadChange]:
        """``super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=10)`` (or
        ``Base.__init__(self, ..., num_classes=10)``) in ``cls.__init__``: the base is
        built with another class count than its default (a same-file base's, or 1000 for
        a torchvision or timm model); a count passed through from a parameter is the
        outer call's choice."""
        sem = self.sem
        for n in sem.walk(init, scopes=False):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"):
                continue
            v = n.func.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
                base = cls.bases[0] if len(cls.bases) == 1 else None
            else:
                base = next((b for b in cls.bases if sem.dotted(b) is not None and sem.dotted(b) == sem.dotted(v)), None)
            if base is None:
                continue
            for kw in n.keywords:
                if kw.arg not in CLASS_KWARGS:
                    continue
                origins = sem.origins(kw.value)
                if not origins or any(o.kind is OriginKind.PARAMETER for o in origins):
                    continue
                default = self._default(ast.Call(func=base, args=[], keywords=[]), sem.class_def(base), kw.arg)
                got = _sized_head(n, f"`{cls.name}.__init__` builds `{sem.segment(base)}` with {kw.arg}="
                                     f"{sem.segment(kw.value)}", origins, default, kw.value) if default is not None else None
                if got is not None:
                    return got
        return None

    def _inherited(self, cls: ast.ClassDef, attr: str) -> bool:
        """A base class of ``cls`` already has the head ``attr``."""
        sem = self.sem
        for base in cls.bases:
            bc = sem.class_def(base)
            if bc is not None and bc is not cls:
                if attr in sem.class_info(bc).attrs or self._inherited(bc, attr):
                    return True
            elif any(q.startswith("torchvision.models.") for q in sem.qualnames(base)):
                return True
        return False

    def _default(self, call, cls, kwarg: str):
        sem = self.sem
        if isinstance(cls, ast.ClassDef):
            init = sem.method(cls, "__init__")
            if init is None:
                return None
            fake = ast.Call(func=call.func, args=[], keywords=[])
            d = sem.call_argument(init, fake, kwarg)
            return d.value if isinstance(d, ast.Constant) else None
        if isinstance(cls, _DEFS):
            d = sem.call_argument(cls, ast.Call(func=call.func, args=[], keywords=[]), kwarg)
            return d.value if isinstance(d, ast.Constant) else None
        q = sem.call_qualname(call)
        if q and (q.startswith("torchvision.models.") or q.startswith("timm.")):
            return TV_DEFAULT_CLASSES
        return None


def _sized_head(node, what: str, origins, default, value) -> Optional[HeadChange]:
    """The head change of a constructor given a class count (``value``, which may take
    the values ``origins`` give) other than its architecture's ``default``; None when
    every value is that default."""
    removed = _count_change(origins, default)
    if removed is None:
        return None
    count = value.value if isinstance(value, ast.Constant) and type(value.value) is int else None
    return HeadChange(node, what, False, removed, sized=isinstance(value, ast.Constant), count=count)


def _count_change(origins, default) -> Optional[bool]:
    """Of a class count that may take the values ``origins`` give: None when every value
    is the architecture's ``default`` (no change); else whether it removes the head
    (``num_classes=0`` builds none: timm, DINO, DeiT, MAE give ``nn.Identity()``)."""
    vals = [o.node.value for o in origins if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant)]
    known = all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant) for o in origins)
    if known and vals and default is not None and all(v == default for v in vals):
        return None
    return known and bool(vals) and all(v == 0 and not isinstance(v, bool) for v in vals)
