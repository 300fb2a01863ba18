"""TM102 tensor-created-without-device."""

from __future__ import annotations

import ast

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic.source import has_word
from ._device import MISMATCH_EVIDENCE, without_cuda
from ._tensor_device import Analysis, _short, is_test_path, may_make_a_cpu_tensor

_DEVICE_MSG = "on a GPU this fails with 'Expected all tensors to be on the same device'"



def _places_anything(text: str, has) -> bool:
    """The text may put something on a device: a move (``.to(``, ``.cuda(``), a device
    made or read (``torch.device(``, ``x.device``, ``"cuda"``), a framework that places
    modules (Lightning, Accelerate, Fabric, ``device_map``), or a ``device=`` that is not
    ``device=None``."""
    if has(".to(") or has(".cuda(") or has("torch.device(") or has("LightningModule") or has("device_map") \
            or has("ccelerat") or has("abric") or has(".device") or has("'cuda") or has('"cuda'):
        return True  # (Accelerate's ``prepare``, Fabric's ``setup``, a device read or spelled: may place)
    return has("device=") and text.count("device=") > text.count("device=None")

class TensorCreatedWithoutDevice(Rule):
    """## What it does
    Finds tensors made on the CPU in an `nn.Module`'s `forward` (or in a method or
    same-file helper that `forward` calls, a subclass's override of a method a base's
    `forward` calls on `self` too: `Base.forward` calling `self._forward(...)`; in a LightningModule also its
    `training_step`/`validation_step`/`test_step`/`predict_step`, which its Trainer runs
    with the module and the batch on the device, in a file that need not name a device) that then meet a tensor on the input's
    device in an operation that needs one device: arithmetic, a comparison, `matmul`,
    `torch.cat`/`torch.stack`, the index of `index_select`/`gather`, the mask of
    `masked_fill`, a loss (`F.cross_entropy`, or a loss module: `self.ce = nn.CrossEntropyLoss()`,
    `self.ce(logits, target)`; not `CTCLoss`), the input of a layer with weights (an
    `nn.Sequential` holding one too, given as an argument or added by
    `self.mlp.add_module(name, nn.Linear(...))`), the hidden state of an RNN (also
    inside a tuple bound to a name or a `self` attribute first, or returned by a method:
    `hidden = self.init_hidden(b)` of `return (torch.zeros(...), torch.zeros(...))`), a list
    it is appended to that `torch.stack`/`torch.cat` joins with device tensors (0-d
    tensors too: `losses.append(torch.tensor(0.0))` beside the batch's losses).  The
    tensor comes from a factory (`torch.zeros`, `ones`, `empty`, `full`, `rand`, `randn`,
    `randint`, `arange`, `eye`, `linspace`, `tensor`, ...) called without `device=`.
    Also in a plain same-file function outside module code (a loss, a metric) every
    call of which in the file passes it a device tensor (the output of a model moved to
    a device, a moved tensor), in a file that defines the model's `forward`.  And in a
    public method of a module class that nothing of the file runs while a module is
    built (`vae.inference(n)`, `gan.sample(16)`: its callers call it on the model,
    wherever they moved it), when the tensor is the input of one of its layers with
    weights (`z = torch.randn(n, self.latent)`, `self.decoder(z)`).

    The value is followed through names, tensor methods and torch functions that keep
    it on the CPU, same-file helpers and methods (what they return, tuples included)
    and the arguments they receive.  It also reports, without a fix, two shapes of the
    same mistake: a tensor kept as a plain attribute (`self.t = torch.ones(3)` in
    `__init__`, or made by a builder, or derived from another such attribute, not a
    buffer) that `forward` combines with its input, and a layer with weights
    (`nn.Linear`, `nn.BatchNorm1d`, ...) constructed inside `forward` and called on the
    input.

    ## Why is this bad?
    A factory without `device=` puts the tensor on the CPU.  Once the model and its
    inputs are on a GPU, the first operation that mixes the two fails with `Expected all
    tensors to be on the same device`.  `model.to(device)` moves parameters, buffers
    and submodules, never plain tensor attributes, and a layer built inside `forward`
    keeps fresh weights on the CPU (which are not trained either).

    The tensor is also followed through the old `Variable(t)` wrapper; not where CUDA is
    not available (the `else` of `if torch.cuda.is_available():`, the code after `if
    torch.cuda.is_available(): return t.cuda()`), where every tensor is on the CPU.

    Not reported, because they are legal on a GPU: a CPU tensor used as an index
    (`x[torch.arange(n)]`, `x[mask] = 0`), copied into a device tensor, moved
    (`.to(x)`, `.to(x.device)`, `.cuda()`, `.type_as(x)`, also when only under
    `if x.is_cuda:` or in `t.cuda() if x.is_cuda else t`; made in the `else` of `if
    x.is_cuda:`, the CPU path), registered
    (`register_buffer`, `nn.Parameter`), a 0-d tensor (`torch.tensor(2.0) * x`,
    `torch.rand([]) < p`, `x + t.sum()`, possibly `table[i]`), a value read back as a
    Python number (`.item()`), lengths for `pack_padded_sequence`, factories under
    `with torch.device(...)` or in a tracing/scripting/ONNX-export branch, and anything
    passed to code this file does not define (it may move it).  A device tensor is
    proven, not guessed: an input that the function uses as a tensor (`x.size(0)`,
    `x.view(...)`, a submodule call), a submodule's output, a parameter or buffer, and
    what tensor operations make of them; inputs of functions that test their type (a
    PIL image or a numpy array may come in) do not count.  Test files are skipped, and
    so is a file that never names a device (a CPU-only script), unless it is a library
    of modules (`def forward`, no `backward`, no `__main__`) that a file of its own
    directory which names a device imports: the importer decides where its modules run.

    ## Example
    ```python
    class Encoder(nn.Module):
        def forward(self, x):
            h0 = torch.zeros(1, x.size(0), self.hidden)
            return self.rnn(x, h0)
    ```

    ## Use instead
    ```python
    class Encoder(nn.Module):
        def forward(self, x):
            h0 = torch.zeros(1, x.size(0), self.hidden, device=x.device)
            return self.rnn(x, h0)
    ```

    ## Fix safety
    The fix adds `device=x.device` and is unsafe (it needs `--unsafe-fixes`): it is
    offered only when `x` is a tensor on every path where the factory runs (the
    factory's own arguments use it as one, as in `x.size(0)`, or it is a parameter
    without a default that the function always uses as a tensor), and which device the
    code meant is still for a person to confirm.  Legacy constructors
    (`torch.FloatTensor(...)`) and `torch.from_numpy` take no `device=` and are
    reported only; so are plain tensor attributes (registering a buffer changes the
    module's `state_dict`) and layers built in `forward` (they belong in `__init__`).
    """

    code = "TM102"
    name = "tensor-created-without-device"
    pitfall = "device"
    summary = "a tensor created in forward() without device= meets the input on another device"
    severity = Severity.BUG
    # a class defining forward() (or a Lightning step), in a file that mentions a device at
    # all or a LightningModule (its Trainer moves the module and the batch)
    needles = ("cuda", "device", ".to(", "LightningModule")
    requires_all = ("def",)
    verify = Verify("device", MISMATCH_EVIDENCE)
    corpus_minimum = (5, 6)
    valid = (
        # a CPU index into a device tensor is legal
        "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x[:, torch.arange(x.size(1))]  # device\n",
        # a 0-d tensor mixes with device tensors like a number
        "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return torch.tensor(2.0) * x  # device\n",
        # moved before it meets the input
        "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.ones(x.size(1)).to(x.device)\n",
    )
    invalid = (
        "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x + torch.ones(x.size(1))\n\n\nm = M().cuda()\n",
        "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.rnn = nn.GRU(3, 4)\n\n    def forward(self, x):\n"
        "        h = torch.zeros(1, x.size(1), 4)\n        return self.rnn(x, h)\n\n\nm = M().to('cuda')\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The needles (or a module library: :meth:`_library`), then the chunk screens of
        the factories and layers on the whole text: a file in which every factory call
        says ``device=``, is registered, is read back as numbers or stands outside the
        code a module runs is not analysed."""
        return (super().may_match(text, has) or cls._library(text, has)) and may_make_a_cpu_tensor(text)

    @staticmethod
    def _library(text: str, has=None) -> bool:
        """A file of module classes that trains and runs nothing itself (``def
        forward``; no ``backward``, no ``__main__``; ``check`` asks too that a file of its
        directory that names a device imports it): where its modules run is decided by
        the code that imports them, which may move them to a GPU.  (A script that never
        names a device trains on the CPU: consistent, not reported.)"""
        has = has or text.__contains__
        return has("def forward") and not has("backward") and not has("__main__")

    def check(self, ctx: Context):
        if not super().may_match(ctx.text, ctx.has) and not (
                self._library(ctx.text, ctx.has) and ctx.project is not None
                and ctx.project.is_imported(ctx.path, namespace=True, importer_has=self.needles,
                                            neighbours_only=True)):
            return  # no device anywhere: a CPU-only script (the needles, also without shortcuts)
        if not self._library(ctx.text, ctx.has) and not _places_anything(ctx.text, ctx.has):
            return  # (a script that moves nothing: "device" only in a comment or an unused ``device=None``)
        if is_test_path(ctx.path) or ctx.has("set_default_device"):
            return
        an = Analysis.of(ctx)
        sem = ctx.sem
        attrs_done = set()
        for call, fn, name in an.factories():  # at least 1-d, no device=
            if self._guarded(sem, call):
                continue
            if any(isinstance(a, ast.ExceptHandler) for a in sem.ancestors(call)):
                continue  # (the path taken when the value was not what the ``try`` expected: a number, say)
            meets = an.follow(call, fn)
            if not meets:
                continue
            # met directly, or through an attribute the same function sets while forward runs
            # (``self.grid = torch.zeros(...)`` in forward): the factory is what to fix
            direct = [
                m for m in meets
                if m.attr is None or (sem.enclosing_function(m.attr[2]) is fn and an.in_fwd(fn))
            ]
            if direct:
                yield self._factory_finding(ctx, an, call, fn, name, direct[0])
                continue
            m = meets[0]
            cls, attr, assign = m.attr
            if (cls, attr) in attrs_done:
                continue
            attrs_done.add((cls, attr))
            other = f" `{_short(sem.segment(m.other))}`" if m.other is not None else " a device tensor"
            user = sem.enclosing_function(m.node).name
            setter = sem.enclosing_function(assign)
            if setter is not None and an.in_fwd(setter):
                what = f"`self.{attr}` is set to a tensor made on the CPU (in `{setter.name}`)"
            else:
                what = f"`self.{attr}` is a plain tensor attribute made on the CPU: `model.to(device)` leaves it there"
            yield ctx.finding(
                self,
                assign,
                f"{what}, and `{user}` combines it with{other} in {m.what} (line {m.node.lineno});"
                f" register it with `self.register_buffer(\"{attr}\", ...)` (this changes the `state_dict`)"
                " or create it on the input's device",
            )
        for call, fn, name in an.layers_built():
            meets = an.follow_layer(call, fn)
            if meets:
                yield ctx.finding(
                    self,
                    call,
                    f"`{sem.segment(call.func)}` is instantiated inside `{fn.name}`: its weights stay on the CPU"
                    f" (and are never trained) while {meets[0].what} on the input's device (line"
                    f" {meets[0].node.lineno}); create it in `__init__`",
                )

    @staticmethod
    def _guarded(sem, call) -> bool:
        """Under ``with torch.device(...)`` (the factory follows it), in a branch for
        tracing/scripting/ONNX export, in the ``else`` of ``if
        torch.cuda.is_available():`` (the code's own CPU path) in a file that never
        names MPS, or in the ``else`` of ``if x.is_cuda:`` (the path of a CPU tensor)."""
        child = call
        mps = None  # the file names MPS: the CPU path of a CUDA test may be the MPS one (read once asked)
        for a in sem.ancestors(call):
            if isinstance(a, ast.If):
                if mps is None:
                    mps = has_word(sem.text, "mps")
                if not mps and without_cuda(sem, a.test, any(x is child for x in a.orelse)):
                    return True
                # ``if seq.is_cuda: m = m.cuda() else: m = torch.from_numpy(...)``: the
                # branch that runs where the tensor is on the CPU
                t, in_else = a.test, any(x is child for x in a.orelse)
                if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
                    t, in_else = t.operand, not in_else
                if in_else and not mps and isinstance(t, ast.Attribute) and t.attr == "is_cuda":
                    return True  # (not in a file that names MPS: an MPS tensor is not ``is_cuda`` either)
            child = a
            if isinstance(a, (ast.With, ast.AsyncWith)):
                for item in a.items:
                    ce = item.context_expr
                    if isinstance(ce, ast.Call) and sem.call_qualname(ce) in ("torch.device", "torch.cuda.device"):
                        return True
            if isinstance(a, (ast.If, ast.IfExp)):
                for n in ast.walk(a.test):
                    if isinstance(n, ast.Call) and (sem.call_qualname(n) or "").startswith(
                        ("torch.jit.is_tracing", "torch.jit.is_scripting", "torch.onnx.is_in_onnx_export",
                         "torch.compiler.is_compiling", "torch._dynamo.is_compiling")
                    ):
                        return True
        return False

    def _factory_finding(self, ctx, an: Analysis, call, fn, name, meet):
        sem = ctx.sem
        what = f"`{sem.segment(call.func)}(...)`"
        where = f"`{fn.name}`"
        other = f" `{_short(sem.segment(meet.other))}`" if meet.other is not None else ""
        msg = (
            f"{what} in {where} creates a tensor on the CPU (no `device=`) that meets{other or ' a device tensor'}"
            f" in {meet.what} (line {meet.node.lineno}); {_DEVICE_MSG}"
        )
        if name not in ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace",
                        "logspace", "tensor", "randperm", "range", "as_tensor"):
            return ctx.finding(self, call, msg + f" (`{name}` takes no `device=`: move the result)")
        src = an.device_source(call, fn, meet)
        if src is None:
            return ctx.finding(self, call, msg)

        def build(view, call=call, src=src):
            return {view.node(call): _with_device(view.node(call), src)}

        return ctx.finding(
            self, call, f"{msg}; add `device={src}.device`",
            Fix(build, Safety.UNSAFE, message=f"add `device={src}.device`"),
        )


def _with_device(node, src: str):
    import libcst as cst

    args = list(node.args)
    new_arg = cst.Arg(
        keyword=cst.Name("device"),
        value=cst.parse_expression(f"{src}.device"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        # an explicit trailing comma: keep it after the new argument
        new_arg = new_arg.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        # ``f(a, b )``: the space before ``)`` stays before ``)``
        new_arg = new_arg.with_changes(whitespace_after_arg=args[-1].whitespace_after_arg)
        args[-1] = args[-1].with_changes(
            whitespace_after_arg=cst.SimpleWhitespace(""),
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        )
    return node.with_changes(args=[*args, new_arg])
