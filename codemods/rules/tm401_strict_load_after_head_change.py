"""TM401 strict-load-after-head-change."""

from __future__ import annotations

import ast
import os
import re

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ._filtered_load import CLASS_KWARGS, HEADS, SAVES, TV_DEFAULT_CLASSES, TV_OTHER_HEADS, Heads, Values, builder_by_name, may_be_torchvision_builder, torchvision_head, torchvision_task_classes
from ..semantic import UNKNOWN_ARG, OriginKind
from ._device import is_module_class

HELPER = "load_matching_state_dict"
# an assignment to a head attribute may stand here (``m.fc = ``, ``m.classifier[6] = ``,
# ``m.heads.head = ``): a superset of what ``Heads.assigns`` finds
_HEAD_ASSIGN = re.compile(r"\.(?:%s)\b[^\n=]*=(?!=)" % "|".join(HEADS))
HELPER_SOURCE = '''
def load_matching_state_dict(model, state_dict):
    """Load the entries of `state_dict` whose name and shape match `model`; warn about the rest."""
    own = model.state_dict()
    keep = {
        k: v
        for k, v in state_dict.items()
        if k in own and getattr(v, "shape", None) == getattr(own[k], "shape", None)
    }
    result = model.load_state_dict(keep, strict=False)
    skipped = sorted(set(state_dict) - set(keep))
    if skipped or result.missing_keys:
        warnings.warn(
            f"partial load: skipped {len(skipped)} checkpoint keys (e.g. {skipped[:5]}), "
            f"{len(result.missing_keys)} parameters left at init (e.g. {result.missing_keys[:5]})"
        )
    return result
'''


class StrictLoadAfterHeadChange(Rule):
    """## What it does
    Finds `model.load_state_dict(checkpoint)` of a pretrained or file checkpoint into a
    model whose classification head was changed before: replaced in the same scope
    (`model.fc = nn.Linear(...)`, `model.classifier[-1] = ...`, `model.heads.head = ...`),
    replaced by the builder function that made the model, or sized by the constructor
    (`Net(num_classes=3)`, also through a builder's `**kwargs`: `Net(**kwargs)` in `def
    net(pretrained=False, **kwargs)` called as `net(num_classes=16, pretrained=True)` in its file or, when no code of its file calls it (a copied torchvision `resnet.py`), in a script that imports it (not a test), or a same-file subclass whose `__init__` builds its base with
    another count: `super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=10)`).  The checkpoint is followed through variables and
    `ckpt["state_dict"]`; it may come from `torch.load`, `torch.hub.load_state_dict_from_url`,
    `model_zoo.load_url`, a torchvision weights enum or a pretrained zoo model's
    `state_dict()`, and through the recipe that keeps only the entries whose names the
    model has (`{k: v for k, v in sd.items() if k in model_dict}`, then
    `model_dict.update(sd)`): a head replaced under its old name keeps its entry, so that
    load fails the same way.  Also finds torchvision classification builders asked for pretrained
    weights and another number of classes (`models.resnet18(pretrained=True,
    num_classes=10)`, also with the count in a `**` dict: `classes = {"num_classes":
    len(names)}`, `resnet152(pretrained=True, **classes)`, report only; the builder chosen
    by name when the code runs, `torchvision.models.__dict__[args.arch](pretrained=True,
    num_classes=n)`, report only), which load the
    1000-class weights into the new head themselves; a count that is a parameter is read
    through the values it takes (its default, the file's call sites): all equal to the
    pretrained count, nothing is reported; nor after a statement on every path to the
    builder that refuses another count (`if pretrained and self.num_classes != 1000:
    raise ...`, `assert num_classes == 1000`).

    ## Why is this bad?
    A checkpoint of the original architecture has a head of a different shape, so the
    load raises `RuntimeError: Error(s) in loading state_dict ... size mismatch for
    fc.weight` (torchvision's builders raise `ValueError: The parameter 'num_classes'
    expected value 1000`).  `strict=False` does not help: it relaxes only missing and
    unexpected keys, not shapes.

    Resumed checkpoints (they carry optimizer or epoch state), checkpoints the file (or a
    neighbouring script) saves to the same path from a model with the changed head, and
    loads that are already filtered (`pop`, `del`, a comprehension that compares shapes or
    drops keys by name, a helper) are not
    reported; nor is a head changed elsewhere (a builder, a constructor) when nothing
    says the checkpoint is a pretrained one; nor a script that trains nothing (no
    `backward`) loading a checkpoint nothing shows is a pretrained one: the new head's
    weights can only come from it (an inference script loading its own fine-tuned model;
    a name filter `{k: v ... if k in model_dict}` shows the checkpoint is another
    model's); nor is a head removed (`model.fc =
    nn.Identity()`, `= None`, `num_classes=0`): it has no parameters, so no shape can
    mismatch, and the backbone checkpoints loaded into such models (DINO, MAE) hold no
    head either; nor a number of classes that is the enclosing function's parameter with
    no caller in the file passing another (a hub entry point, `def detr_resnet50(
    pretrained=False, num_classes=91)`: the checkpoint fits its default); nor, in code
    that trains nothing, a model built with a literal class count and loaded from a
    download whose URL names no pretraining, ImageNet or torchvision weights (FID's
    `inception_v3(num_classes=1008)` and its own port of Google's weights: the count
    was chosen to fit that checkpoint).

    ## Example
    ```python
    model = Backbone()
    model.fc = nn.Linear(512, 3)
    model.load_state_dict(torch.load("resnet_imagenet.pth", map_location="cpu"))
    ```

    ## Use instead
    ```python
    model = Backbone()
    model.load_state_dict(torch.load("resnet_imagenet.pth", map_location="cpu"))
    model.fc = nn.Linear(512, 3)
    ```
    or `load_matching_state_dict(model, torch.load("resnet_imagenet.pth", map_location="cpu"))`,
    and `models.resnet18(pretrained=True)` followed by
    `model.fc = torch.nn.Linear(model.fc.in_features, 10)`.

    ## Fix safety
    The load becomes `load_matching_state_dict(model, state_dict)`, a helper added once
    per file that loads the entries whose name and shape match and warns about the rest;
    the user's `torch.load` call (`map_location`, `weights_only`) is kept as it is.  Safe
    when the checkpoint is recognisably a pretrained one (a hub or model-zoo download, a
    zoo model's weights, a path naming `pretrain`, `imagenet`, `backbone`, an architecture
    or a model zoo); otherwise unsafe: if the checkpoint was saved from the modified model, the load
    is correct as written.  Never offered for the file's own checkpoints, nor when
    `load_state_dict` gets arguments the helper does not take (`assign=True`).  The
    torchvision builder is rebuilt without `num_classes` and its head replaced: safe for
    `pretrained=True` or a `weights=` value with a literal class count other than 1000,
    unsafe when either is a variable (with 1000 classes the original works).
    """

    code = "TM401"
    name = "strict-load-after-head-change"
    pitfall = "filtered_load"
    summary = "strict load_state_dict of a checkpoint after the model's head was changed"
    severity = Severity.BUG
    needles = ("load_state_dict", "num_classes")
    verify = Verify("load", ("size mismatch", "Error(s) in loading state_dict", "expected value 1000"))
    corpus_minimum = (8, 6)
    uses_project = True
    valid = (
        "import torch\nimport torch.nn as nn\nmodel = Net()\nmodel.load_state_dict(torch.load('resnet.pth'))\n"
        "model.fc = nn.Linear(512, 3)\n",
        "import torch\nimport torch.nn as nn\nmodel = Net()\nmodel.fc = nn.Linear(512, 3)\n"
        "torch.save(model.state_dict(), 'best.pt')\nmodel.load_state_dict(torch.load('best.pt'))\n",
        "import torch\nimport vits\nmodel = vits.__dict__['vit_small'](patch_size=16, num_classes=0)\n"
        "sd = torch.hub.load_state_dict_from_url(url='https://dl.fbaipublicfiles.com/dino/dino_deitsmall16_pretrain.pth')\n"
        "model.load_state_dict(sd, strict=True)\n",
        "import torch\nfrom torchvision.models.resnet import resnet50\nmodel = resnet50(pretrained=False)\n"
        "model.fc = torch.nn.Identity()\nsd = torch.hub.load_state_dict_from_url(url='https://x/dino_resnet50_pretrain.pth')\n"
        "model.load_state_dict(sd, strict=False)\n",
    )
    invalid = (
        "import torch\nimport torch.nn as nn\nmodel = Net()\nmodel.fc = nn.Linear(512, 3)\n"
        "model.load_state_dict(torch.load('resnet50_imagenet.pth'))\n",
        "import torchvision\nmodel = torchvision.models.resnet18(pretrained=True, num_classes=10)\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The needles, then what every finding needs somewhere in the file: a
        torchvision builder asked for its number of classes, or a ``load_state_dict``
        after a head change, which is an assignment to a head attribute, timm's
        ``reset_classifier(n)``, or a constructor keyword that sets the number of classes
        (``Heads.change``).  Most files that
        load a state dict change no head."""
        if not super().may_match(text, has):
            return False
        has = has or text.__contains__
        if has("num_classes") and has("torchvision"):
            return True
        return has("load_state_dict") and (any(has(k) for k in CLASS_KWARGS) or has("reset_classifier")
                                           or _HEAD_ASSIGN.search(text) is not None)

    def check(self, ctx: Context):
        sem = ctx.sem
        vals = Values(sem)
        heads = Heads(sem)
        if ctx.has("num_classes") and ctx.has("torchvision"):  # a torchvision builder (its qualified name decides)
            # a reported builder call says ``num_classes=`` (or passes it in a ``**`` dict
            # written in the same block: ``_splat_near``) and ``weights=`` or
            # ``pretrained=`` (``_builder_call``): only the chunks holding both are read
            src = sem.source
            both = sorted(set(src.holding("num_classes")) & (set(src.holding("weights")) | set(src.holding("pretrained"))))
            for call in sem.find(ast.Call, containing=("num_classes", "**"), chunks=[src.chunks[i] for i in both]) if both else ():
                f = self._builder_call(ctx, call)
                if f is not None:
                    yield f
        if ctx.has("load_state_dict"):
            for call in sem.find(ast.Call, containing=("load_state_dict",)):
                if sem.method_name(call) == "load_state_dict":
                    f = self._load(ctx, vals, heads, call)
                    if f is not None:
                        yield f

    # ------------------------------------------------------------------ a load
    def _load(self, ctx: Context, vals: Values, heads: Heads, call: ast.Call):
        sem = ctx.sem
        recv = sem.receiver(call)
        recv_code = sem.dotted(recv)
        if recv_code is None:
            return None
        state, strict_false, others = None, False, []
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        for i, a in enumerate(call.args):
            if i == 0:
                state = a
            elif i == 1:
                strict_false = isinstance(a, ast.Constant) and a.value is False
            else:
                others.append(sem.segment(a))
        for k in call.keywords:
            if k.arg == "state_dict":
                state = k.value
            elif k.arg == "strict":
                strict_false = isinstance(k.value, ast.Constant) and k.value.value is False
            else:
                others.append(k.arg)
        if state is None:
            return None
        src = vals.source(state, call)
        if src is None:
            return None
        if src.ckpt is not None and vals.is_resume(src.ckpt):
            return None
        head = heads.change(recv, call, own_file=src.kind == "file")
        if head is None:
            return None
        stem = head.local and heads.stem_replaced(recv_code, call)
        if stem and not vals.surely_fetched(src):
            return None  # (the input stem was replaced too: a checkpoint of this very model)
        if src.ckpt is not None and isinstance(head.node, ast.Assign) and _reads(sem, head.node.value, src.ckpt):
            # ``model.classifier = nn.Linear(25088, checkpoint['hidden_units'])``,
            # ``model.fc = checkpoint['fc']``: the new head is built from the checkpoint itself
            return None
        if src.merged and not _same_names(sem, head):
            # ``model_dict.update(sd)``: a head whose parameters have other names than the
            # checkpoint's (``fc = nn.Sequential(...)``: ``fc.0.weight``) takes no entry
            return None
        if head.removed:
            # a head with no parameters: no shape can mismatch, ``strict=False`` loads the
            # rest, and a strict load fails only on a checkpoint that has a head, which the
            # backbone checkpoints such code loads (DINO, MAE, MoCo) do not
            return None
        foreign = vals.foreign(src)
        # (the file trains: a ``backward(`` call's text, not the word in a comment)
        trains = ctx.has("backward(")
        if vals.fits_dataset(src, head.count):
            return None  # ``FasterRCNN(num_classes=91)`` loading ``..._coco.pth``: sized for that checkpoint
        if foreign and not head.local and not trains and not _in_module_class(sem, call) \
                and not vals.names_a_download(src):
            # a script that trains nothing builds the model with its class count and loads
            # a file named after the architecture (``resnet34(num_classes=5)``,
            # ``./resNet34.pth``): an inference or export script loading the model its
            # training script fine-tuned and saved under that name, head and all
            return None
        if head.sized and src.kind == "hub" and not trains and not vals.original_head(src):
            # a model definition that builds its class count for a download of its own
            # (FID's Inception: 1008 classes and the port's weights), in code that trains
            # nothing: no sign that the download holds the architecture's original head
            return None
        if not head.local and not foreign:
            return None  # a builder or constructor made it, and nothing says the checkpoint is foreign
        if not trains and not vals.names_a_download(src) and _evaluated_after(sem, call, recv_code):
            # ``model.load_state_dict(...); model.eval()`` in a file that trains nothing:
            # an inference load, whose new head's weights can only come from this
            # checkpoint (the author's own: its name says no more than an architecture)
            return None
        if not foreign and not trains and not _in_class(sem, call):
            # a script that trains nothing: the new head's weights can only come from this
            # checkpoint (an inference script loading its own fine-tuned model); a model
            # class's own load is trained elsewhere
            return None
        if self._own_checkpoint(ctx, vals, heads, src, recv_code):
            return None
        if not foreign and (self._saves_state_of(ctx, recv_code) or (src.path is not None and vals.named_own(src.path))):
            return None  # the file trains and saves this very model, or resumes its own run
        what = sem.segment(src.path) if src.path is not None else sem.segment(src.call)
        base = (
            f"`{recv_code}.load_state_dict` loads `{what}` after {head.text}: a checkpoint of the original "
            "head does not fit the new one (\"size mismatch\" or unexpected keys)"
        )
        if strict_false:
            base += " (strict=False does not skip shape mismatches)"
        if foreign:
            msg = base + "; load the matching weights only"
        else:
            msg = (
                base + "; if this is a pretrained checkpoint, move the load above the head replacement "
                "(or load the matching weights only), if it was saved from the modified model, keep it"
            )
        if others:
            return ctx.finding(self, call, f"{msg} (not fixed: load_state_dict also gets {', '.join(others)})")
        if stem:
            # (a filtered load would leave the replaced stem untrained as well)
            return ctx.finding(self, call, f"{msg} (not fixed: the input stem was replaced too, and no checkpoint of"
                                           " the original architecture fits it)")

        def build(view, call=call, recv=recv, state=state):
            import libcst as cst

            return {
                view.node(call): cst.Call(
                    func=cst.Name(HELPER),
                    args=[
                        cst.Arg(value=view.node(recv), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                        cst.Arg(value=view.node(state)),
                    ],
                )
            }

        fix = Fix(
            build,
            safety=Safety.SAFE if foreign else Safety.UNSAFE,
            message=f"load only the entries of the checkpoint that match `{recv_code}`, warn about the rest",
            helpers={HELPER: HELPER_SOURCE},
            imports=(("warnings", None),),
        )
        return ctx.finding(self, call, msg, fix)

    def _own_checkpoint(self, ctx: Context, vals: Values, heads: Heads, src, recv_code: str) -> bool:
        """A checkpoint saved to the same path from a model that is not provably an
        unmodified one: in this file, or in a neighbouring script."""
        if src.kind != "file" or src.path is None:
            return False
        sem = ctx.sem
        for save in sem.find(ast.Call, containing=("save",)):
            if not (sem.qualnames(save.func) & SAVES):
                continue
            where = save.args[1] if len(save.args) > 1 else sem.keyword(save, "f")
            if where is None or not vals.same_path(where, src.path):
                continue
            obj = save.args[0] if save.args else sem.keyword(save, "obj")
            if not self._unmodified_state(sem, heads, obj, recv_code, save):
                return True
        names = vals.basenames(src.path)
        if names:
            # a function of the project that saves the model's state, told the file's name
            # here: ``save_model(model=model, target_dir="models", model_name="vit.pth")``
            for save in sem.find(ast.Call, containing=("save",)):
                given = [*save.args, *(k.value for k in save.keywords)]
                if any(isinstance(a, ast.Constant) and isinstance(a.value, str) and os.path.basename(a.value) in names
                       for a in given) and _helper_saves(sem, save, recv_code):
                    return True
        project = ctx.project
        if not names or project is None or not ctx.path or not os.path.isfile(ctx.path):
            return False
        for other in project.neighbour_files(ctx.path):
            m = project.model_for(other)
            if m is None or not any(n in m.text for n in names) or "save" not in m.text:
                continue
            ov, oh = Values(m), Heads(m)
            for save in m.find(ast.Call, containing=("save",)):
                if m.qualnames(save.func) & SAVES:
                    where = save.args[1] if len(save.args) > 1 else m.keyword(save, "f")
                    if where is None or not ov.basenames(where) & names:
                        continue
                    obj = save.args[0] if save.args else m.keyword(save, "obj")
                    if not self._unmodified_state(m, oh, obj, None, save):
                        return True
        return False

    @staticmethod
    def _unmodified_state(sem, heads: Heads, obj, recv_code: str, at) -> bool:
        """``obj`` holds only the state dicts of models built with their original head."""
        if obj is None:
            return False
        found = False
        for n in sem.walk(obj):
            if isinstance(n, ast.Call) and sem.method_name(n) == "state_dict":
                x = sem.receiver(n)
                if (recv_code is not None and sem.dotted(x) == recv_code) or heads.change(x, at) is not None:
                    return False
                origins = sem.origins(x)
                if not origins or any(o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call) for o in origins):
                    return False
                found = True
            elif isinstance(n, ast.Name) and n is obj:
                return False  # a whole object saved (a model, a dict built elsewhere)
        return found

    @staticmethod
    def _saves_state_of(ctx, recv_code: str) -> bool:
        """The file saves the state of the model ``recv_code`` names: ``torch.save(
        model.state_dict(), ...)`` (also ``obj=``), or through a function of the file or
        of another module of the project that saves its parameter's state
        (learnpytorch's ``save_model(model=model, target_dir=..., model_name=...)``)."""
        sem = ctx.sem
        for save in sem.find(ast.Call, containing=("save",)):
            if sem.qualnames(save.func) & SAVES:
                if _saves_state(sem, save, recv_code):
                    return True
                continue
            if _helper_saves(sem, save, recv_code):
                return True
        return False

    # ------------------------------------------------------------------ a torchvision builder
    def _builder_call(self, ctx: Context, call: ast.Call):
        sem = ctx.sem
        # the class count: a keyword, or an entry of a ``**`` dict literal
        # (``classes = {"num_classes": len(names)}``, ``resnet152(pretrained=True, **classes)``)
        kws = {k.arg for k in call.keywords}
        if "num_classes" not in kws and (None not in kws or not kws & {"weights", "pretrained"}):
            return None  # (the cheap test first: most calls holding ``**`` are no such builder)
        nc = sem.argument(call, "num_classes")
        if nc is None or nc is UNKNOWN_ARG:
            return None
        by_name = False
        if not may_be_torchvision_builder(call.func):
            by_name = builder_by_name(sem, call.func)
            if not by_name:
                return None
        if sem.keyword(call, "num_classes") is None and not _splat_near(sem, call, nc):
            return None
        q = sem.call_qualname(call)
        head = "" if by_name else torchvision_head(q)
        expected = TV_DEFAULT_CLASSES
        if head is None:
            expected = torchvision_task_classes(q)
            if expected is None:
                return None
        w, p = sem.keyword(call, "weights"), sem.keyword(call, "pretrained")
        pre = None
        for v in (w, p):
            if v is None:
                continue
            if isinstance(v, ast.Constant):
                if v.value is True or (v is w and v.value is not None and v.value is not False):
                    pre = "yes"
            elif v is w and isinstance(v, ast.Attribute) and any(x.startswith("torchvision.models.") for x in sem.qualnames(v)):
                pre = "yes"
            elif pre is None:
                pre = "maybe"
        if pre is None:
            return None
        count = None
        origins, complete = _count_origins(sem, nc)
        consts = [o.node.value for o in origins if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant)]
        if all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant) for o in origins) and consts:
            if all(c == expected for c in consts):
                return None  # (also every value a parameter takes: its default, its call sites here)
            if complete and len(set(consts)) == 1 and isinstance(consts[0], int):
                count = consts[0]
        # (a guard needs ``!=`` in its test or an ``assert``: the cheap text test first)
        if count is None and (ctx.has("!=") or ctx.has("assert")) \
                and _guarded(sem, call, nc, expected, [v for v in (w, p) if v is not None],
                             ctx.cache.setdefault("tm401.guards", {})):
            return None  # (``if pretrained and n != 1000: raise ...`` before it: the load never mismatches)
        name = sem.segment(call.func)
        if head is None:  # detection / segmentation
            if pre != "yes":
                return None
            unless = "" if count is not None else f" (if {sem.segment(nc)} is not {expected})"
            return ctx.finding(
                self, call,
                f"`{name}(...)` loads pretrained weights with {expected} classes into a head built for "
                f"num_classes={sem.segment(nc)}{unless}: torchvision raises (\"expected value {expected}\"); pass "
                "`weights_backbone=` instead (a pretrained backbone, a new head) or replace the predictor "
                "after building it with its pretrained head (not fixed)",
            )
        other = ("the head", "the architecture is chosen when it runs") if by_name else \
            TV_OTHER_HEADS.get((q or "").rsplit(".", 1)[-1], ("the head", "its head is not a single Linear layer"))
        msg = (
            f"`{name}(...)` loads the pretrained 1000-class weights into a head built for "
            f"num_classes={sem.segment(nc)}: torchvision raises (\"expected value 1000\"); build it with the "
            f"pretrained head and replace {f'`{head}`' if head else other[0]} afterwards"
        )
        if pre == "maybe":
            msg += " (if the weights are pretrained)"
        if count is None:
            msg += f" (if {sem.segment(nc)} is not 1000)"
        stmt = sem.statement_of(call)
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.value is call else None
        why = None
        if not head:
            why = other[1]
        elif sem.keyword(call, "num_classes") is None:
            why = "the class count is passed in a `**` dict"
        elif target is None or sem.dotted(target) is None:
            why = "the model is not assigned to a name"
        elif q.endswith("googlenet") and sem.keyword(call, "aux_logits") is not None:
            why = "the auxiliary heads are kept"
        if why:
            return ctx.finding(self, call, f"{msg} (not fixed: {why})")
        tgt = sem.dotted(target)
        torch_name = _torch_name(sem)
        safety = Safety.SAFE if pre == "yes" and count is not None else Safety.UNSAFE

        def build(view, call=call, stmt=stmt, nc=nc, tgt=tgt, head=head, torch_name=torch_name):
            import libcst as cst

            line = view.statement(stmt)
            lcall = view.node(call)
            kw = view.node(next(k for k in call.keywords if k.arg == "num_classes"))
            n_text = view.code(kw.value)
            args = [a for a in lcall.args if a is not kw]
            if args and lcall.args[-1] is kw:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new_call = lcall.with_changes(args=args)
            first = line.deep_replace(lcall, new_call)
            indent = ""
            swap = cst.parse_statement(
                f"{indent}{tgt}.{head} = {torch_name}.nn.Linear({tgt}.{head}.in_features, {n_text})\n",
                config=view.module.config_for_parsing,
            )
            return {line: cst.FlattenSentinel([first, swap])}

        return ctx.finding(
            self, call, msg,
            Fix(build, safety=safety, message=f"build `{name}` with its pretrained head, then replace `{head}`",
                imports=(("torch", None),) if torch_name == "torch" else ()),
        )


def _helper_saves(sem, call: ast.Call, recv_code: str) -> bool:
    """``call`` hands the model ``recv_code`` names to a function of this file or of
    another module of the project that saves that parameter's state with
    ``torch.save`` (learnpytorch's ``utils.save_model(model=..., target_dir=...,
    model_name=...)``)."""
    if sem.qualnames(call.func) & SAVES or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    given = [(i, a) for i, a in enumerate(call.args)] + [(k.arg, k.value) for k in call.keywords if k.arg]
    at = next((i for i, a in given if sem.dotted(a) == recv_code), None)
    if at is None:
        return False
    fdef, m = sem.callee(call), sem
    if not isinstance(fdef, ast.FunctionDef):
        m, fdef = sem.sibling_callee(call, holds=("save",))
    if m is None or not isinstance(fdef, ast.FunctionDef):
        return False
    names = [x.arg for x in (*fdef.args.posonlyargs, *fdef.args.args)]
    param = names[at] if isinstance(at, int) and at < len(names) else at if isinstance(at, str) else None
    return bool(param) and any(isinstance(c, ast.Call) and m.qualnames(c.func) & SAVES and _saves_state(m, c, param)
                               for c in m.walk(fdef, scopes=False))


def _saves_state(sem, save: ast.Call, recv_code: str) -> bool:
    """The ``torch.save`` call ``save`` saves ``recv_code``'s state (its first argument,
    or ``obj=``, holds ``recv_code.state_dict()``)."""
    obj = save.args[0] if save.args else next((k.value for k in save.keywords if k.arg == "obj"), None)
    return obj is not None and any(
        isinstance(n, ast.Call) and sem.method_name(n) == "state_dict" and sem.dotted(sem.receiver(n)) == recv_code
        for n in sem.walk(obj))


def _evaluated_after(sem, call: ast.Call, recv_code: str) -> bool:
    """A statement after the load ``call``, in its block, puts the model in evaluation
    mode: ``model.eval()`` or ``model.train(False)``."""
    stmt = sem.statement_of(call)
    block = sem.block_of(stmt) if stmt is not None else None
    if not block:
        return False
    after = block[next(i for i, s in enumerate(block) if s is stmt) + 1:]
    for st in after:
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and sem.dotted(n.func.value) == recv_code \
                    and (n.func.attr == "eval" and not n.args
                         or n.func.attr == "train" and n.args and isinstance(n.args[0], ast.Constant)
                         and n.args[0].value is False):
                return True
    return False


def _reads(sem, expr, name: ast.Name) -> bool:
    """``expr`` reads an entry of the checkpoint dict ``name`` holds that sizes the head
    for it: a run's value (``checkpoint['hidden_units']``, ``ckpt.get('num_classes')``), a
    whole module (``checkpoint['classifier']``), or a weight's first dim, its class count
    (``state['fc.weight'].shape[0]``); not any other dim of a tensor of the state
    (``state['fc.weight'].shape[1]`` sizes the head's input only)."""
    bs = {id(b) for b in sem.resolve(name)}
    if not bs:
        return False
    for n in ast.walk(expr):
        if not (isinstance(n, ast.Name) and n.id == name.id and {id(b) for b in sem.resolve(n)} == bs):
            continue
        p = sem.parent(n)
        key = None
        if isinstance(p, ast.Subscript) and p.value is n:
            key = p.slice
        elif isinstance(p, ast.Attribute) and p.value is n and p.attr == "get":
            c = sem.parent(p)
            key = c.args[0] if isinstance(c, ast.Call) and c.func is p and c.args else None
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        if "." not in key.value and not key.value.endswith(("weight", "bias")):
            return True
        # a weight's first dim, the number of classes the checkpoint's head has:
        # ``nn.Linear(512, state['fc.weight'].shape[0])``, ``.size(0)``, ``len(state['fc.bias'])``
        e = sem.parent(p) if isinstance(p, ast.Subscript) else None
        g = sem.parent(e) if e is not None else None
        if isinstance(e, ast.Attribute) and e.attr == "shape" and isinstance(g, ast.Subscript) \
                and isinstance(g.slice, ast.Constant) and g.slice.value == 0:
            return True
        if isinstance(e, ast.Attribute) and e.attr == "size" and isinstance(g, ast.Call) and g.func is e \
                and len(g.args) == 1 and isinstance(g.args[0], ast.Constant) and g.args[0].value == 0:
            return True
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" and e.args and e.args[0] is p:
            return True
    return False


def _same_names(sem, head) -> bool:
    """The new head has the parameter names of the one it replaced: one ``torch.nn``
    layer with weights (``model.fc = nn.Linear(512, 10)``: ``fc.weight``, ``fc.bias``),
    not a container of layers."""
    node = head.node
    value = node.value if isinstance(node, ast.Assign) else None
    if not isinstance(value, ast.Call):
        return False
    q = sem.call_qualname(value) or ""
    return q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1] in (
        "Linear", "Conv1d", "Conv2d", "Conv3d", "Bilinear", "LazyLinear",
    )


def _torch_name(sem) -> str:
    """The name the module imports torch as (``torch`` when it does not: the fix adds
    ``import torch``)."""
    from ..semantic import BindingKind

    for name, bs in sem.module_scope.bindings.items():
        if any(b.kind is BindingKind.IMPORT and b.qualname == "torch" for b in bs) and len(bs) == 1:
            return name
    return "torch"


def _count_origins(sem, nc) -> tuple:
    """The origins of a class count, a parameter's replaced by those of the values it
    takes (its default, the file's call sites); and whether those are all it can be."""
    out, complete = [], True
    for o in sem.origins(nc):
        if o.kind is OriginKind.PARAMETER and o.binding is not None and o.binding.scope.node is not None:
            pv = sem.param_values(o.binding.scope.node, o.binding.name)
            if pv.values:
                complete = complete and pv.complete
                for v, _, _ in pv.values:
                    out.extend(sem.origins(v))
                continue
        if o.kind is not OriginKind.VALUE:
            complete = False
        out.append(o)
    return out, complete


def _in_module_class(sem, node) -> bool:
    """``node`` is in a method of a module class (its own load of pretrained weights)."""
    fn = sem.enclosing_function(node)
    cls = sem.enclosing(fn, ast.ClassDef) if fn is not None else None
    return cls is not None and is_module_class(sem, cls)


def _in_class(sem, node) -> bool:
    fn = sem.enclosing_function(node)
    return fn is not None and sem.enclosing(fn, ast.ClassDef) is not None


def _splat_near(sem, call: ast.Call, entry) -> bool:
    """The ``**`` dict entry ``entry`` of ``call``'s class count is written in the call's
    own block: the same function, or module code with no definition between them (what
    the chunk the call stands in holds, so that the words it is found by are there), and
    no ``**`` name of the call is changed in place (``kwargs.pop("num_classes")``, ``del
    kwargs[k]``: the entry may be gone)."""
    for k in call.keywords:
        if k.arg is None and isinstance(k.value, ast.Name):
            for b in sem.reaching(k.value):
                for ref in sem.references(b):
                    p = sem.parent(ref)
                    if isinstance(p, ast.Attribute) and p.value is ref and p.attr in ("pop", "popitem", "clear"):
                        return False
                    if isinstance(p, ast.Subscript) and p.value is ref and isinstance(p.ctx, ast.Del):
                        return False
    fn = sem.enclosing_function(call)
    if sem.enclosing_function(entry) is not fn:
        return False
    if fn is not None:
        return True
    a, b = sorted((entry.lineno, call.lineno))
    lines = sem.text.splitlines()[a:b - 1]
    return not any(ln.startswith(("def ", "async def ", "class ", "@")) for ln in lines)


def _guarded(sem, call: ast.Call, nc, expected: int, flags: list, cache: dict) -> bool:
    """A statement before ``call`` in its function, on every path to it, stops a class
    count other than ``expected``: ``if n != 1000: raise ...`` (or ``return``), also with
    the pretrained flag of the call as the other operand of an ``and`` (``if pretrained
    and self.num_classes != IMAGENET_CLASSES:``), or ``assert n == 1000`` (``n`` written as
    the call's ``num_classes=`` is, the bound a literal or a name bound to one)."""
    count = sem.segment(nc)
    flag_codes = {sem.segment(f) for f in flags}

    def is_expected(e) -> bool:
        origins = sem.origins(e)
        return bool(origins) and all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant)
                                     and o.node.value == expected for o in origins)

    def compares(e, op) -> bool:  # ``count <op> expected`` either way round
        if not (isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], op)):
            return False
        a, b = e.left, e.comparators[0]
        return (sem.segment(a) == count and is_expected(b)) or (sem.segment(b) == count and is_expected(a))

    def stops(st) -> bool:
        if isinstance(st, ast.Assert):
            return compares(st.test, ast.Eq)
        if not isinstance(st, ast.If) or not st.body or not isinstance(st.body[-1], (ast.Raise, ast.Return)):
            return False
        parts = st.test.values if isinstance(st.test, ast.BoolOp) and isinstance(st.test.op, ast.And) else [st.test]
        tests = [x for x in parts if compares(x, ast.NotEq)]
        return len(tests) == 1 and all(x is tests[0] or sem.segment(x) in flag_codes for x in parts)

    fn = sem.enclosing_function(call)
    st = sem.statement_of(call)
    while st is not None and st is not fn:
        block = sem.block_of(st)
        # (only the statements that may stop something are looked at: a block of
        # thousands of builder calls is read once, not once per call)
        for before in _guard_statements(block, cache) if block is not None else ():
            if (before.lineno, before.col_offset) < (st.lineno, st.col_offset) and stops(before):
                return True
        st = sem.parent(st)
        while st is not None and not isinstance(st, ast.stmt):
            st = sem.parent(st)
    return False


def _guard_statements(block: list, cache: dict) -> list:
    """The statements of ``block`` that may refuse a class count: ``assert``s and ``if``s
    whose body ends with ``raise``/``return`` (found once per block: ``cache``, the file's)."""
    if not block:
        return []
    # (keyed by its first statement: ``block_of`` may give the same block as a new list)
    got = cache.get(id(block[0]))
    if got is None or got[0] is not block[0] or got[1] != len(block):
        found = [s for s in block if isinstance(s, ast.Assert)
                 or isinstance(s, ast.If) and s.body and isinstance(s.body[-1], (ast.Raise, ast.Return))]
        got = cache[id(block[0])] = (block[0], len(block), found)
    return got[2]
