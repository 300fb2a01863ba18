"""Where a tensor made on the CPU meets a tensor on the model's device (TM102).

A tensor factory (``torch.zeros``, ``torch.arange``, ...) without ``device=`` makes a CPU
tensor.  That is a bug only where the tensor, or something computed from it, meets a
tensor on the input's (the model's) device in an operation that needs one device:
arithmetic, a comparison, ``matmul``, ``torch.cat``/``stack`` with it, ``index_select``/
``gather``/``masked_fill`` arguments, the input of a layer with weights, the hidden state
of an RNN.  Everything else is legal on a GPU and is not reported:

* indexing a device tensor with a CPU index (``x[torch.arange(n)]``, ``x[mask] = v``),
  copying into or out of one (``t[...] = x``), moving it (``.to(x)``, ``.cuda()``,
  ``.type_as(x)``), registering it (``register_buffer``, ``nn.Parameter``);
* 0-d CPU tensors, which mix with device tensors like Python numbers
  (``torch.tensor(2.0) * x``, ``if torch.rand([]) < p``, ``x + t.sum()``);
* values turned into Python numbers (``.item()``, ``.tolist()``, ``int(t)``), shapes;
* anything passed to a callee this file does not define (it may move it).

The value is followed through names (def-use, :meth:`SemanticModel.reads_of`), tensor
methods and torch functions that keep it on the CPU, same-file helpers and methods (its
parameter inside the callee, and what the callee returns back at the call it came from),
and ``self.<attr>`` attributes that are plain tensors (not buffers): ``model.to(device)``
leaves those on the CPU, and ``forward`` reading one meets the input.

"The model's device" is proven, never guessed: a parameter of ``forward`` (or of a
method or helper it calls) used as a tensor, the output of a submodule, a parameter or
registered buffer of the module, and what tensor operations make from those.  Functions
that test their input's type (``isinstance(img, torch.Tensor)``, a PIL image or a numpy
array may come in) do not count their input as a device tensor.
"""

from __future__ import annotations

import ast
import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from ..semantic import BindingKind, SemanticModel
from ..semantic import names as N
from ._device import SELF_METHODS, model_state, runs_without_cuda
from ..semantic.source import _word, before_a_call, callees, has_word
from ..semantic.source import words as find_words

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

# ---------------------------------------------------------------------------- tensor methods
# attributes that are not tensors
HOST_ATTRS = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad", "layout", "is_sparse",
    "names", "grad_fn", "is_leaf", "itemsize", "nbytes", "is_quantized", "is_mps",
})
# attributes that are tensors on the same device
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
# methods whose result is not a tensor (or a tensor that is certainly fine: ``.cpu()`` is
# handled on its own)
HOST_METHODS = frozenset({
    "item", "tolist", "numpy", "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride",
    "storage_offset", "is_contiguous", "is_floating_point", "is_complex", "get_device", "data_ptr",
    "untyped_storage", "storage", "__len__", "backward", "register_hook", "retain_grad", "tobytes", "equal",
    "allclose", "isclose", "is_set_to", "is_shared", "is_pinned", "dim_order", "split", "chunk", "unbind",
    "tensor_split", "hsplit", "vsplit", "max", "min", "median", "mode", "sort", "topk", "kthvalue", "unique",
    "unique_consecutive", "aminmax", "frexp", "histogram", "lu", "qr", "svd", "slogdet", "eig",
})
# methods that move (or may move) the tensor to another device
MOVE_METHODS = frozenset({"to", "cuda", "type_as", "type", "to_device", "xpu", "mps", "npu", "share_memory_"})
# reductions: no dimension given -> a 0-d tensor, which mixes with device tensors
REDUCTIONS = frozenset({
    "sum", "mean", "prod", "norm", "std", "var", "amax", "amin", "argmax", "argmin", "all", "any",
    "count_nonzero", "nansum", "nanmean", "trace", "det", "logdet", "nanmedian",
})
# methods taking other tensors that must be on the receiver's device
SAME_DEVICE_METHODS = frozenset({
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "matmul", "mm",
    "bmm", "mv", "dot", "masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_", "masked_select",
    "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "where",
    "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "pow", "add_", "sub_", "mul_", "div_", "lerp",
    "lerp_", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "baddbmm", "addmm", "addbmm", "cross", "outer",
    "atan2", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "fmod",
    "remainder", "clamp", "clamp_", "clip", "take_along_dim", "index_add", "index_add_", "index_copy",
    "index_copy_", "index_fill", "index_fill_", "kron", "hypot", "expand_as_strided", "isin",
})
# methods whose result is a tensor on the receiver's device (besides SAME_DEVICE_METHODS)
PRESERVING_METHODS = frozenset({
    "view", "reshape", "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "unsqueeze", "squeeze", "unsqueeze_", "squeeze_", "expand", "expand_as", "view_as", "reshape_as", "repeat",
    "repeat_interleave", "permute", "transpose", "transpose_", "t", "t_", "contiguous", "flatten", "unflatten",
    "clone", "detach", "detach_", "narrow", "select", "flip", "fliplr", "flipud", "roll", "cumsum", "cumprod",
    "cummax", "triu", "tril", "triu_", "tril_", "abs", "abs_", "exp", "exp_", "log", "log_", "log1p", "log2",
    "sqrt", "sqrt_", "rsqrt", "neg", "neg_", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "softmax",
    "log_softmax", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_", "fill_", "zero_", "normal_",
    "uniform_", "bernoulli", "bernoulli_", "exponential_", "random_", "geometric_", "cauchy_", "log_normal_",
    "cpu", "requires_grad_", "round", "floor", "ceil", "trunc", "frac", "sign", "reciprocal", "square", "erf",
    "erfinv", "float_power", "nonzero", "argsort", "diag", "diagonal", "diag_embed", "movedim", "moveaxis",
    "swapaxes", "swapdims", "to_dense", "nan_to_num", "logical_not", "bitwise_not", "sinh", "cosh", "atan",
    "asin", "acos", "expm1", "exp2", "sigmoid_", "tanh_", "relu_", "pin_memory", "new_zeros", "new_ones",
    "new_empty", "new_full", "new_tensor", "masked_fill", "masked_fill_", "fill_diagonal_", "apply_",
    "add_", "mul_", "sub_", "div_", "pow_", "div_", "tile", "broadcast_to", "softplus",
})
_RESULT_IS_TENSOR = PRESERVING_METHODS | SAME_DEVICE_METHODS | REDUCTIONS
# ``nn.Module`` methods that return the module itself (moves included)
_MODULE_RETURNS_SELF = SELF_METHODS | {"to", "cuda", "cpu", "xpu", "type", "apply"}

# ---------------------------------------------------------------------------- torch functions
_T = "torch."
_F = "torch.nn.functional."
# sequence-taking functions: every tensor of the sequence on one device
SEQ_FUNCS = frozenset(_T + n for n in (
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack",
    "block_diag", "cartesian_prod",
))
# functions whose tensor arguments must share a device
SAME_DEVICE_FUNCS = frozenset(
    [_T + n for n in (
        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "matmul",
        "mm", "bmm", "mv", "dot", "einsum", "where", "masked_fill", "index_select", "gather", "scatter",
        "scatter_add", "take_along_dim", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "greater",
        "less", "greater_equal", "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor", "lerp",
        "addcmul", "addcdiv", "baddbmm", "addmm", "addbmm", "cdist", "outer", "ger", "cross", "atan2", "pow",
        "fmod", "remainder", "clamp", "clip", "cosine_similarity", "kron", "tensordot", "bilinear",
        "masked_select", "hypot", "index_add", "index_copy", "index_fill", "bucketize", "searchsorted",
    )]
    + ["einops.einsum"]
    + [_F + n for n in (
        "linear", "bilinear", "embedding", "embedding_bag", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
        "conv_transpose2d", "conv_transpose3d", "layer_norm", "group_norm", "batch_norm", "instance_norm",
        "rms_norm", "scaled_dot_product_attention", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
        "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
        "cosine_similarity", "pairwise_distance", "grid_sample", "prelu", "triplet_margin_loss",
        "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
        "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss",
    )]
) | SEQ_FUNCS
# loss modules whose inputs must share one device (the classes of the functional losses
# above; not CTCLoss, whose lengths may stay on the CPU)
_SAME_DEVICE_LOSSES = frozenset({
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
    "BCEWithLogitsLoss", "KLDivLoss", "TripletMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
    "SoftMarginLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CosineEmbeddingLoss",
})
# functions whose result is a tensor on the device of their tensor argument(s)
PRESERVING_FUNCS = frozenset(
    [_T + n for n in (
        "exp", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "abs", "neg", "negative", "sin", "cos", "tan",
        "tanh", "sigmoid", "relu", "sign", "floor", "ceil", "round", "trunc", "triu", "tril", "flip", "fliplr",
        "flipud", "roll", "cumsum", "cumprod", "transpose", "permute", "reshape", "flatten", "unsqueeze",
        "squeeze", "t", "diag", "diag_embed", "diagonal", "repeat_interleave", "tile", "broadcast_to", "softmax",
        "log_softmax", "erf", "erfinv", "square", "reciprocal", "narrow", "select", "logical_not",
        "bitwise_not", "atan", "asin", "acos", "sinh", "cosh", "exp2", "expm1", "sinc", "nan_to_num", "real",
        "imag", "view_as_real", "view_as_complex", "clone", "detach", "zeros_like", "ones_like", "full_like",
        "empty_like", "rand_like", "randn_like", "randint_like", "nonzero", "argsort", "movedim", "moveaxis",
        "swapaxes", "outer", "polar", "complex", "float_power", "sum", "mean", "prod", "amax", "amin", "argmax",
        "argmin", "std", "var", "norm", "logsumexp", "cummax", "sgn", "frac", "deg2rad", "rad2deg",
    )]
    + [_F + n for n in (
        "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "elu", "leaky_relu",
        "dropout", "dropout1d", "dropout2d", "dropout3d", "pad", "normalize", "interpolate", "one_hot",
        "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
        "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
        "adaptive_max_pool2d", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle", "glu", "hardtanh",
        "logsigmoid", "mish", "softsign", "celu", "selu", "relu6", "hardswish", "hardsigmoid", "threshold",
        "gumbel_softmax", "softmin", "tanhshrink", "softshrink", "hardshrink",
    )]
    # einops' rearrangements of a tensor (or of a list of tensors they stack)
    + ["einops." + n for n in ("rearrange", "repeat", "reduce")]
    # the pre-0.4 autograd wrapper: the tensor it wraps, where it is
    + ["torch.autograd.Variable", "torch.autograd.variable.Variable"]
) | SAME_DEVICE_FUNCS
# reductions: a lone tensor argument and no dimension -> 0-d
REDUCTION_FUNCS = frozenset(_T + n for n in (
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "std", "var", "norm", "all", "any",
    "count_nonzero", "max", "min", "median", "trace", "det", "numel",
))
_TYPE_TESTS = frozenset({"builtins.isinstance", "torch.is_tensor", "builtins.type"})
_NUMBERS = (int, float, complex, bool)

# what a factory needs to be worth following
FACTORY_WORDS = tuple(sorted(N.FACTORIES))


@dataclass
class Meet:
    """``node`` is where a CPU tensor meets ``other`` (a tensor on the model's device)."""

    node: ast.AST
    what: str
    other: Optional[ast.AST]
    attr: Optional[tuple] = None  # (class, attribute name, assignment) when reached through ``self.<attr>``


@dataclass
class Found:
    """A CPU tensor that provably meets a device tensor."""

    source: ast.Call  # the factory call (or the layer constructor)
    function: ast.AST  # the function holding it
    meet: Meet
    meets: list = field(default_factory=list)


def is_test_path(path: str) -> bool:
    """Test code: a ``tests``/``test`` directory, ``test_*.py``, ``*_test.py``, ``conftest.py``."""
    parts = os.path.normpath(path).replace("\\", "/").split("/")
    base = parts[-1]
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return True
    return any(p in ("tests", "test", "testing") for p in parts[:-1])


class Analysis:
    """Per file: the ``nn.Module`` classes with a ``forward``, the functions ``forward``
    reaches, and the flow of CPU tensors to the operations where they meet device
    tensors."""

    MAX_STEPS = 600
    MAX_DEPTH = 10

    def __init__(self, sem: SemanticModel, path: str = ""):
        self.sem = sem
        self.path = path
        self._device: dict = {}
        self._param_tensor: dict = {}
        self._registered: dict = {}
        self._managed: dict = {}
        self._fwd: dict = {}
        self._init: dict = {}  # function -> it runs while a module is built (``__init__`` reaches it)
        self._all: dict = {}
        self._module_class: dict = {}
        self._fed: dict = {}
        self._calls: dict = {}  # function -> its calls in the file (calls_of)
        self._has_forward: Optional[bool] = None

    @classmethod
    def of(cls, ctx) -> "Analysis":
        a = ctx.cache.get("tm102")
        if a is None:
            a = ctx.cache["tm102"] = cls(ctx.sem, ctx.path)
        return a

    # ------------------------------------------------------------------ what forward runs
    def in_fwd(self, fn) -> bool:
        """``fn`` runs when a module's ``forward`` runs: it is one, or a same-file function
        or method called (transitively) from one."""
        return self._reach(fn, self._fwd, self.is_forward)

    def in_module(self, fn) -> bool:
        """``fn`` is a method of a module class with a ``forward``, or called from one
        (``__init__`` and its helpers included); or a helper fed device tensors."""
        return self._module_code(fn) or self.device_fed(fn)

    def _module_code(self, fn) -> bool:
        """``fn`` is a method of a module class with a ``forward``, or called from one."""
        return self._reach(fn, self._all, lambda f: self.module_class(self.sem.parent(f)))

    def device_fed(self, fn) -> bool:
        """``fn`` is a plain same-file function (a loss or a metric the training loop
        calls, not module code) one of whose parameters is a device tensor at every call
        site of the file (``categorical_accuracy(model(x), y)`` with a moved model), in a
        file that defines a module's ``forward`` (a training script with its model; like
        every TM102 report, see :func:`may_make_a_cpu_tensor`)."""
        got = self._fed.get(fn)
        if got is not None:
            return got
        self._fed[fn] = False  # (a recursive question answers no)
        ok = False
        if isinstance(fn, _DEFS) and not self._module_code(fn) and self._defines_forward():
            args = fn.args
            ok = any(self._fed_param(fn, a.arg) for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        self._fed[fn] = ok
        return ok

    def _defines_forward(self) -> bool:
        """A ``def forward`` is written in the file (what the whole-file gate asks; not
        parsed: each method of a model file would be)."""
        if self._has_forward is None:
            self._has_forward = _FORWARD_DEF.search(self.sem.text) is not None
        return self._has_forward

    def _fed_param(self, fn, name: str) -> bool:
        pv = self.sem.param_values(fn, name)
        return pv.complete and bool(pv.values) and all(
            v is not None and self.is_device(v, (), 0) for v, _, _ in pv.values)

    def is_forward(self, fn) -> bool:
        """``fn`` is the ``forward`` of a module class, or a step a Lightning Trainer runs
        on the device with the batch moved there (``training_step`` of a LightningModule)."""
        name = getattr(fn, "name", None)
        if name != "forward" and name not in STEP_METHODS:
            return False
        cls = self.sem.parent(fn)
        return self.module_class(cls) and (name == "forward" or self.lightning_class(cls))

    def module_class(self, cls) -> bool:
        """``cls`` is a class that may be an ``nn.Module`` and has a ``forward`` (its own
        or a same-file base's), or a LightningModule's step."""
        if not isinstance(cls, ast.ClassDef):
            return False
        got = self._module_class.get(cls)
        if got is None:
            runs = self._defines(cls, "forward") or (
                any(self._defines(cls, m) for m in STEP_METHODS) and self.lightning_class(cls))
            got = self._module_class[cls] = runs and self.module_like(cls)
        return got

    def lightning_class(self, cls: ast.ClassDef) -> bool:
        """``cls`` derives from Lightning's ``LightningModule`` (through same-file bases too)."""
        return self.sem.derives_from(cls, N.is_lightning_module)

    def _defines(self, cls: ast.ClassDef, name: str, depth: int = 0) -> bool:
        """``cls`` or a same-file base defines method ``name`` (reads the class bodies
        only, not the methods)."""
        if any(isinstance(s, _DEFS) and s.name == name for s in cls.body):
            return True
        if depth < 5:
            for b in cls.bases:
                bc = self.sem.class_def(b)
                if bc is not None and bc is not cls and self._defines(bc, name, depth + 1):
                    return True
        return False

    def calls_of(self, fn) -> list:
        """The file's calls of ``fn`` (:meth:`SemanticModel.file_calls`), and for a method,
        the ``self.<name>(...)`` calls in the methods of its class's same-file bases that
        find no such method there or override it (a template: ``Base.forward`` calls
        ``self._forward(...)``, which each subclass defines)."""
        got = self._calls.get(fn)
        if got is not None:
            return got
        sem = self.sem
        got = list(sem.file_calls(fn))
        cls = sem.parent(fn)
        if isinstance(fn, _DEFS) and isinstance(cls, ast.ClassDef):
            # (only bases whose text names it: most do not)
            bases = [b for b in sem._mro(cls)[1:] if fn.name in sem.segment(b)]
            if bases:
                seen = {id(c) for c in got}
                for c in sem.find(ast.Call, containing=(fn.name,)):
                    f = c.func
                    if id(c) in seen or not (isinstance(f, ast.Attribute) and f.attr == fn.name
                                             and isinstance(f.value, ast.Name)):
                        continue
                    owner = sem.self_class(f.value)
                    if owner is not None and any(owner is b for b in bases):
                        got.append(c)
        self._calls[fn] = got
        return got

    def instance_calls(self, fn) -> list:
        """:meth:`calls_of`, and for a method also its calls on an instance of its class
        that another class keeps (``self.tok.probe()`` with ``self.tok = Tok()``)."""
        got = self.calls_of(fn)
        cls = self.sem.parent(fn)
        if not isinstance(fn, _DEFS) or not isinstance(cls, ast.ClassDef) or fn.name == "__init__":
            return got
        sem, seen = self.sem, {id(c) for c in got}
        more = []
        for a in sem.find_named((ast.Attribute,), (fn.name,)):
            p = sem.parent(a)
            if isinstance(p, ast.Call) and p.func is a and id(p) not in seen and isinstance(a.value, ast.Attribute):
                owner = sem.instance_class(a.value)
                if owner is not None and sem.derives_from_class(owner, cls):
                    more.append(p)
        return got + more if more else got

    def _reach(self, fn, memo: dict, root, callers=None) -> bool:
        got = memo.get(fn)
        if got is not None:
            return got
        if not isinstance(fn, _DEFS):
            return False
        memo[fn] = False  # cycle guard
        ok = root(fn)
        if not ok:
            for call in (callers or self.calls_of)(fn):
                caller = self.sem.enclosing_function(call)
                if caller is not None and caller is not fn and self._reach(caller, memo, root, callers):
                    ok = True
                    break
        memo[fn] = ok
        return ok

    # ------------------------------------------------------------------ classes and calls
    def module_like(self, cls: ast.ClassDef) -> bool:
        """A class that may be an ``nn.Module``: it derives from a ``torch.nn`` class, from
        a same-file class that does, or from a class of another library (which may)."""
        if not cls.bases:
            return False
        qs = self.sem.base_qualnames(cls)
        if any(q.startswith("torch.nn.") for q in qs):
            return True
        if not qs:  # a base that could not be resolved (a relative import, an expression)
            return True
        return any(not q.startswith(("builtins.", "typing.", "abc.", "enum.", "collections.", "dataclasses.")) and not N.is_torch(q) for q in qs)

    def callee(self, call: ast.Call):
        """The same-file function a call runs: :meth:`SemanticModel.callee`, and the
        ``forward`` of a same-file module called as ``self.sub(x)``."""
        sem = self.sem
        f = call.func
        if isinstance(f, ast.Name):
            cls = sem.self_class(f)
            if cls is not None:  # ``self(x)``: the module's own ``forward``
                return sem.method(cls, "forward")
            return sem.callee(call)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            cls = sem.self_class(f.value)
            if cls is None:
                return None  # other receivers: not followed (cheap, and rarely same-file)
            m = sem.method(cls, f.attr)
            if m is not None:
                return m
            sub = self.submodule_class(f)
            if sub is not None:
                return sem.method(sub, "forward")
        return None

    def submodule_values(self, attr: ast.Attribute) -> Optional[list]:
        """The values ``self.<attr>`` is assigned in its class (and same-file bases); None
        when ``attr`` is not an attribute of ``self``."""
        if not isinstance(attr.value, ast.Name):
            return None
        cls = self.sem.self_class(attr.value)
        if cls is None:
            return None
        out = []
        for c in self.sem._mro(cls):
            info = self.sem.class_info(c)
            out.extend(v for _, v, _ in info.attrs.get(attr.attr, ()))
            out.extend(info.class_attrs.get(attr.attr, ()))
        return out

    def submodule_class(self, attr: ast.Attribute) -> Optional[ast.ClassDef]:
        vals = self.submodule_values(attr)
        if not vals:
            return None
        found = None
        for v in vals:
            if not isinstance(v, ast.Call):
                return None
            c = self.sem.callee(v)
            if not isinstance(c, ast.ClassDef) or (found is not None and c is not found):
                return None
            found = c
        return found

    def layer_of(self, attr: ast.Attribute) -> Optional[tuple]:
        """``(name, call)`` when ``self.<attr>`` is always a ``torch.nn`` layer
        (``self.lstm = nn.LSTM(...)``): the class name and one constructor call."""
        vals = self.submodule_values(attr)
        if not vals:
            return None
        name, call = None, None
        for v in vals:
            # ``nn.LSTM(...).double()``, ``nn.Linear(...).to(device)``: the module itself
            while (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _MODULE_RETURNS_SELF
                   and isinstance(v.func.value, ast.Call)):
                v = v.func.value
            n = N.nn_layer(self.sem.call_qualname(v)) if isinstance(v, ast.Call) else None
            if n is None or (name is not None and n != name):
                return None
            name, call = n, v
        return name, call

    def has_weights(self, name: str, call: ast.Call) -> bool:
        if name not in N.PARAM_LAYERS:
            return False
        switch = N.PARAM_SWITCHES.get(name)
        if switch is not None:
            v = self.sem.keyword(call, switch)
            if isinstance(v, ast.Constant) and v.value is False:
                return False
            if name.startswith("InstanceNorm") and v is None:
                return False  # affine=False by default
        return True

    def sequential_weights(self, attr: ast.Attribute, ctor: ast.Call) -> bool:
        """``self.<attr>``, an ``nn.Sequential`` made by ``ctor``, holds a layer with
        weights: one of its arguments (``nn.Sequential(nn.Linear(4, 8), nn.ReLU())``), or,
        made empty, one that ``self.<attr>.add_module(name, nn.Linear(...))`` adds in its
        class (timbmg/VAE-CVAE-MNIST's ``MLP``)."""
        sem = self.sem

        def weighted(c) -> bool:
            n = N.nn_layer(sem.call_qualname(c)) if isinstance(c, ast.Call) else None
            return n is not None and n != "Sequential" and self.has_weights(n, c)

        if any(weighted(a) for a in ctor.args):
            return True
        if ctor.args or ctor.keywords or not isinstance(attr.value, ast.Name):
            return False
        cls = sem.self_class(attr.value)
        for c in sem.find_named((ast.Call,), ("add_module",)):
            f = c.func
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == attr.attr
                    and isinstance(f.value.value, ast.Name) and cls is not None and sem.self_class(f.value.value) is cls
                    and weighted(sem.argument(c, "module", 1))):
                return True
        return False

    def inline_layer(self, call: ast.Call) -> Optional[str]:
        """``nn.ReLU()(x)``: the class name of a ``torch.nn`` layer built and called at once."""
        f = call.func
        return N.nn_layer(self.sem.call_qualname(f)) if isinstance(f, ast.Call) else None

    def is_submodule_call(self, call: ast.Call) -> bool:
        """``self.sub(...)``, ``self.subs[i](...)``, ``layer(...)`` for ``layer`` iterating
        ``self.subs``: calling an attribute of the module."""
        f = call.func
        while isinstance(f, ast.Subscript):
            f = f.value
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and self.sem.self_class(f.value) is not None:
            return self.sem.method(self.sem.self_class(f.value), f.attr) is None
        if isinstance(f, ast.Name):
            bs = self.sem.resolve(f)
            if len(bs) == 1 and bs[0].kind is BindingKind.FOR_TARGET:
                it = bs[0].iterable
                while isinstance(it, ast.Call) and it.args and isinstance(it.func, ast.Name) and it.func.id in ("enumerate", "zip", "reversed"):
                    it = it.args[0]
                return (
                    isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and self.sem.self_class(it.value) is not None
                )
        return False

    def registered(self, cls: ast.ClassDef) -> Optional[set]:
        """Attribute names ``cls`` (and its same-file bases) register as buffers or
        parameters, or hold as ``nn.Parameter``/``nn.Buffer``/submodules; None when a base
        class is not known (it may register any name)."""
        got = self._registered.get(cls)
        if got is not None or cls in self._registered:
            return got
        out: set = set()
        sem = self.sem
        known = True
        for c in sem._mro(cls):
            for b in c.bases:
                if sem.class_def(b) is None and not any(q.startswith("torch.nn.") for q in sem.qualnames(b)):
                    known = False
            for ms in sem.class_info(c).methods.values():
                for m in ms:
                    for n in sem.walk(m, scopes=False):
                        if (
                            isinstance(n, ast.Call)
                            and sem.method_name(n) in ("register_buffer", "register_parameter", "register_module",
                                                       "add_module")
                            and n.args
                        ):
                            a0 = n.args[0]
                            if isinstance(a0, ast.Constant) and isinstance(a0.value, str):
                                out.add(a0.value)
                            else:
                                known = False
            for name, vals in sem.class_info(c).attrs.items():
                for _, v, _ in vals:
                    if isinstance(v, ast.Call):
                        q = sem.call_qualname(v)
                        if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                                 "torch.nn.parameter.Buffer") or N.is_module_class(q) or isinstance(sem.callee(v), ast.ClassDef):
                            out.add(name)
        got = out if known else None
        self._registered[cls] = got
        return got

    def manages_devices(self, cls: ast.ClassDef) -> bool:
        """The class moves its own tensors (overrides ``_apply``/``to``/``cuda``)."""
        for c in self.sem._mro(cls):
            ms = self.sem.class_info(c).methods
            if any(m in ms for m in ("_apply", "to", "cuda", "_to")):
                return True
        return False

    # ------------------------------------------------------------------ device tensors
    def is_device(self, expr, stack: tuple = (), depth: int = 0) -> bool:
        """``expr`` is provably a tensor on the model's device (see the module docstring).
        ``stack``: the calls through which the analysis entered the function of ``expr``
        (its parameters are then the arguments of the innermost call)."""
        if expr is None or depth > self.MAX_DEPTH:
            return False
        key = (id(expr), tuple(id(c) for c in stack))
        got = self._device.get(key)
        if got is not None:
            return got
        self._device[key] = False  # cycle guard
        got = self._is_device(expr, stack, depth)
        self._device[key] = got
        return got

    def _is_device(self, e, stack, depth) -> bool:
        sem = self.sem
        d = depth + 1
        if isinstance(e, ast.Name):
            bs = sem.reaching(e)
            return bool(bs) and all(self.binding_device(b, stack, d) for b in bs)
        if isinstance(e, ast.Attribute):
            if e.attr in HOST_ATTRS:
                return False
            if e.attr in TENSOR_ATTRS:
                return self.is_device(e.value, stack, d)
            if isinstance(e.value, ast.Name) and sem.self_class(e.value) is not None:
                cls = sem.self_class(e.value)
                reg = self.registered(cls) or set()
                if e.attr not in reg:
                    return False
                return self.layer_of(e) is None and self.submodule_class(e) is None  # a tensor, not a module
            if e.attr in ("weight", "bias") and isinstance(e.value, ast.Attribute):
                lay = self.layer_of(e.value)
                return lay is not None and self.has_weights(*lay)
            return False
        if isinstance(e, ast.Call):
            return self._call_device(e, stack, d)
        if isinstance(e, ast.BinOp):
            return self.is_device(e.left, stack, d) or self.is_device(e.right, stack, d)
        if isinstance(e, ast.UnaryOp):
            return not isinstance(e.op, ast.Not) and self.is_device(e.operand, stack, d)
        if isinstance(e, ast.Subscript):
            return isinstance(e.ctx, ast.Load) and self.is_device(e.value, stack, d)
        if isinstance(e, ast.IfExp):
            return self.is_device(e.body, stack, d) and self.is_device(e.orelse, stack, d)
        if isinstance(e, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return False
            return any(self.is_device(x, stack, d) for x in (e.left, *e.comparators))
        if isinstance(e, ast.NamedExpr):
            return self.is_device(e.value, stack, d)
        return False

    def _call_device(self, e: ast.Call, stack, d) -> bool:
        sem = self.sem
        if self.is_submodule_call(e):
            f = e.func
            if isinstance(f, ast.Attribute):
                lay = self.layer_of(f)
                if lay is not None and self.has_weights(*lay):
                    return True
            return any(self.is_device(a, stack, d) for a in self._args(e))
        if isinstance(e.func, ast.Name) and sem.self_class(e.func) is not None:
            # ``self(x)``: the module's own forward, on its device like a submodule's
            return any(self.is_device(a, stack, d) for a in self._args(e))
        lay = self.inline_layer(e)
        if lay is not None:
            # a layer built here has its weights on the CPU; a weightless one keeps the device
            ctor = e.func
            return not self.has_weights(lay, ctor) and any(self.is_device(a, stack, d) for a in self._args(e))
        m = sem.method_name(e)
        if m is not None and sem.qualname(e.func) is None:
            recv = e.func.value
            if m in MOVE_METHODS:
                if m == "cuda":
                    return True
                if m == "type_as":
                    return bool(e.args) and self.is_device(e.args[0], stack, d)
                if m == "to":
                    dev = sem.keyword(e, "device")
                    first = e.args[0] if e.args else None
                    if dev is None and (first is None or self.is_dtype(first)):
                        return self.is_device(recv, stack, d)  # a dtype change only
                    target = dev if dev is not None else first
                    return self.device_spec(target, stack, d) or self.is_device(target, stack, d)
                return False
            if m in HOST_METHODS or m == "cpu":
                return False
            if m in _RESULT_IS_TENSOR:
                return self.is_device(recv, stack, d)
            return False
        q = sem.call_qualname(e)
        if q is not None:
            dev = sem.keyword(e, "device")
            if dev is not None and (N.is_tensor_factory(q) or q in PRESERVING_FUNCS):
                return self.device_spec(dev, stack, d)  # ``torch.zeros(n, device=x.device)``
            return q in PRESERVING_FUNCS and any(self.is_device(a, stack, d) for a in self._tensor_args(e))
        fn = self.callee(e)
        if isinstance(fn, _DEFS):
            rets = sem.returns(fn)
            inner = stack + (e,)
            return bool(rets) and all(r is not None and self.is_device(r, inner, d) for r in rets)
        f = e.func
        encl = sem.enclosing_function(e)
        if isinstance(f, (ast.Name, ast.Attribute)) and sem.qualname(f) is None \
                and (encl is None or not self.in_fwd(encl)):
            # the output of a model moved to a device (script code: ``model(x)``)
            st = model_state(sem, f, e)
            return st is not None and st.moved and not st.unmoved and not st.handled
        return False

    def is_move(self, e, name: Optional[str] = None) -> bool:
        """``e`` moves a tensor to a device: ``t.cuda()``, ``t.to(x)``/``t.to(device)`` (not a
        dtype change), ``t.type_as(x)``, ``Variable(t).cuda()``; with ``name``, a tensor
        read from that name (``t = t.to(x.device)``), ``Variable(t.cuda())`` too."""
        sem = self.sem
        if isinstance(e, ast.Call) and len(e.args) == 1 and not e.keywords and sem.call_qualname(e) in (
            "torch.autograd.Variable", "torch.autograd.variable.Variable"
        ):
            e = e.args[0]  # ``Variable(...)`` wraps the tensor where it is
        while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and sem.qualname(e.func) is None:
            m = e.func.attr
            if m in ("cuda", "type_as", "to_device") or (
                m == "to" and (sem.argument(e, "device") is not None or (e.args and not self.is_dtype(e.args[0])))
            ):
                if name is None:
                    return True
                return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(e.func.value))
            e = e.func.value
        return False

    def device_spec(self, e, stack=(), d: int = 0) -> bool:
        """``e`` names the model's device: ``x.device`` of a device tensor, ``"cuda"``,
        ``torch.device("cuda")``, ``"cuda" if torch.cuda.is_available() else "cpu"`` (on a
        machine with a GPU), or a name bound only to those."""
        if e is None or d > self.MAX_DEPTH:
            return False
        if isinstance(e, ast.Attribute) and e.attr == "device":
            return self.is_device(e.value, stack, d + 1)
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            return e.value.split(":")[0].strip() == "cuda"
        if isinstance(e, ast.Call) and self.sem.call_qualname(e) == "torch.device" and e.args:
            return self.device_spec(e.args[0], stack, d + 1)
        if isinstance(e, ast.IfExp):
            return any(self.device_spec(x, stack, d + 1) for x in (e.body, e.orelse)) and all(
                self.device_spec(x, stack, d + 1) or (isinstance(x, ast.Constant) and x.value == "cpu")
                for x in (e.body, e.orelse)
            )
        if isinstance(e, ast.Name):
            bs = self.sem.reaching(e)
            return bool(bs) and all(
                b.kind is BindingKind.ASSIGNMENT and b.value is not None and self.device_spec(b.value, stack, d + 1)
                for b in bs
            )
        return False

    def binding_device(self, b, stack, d) -> bool:
        k = b.kind
        if k is BindingKind.PARAMETER:
            return self.param_device(b, stack, d)
        if k in (BindingKind.ASSIGNMENT, BindingKind.NAMED_EXPR):
            if b.value is not None:
                return self.is_device(b.value, stack, d)
            if b.unpack is not None:
                whole, _path = b.unpack
                return self._unpacked_device(whole, stack, d)
            return False
        if k is BindingKind.AUG_ASSIGNMENT:
            st = b.node
            if isinstance(st, ast.AugAssign):
                if self.is_device(st.value, stack, d):
                    return True
                prev = self.sem.reaching(st.target)
                return bool(prev) and all(self.binding_device(p, stack, d) for p in prev if p is not b)
        return False

    def _unpacked_device(self, whole, stack, d) -> bool:
        """An element of ``a, b = whole``: ``whole`` splits a device tensor or is the
        output of a submodule called on one."""
        if isinstance(whole, ast.Name):
            # ``x, y = batch`` of a Lightning step's batch (moved there whole), or rows of a
            # device tensor
            return self.is_device(whole, stack, d)
        if not isinstance(whole, ast.Call):
            return False
        m = self.sem.method_name(whole)
        if m in ("split", "chunk", "unbind", "tensor_split", "topk", "sort", "max", "min", "median") and self.sem.qualname(whole.func) is None:
            return self.is_device(whole.func.value, stack, d)
        if self.is_submodule_call(whole):
            return self._call_device(whole, stack, d)
        return False

    def param_device(self, b, stack, d) -> bool:
        fn = b.scope.node
        if not isinstance(fn, _DEFS) or self.sem.self_class_of_param(b) is not None:
            return False
        if stack:
            call = stack[-1]
            if self.callee(call) is fn:
                arg = self.argument_for(call, fn, b.name)
                if arg is None:
                    return False
                return self.is_device(arg, stack[:-1], d)
        if self.tensor_param(b):
            return True
        if fn.name in STEP_METHODS and self.is_forward(fn):
            # the batch a Lightning Trainer hands its step: moved to the module's device
            # (tensors in its lists, tuples and dicts too)
            args = fn.args.posonlyargs + fn.args.args
            return len(args) > 1 and args[1].arg == b.name
        if self.is_forward(fn):
            return False
        if not self.in_fwd(fn) and self.device_fed(fn):
            # a helper outside module code: what every call site of the file passes
            return self._fed_param(fn, b.name)
        # a call in the code forward reaches passes a device tensor: on that path it is one
        for call in self.calls_of(fn):
            if self.in_fwd(self.sem.enclosing_function(call)):
                arg = self.argument_for(call, fn, b.name)
                if arg is not None and self.is_device(arg, (), d):
                    return True
        return False

    def argument_for(self, call: ast.Call, fn, name: str):
        """The expression ``call`` passes for parameter ``name`` of ``fn`` (its default when
        none is passed); None when unknown."""
        for a in call.args:
            if isinstance(a, ast.Starred):
                return None
            if self.sem.parameter_of(call, fn, a) == name:
                return a
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
            if kw.arg is None:
                return None
        return None

    def tensor_param(self, b) -> bool:
        """A parameter whose function treats it as a tensor and never as anything else:
        annotated as a tensor, or used as one (``x.shape``, ``x.view(...)``, ...), and not
        type-tested (``isinstance(x, ...)``: a PIL image or a numpy array may come in)."""
        got = self._param_tensor.get(b)
        if got is not None:
            return got
        self._param_tensor[b] = got = self._tensor_param(b)
        return got

    def _tensor_param(self, b) -> bool:
        fn = b.scope.node
        sem = self.sem
        arg = b.node
        a = fn.args
        if arg is a.vararg or arg is a.kwarg:
            return False
        if not self.in_fwd(fn):
            return False
        default = b.value
        if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
            return False
        ann = getattr(arg, "annotation", None)
        if ann is not None:
            t = self.annotation_kind(ann)
            if t == "other":
                return False
            if t == "tensor":
                return not self._type_tested(fn, b)
        used = False
        for r in sem.reads_of(b):
            p = sem.parent(r)
            if isinstance(p, ast.Attribute) and p.value is r:
                if p.attr in ("shape", "device", "dtype", "ndim") or p.attr in _RESULT_IS_TENSOR - {"sum", "all", "any"}:
                    used = True
                if p.attr in ("size", "dim") and isinstance(sem.parent(p), ast.Call):
                    used = True
            elif isinstance(p, ast.Call) and r in p.args:
                # passed to a submodule, a layer, or a torch function that takes tensors
                if self.is_submodule_call(p) or sem.call_qualname(p) in PRESERVING_FUNCS or self.inline_layer(p):
                    used = True
        return used and not self._type_tested(fn, b)

    def _type_tested(self, fn, b) -> bool:
        sem = self.sem
        for r in sem.reads_of(b):
            p = sem.parent(r)
            if isinstance(p, ast.Call) and r in p.args and sem.call_qualname(p) in _TYPE_TESTS:
                return True
            if isinstance(p, ast.Call) and r in p.args and isinstance(p.func, (ast.Name, ast.Attribute)):
                q = sem.call_qualname(p) or ""
                last = q.rsplit(".", 1)[-1] if q else (p.func.attr if isinstance(p.func, ast.Attribute) else p.func.id)
                if "pil" in last.lower() or "numpy" in last.lower() or last in ("_is_tensor_a_torch_image", "is_tensor"):
                    return True
        return False

    def annotation_kind(self, ann) -> str:
        """``"tensor"`` (``Tensor``, ``torch.FloatTensor``, ``Optional[Tensor]``, ``Tensor |
        None``), ``"other"`` (``int``, ``list[Tensor]``, a PIL image...), ``"unknown"``."""
        sem = self.sem
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return "unknown"
            # a string annotation: judge by its names only
            names = {n.id for n in ast.walk(ann) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(ann) if isinstance(n, ast.Attribute)}
            return "tensor" if names and names <= {"torch", "Tensor", "Optional", "None", "FloatTensor", "LongTensor",
                                                  "BoolTensor"} else "unknown"
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            parts = [ann.left, ann.right]
            kinds = [self.annotation_kind(p) for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
            return "tensor" if kinds and all(k == "tensor" for k in kinds) else ("other" if "other" in kinds else "unknown")
        if isinstance(ann, ast.Subscript):
            q = sem.qualname(ann.value) or ""
            if q in ("typing.Optional",):
                return self.annotation_kind(ann.slice)
            if q == "typing.Union":
                elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                kinds = [self.annotation_kind(x) for x in elts if not (isinstance(x, ast.Constant) and x.value is None)]
                return "tensor" if kinds and all(k == "tensor" for k in kinds) else "other"
            return "other"  # list[Tensor], tuple[...], dict[...]
        q = sem.qualname(ann)
        if q is None:
            return "unknown"
        if q == "torch.Tensor" or (q.startswith("torch.") and q.endswith("Tensor") and q.count(".") == 1):
            return "tensor"
        return "other"

    def is_dtype(self, e) -> bool:
        q = self.sem.qualname(e)
        if q is not None and q.startswith("torch.") and not q.endswith(("device", "Tensor")):
            return q.count(".") == 1  # torch.float32, torch.long ...
        if isinstance(e, ast.Attribute) and e.attr == "dtype":
            return True
        if isinstance(e, ast.Call) and self.sem.call_qualname(e) == "torch.get_default_dtype":
            return True
        return False

    # ------------------------------------------------------------------ arguments
    def _args(self, call: ast.Call) -> list:
        return [a for a in call.args if not isinstance(a, ast.Starred)] + [k.value for k in call.keywords if k.arg]

    def _tensor_args(self, call: ast.Call) -> list:
        out = []
        for a in self._args(call):
            if isinstance(a, (ast.List, ast.Tuple)):
                out.extend(x for x in a.elts if not isinstance(x, ast.Starred))
            else:
                out.append(a)
        return out

    # ------------------------------------------------------------------ candidates
    def factories(self):
        """``(call, function, name)`` for each factory call without ``device=`` in the
        functions of the module classes and what they call."""
        sem = self.sem
        aliases = set()
        for name, bs in sem.module_scope.bindings.items():
            if any(b.kind is BindingKind.FROM_IMPORT and N.is_tensor_factory(b.qualname) for b in bs):
                aliases.add(name)  # ``from torch import zeros as Z``
        words = factory_words(aliases)
        for n in sem.find_named((ast.Call,), N.FACTORIES | aliases, words, keep=_factory_hits(words)):
            f = n.func
            if isinstance(f, ast.Name) and f.id not in aliases:
                continue  # ``range(...)``, a same-file ``zeros``
            # the cheap syntactic tests first: most factories in model code say ``device=``
            if any(k.arg in ("device", "out") for k in n.keywords):
                continue
            appended = None
            if isinstance(f, ast.Attribute) and self.zero_dim(n, f.attr) is not False:
                appended = self._appended(n)
                if appended is None:
                    continue  # 0-d (mixes like a number) or of unknown shape
            name = N.factory_name(sem.call_qualname(n))
            if name is None or (self.zero_dim(n, name) is not False and (appended is None and self._appended(n) is None)):
                continue  # (a 0-d tensor appended to a list that is stacked must still share its device)
            if any(k.arg is None for k in n.keywords) and sem.argument(n, "device") is not None:
                continue  # ``**factory_kwargs`` holding (or maybe holding) a device
            fn = sem.enclosing_function(n)
            if not isinstance(fn, _DEFS) or not self.in_module(fn):
                continue
            yield n, fn, name

    def _appended(self, call: ast.Call) -> Optional[ast.Call]:
        """``losses.append(torch.tensor(0).float())``: the ``append`` call that gets the
        factory's result (through tensor methods that keep its device)."""
        sem = self.sem
        cur = call
        for _ in range(4):
            p = sem.parent(cur)
            if isinstance(p, ast.Attribute) and p.value is cur and p.attr in PRESERVING_METHODS:
                c = sem.parent(p)
                if isinstance(c, ast.Call) and c.func is p:
                    cur = c
                    continue
                return None
            if isinstance(p, ast.Call) and p.args == [cur] and not p.keywords and isinstance(p.func, ast.Attribute) \
                    and p.func.attr == "append":
                return p
            return None
        return None

    def zero_dim(self, call: ast.Call, name: str) -> Optional[bool]:
        """True: the factory makes a 0-d tensor; False: at least 1-d; None: unknown."""
        sem = self.sem
        args = call.args
        if name in ("tensor", "as_tensor"):
            data = args[0] if args else sem.keyword(call, "data")
            return _literal_dims(data)
        if name in ("arange", "linspace", "logspace", "randperm", "eye", "range", "from_numpy"):
            return False
        if name == "normal":
            size = sem.keyword(call, "size") or (args[2] if len(args) > 2 else None)
            return None if size is None else _size_zero(size)
        if name == "randint":
            size = sem.keyword(call, "size")
            if size is None:
                size = next((a for a in reversed(args) if isinstance(a, (ast.Tuple, ast.List))), None)
            return None if size is None else _size_zero(size)
        if name == "full":
            size = args[0] if args else sem.keyword(call, "size")
            return None if size is None else _size_zero(size)
        if name in N.DEVICE_FACTORIES or name in N.FACTORIES:
            size = sem.keyword(call, "size")
            if size is not None:
                return _size_zero(size)
            if not args:
                return None if name not in ("Tensor", "FloatTensor", "LongTensor") else True
            if len(args) == 1:
                a = args[0]
                if isinstance(a, ast.Starred):
                    return None
                if name[0].isupper() and isinstance(a, (ast.List, ast.Tuple)):
                    return _literal_dims(a)
                if name[0].isupper() and isinstance(a, ast.Call):
                    q = sem.call_qualname(a) or ""
                    if q.startswith("numpy."):
                        # the data of an array (``torch.FloatTensor(np.array(-np.inf))``), not a size
                        if any(k.arg == "ndmin" for k in a.keywords):
                            return False  # (``np.array(0.5, ndmin=1)``: at least 1-d)
                        data = a.args[0] if a.args and q in ("numpy.array", "numpy.asarray") \
                            and all(k.arg == "dtype" for k in a.keywords) else None
                        return True if _numpy_scalar(data) else _literal_dims(data)
                return _size_zero(a)
            return False
        return None

    # ------------------------------------------------------------------ flow
    def follow(self, start, fn) -> list[Meet]:
        """The meets of the CPU tensor ``start`` evaluates to (``fn``: its function)."""
        meets: list[Meet] = []
        cuda_tests = "is_available" in self.sem.text  # (what ``_cpu_only`` looks for)
        todo = deque([(start, (), fn, None)])
        seen = set()
        steps = 0
        while todo and steps < self.MAX_STEPS and len(meets) < 3:
            node, stack, base, via = todo.popleft()
            key = (id(node), tuple(id(c) for c in stack))
            if key in seen:
                continue
            seen.add(key)
            steps += 1
            if cuda_tests and self._cpu_only(node):
                continue  # (where CUDA is not available every tensor is on the CPU)
            for item in self._step(node, stack, base, via, meets):
                todo.append(item)
        return meets

    def _cpu_only(self, node) -> bool:
        """``node`` runs only where CUDA is not available (:func:`runs_without_cuda`, with
        the code after ``if torch.cuda.is_available(): return t.cuda()`` too); the
        branch that runs on a GPU moves what it makes (``cuda_variable(t)`` returning
        ``Variable(t.cuda())`` there and ``Variable(t)`` in the ``else``)."""
        return runs_without_cuda(self.sem, node, early_return=True)

    def _meet(self, meets, base, via, node, what, other):
        if self.in_fwd(base) or self.device_fed(base) or (other is None and self.called_on_the_model(base)):
            meets.append(Meet(node, what, other, via))

    def _zero_dim_index(self, e) -> bool:
        """``e`` is a 0-d integer tensor (``losses.argmax()``, ``torch.argmin(d)``: no
        ``dim``): PyTorch reads such an index with ``.item()``, whatever its device, so a
        CPU tensor indexed by it meets no device."""
        if not isinstance(e, ast.Call) or e.keywords:
            return False
        f = e.func
        if isinstance(f, ast.Attribute) and f.attr in ("argmax", "argmin") and not e.args:
            return self.sem.qualname(f) is None  # (a method of a value: ``x.argmax()``)
        return len(e.args) == 1 and self.sem.call_qualname(e) in ("torch.argmax", "torch.argmin")

    def called_on_the_model(self, fn) -> bool:
        """``fn`` is a public method of a module class (``vae.inference(n)``,
        ``gan.sample(16)``) that nothing of the file runs while a module is built (also
        through an instance another module keeps: ``self.tok.probe()`` in its ``__init__``): its
        callers call it on the model, wherever the model was moved.  (A meet with the
        weights of one of the module's layers only: those are on the module's device.)"""
        if not isinstance(fn, _DEFS) or fn.name.startswith("_") or not self.module_class(self.sem.parent(fn)):
            return False
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in ("cpu", "to", "cuda")
               and isinstance(c.func.value, ast.Name) and c.func.value.id == "self" for c in ast.walk(fn)):
            return False  # (it places the module itself: ``self.cpu()`` before an export)
        return not self._reach(fn, self._init, lambda f: f.name == "__init__", self.instance_calls)

    def _step(self, node, stack, base, via, meets):
        sem = self.sem
        p = sem.parent(node)
        out = []
        push = lambda n, s=stack, b=base: out.append((n, s, b, via))  # noqa: E731
        if isinstance(p, ast.Attribute) and p.value is node:
            if p.attr in TENSOR_ATTRS:
                push(p)
                return out
            call = sem.parent(p)
            if isinstance(call, ast.Call) and call.func is p:
                self._method(call, p.attr, node, stack, base, via, meets, push)
            return out
        if isinstance(p, ast.Call) and node is not p.func:
            self._argument(p, node, node, stack, base, via, meets, push, out)
            return out
        if isinstance(p, ast.keyword):
            call = sem.parent(p)
            if isinstance(call, ast.Call) and p.arg is not None:
                self._argument(call, node, node, stack, base, via, meets, push, out)
            return out
        if isinstance(p, (ast.List, ast.Tuple)) and isinstance(p.ctx, ast.Load):
            holder = sem.parent(p)
            if isinstance(holder, ast.keyword):
                holder = sem.parent(holder)
            if isinstance(holder, ast.Call) and (p in holder.args or any(k.value is p for k in holder.keywords)):
                self._argument(holder, p, node, stack, base, via, meets, push, out)
            elif isinstance(holder, ast.Assign) and holder.value is p and isinstance(p, ast.Tuple):
                self._held_as_hidden(p, stack, base, via, meets)  # ``hidden = (h0, c0)``
            elif isinstance(holder, ast.Return) and holder.value is p and isinstance(p, ast.Tuple):
                # ``return a, b``: the element at the call sites that unpack it
                if any(isinstance(e, ast.Starred) for e in p.elts):
                    return out
                i = next(k for k, e in enumerate(p.elts) if e is node)
                for call, rest, b2 in self._return_sites(holder, stack, base):
                    got = self._element(call, i, len(p.elts))
                    for n in got:
                        out.append((n, rest, b2, via))
                    if not got:  # kept whole: ``hidden = self.init_hidden(b)``
                        self._held_as_hidden(call, rest, b2, via, meets)
            return out
        if isinstance(p, ast.BinOp):
            other = p.right if p.left is node else p.left
            if self.is_device(other, stack):
                self._meet(meets, base, via, p, f"`{_OPS.get(type(p.op), 'an operator')}`", other)
            else:
                push(p)
            return out
        if isinstance(p, ast.UnaryOp):
            if not isinstance(p.op, ast.Not):
                push(p)
            return out
        if isinstance(p, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in p.ops):
                return out
            for o in (p.left, *p.comparators):
                if o is not node and self.is_device(o, stack):
                    self._meet(meets, base, via, p, "a comparison", o)
                    return out
            push(p)
            return out
        if isinstance(p, ast.Subscript):
            if p.value is node and isinstance(p.ctx, ast.Load):
                if self.is_device(p.slice, stack) and not isinstance(p.slice, ast.Slice) \
                        and not self._zero_dim_index(p.slice):
                    self._meet(meets, base, via, p, "indexing (a CPU tensor indexed on the device)", p.slice)
                elif _keeps_a_dimension(p.slice):
                    push(p)
                # ``t[i]``, ``t[i, j]``: may be 0-d (``schedule[epoch]``), which mixes like a number
            return out
        if isinstance(p, ast.IfExp):
            if node is not p.test:
                other = p.orelse if node is p.body else p.body
                # ``t.cuda() if x.is_cuda else t``: the code moves it where it runs on a GPU
                if not (self.is_move(other) or self.is_device(other, stack)):
                    push(p)
            return out
        if isinstance(p, ast.NamedExpr) and p.value is node:
            push(p)
            for r in sem.value_reads(node):
                push(r)
            return out
        if isinstance(p, (ast.Assign, ast.AnnAssign)) and p.value is node:
            targets = p.targets if isinstance(p, ast.Assign) else [p.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    self._name_flow(t, stack, base, via, meets, push)
                elif isinstance(t, ast.Attribute):
                    self._attr_flow(t, p, out)
            return out
        if isinstance(p, ast.AugAssign) and p.value is node:
            if self.is_device(p.target, stack):
                self._meet(meets, base, via, p, f"`{_OPS.get(type(p.op), '')}=`", p.target)
            return out
        if isinstance(p, ast.Return) and p.value is node:
            for call, rest, b2 in self._return_sites(p, stack, base):
                out.append((call, rest, b2, via))
            return out
        return out

    def _held_as_hidden(self, tup, stack, base, via, meets) -> None:
        """``tup`` (a tuple literal, or a call that returns one) holds a CPU tensor: where
        it, or the one name bound to it, is given to an RNN submodule as its hidden state
        (``self.lstm(x, hidden)`` with ``hidden = (h0, c0)``) while the input is on the
        device, a meet."""
        sem = self.sem
        places = [tup]
        p = sem.parent(tup)
        if isinstance(p, ast.Assign) and p.value is tup:
            t = p.targets[0] if len(p.targets) == 1 else None
            if isinstance(t, ast.Name):
                b = sem.target_binding(t)
                # (only the reads this binding alone reaches: ``if x.is_cuda: hidden = ...``
                # in between may move it)
                places = [r for r in (sem.reads_of(b) if b is not None else ()) if sem.reaching(r) == [b]]
            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                # ``self.hidden = self.init_hidden()``, read further down the same function,
                # before anything assigns it again (``self.hidden = tuple(h.to(d) ...)``)
                fn = sem.enclosing_function(p)
                text = sem.segment(t)
                after = (p.end_lineno, p.end_col_offset)
                nodes = [n for n in (sem.walk(fn) if fn is not None else ()) if isinstance(n, ast.Attribute)
                         and (n.lineno, n.col_offset) > after and sem.segment(n) == text]
                # (a store takes effect when its statement has run: ``out, self.hidden =
                # self.lstm(x, self.hidden)`` reads the old value)
                stores = [(st.end_lineno, st.end_col_offset) for n in nodes if not isinstance(n.ctx, ast.Load)
                          for st in [sem.statement_of(n)]]
                until = min(stores) if stores else None
                places = [n for n in nodes if isinstance(n.ctx, ast.Load) and (until is None or (n.lineno, n.col_offset) < until)]
            else:
                return
        for r in places:
            call = sem.parent(r)
            if isinstance(call, ast.keyword) and call.arg == "hx":
                call = sem.parent(call)
            elif not (isinstance(call, ast.Call) and any(a is r for a in call.args[1:2])):
                continue
            f = call.func
            if not (isinstance(call, ast.Call) and call.args and isinstance(f, ast.Attribute) and self.is_submodule_call(call)):
                continue
            lay = self.layer_of(f)
            if lay is not None and lay[0] in N.RNN_LAYERS and self.is_device(call.args[0], stack):
                self._meet(meets, base, via, call, f"the hidden state of `{sem.segment(f)}` ({lay[0]})", call.args[0])
                return

    def _return_sites(self, ret: ast.Return, stack, base):
        """The calls a ``return`` gives its value to: the one the analysis came through,
        else every call of the function in this file (not for a module's ``forward``)."""
        sem = self.sem
        if stack:
            return [(stack[-1], stack[:-1], base)]
        fn = sem.enclosing_function(ret)
        if not isinstance(fn, _DEFS) or self.is_forward(fn):
            return []
        return [(call, (), sem.enclosing_function(call) or base) for call in self.calls_of(fn)]

    def _element(self, call, i: int, n: int) -> list:
        """Where element ``i`` of the ``n``-tuple ``call`` returns is read: ``a, b = call``
        (the reads of the ``i``-th name) or ``call[i]``."""
        sem = self.sem
        p = sem.parent(call)
        if isinstance(p, ast.Assign) and p.value is call and len(p.targets) == 1:
            t = p.targets[0]
            if isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == n and not any(isinstance(e, ast.Starred) for e in t.elts):
                e = t.elts[i]
                if isinstance(e, ast.Name):
                    b = sem.target_binding(e)
                    return sem.reads_of(b) if b is not None else []
            return []
        if isinstance(p, ast.Subscript) and p.value is call and isinstance(p.slice, ast.Constant) and p.slice.value == i:
            return [p]
        return []

    def _name_flow(self, target: ast.Name, stack, base, via, meets, push):
        sem = self.sem
        b = sem.target_binding(target)
        if b is None:
            return
        # ``if x.is_cuda: t = t.cuda()``: after a move of the name (even a conditional one)
        # the code takes care of the device
        moved = [
            (b2.stmt.end_lineno, b2.stmt.end_col_offset)
            for b2 in b.scope.get(b.name)
            if b2 is not b and b2.kind is BindingKind.ASSIGNMENT and b2.value is not None and b2.order > b.order
            and b2.stmt is not None and self.is_move(b2.value, b.name)
        ]
        for r in sem.reads_of(b):
            if any((r.lineno, r.col_offset) >= m for m in moved):
                continue
            push(r)
        # ``t += x``: augmented assignments the binding reaches
        for b2 in b.scope.get(b.name):
            if b2.kind is BindingKind.AUG_ASSIGNMENT and isinstance(b2.node, ast.AugAssign):
                if b in sem.reaching(b2.target):
                    st = b2.node
                    if self.is_device(st.value, stack):
                        self._meet(meets, base, via, st, f"`{_OPS.get(type(st.op), '')}=`", st.value)
                    else:
                        for r in sem.reads_of(b2):
                            push(r)

    def _attr_flow(self, target: ast.Attribute, assign, out):
        """``self.<attr> = <CPU tensor>``: the reads of the attribute in the code
        ``forward`` reaches, when it is a plain attribute (not a buffer)."""
        sem = self.sem
        if not isinstance(target.value, ast.Name):
            return
        cls = sem.self_class(target.value)
        if cls is None or not self.module_like(cls):
            return
        reg = self.registered(cls)
        if reg is None or target.attr in reg or self.manages_devices(cls):
            return
        # moved somewhere (``self.t = self.t.to(x.device)``): the class manages it
        for c in sem._mro(cls):
            for _, v, _ in sem.class_info(c).attrs.get(target.attr, ()):
                if isinstance(v, ast.Call) and sem.method_name(v) in MOVE_METHODS:
                    return
                if v is not None and self.is_device(v):
                    return
        via = (cls, target.attr, assign)
        # reads in ``__init__`` too: ``self.alphas = 1 - self.betas`` carries it to another attribute
        for r in self.attribute_reads(cls, target.attr, self.in_module):
            out.append((r, (), sem.enclosing_function(r), via))

    def attribute_reads(self, cls, attr, where=None) -> list:
        """Loads of ``self.<attr>`` (``self`` an instance of ``cls`` or of a derived class)
        in the functions ``where`` accepts (default: the code ``forward`` runs)."""
        sem = self.sem
        where = where or self.in_fwd
        out = []
        for n in sem.find_named((ast.Attribute,), (attr,)):
            if isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name):
                owner = sem.self_class(n.value)
                if owner is not None and sem.derives_from_class(owner, cls) and where(sem.enclosing_function(n)):
                    out.append(n)
        return out

    def _method(self, call, name, recv, stack, base, via, meets, push):
        """``recv.name(...)`` on a CPU tensor ``recv``."""
        sem = self.sem
        if sem.qualname(call.func) is not None:
            return  # ``torch.x`` itself, not a tensor method
        if name in MOVE_METHODS:
            if name == "type" and call.args and len(call.args) == 1 and not call.keywords and self.is_dtype(call.args[0]):
                push(call)
                return
            if name == "to":
                dev = sem.argument(call, "device")
                if dev is None and all(self.is_dtype(a) for a in call.args) and all(
                    k.arg in ("dtype", "non_blocking", "copy", "memory_format") for k in call.keywords
                ):
                    push(call)  # a dtype change: still on the CPU
            return
        if name in HOST_METHODS:
            return
        if name in REDUCTIONS and not call.args and not any(k.arg in ("dim", "axis") for k in call.keywords):
            return  # 0-d
        if name in SAME_DEVICE_METHODS:
            for a in self._args(call):
                if self.is_device(a, stack):
                    self._meet(meets, base, via, call, f"`.{name}()`", a)
                    return
        if name in _RESULT_IS_TENSOR:
            push(call)

    def _argument(self, call, arg, node, stack, base, via, meets, push, out):
        """The CPU tensor ``node`` is (in) the argument ``arg`` of ``call``."""
        sem = self.sem
        m = sem.method_name(call)
        q = sem.call_qualname(call)
        if m is not None and q is None:
            recv = call.func.value
            if m in SAME_DEVICE_METHODS and self.is_device(recv, stack):
                self._meet(meets, base, via, call, f"`.{m}()`", recv)
                return
        if q is not None:
            if q in SEQ_FUNCS and isinstance(arg, (ast.List, ast.Tuple)):
                for e in arg.elts:
                    if e is not node and self.is_device(e, stack):
                        self._meet(meets, base, via, call, f"`{q}`", e)
                        return
                push(call)
                return
            if arg is not node:
                return
            if q in REDUCTION_FUNCS and len(call.args) == 1 and not call.keywords:
                return  # 0-d
            if q in SAME_DEVICE_FUNCS:
                for a in self._tensor_args(call):
                    if a is not node and self.is_device(a, stack):
                        self._meet(meets, base, via, call, f"`{q}`", a)
                        return
            if q in PRESERVING_FUNCS:
                dev = sem.keyword(call, "device")
                if dev is None or (isinstance(dev, ast.Attribute) and dev.attr == "device" and _same(dev.value, node)):
                    push(call)
            return
        if m == "append" and arg is node and len(call.args) == 1 and not call.keywords:
            self._stacked(call, node, stack, base, via, meets)
            return
        # a submodule: a layer with weights, or the hidden state of an RNN
        f = call.func
        if isinstance(f, ast.Attribute) and self.is_submodule_call(call):
            lay = self.layer_of(f)
            if lay is not None:
                lname, ctor = lay
                if lname in N.RNN_LAYERS and call.args and arg is not call.args[0]:
                    if self.is_device(call.args[0], stack):
                        self._meet(meets, base, via, call, f"the hidden state of `{sem.segment(f)}` ({lname})", call.args[0])
                    return
                if lname in _SAME_DEVICE_LOSSES:
                    # ``self.ce(logits, target)``: a loss module's inputs share one device, as
                    # ``F.cross_entropy``'s do (its value is 0-d: not followed further)
                    for a in self._tensor_args(call):
                        if a is not arg and self.is_device(a, stack):
                            self._meet(meets, base, via, call, f"`{sem.segment(f)}` ({lname})", a)
                            return
                    return
                if self.has_weights(lname, ctor) or (lname == "Sequential" and self.sequential_weights(f, ctor)):
                    self._meet(meets, base, via, call, f"`{sem.segment(f)}` ({lname}, whose weights are on the device)", None)
                elif arg is node:
                    push(call)
                return
        if arg is not node:
            return
        fn = self.callee(call)
        if isinstance(fn, _DEFS) and len(stack) < 5:
            pname = sem.parameter_of(call, fn, node)
            if pname is None:
                for kw in call.keywords:
                    if kw.value is node:
                        pname = kw.arg
            if pname is None:
                return
            scope = sem.scope_for(fn)
            for b in scope.get(pname):
                if b.kind is BindingKind.PARAMETER:
                    for r in sem.reads_of(b):
                        out.append((r, stack + (call,), base, via))

    def _stacked(self, append: ast.Call, node, stack, base, via, meets) -> None:
        """``losses.append(t)`` with ``losses = []`` in the same function, later
        ``torch.stack(losses)`` / ``torch.cat(losses)``: every element must be on one
        device, 0-d ones too; a meet when another element appended is a device tensor."""
        sem = self.sem
        lst = append.func.value
        if not isinstance(lst, ast.Name):
            return
        bs = sem.reaching(lst)
        if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or not (
            isinstance(bs[0].value, ast.List) and not bs[0].value.elts
        ):
            return
        b = bs[0]
        others, joins = [], []
        for r in sem.references(b):
            if not any(x is b for x in sem.reaching(r)):
                continue
            p = sem.parent(r)
            if isinstance(p, ast.Attribute) and p.value is r:
                c = sem.parent(p)
                if p.attr == "append" and isinstance(c, ast.Call) and c.func is p and len(c.args) == 1:
                    if c is not append:
                        others.append(c.args[0])
                    continue
                return  # ``extend``, ``pop``, ...: not followed
            if isinstance(p, ast.Call) and p.args and p.args[0] is r and sem.call_qualname(p) in SEQ_FUNCS:
                joins.append(p)
                continue
            return  # handed elsewhere: not followed
        for j in joins:
            for o in others:
                if self.is_device(o, stack):
                    self._meet(meets, base, via, j, f"`{sem.call_qualname(j)}` of `{lst.id}`", o)
                    return

    # ------------------------------------------------------------------ layers built in forward
    def layers_built(self):
        """``(call, function, name)``: a ``torch.nn`` layer with weights constructed in the
        code ``forward`` reaches."""
        sem = self.sem
        for n in sem.find_named((ast.Call,), N.PARAM_LAYERS, _LAYER_WORDS, keep=_layer_hits):
            fn = sem.enclosing_function(n)
            if not isinstance(fn, _DEFS) or fn.name == "__init__" or not self.in_fwd(fn):
                continue  # layers built in __init__ (or its helpers) are what it should be
            name = N.nn_layer(sem.call_qualname(n))
            if name is not None and self.has_weights(name, n):
                yield n, fn, name

    def follow_layer(self, ctor: ast.Call, fn) -> list[Meet]:
        """Where a layer made in ``forward`` is called on a device tensor (directly, through
        a name, or through ``self.<attr>``), unless it is moved first."""
        sem = self.sem
        meets: list[Meet] = []
        todo = [ctor]
        seen = set()
        while todo and len(seen) < 50:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            p = sem.parent(node)
            if isinstance(p, ast.Call) and p.func is node:
                for a in self._args(p):
                    if self.is_device(a):
                        meets.append(Meet(p, f"it is called with `{_short(sem.segment(a))}`", a))
                        return meets
            elif isinstance(p, ast.Attribute) and p.value is node:
                continue  # ``.to(...)``, ``.weight``: moved or configured
            elif isinstance(p, ast.Assign) and p.value is node:
                for t in p.targets:
                    if isinstance(t, ast.Name):
                        b = sem.target_binding(t)
                        if b is not None:
                            reads = sem.reads_of(b)
                            if self._layer_managed(reads):
                                return []
                            todo.extend(reads)
                    elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                        cls = sem.self_class(t.value)
                        if cls is None:
                            continue
                        if self._layer_managed(self.attribute_reads(cls, t.attr, self.in_module)) or any(
                            v is not node for c in sem._mro(cls) for _, v, _ in sem.class_info(c).attrs.get(t.attr, ())
                        ):
                            return []  # moved, handed to a helper, or set to something else too
                        for r in self.attribute_reads(cls, t.attr):
                            rp = sem.parent(r)
                            if isinstance(rp, ast.Call) and rp.func is r:
                                for a in self._args(rp):
                                    if self.is_device(a):
                                        meets.append(Meet(rp, f"it is called (as `self.{t.attr}`) with `{_short(sem.segment(a))}`", a))
                                        return meets
        return meets

    def _layer_managed(self, reads) -> bool:
        """A read of the layer moves it (``Module.to``/``.cuda()`` work in place) or hands
        it to a call (``check_cuda(layer)``, ``self.add_module("l", layer)``)."""
        sem = self.sem
        for r in reads:
            p = sem.parent(r)
            if isinstance(p, ast.Attribute) and p.value is r and p.attr in (*MOVE_METHODS, "apply", "_apply", "cpu"):
                return True
            if isinstance(p, ast.Call) and p.func is not r:
                return True
            if isinstance(p, ast.keyword):
                return True
        return False

    # ------------------------------------------------------------------ fix
    def device_source(self, call: ast.Call, fn, meet: Meet) -> Optional[str]:
        """A name whose ``.device`` the factory can take: a tensor on every path where the
        factory runs, on the model's device.  None when there is none."""
        sem = self.sem
        # 1. a name the factory's own arguments use as a tensor: ``torch.zeros(x.size(0))``
        for n in sem.walk(call):
            if n is call.func:
                continue
            if isinstance(n, ast.Attribute) and n.attr in ("size", "shape") and isinstance(n.value, ast.Name):
                p = sem.parent(n)
                if n.attr == "size" and not (isinstance(p, ast.Call) and p.func is n):
                    continue
                if n.value.id != "self" and self.is_device(n.value) and self._read_unconditionally(n.value, call):
                    return n.value.id
            # ``torch.arange(len(logits))``: the length of a device tensor
            if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords and isinstance(n.args[0], ast.Name) \
                    and sem.call_qualname(n) == "builtins.len":
                x = n.args[0]
                if x.id != "self" and self.is_device(x) and self._read_unconditionally(x, call):
                    return x.id
        # 2. a parameter of the function that is always a tensor on the device
        cands = []
        if isinstance(meet.other, ast.Name) and sem.enclosing_function(meet.other) is fn:
            cands.append(meet.other.id)
        params = [x.arg for x in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
        cands.extend(params)
        scope = sem.scope_for(fn)
        for name in cands:
            bs = scope.get(name)
            ps = [b for b in bs if b.kind is BindingKind.PARAMETER]
            if len(ps) != 1 or sem.self_class_of_param(ps[0]) is not None:
                continue
            if self.strict_tensor_param(ps[0]) and all(
                b.kind is BindingKind.PARAMETER or (b.value is not None and self.is_device(b.value)) for b in bs
            ):
                return name
        return None

    def _read_unconditionally(self, name: ast.Name, call: ast.Call) -> bool:
        """``name`` is read by the factory's own arguments every time the factory runs,
        in the factory's scope: not in a branch of ``a if c else b``/``and``/``or``, not
        in a comprehension or lambda (``torch.tensor([t.shape[0] for t in ts])``)."""
        sem = self.sem
        if sem.scope_of(name) is not sem.scope_of(call):
            return False
        for a in sem.ancestors(name):
            if a is call:
                return True
            if isinstance(a, (ast.IfExp, ast.BoolOp, ast.Lambda, *_COMPS)):
                return False
        return False

    def strict_tensor_param(self, b) -> bool:
        """A tensor on every path: no default, a tensor annotation without ``None`` (or no
        annotation), used as a tensor, never compared with ``None`` or type-tested."""
        arg = b.node
        if b.value is not None:
            return False
        ann = getattr(arg, "annotation", None)
        if ann is not None:
            if self.annotation_kind(ann) != "tensor" or "None" in ast.dump(ann) or "Optional" in ast.dump(ann):
                return False
        if not self.tensor_param(b):
            return False
        for r in self.sem.reads_of(b):
            p = self.sem.parent(r)
            if isinstance(p, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in p.ops):
                return False
            if isinstance(p, (ast.BoolOp, ast.If, ast.IfExp)) or (isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not)):
                return False
        return True


# the texts of the layer constructors' calls (``layers_built`` and its screen): with no
# ``\b`` before them (it makes the regex engine try every position), so the hits are a
# superset, as are ``find_named``'s
_LAYER_WORDS = tuple(sorted(f"{w}(" for w in N.PARAM_LAYERS))
_DEF_HEADER = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)
# where a ``forward`` may be defined (any spacing, a line continuation): a superset
# the methods a module runs on the device: ``forward``, and the steps a Lightning Trainer
# runs with the module and the batch on the device
STEP_METHODS = ("training_step", "validation_step", "test_step", "predict_step")
_FORWARD_DEF = re.compile(r"def[\s\\]+(?:%s)\b" % "|".join(("forward", *STEP_METHODS)))


_DEVICE_KEYWORD = re.compile(r"(?<![\w.])(?:device|out)\s*=|\*\*")
_SCREENS: dict = {}
_HITS: dict = {}


def _factory_screen(words: tuple):
    """A chunk test for ``find_named``: some factory call in it may lack ``device=``
    (its parenthesised arguments hold no ``device=``/``out=``/``**``) and is not handed
    to ``nn.Parameter(...)``/``Buffer(...)``/``register_buffer("name", ...)``
    (registered: moved with the module) nor read back at once as Python values
    (``.tolist()``/``.item()``/``.numpy()``), not in a comment or doctest line, and in a
    function that may run with a module: ``forward``, a method of a class chunk that has
    a ``forward`` (but a static method no code of the file calls: ``_in_static_method``),
    or a function whose name is called in the file (what ``in_module`` needs; a call
    through ``super()`` does not count).  Chunks whose factory calls are all of
    those kinds (most of a library's model code) are not parsed; the ast check treats
    the same calls as not reported."""
    got = _SCREENS.get(words)
    if got is None:
        hits_of = _factory_hits(words)
        got = _SCREENS[words] = lambda text, start, end, hits=None: bool(hits_of(text, start, end, hits, first=True))
    return got


_PER_HIT = "per hit"  # (``_factory_hits``: a function whose hits are each tested)


def _factory_hits(words: tuple):
    """``kept(text, start, end, hits=None, first=False)``: the hits of a chunk (where
    the factory words start) that pass the tests of :func:`_factory_screen`, in text
    order (``first``: stop at the first): ``find_named`` enters only the statements that
    hold one of them."""
    got = _HITS.get(words)
    if got is not None:
        return got
    pattern = find_words(words)  # the pattern ``find_named`` looks for the same words with

    def kept(text: str, start: int, end: int, hits=None, first: bool = False) -> list:
        if hits is None:
            hits = [a for a, _ in pattern.spans(text, start, end)]
        out: list = []
        has_forward = None
        runs: dict = {}
        for h in hits:
            if h > start and text[h] != "." and (text[h - 1].isalnum() or text[h - 1] == "_"):
                continue  # ``XZ(`` for the alias ``Z``: another name
            ls = text.rfind("\n", start, h) + 1
            head = text[max(ls, start) : h]
            if "#" in head or head.lstrip().startswith((">>>", "...")):
                continue  # a comment, a doctest line
            head = _def_head_above(text, start, h)
            if head is None:
                continue  # not in a function: the ast check skips it too
            name = head.group(1)
            ok = runs.get(name)
            if ok is None:
                # forward runs; the methods of a class with a ``forward`` may be called from
                # it; another function only when its name is called somewhere in the file
                if has_forward is None:
                    has_forward = _FORWARD_DEF.search(text, start, end) is not None
                if name == "forward" or name in STEP_METHODS or name == "__init__":
                    ok = name != "__init__" or has_forward or _called_elsewhere(text, name)
                else:
                    # a method of such a class: not when it is a static method no code of
                    # the file calls (tested per hit, below)
                    ok = _PER_HIT if has_forward else _called_elsewhere(text, name)
                runs[name] = ok
            if not ok or (ok is _PER_HIT and _in_static_method(text, start, head, h) and not _called_elsewhere(text, name)):
                continue
            bracket = text.find("(", h, end)  # every word ends with its call's "("
            got = _parenthesised(text, bracket, end) if bracket >= 0 else None
            if got is None:
                out.append(h)  # (its arguments cannot be told: kept)
                if first:
                    return out
                continue
            args, close = got
            if _DEVICE_KEYWORD.search(args):
                continue
            if _READ_BACK.match(text, close + 1) or _moved_at_once(text, close + 1, end):
                continue
            # the start of the callee (``torch.zeros``, ``th.zeros``, ``zeros``)
            s = h
            while s > start and (text[s - 1].isalnum() or text[s - 1] in "._"):
                s -= 1
            if text[h] == "." and _no_dims(text[h + 1 : bracket], text[bracket + 1 : close], args) \
                    and not text[max(start, s - 12) : s].rstrip().endswith(".append("):
                continue  # 0-d (unless appended to a list, which may be stacked: ``_appended``)
            if text[h] == "." and text[s:h] in _NUMPY_IMPORT and _numpy_only(text, text[s:h]):
                continue  # ``np.zeros(...)``: a numpy array (its qualified name is no torch factory)
            if _inside_registration(text, start, s):
                continue
            out.append(h)
            if first:
                return out
        return out

    _HITS[words] = kept
    return kept


# the one line that may bind ``np`` / ``numpy`` where ``_numpy_only`` holds
_NUMPY_IMPORT = {
    "np": re.compile(r"[ \t]*import[ \t]+numpy[ \t]+as[ \t]+np[ \t]*(?:#[^\n]*)?$", re.M),
    "numpy": re.compile(r"[ \t]*import[ \t]+numpy[ \t]*(?:#[^\n]*)?$", re.M),
}
# the name not followed by a word character (what precedes it is tested by hand: a pattern
# that starts with a look-behind is tried at every position of the text)
_NUMPY_NAME = {n: re.compile(r"%s(?!\w)" % n) for n in _NUMPY_IMPORT}
_NUMPY_ONLY: list = [None, {}]  # the text last asked about, and its answers by name
# a star import however it is spaced (``import*``, a tab, a continuation: all valid)
_STAR_IMPORT = re.compile(r"import[\s\\]*\*")


def _numpy_only(text: str, name: str) -> bool:
    """``name`` (``np`` or ``numpy``) can only be the numpy module in ``text``: every
    occurrence of it as a word of its own stands before a ``.`` or on an ``import numpy
    as np`` (``import numpy``) line of its own, and nothing is imported with ``*``.  An
    assignment, a parameter, another import, ``global``, a loop or ``with`` target all
    write the name before something else, so no other binding exists, and the model's
    qualified name of ``np.zeros(...)`` is numpy's, never a torch factory's."""
    if _NUMPY_ONLY[0] is not text:
        _NUMPY_ONLY[:] = [text, {}]
    memo = _NUMPY_ONLY[1]
    got = memo.get(name)
    if got is None:
        got = _STAR_IMPORT.search(text) is None
        line = _NUMPY_IMPORT[name]
        for m in _NUMPY_NAME[name].finditer(text) if got else ():
            s = m.start()
            if s and (text[s - 1].isalnum() or text[s - 1] in "_."):
                continue  # part of a longer name, or an attribute
            if text.startswith(".", m.end()):
                continue
            ls = text.rfind("\n", 0, m.start()) + 1
            if line.match(text, ls) is None:
                got = False
                break
        memo[name] = got
    return got


# factories whose one size argument decides their dimensions (``Analysis.zero_dim``)
_SIZED = frozenset({"zeros", "ones", "empty", "rand", "randn"})


def _no_dims(name: str, raw: str, top: str) -> bool:
    """The call ``x.<name>(<raw>)`` cannot be reported as ``Analysis.zero_dim`` reads it
    (``top``: the top level of the arguments): ``tensor``/``as_tensor`` of data that is
    no list or tuple literal (a number, a name: 0-d or of unknown shape), or a sized
    factory with no argument or the size ``()``/``[]`` (0-d)."""
    bare = "".join(raw.split()).replace("\\", "")  # (no spaces, line breaks or continuations)
    if name in ("tensor", "as_tensor"):
        return not bare.startswith(("[", "(")) and "data" not in top
    if name in _SIZED:
        return bare.rstrip(",") in ("", "()", "[]")
    return False


_FROM_TORCH_IMPORT = re.compile(r"from[ \t]+torch[ \t]+import[ \t]*")  # (a literal first: fast)


def factory_words(aliases=()) -> tuple:
    """What a factory call's text holds: ``.zeros(`` and the like, and ``Z(`` for each
    name bound to a factory (``from torch import zeros as Z``)."""
    return tuple(f".{w}(" for w in N.FACTORIES) + tuple(f"{a}(" for a in aliases)


def _imported_factories(text: str) -> Optional[set]:
    """Names ``from torch import ...`` may bind to a tensor factory anywhere in the text
    (a superset of the module bindings ``Analysis.factories`` asks for: comments inside
    the brackets count too); None when an import cannot be read this way."""
    out: set = set()
    for m in _FROM_TORCH_IMPORT.finditer(text):
        i = m.end()
        if text.startswith("(", i):
            j = _closing_bracket(text, i)
        else:
            j = text.find("\n", i)
            if j > 0 and text[j - 1] == "\\":
                return None  # continued with a backslash
        seg = text[i : j if j >= 0 else len(text)]
        names = re.findall(r"\w+", seg)
        for k, w in enumerate(names):
            if w in N.FACTORIES:
                out.add(w)
                if names[k + 1 : k + 2] == ["as"] and k + 2 < len(names):
                    out.add(names[k + 2])
    return out


def _closing_bracket(text: str, i: int) -> int:
    """The ``)`` that closes the import list opening at ``i`` (comments skipped: an
    import list holds no strings); -1 when there is none."""
    j = i
    while True:
        close = text.find(")", j)
        hash_ = text.find("#", j, close if close >= 0 else len(text))
        if hash_ < 0:
            return close
        j = text.find("\n", hash_)
        if j < 0:
            return -1


def may_make_a_cpu_tensor(text: str) -> bool:
    """The whole-file form of the chunk screens ``Analysis.factories`` and
    ``layers_built`` use: false only when no chunk of the file could pass them (each
    test on the whole text accepts at least what it accepts on a part of it: the
    nearest ``def`` above and ``def forward`` are looked for in more text), so that a
    file none of whose factory calls can be reported is not analysed for TM102.  Every
    report needs a module class with a ``forward`` of its own or of a same-file base
    (``Analysis.in_module``/``in_fwd``): a file that defines no ``forward`` is not
    analysed either."""
    if _FORWARD_DEF.search(text) is None:
        return False  # no class of the file has a ``forward``: no code of a module runs here
    aliases = _imported_factories(text)
    if aliases is None:
        return True
    words = factory_words(sorted(aliases))
    return _factory_screen(words)(text, 0, len(text)) or _layer_outside_init(text, 0, len(text))


def _called_elsewhere(text: str, name: str) -> bool:
    """``name`` is written as a callee more than once in ``text`` (its definition and a
    call; see :class:`~torchmend.semantic.source.Callees`), not counting the calls
    through ``super()`` (``super()._init_weights(module)`` in an override), which the
    semantic model never takes for a call of a same-file function or method (the class
    of ``super()`` is no same-file class), unless ``super`` may name something else."""
    places = callees(text).get(name)[0]
    if places > 1 and "super" in text:
        places -= _super_calls(text).get(name, 0)
    return places > 1


# ``super().name(`` / ``super(C, self).name(``, the name in group 1
_SUPER_CALL = re.compile(r"super[ \t]*\([^()]*\)[ \t\\\r\n\x0c]*\.[ \t\\\r\n\x0c]*(\w+)")
_SUPERS: list = [None, {}]  # the text last asked about and its answer


def _super_calls(text: str) -> dict:
    """How many times each name is called through ``super()`` in ``text`` (places that
    ``Callees`` counts: the name a whole word before a ``(``); empty when the word
    ``super`` stands anywhere else than before a ``(`` or after ``def``/``class`` (it may
    be bound to something else then).  Kept for the text last asked about."""
    if _SUPERS[0] is text:
        return _SUPERS[1]
    out: dict = {}
    j = text.find("super")
    while j >= 0:
        k = j + 5
        if not (j and (text[j - 1].isalnum() or text[j - 1] in "_.")) and not (k < len(text) and _word(text[k])):
            i = k
            while i < len(text) and text[i] in " \t":
                i += 1
            before = text[max(0, j - 12) : j].rstrip(" \t\\")
            if i == len(text) or text[i] != "(" or before.endswith(("def", "class")):
                out = {}  # ``super`` bound, imported, defined, passed: any call may be a site
                break
            m = _SUPER_CALL.match(text, j)
            if m is not None and before_a_call(text, m.end()):
                out[m.group(1)] = out.get(m.group(1), 0) + 1
        j = text.find("super", k)
    _SUPERS[0], _SUPERS[1] = text, out
    return out


def _inside_registration(text: str, start: int, pos: int) -> bool:
    """``pos`` lies inside the still open brackets of an ``nn.Parameter(``/``Buffer(``/
    ``register_buffer(`` call that starts at most a few lines above (what it makes is
    registered: moved with the module)."""
    lo = max(start, pos - 400)
    for kw in ("Parameter(", "Buffer(", "register_buffer("):
        j = text.rfind(kw, lo, pos)
        if j < 0 or (kw != "register_buffer(" and j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_")):
            continue
        depth = 0
        for ch in text[j + len(kw) - 1 : pos]:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    break
        else:
            if depth > 0:
                return True
    return False


# right after a factory call's closing bracket: its values read back as Python values
_READ_BACK = re.compile(r"\.(?:tolist|item|numpy)\(\)")


# a method that moves the tensor it is called on (``Analysis._method``: the flow of a
# factory's value stops there), written right after the factory's call; ``.to(`` is one
# when its arguments say ``device=``/``out=``/``**`` or begin with a string or an
# ``x.device`` (not a dtype: a move; a bare name may be bound to a dtype)
_MOVED_AT_ONCE = re.compile(r"\s*\.\s*(?:(cuda|type_as|to_device|xpu|mps|npu)|to)\s*(\()")
_DEVICE_FIRST = re.compile(r"\s*(?:\"|'|[\w.]+\.device\s*(?:,|$))")


def _moved_at_once(text: str, i: int, end: int) -> bool:
    """The factory call that ends before ``i`` is moved by the method called on it."""
    m = _MOVED_AT_ONCE.match(text, i, end)
    if m is None:
        return False
    if m.group(1):
        return True
    got = _parenthesised(text, m.start(2), end)
    if got is None:
        return False
    top = got[0]
    return _DEVICE_KEYWORD.search(top) is not None or _DEVICE_FIRST.match(top) is not None


_ARG_STOP = re.compile(r"""[][(){}'"#]""")  # what _parenthesised stops at


def _parenthesised(text: str, i: int, end: int, limit: int = 4000) -> Optional[tuple]:
    """The top level of the arguments that open with the bracket at ``i``: their text
    with nested brackets, strings and comments left out (``device=`` inside
    ``f(device=d)`` or ``"device=..."`` is not the factory's; a string stands as ``""``)
    and the index of the matching bracket; None when there is no match within ``limit``
    characters, or an f-string (a template string) appears (its fields may hold
    anything: the screen then says yes)."""
    depth = 0
    out = []
    j = i
    stop = min(end, i + limit)
    search = _ARG_STOP.search
    while True:
        m = search(text, j, stop)
        if m is None:
            return None
        k = m.start()
        if depth == 1:
            out.append(text[j:k])
        ch = text[k]
        if ch == "#":
            j = text.find("\n", k, stop)
            if j < 0:
                return None
        elif ch == "'" or ch == '"':
            if k > 0 and text[k - 1] in "fFtT" or text[k - 2 : k].lower() in ("rf", "fr", "rt", "tr"):
                return None  # an f-string (or a template string)
            q = text[k : k + 3] if text.startswith(ch * 3, k) else ch
            c = k + len(q)
            while True:
                c = text.find(q, c, stop)
                if c < 0:
                    return None
                n = 0
                while text[c - 1 - n] == "\\":
                    n += 1
                if n % 2 == 0:  # not escaped
                    break
                c += 1
            if depth == 1:
                out.append('""')
            j = c + len(q)
        elif ch in "([{":
            depth += 1
            j = k + 1
        else:
            depth -= 1
            if depth == 0:
                return "".join(out), k
            j = k + 1  # (the end of a nested group is not the top level's)


def _layer_outside_init(text: str, start: int, end: int, hits=None) -> bool:
    """A chunk where a layer constructor may stand in a function other than ``__init__``
    that forward may run: some ``Linear(``/``Conv2d(``/... whose nearest ``def`` line
    above (in the chunk) is ``def forward``, or the ``def`` of a function whose name is
    called somewhere in the file (layers built in ``__init__`` are where they belong, and
    a function nothing calls by name is not reached from ``forward``: the ast check skips
    both the same way)."""
    return bool(_layer_hits(text, start, end, hits, first=True))


def _layer_hits(text: str, start: int, end: int, hits=None, first: bool = False) -> list:
    """The hits of :func:`_layer_outside_init` that pass its test, in text order
    (``first``: stop at the first): ``find_named`` enters only the statements that hold
    one of them."""
    if hits is None:
        hits = [a for a, _ in find_words(_LAYER_WORDS).spans(text, start, end)]
    out: list = []
    for h in hits:
        if h > start and (text[h - 1].isalnum() or text[h - 1] == "_"):
            continue  # ``MyLinear(``: another name (the ast check compares whole names)
        name = _def_above(text, start, h)
        if name is not None and name != "__init__" and (name == "forward" or name in STEP_METHODS
                                                         or _called_elsewhere(text, name)):
            out.append(h)
            if first:
                break
    return out


def _def_above(text: str, start: int, pos: int) -> Optional[str]:
    """The name on the nearest ``def`` line above ``pos`` (not before ``start``)."""
    m = _def_head_above(text, start, pos)
    return m.group(1) if m is not None else None


def _def_head_above(text: str, start: int, pos: int) -> Optional[re.Match]:
    """The match of :data:`_DEF_HEADER` on the nearest ``def`` line above ``pos`` (not
    before ``start``): its start is the line's, its group 1 the name."""
    j = pos
    while True:
        j = text.rfind("def", start, j)
        if j < 0:
            return None
        ls = max(text.rfind("\n", start, j) + 1, start)
        head = text[ls:j].strip(" \t")
        if head in ("", "async") or (head.startswith("async") and not head[5:].strip(" \t")):
            m = _DEF_HEADER.match(text, ls)
            if m is not None:
                return m


def _in_static_method(text: str, start: int, head: re.Match, pos: int) -> bool:
    """``pos`` (a factory call) stands in the body of ``@staticmethod def name(...)``
    (``head``, its ``def`` line), a method no code of the file calls: no tensor it makes
    can meet a device tensor where ``Analysis.follow`` records one.  The flow of a value
    made in a function records a meet only where ``forward`` runs: in that function (this
    one runs there only when called), after a ``return`` to its callers (none), or
    through a plain attribute (``self.t = ...``: a static method has no ``self``; a
    function it calls gets the value with the flow still its own, and so do the
    functions nested in it, unless a class is: no class statement stands indented in the
    file; nor may a ``global`` carry the value to other functions: none in the file).
    Read from the text: the lines right above the ``def`` line are its decorators,
    ``@staticmethod`` one of them, and every line from the ``def`` line to ``pos`` is
    indented deeper than it (or is blank, a comment, or starts with a closing bracket:
    none ends its body), so that ``pos`` is in its body; else (a decorator over several
    lines, a string at a lesser indent) the answer is no."""
    ls = head.start()
    line = text[ls : head.end()]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    # the decorators: the lines right above, each an ``@`` at the same indent
    static = False
    k = ls
    while k > start:
        pls = max(text.rfind("\n", start, k - 1) + 1, start)
        line = text[pls : k - 1].rstrip(" \t\r")
        if not line.startswith(indent + "@"):
            break
        static = static or line == indent + "@staticmethod"
        k = pls
    if not static:
        return False
    # every line after the ``def`` line, up to the one of ``pos``: in its body
    deeper = (indent + " ", indent + "\t")
    i = text.find("\n", ls, pos)
    while 0 <= i < pos:
        j = i + 1
        e = text.find("\n", j)
        line = text[j : e if e >= 0 else len(text)]
        body = line.lstrip(" \t")
        if body and body[0] not in "\r#)]}" and not line.startswith(deeper):
            return False
        i = e
    return _closed_functions(text)


def _nested_class(text: str) -> bool:
    """A class statement stands indented in ``text`` (inside a function or a class: the
    word ``class`` after a line break and at least one space, tab or form feed; a
    compound statement always starts its own line, and an indented first line does not
    parse).  Strings and comments count too."""
    j = text.find("class", 1)
    while j >= 0:
        i = j
        while i > 0 and text[i - 1] in " \t\x0c":
            i -= 1
        if i < j and i > 0 and text[i - 1] in "\r\n" and not (j + 5 < len(text) and _word(text[j + 5])):
            return True
        j = text.find("class", j + 5)
    return False


_CLOSED: list = [None, False]  # the text last asked about and its answer


def _closed_functions(text: str) -> bool:
    """No ``global`` and no indented class statement in ``text`` (see
    :func:`_in_static_method`); kept for the text last asked about."""
    if _CLOSED[0] is not text:
        ok = not has_word(text, "global") and not _nested_class(text)
        _CLOSED[0], _CLOSED[1] = text, ok
    return _CLOSED[1]


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _keeps_a_dimension(index) -> bool:
    """An index with a slice, ``None`` or ``...`` in it (``t[:, 0]``, ``t[None]``): the
    result keeps at least one dimension of its own.  Integer indices alone (``t[i]``)
    may leave a 0-d tensor."""
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(
        isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis))
        for e in elts
    )


def _same(a, b) -> bool:
    """Two expressions that are the same name (``x`` and ``x``)."""
    return isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id == b.id


_OPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}


def _number(e) -> bool:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return isinstance(e, ast.Constant) and isinstance(e.value, _NUMBERS)


def _numpy_scalar(e) -> bool:
    """A number, or a constant of NumPy or ``math`` (``-np.inf``, ``np.pi``)."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return _number(e) or (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                          and e.attr in ("inf", "nan", "pi", "e", "NINF", "PINF", "NaN", "Inf")
                          and e.value.id in ("np", "numpy", "math"))


def _literal_dims(data) -> Optional[bool]:
    """torch.tensor(data): 0-d for a number, at least 1-d for a list/tuple literal."""
    if data is None:
        return None
    if _number(data):
        return True
    if isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
        return False
    return None


def _size_zero(size) -> Optional[bool]:
    """A size argument: ``()``/``[]``/``torch.Size([])`` -> 0-d; an int or a non-empty
    literal -> not; anything else: assumed not (a shape of a tensor, ``x.size()``)."""
    if isinstance(size, (ast.Tuple, ast.List)):
        return len(size.elts) == 0
    if isinstance(size, ast.Call) and isinstance(size.func, ast.Attribute) and size.func.attr == "Size":
        a = size.args[0] if size.args else None
        return a is None or (isinstance(a, (ast.List, ast.Tuple)) and not a.elts)
    return False
