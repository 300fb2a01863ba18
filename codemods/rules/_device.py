"""What the device rules (TM101, TM102) share: device expressions whose value is known,
moves of tensors and modules (``.to(device)``, ``.cuda()``), the modules a call runs and
where they were moved, DataLoaders (however the loop reaches them), and the file-level
conditions under which device placement is someone else's job.

Every value is followed through the shared semantic model (``origins``, ``reaching``,
``param_values``, ``attribute_values``): names, globals read in functions, parameters
bound at their call sites and defaults, ``self`` attributes, containers
(``loaders["train"]``, ``{x: DataLoader(...) for x in ...}``) and same-file builder
functions.  What cannot be followed is *unknown*, never guessed from spelling.

Public API (stable; both device rules use it):

* :func:`device_origins` / :func:`is_known_device` -- a device expression whose value is
  known locally: a string literal, ``"cuda" if torch.cuda.is_available() else "cpu"``,
  ``torch.device(<those>[, <int literal>])``, or a name/parameter/attribute bound only to
  such values.  ``args.device``, ``f"cuda:{rank}"``, ``accelerator.device``: unknown.
* :func:`move_of` -- the device move a call makes (``t.to(dev)``, ``t.cuda()``,
  ``t.to(device=dev)``; not ``t.to(torch.float16)`` or ``t.to(memory_format=...)``).
* :func:`is_module_class` -- a same-file class deriving from ``torch.nn.Module``.
* :func:`model_state` -- the module a callee refers to and the moves it went through
  before a use (with the ``if`` condition each ran under); wrappers that place inputs
  themselves (``DataParallel``, ``DistributedDataParallel``, ``device_map=``) are
  reported as handled.
* :func:`device_text_at` -- an expression valid at some node that has the same (known)
  value as a device expression written elsewhere (``device`` in ``train(model, device)``
  for the ``device`` of ``main``).
* :func:`loader_of` -- the DataLoader calls a ``for`` loop iterates (through
  ``enumerate``/``tqdm``/``iter``), when every origin is a plain DataLoader.
* :func:`framework_in_file` -- a training framework imported by the file
  (``names.framework_of``).
* :func:`file_mentions_device` -- the file moves anything at all (a CPU-only script
  cannot have a device mismatch).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import functools
import re
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple, Optional

from ..semantic import UNKNOWN_ARG, BindingKind, OriginKind, SemanticModel, is_generator
from ..semantic import names as N
from ..semantic.source import _word, has_word
from ._main_guard import is_main_guard

__all__ = [
    "MADE_FACTORIES", "MOVE_METHODS", "HOST_METHODS", "HOST_ATTRS", "SELF_METHODS", "TENSOR_FUNCS", "Move",
    "ModelState", "Loop", "device_origins", "is_known_device", "is_cpu_device", "move_of", "is_module_class",
    "model_state", "device_text_at", "loader_of", "loop_batch", "taken_batch", "framework_in_file",
    "file_mentions_device", "mentions_device", "visible_at", "guard_of", "non_blocking_style", "is_torch_call",
    "type_moves", "bound_before", "made_tensors", "made_tensor", "made_line_starts", "moved_and_called",
    "made_lines_outside_classes", "param_loader", "witness_owners", "annotated_loader", "LOADER_ANNOTATION",
    "has_loader_annotation",
    "device_move", "DEVICE_KEEP_METHODS", "class_moves_arguments", "definition_span", "made_by_call", "moved_call",
    "may_witness", "device_like", "gives_an_item",
]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

# What a run of a script with a device mismatch shows, for ``torchmend verify``: the
# simulated GPU raises PyTorch's generic message; real CUDA words the mismatch per
# operator (seen on an H100, torch 2.11):
MISMATCH_EVIDENCE = (
    # "Expected all tensors to be on the same device, but got mat1 is on cpu, different
    # from other tensors on cuda:0" (most operators); "expected self and mask to be on
    # the same device, but got mask on cpu and self on cuda:0" (masked_fill)
    "to be on the same device",
    # RNNs: "Input and hidden tensors are not at the same device, found input tensor at
    # cuda:0 and hidden tensor at cpu"
    "not at the same device",
    # cuDNN convolutions: "Input type (torch.FloatTensor) and weight type
    # (torch.cuda.FloatTensor) should be the same ..."
    "should be the same",
    "must be on the current device",
    "Expected object of device type",  # PyTorch 1.x
)
# methods that place a tensor (or a module) on a device
MOVE_METHODS = frozenset({"to", "cuda", "to_device", "type_as"})
# results that are Python values or CPU copies, not device tensors
HOST_METHODS = frozenset({
    "item", "size", "tolist", "numel", "dim", "cpu", "numpy", "nelement", "element_size", "get_device", "stride",
    "data_ptr", "is_contiguous", "ndimension",
})
HOST_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout"})
# module methods that return the module itself
SELF_METHODS = frozenset({
    "eval", "train", "float", "half", "double", "bfloat16", "requires_grad_", "share_memory", "to_empty",
})
# those of them that leave the module where it is (``to_empty`` places it on a device;
# ``share_memory`` moves its storage)
SAME_PLACE_METHODS = SELF_METHODS - {"to_empty", "share_memory"}
# torch functions whose result is certainly a tensor (factories and common ops)
TENSOR_FUNCS = frozenset(N.FACTORIES | N.LIKE_FACTORIES | {
    "cat", "stack", "where", "matmul", "clone", "flatten", "cumsum", "exp", "log", "sigmoid", "tanh", "softmax",
    "log_softmax", "hstack", "vstack",
})
# torch functions that do not return a tensor (or not one worth guessing about)
NOT_TENSOR_FUNCS = frozenset({
    "load", "device", "compile", "manual_seed", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
    "get_default_dtype", "set_default_dtype", "is_tensor", "save", "jit", "Generator", "Size", "dtype",
    "split", "chunk", "unbind", "broadcast_tensors", "meshgrid", "topk", "sort", "max", "min", "unique",
})
_DTYPE_WORDS = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16", "int32", "int64",
    "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2",
    "channels_last", "contiguous_format", "preserve_format", "channels_last_3d",
})
# calls that return the machine's accelerator device (a value as known as "cuda")
_ACCELERATOR = frozenset({"torch.accelerator.current_accelerator"})
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_DEVICE_RE = re.compile(r"\.(?:to|cuda)\(|device|cuda")


# ----------------------------------------------------------------------------- text


def file_mentions_device(text: str, has=None) -> bool:
    """The file moves something or names a device: a script that does neither runs on
    the CPU and cannot mix devices (``has(word)``: a remembering ``word in text``, as
    the text gate and ``Context.has`` give)."""
    # ``_DEVICE_RE`` spelled as substring tests (each a fast search of the whole text)
    has = has or text.__contains__
    return has("device") or has("cuda") or has(".to(")


def mentions_device(sem: SemanticModel, node) -> bool:
    """The source of ``node`` moves something or names a device."""
    return _DEVICE_RE.search(sem.segment(node)) is not None


def is_torch_call(sem: SemanticModel, call: ast.Call) -> bool:
    return any(N.is_torch(q) for q in sem.qualnames(call.func))


# ----------------------------------------------------------------------------- device values


def _is_dtype(sem: SemanticModel, expr) -> bool:
    """``torch.float16``, ``torch.long``, ``torch.channels_last``, another tensor's
    ``y.dtype``: a dtype or memory format."""
    if isinstance(expr, ast.Attribute) and expr.attr == "dtype":
        return True
    q = sem.qualname(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
    return bool(q) and q.startswith("torch.") and q.count(".") == 1 and q.split(".")[1] in _DTYPE_WORDS


def _known_device_value(sem: SemanticModel, node, depth: int) -> bool:
    if isinstance(node, ast.Constant):
        # "cuda", "cuda:0", "cpu"; 0 (a CUDA device index)
        return isinstance(node.value, (str, int)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call) and depth < 4:
        if sem.call_qualname(node) in _ACCELERATOR and not node.args and not node.keywords:
            return True
        if sem.call_qualname(node) in N.DEVICE and node.args and not node.keywords:
            if len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args):
                return False
            if len(node.args) == 2 and not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, int)):
                return False
            return device_origins(sem, node.args[0], depth + 1) is not None
    return False


def device_origins(sem: SemanticModel, expr, _depth: int = 0) -> Optional[frozenset]:
    """The nodes the device ``expr`` may have been made by, when every one is a known
    device value (see the module docstring); None when any is unknown."""
    if expr is None:
        return None
    out = []
    for o in sem.origins(expr):
        if o.kind is not OriginKind.VALUE or not _known_device_value(sem, o.node, _depth):
            return None
        out.append(o.node)
    return frozenset(out) if out else None


_DEVICE_WORDS = re.compile(r"dev|cuda|gpu|rank|mps|xla", re.I)
_DTYPE_WORDS_RE = re.compile(r"dtype|precision|type|half|float|bf16|fp16|amp", re.I)


def device_like(sem: SemanticModel, move) -> bool:
    """The device of a ``Move`` reads as a device, not as a dtype that ``.to()`` also
    takes: ``x.cuda()``, a device the model knows (``"cuda"``, ``torch.device(...)``), a
    ``.device`` attribute, or a name or attribute spelled like one (``device``,
    ``self.dev``, ``args.gpu``, ``local_rank``) and not like a dtype (``weight_dtype``,
    ``precision``)."""
    if move.style == "cuda":
        return True
    dev = move.device
    if dev is None:
        return False
    if isinstance(dev, ast.Attribute) and dev.attr == "device":
        return True
    text = sem.dotted(dev) if isinstance(dev, (ast.Name, ast.Attribute)) else None
    if text:
        last = text.rsplit(".", 1)[-1]
        if _DEVICE_WORDS.search(last) and not _DTYPE_WORDS_RE.search(last):
            return True
    return is_known_device(sem, dev)


def is_known_device(sem: SemanticModel, expr) -> bool:
    return device_origins(sem, expr) is not None


def is_cpu_device(sem: SemanticModel, expr) -> bool:
    """Every value ``expr`` may hold is the CPU (``"cpu"``, ``torch.device("cpu")``)."""
    got = device_origins(sem, expr)
    if not got:
        return False
    for n in got:
        if isinstance(n, ast.Call) and n.args:
            n = n.args[0]
            inner = device_origins(sem, n)
            if not inner or not all(isinstance(m, ast.Constant) and m.value == "cpu" for m in inner):
                return False
        elif not (isinstance(n, ast.Constant) and n.value == "cpu"):
            return False
    return True


def _cuda_or_cpu_value(sem: SemanticModel, n) -> bool:
    if isinstance(n, ast.Call):  # ``torch.device(<known>[, index])`` (known_device_value)
        if not n.args:
            return False  # the current accelerator: MPS, XPU, ... as well as CUDA
        inner = device_origins(sem, n.args[0])
        return bool(inner) and all(_cuda_or_cpu_value(sem, m) for m in inner)
    if isinstance(n, ast.Constant):
        v = n.value
        return isinstance(v, int) or (isinstance(v, str) and (v == "cpu" or v == "cuda" or v.startswith("cuda:")))
    return False


def cpu_without_cuda(sem: SemanticModel, move: "Move") -> bool:
    """Where CUDA is not available, the module ``move`` moved is on the CPU (or the move
    raised): ``.cuda()``, or ``.to(d)`` with every value of ``d`` ``"cpu"``, ``"cuda"``,
    ``"cuda:N"`` or a device index (``"cuda" if torch.cuda.is_available() else "cpu"``);
    not a device that may be MPS or XPU, nor an unknown one."""
    if move.style == "cuda":
        return True
    got = device_origins(sem, move.device) if move.device is not None else None
    return bool(got) and all(_cuda_or_cpu_value(sem, n) for n in got)


def without_cuda(sem: SemanticModel, test, orelse: bool) -> bool:
    """The branch of ``if test:`` (its ``else`` when ``orelse``) runs only where CUDA is
    not available: ``test`` is ``torch.cuda.is_available()`` (or a name bound only to
    it), or ``not`` that for the body."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, orelse = test.operand, not orelse
    if not orelse:
        return False
    origins = sem.origins(test)
    return bool(origins) and all(
        o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call) and not o.node.args
        and sem.call_qualname(o.node) == "torch.cuda.is_available"
        for o in origins
    )


def runs_without_cuda(sem: SemanticModel, node, early_return: bool = False) -> bool:
    """``node`` runs only where CUDA is not available: in a branch :func:`without_cuda`
    names (the ``else`` of ``if torch.cuda.is_available():``, the body of ``if not
    ...:``) in its own function or module code; with ``early_return``, also after ``if
    torch.cuda.is_available(): return ...`` in its function's body."""
    child = node
    for a in sem.ancestors(node):
        if isinstance(a, (*_DEFS, ast.Lambda, ast.ClassDef, ast.Module)):
            if early_return and isinstance(a, _DEFS) and isinstance(child, ast.stmt):
                for s in a.body:
                    if s is child:
                        break
                    if isinstance(s, ast.If) and not s.orelse and s.body and isinstance(s.body[-1], (ast.Return, ast.Raise)) \
                            and without_cuda(sem, s.test, True):
                        return True
            return False
        if isinstance(a, ast.If) and any(x is child for x in (*a.body, *a.orelse)) \
                and without_cuda(sem, a.test, any(x is child for x in a.orelse)):
            return True
        child = a
    return False


def _binding_device_origins(sem: SemanticModel, bindings) -> Optional[frozenset]:
    out = []
    for b in bindings:
        for o in sem.binding_origins(b):
            if o.kind is not OriginKind.VALUE or not _known_device_value(sem, o.node, 0):
                return None
            out.append(o.node)
    return frozenset(out) if out else None


# ----------------------------------------------------------------------------- moves


@dataclass(frozen=True, eq=False)
class Move:
    """A device move: ``call`` is ``X.to(device)`` (``style`` "to", ``device`` the
    argument) or ``X.cuda()`` (``style`` "cuda", ``device`` the argument or None)."""

    call: ast.Call
    style: str
    device: Optional[ast.AST]
    guard: Optional[tuple] = None  # the ``if`` tests it runs under (see guard_of); None: not copyable
    builder: bool = False  # made inside a same-file function that returns the module
    fed: bool = False  # not the module's own move: the tensor the module is called with (``model(x.to(d))``)
    # a move in another file (a script that imports this one passes the module it moved):
    # where, as "main.py line 7", and its device as written there; its nodes are that
    # file's, never read with this file's model
    where: str = ""
    text: str = ""


def move_of(sem: SemanticModel, call) -> Optional[Move]:
    """The device move ``call`` makes, or None (not a ``.to``/``.cuda`` call, or a dtype /
    memory-format conversion only)."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    m = call.func.attr
    if m == "cuda":
        dev = call.args[0] if call.args else sem.keyword(call, "device")
        return Move(call, "cuda", dev)
    if m != "to":
        return None
    dev = sem.keyword(call, "device")
    if dev is None and call.args:
        first = call.args[0]
        if isinstance(first, ast.Starred) or _is_dtype(sem, first):
            return None
        dev = first
    if dev is None:
        return None  # .to(dtype=...), .to(memory_format=...)
    return Move(call, "to", dev)


def type_moves(sem: SemanticModel, call) -> bool:
    """``x.type(T)`` may put ``x`` on another device: ``T`` is not certainly a dtype or a
    CPU tensor type.  ``torch.cuda.FloatTensor``, ``"torch.cuda.FloatTensor"``, a name
    bound to one (``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``),
    another tensor's ``.type()`` or a value that cannot be read may move it;
    ``torch.float16``, ``torch.FloatTensor``, ``"torch.LongTensor"`` and ``y.dtype`` only
    cast it.  ``x.type()`` (no argument) returns a string."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr != "type":
        return False
    arg = call.args[0] if call.args else sem.keyword(call, "dtype")
    if arg is None:
        return False
    if isinstance(arg, ast.Starred):
        return True
    return not _cast_only(sem, arg)


def _cast_only(sem: SemanticModel, e) -> bool:
    if isinstance(e, ast.Attribute) and e.attr == "dtype":
        return True
    origins = sem.origins(e)
    for o in origins:
        if o.kind is OriginKind.IMPORT:
            name = o.qualname or ""
        elif o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant) and isinstance(o.node.value, str):
            name = o.node.value
        else:
            return False
        if not _cast_name(name):
            return False
    return bool(origins)


def _cast_name(name: str) -> bool:
    """``torch.float16``, ``torch.FloatTensor``: a dtype or a CPU tensor type, by name."""
    return name.startswith("torch.") and name.count(".") == 1 and (name[6:] in _DTYPE_WORDS or name.endswith("Tensor"))


def guard_of(sem: SemanticModel, stmt, use) -> Optional[tuple]:
    """The conditions under which statement ``stmt`` runs, relative to the node ``use``:
    ``()`` unconditionally, the tests of the enclosing ``if`` statements (``stmt`` in
    their body, outermost first) up to what ``stmt`` and ``use`` share, or None when it
    runs under something else (an ``else``, a loop, a ``try``, a ``match``).  ``if
    __name__ == "__main__":`` does not count."""
    around = set(map(id, sem.ancestors(use)))
    conds = []
    child = stmt
    for a in sem.ancestors(stmt):
        if id(a) in around or isinstance(a, (*_DEFS, ast.ClassDef, ast.Module, ast.Lambda)):
            break
        if isinstance(a, ast.If):
            if not any(s is child for s in a.body):
                return None
            if not is_main_guard(a):
                conds.append(a.test)
        elif isinstance(a, (ast.With, ast.AsyncWith)):
            pass
        elif isinstance(a, ast.stmt) or isinstance(a, (ast.excepthandler, ast.match_case)):
            return None
        child = a
    return tuple(reversed(conds))


def visible_at(sem: SemanticModel, expr, at) -> bool:
    """Every name ``expr`` reads means the same at node ``at`` as where ``expr`` is."""
    here, there = sem.scope_of(at), sem.scope_of(expr)
    if here is there:
        return True
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            a = sem.lookup(here, n.id)
            b = sem.resolve(n)
            if [id(x) for x in a] != [id(x) for x in b]:
                return False
        elif isinstance(n, (ast.Lambda, ast.comprehension)):
            return False
    return True


# ----------------------------------------------------------------------------- modules


def is_module_class(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    """A same-file class deriving (through same-file bases) from ``torch.nn.Module`` or a
    ``torch.nn`` layer."""
    return any(q in _MODULE_BASES or N.is_module_class(q) for q in sem.base_qualnames(cls))


def class_moves_arguments(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    """A method of the same-file class ``cls`` moves what it receives (``x =
    x.to(self.device)`` on a parameter or a loop variable): it places its inputs
    itself.  Tensors it makes (``torch.zeros(...).to(device)``) do not count."""
    for fn in (s for s in cls.body if isinstance(s, _DEFS)):
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} - {"self", "cls"}
        loop_vars = {
            n.id for node in ast.walk(fn) if isinstance(node, (ast.For, ast.comprehension))
            for n in ast.walk(node.target) if isinstance(n, ast.Name)
        }
        for m in ast.walk(fn):
            if isinstance(m, ast.Call) and move_of(sem, m) is not None:
                r = m.func.value
                while isinstance(r, (ast.Attribute, ast.Subscript)) or (
                    isinstance(r, ast.Call) and isinstance(r.func, ast.Attribute)
                ):
                    r = r.func.value if isinstance(r, ast.Call) else r.value
                if isinstance(r, ast.Name) and (r.id in params or r.id in loop_vars):
                    return True
    return False


@dataclass
class ModelState:
    """What is known about the module a call runs, at that call.

    ``moves``: the device moves that may have run before the use; ``unmoved``: some way
    the module reaches the use has no move; ``handled``: why placing the inputs is not
    the caller's job (``DataParallel``, ``device_map=``), or None."""

    moves: list = field(default_factory=list)
    unmoved: bool = False
    handled: Optional[str] = None
    # some way it reaches the use is the module itself, moved, not the wrapper that
    # ``handled`` names (``if torch.cuda.device_count() > 1: model = nn.DataParallel(model)``)
    bare: bool = False
    # ids of the expressions the module was made by, on the ways with and without a move
    moved_bases: set = field(default_factory=set)
    unmoved_bases: set = field(default_factory=set)
    # a way without a move was read as the module moved on another way, though no file
    # of the tree defines its class (``_maybe_module_kind``): whether its ``forward``
    # places its inputs is not known
    guessed: bool = False

    @property
    def moved(self) -> bool:
        return bool(self.moves)


_PARALLEL = frozenset(N.PARALLEL_WRAPPERS)


def model_state(sem: SemanticModel, expr, use, cache: Optional[dict] = None,
                importers: bool = False) -> Optional[ModelState]:
    """The module ``expr`` (the callee of a call ``use``) refers to: None when it is not
    provably a module (a same-file ``nn.Module`` class, a ``torch.nn`` layer, a model-zoo
    builder, or anything called like a model after a ``.to(device)``/``.cuda()``), or
    when it may have been moved back (``model.cpu()``).  With ``importers``, a parameter
    of a function no code of this file calls is what the scripts that import the file
    pass for it (``SemanticModel.importer_arguments``; their moves carry ``where``)."""
    key = (id(expr),)
    if cache is not None and key in cache:
        return cache[key]
    paths = _model_paths(sem, expr, use, 0, set(), importers=importers)
    # a constructor of another file's class: a module (as a same-file one) when it is
    # one and some other way the value comes is moved (its file is read only then)
    moved = any(moves for _, moves, _ in paths)
    moved_bases = {id(b) for _, m, b in paths if m}
    paths = [(_maybe_module_kind(sem, b, m, moved, moved_bases), m, b) if k == _MAYBE_MODULE else (k, m, b)
             for k, m, b in paths]
    guessed = any(k == _GUESSED for k, _, _ in paths)
    paths = [("moved" if k == _GUESSED else k, m, b) for k, m, b in paths]
    st: Optional[ModelState] = ModelState()
    is_model = False
    # the bare module counts only beside a wrapper applied when there are several GPUs
    multi = any(k == "handled:`DataParallel`" and _multi_gpu_wrap(sem, b) for k, _, b in paths)
    for kind, moves, base in paths:
        if kind in ("module", "moved"):
            is_model = True
            st.bare = st.bare or (multi and bool(moves))
        elif kind.startswith("handled:"):
            st.handled = kind.split(":", 1)[1]
            is_model = True
        if any(m.style == "cpu" for m in moves):
            st = None
            break
        if moves:
            st.moves.extend(m for m in moves if m not in st.moves)
            st.moved_bases.add(id(base))
            is_model = True
        else:
            st.unmoved = True
            st.unmoved_bases.add(id(base))
        if kind == "unknown" and not moves:
            is_model = False
            break
    if st is not None and (not paths or not is_model):
        st = None
    if st is not None:
        st.guessed = guessed
    if cache is not None:
        cache[key] = st
    return st


def _multi_gpu_wrap(sem: SemanticModel, call) -> bool:
    """``call`` (a ``DataParallel(...)``) runs only in the body of an ``if`` that tests the
    number of GPUs (``if torch.cuda.device_count() > 1:``, or a name bound to that count):
    with one GPU the module stays bare.  Not for a test of the device or of CUDA
    (``if device == "cuda":``): the bare module is then on the CPU."""
    if not isinstance(call, ast.AST):
        return False
    stmt = sem.statement_of(call)
    prev, cur = stmt, sem.parent(stmt) if stmt is not None else None
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
        if isinstance(cur, ast.If) and any(x is prev for x in cur.body):
            for n in ast.walk(cur.test):
                counts = [n] if isinstance(n, ast.Call) else [o.node for o in sem.origins(n)] if isinstance(n, ast.Name) else []
                if any(isinstance(c, ast.Call) and sem.call_qualname(c) == "torch.cuda.device_count" for c in counts):
                    return True
        prev, cur = cur, sem.parent(cur)
    return False


def _self_moves(sem: SemanticModel, cls: ast.ClassDef, ctor: ast.Call, use) -> list:
    """``self.to(device)`` / ``self.cuda()`` as a statement of the class's own
    ``__init__`` body (not under a condition): the constructor moves the module.  The
    device is the constructor's argument for that parameter (``Net(device="cuda")``),
    or its default; None when neither is known."""
    init = sem.method(cls, "__init__")
    if init is None:
        return []
    for st in init.body:
        call = st.value if isinstance(st, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
            continue
        mv = move_of(sem, call)
        if mv is None or mv.style not in ("to", "cuda"):
            continue
        dev = mv.device
        if isinstance(dev, ast.Name):
            # the constructor's argument for that parameter, or its default; a global of a
            # known device is kept (report only: its name is not followed here); a local
            # (``device = get_module_device(net)``) may be the CPU: not a move to rely on
            params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
            got = sem.call_argument(init, ctor, dev.id) if dev.id in params else None
            if got is None:
                bs = sem.reaching(dev)
                if not bs or any(b.scope is not sem.module_scope for b in bs) or not is_known_device(sem, dev):
                    return []
            dev = got if got is not None and got is not UNKNOWN_ARG else None
        elif dev is not None and not isinstance(dev, ast.Constant):
            # ``self.to(next(net.parameters()).device)``: wherever the argument is, the CPU
            # too: not a move to rely on
            return []
        if isinstance(dev, ast.Constant) and (dev.value is None or dev.value == "cpu" or not isinstance(dev.value, (str, int))):
            return []  # ``self.to(None)``, ``self.to("cpu")``: no move
        if dev is not None and (_is_dtype(sem, dev) or is_cpu_device(sem, dev)):
            return []  # ``self.to(torch.float64)``: a dtype; a CPU device
        return [Move(ctor, mv.style, dev, guard_of(sem, sem.statement_of(ctor), use))]
    return []


def _stmt_moves(sem: SemanticModel, refs: Iterable, use) -> list:
    """Moves written as statements on references (``model.to(device)``, ``model.cuda()``;
    ``Module.to`` moves in place) that may run before ``use``; ``model.cpu()`` and
    ``model.to("cpu")`` give a move of style "cpu" (back to the CPU).  A Hugging Face
    trainer given the model (``Trainer(model=model, args=args)``) moves it in place too:
    a move whose call and device are the trainer's call (:func:`trainer_move`)."""
    out = []
    for ref in refs:
        p = sem.parent(ref)
        if isinstance(p, ast.keyword) or isinstance(p, ast.Call) and p.args and p.args[0] is ref:
            call = sem.parent(p) if isinstance(p, ast.keyword) else p
            if not ((isinstance(p, ast.Call) or p.arg == "model") and isinstance(call, ast.Call)):
                continue
            stmt = _made_by_statement(sem, call)
            where = trainer_move(sem, call, ref, positional=isinstance(p, ast.Call)) if stmt is not None else None
            if where is not None and not _after(sem, stmt, use) and _runs_before_calls(sem, stmt, use):
                out.append(Move(call, "to", call, guard_of(sem, stmt, use)) if where == "device"
                           else Move(call, "cpu", None, guard_of(sem, stmt, use)))
            continue
        if not (isinstance(p, ast.Attribute) and p.value is ref and p.attr in ("to", "cuda", "cpu")):
            continue
        call = sem.parent(p)
        if not (isinstance(call, ast.Call) and call.func is p):
            continue
        stmt = sem.parent(call)
        if not isinstance(stmt, ast.Expr) or _after(sem, stmt, use) or not _runs_before_calls(sem, stmt, use):
            continue
        mv = move_of(sem, call)
        if p.attr == "cpu" or mv is not None and mv.style == "to" and is_cpu_device(sem, mv.device):
            out.append(Move(call, "cpu", None, guard_of(sem, stmt, use)))
        elif mv is not None:
            out.append(Move(mv.call, mv.style, mv.device, guard_of(sem, stmt, use)))
    return out


# Hugging Face trainers: ``Trainer(model=model, args=args)`` moves the model, in place, to
# ``args.device`` (the GPU when there is one; TRL's trainers are Trainers)
_HF_TRAINERS = frozenset({
    "transformers.Trainer", "transformers.Seq2SeqTrainer", "transformers.trainer.Trainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer",
})
_HF_TRAINING_ARGS = frozenset({
    "transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
    "transformers.training_args.TrainingArguments", "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
})
# the frameworks (``names.framework_of``) of those trainers
TRAINER_FRAMEWORKS = frozenset({"HF Trainer", "TRL"})
# training arguments under which the trainer does not place the model when it is made
# (DeepSpeed, FSDP; a half-precision evaluation that does not train), and those under
# which it places it on the CPU
_TRAINER_KEEPS = frozenset({"deepspeed", "fsdp", "fsdp_config", "use_ipex", "fp16_full_eval", "bf16_full_eval"})
_TRAINER_CPU = frozenset({"use_cpu", "no_cuda"})
# keywords of ``from_pretrained`` that place a model themselves (the trainer then does not)
_PLACED_LOAD = frozenset({"device_map", "quantization_config", "load_in_8bit", "load_in_4bit"})


def _trainer_names(sem: SemanticModel, e) -> bool:
    return any(q in _HF_TRAINERS or q.startswith("trl.") and q.endswith("Trainer") for q in sem.qualnames(e))


def is_trainer_call(sem: SemanticModel, call, own_init: bool = True) -> bool:
    """``call`` makes a Hugging Face trainer: ``Trainer(...)``, ``Seq2SeqTrainer(...)``,
    TRL's ``SFTTrainer(...)`` and the like, or a class of this file derived from one
    (without ``own_init``: one that keeps the trainer's ``__init__``, and so its
    arguments)."""
    if not isinstance(call, ast.Call):
        return False
    if _trainer_names(sem, call.func):
        return True
    cls = sem.callee(call)
    if isinstance(cls, ast.ClassDef) and any(_trainer_names(sem, b) for b in cls.bases):
        return own_init or not any(isinstance(st, _DEFS) and st.name == "__init__" for st in cls.body)
    return False


def _made_by_statement(sem: SemanticModel, call: ast.Call):
    """The statement that runs ``call`` where it stands: ``trainer = Trainer(...)``,
    ``Trainer(...)`` or ``Trainer(...).train()`` (not one in a lambda, a comprehension or a
    condition, which may not run); None otherwise."""
    p = sem.parent(call)
    if isinstance(p, ast.Attribute) and p.value is call and isinstance(sem.parent(p), ast.Call) \
            and sem.parent(p).func is p:
        call = sem.parent(p)
        p = sem.parent(call)
    if isinstance(p, (ast.Assign, ast.AnnAssign, ast.Expr)) and p.value is call:
        return p
    return None


def _training_args(sem: SemanticModel, e) -> Optional[str]:
    """Where a trainer given the training arguments ``e`` puts its model: ``"device"``
    (``args.device``) when every way they are made is a ``TrainingArguments(...)`` (TRL's
    ``...Config(...)``) call with no ``**`` and none of :data:`_TRAINER_KEEPS`; ``"cpu"``
    when each of those also says ``use_cpu=``/``no_cuda=`` with anything but ``False``;
    None otherwise."""
    origins = sem.origins(e) if isinstance(e, (ast.Name, ast.Attribute)) else [None]
    if not origins:
        return None
    found = set()
    for o in origins:
        n = e if o is None else o.node
        if o is not None and o.kind is not OriginKind.VALUE or not isinstance(n, ast.Call):
            return None
        if not any(q in _HF_TRAINING_ARGS or q.startswith("trl.") and q.endswith("Config") for q in sem.qualnames(n.func)):
            return None
        if any(k.arg is None or k.arg in _TRAINER_KEEPS for k in n.keywords):
            return None
        cpu = [k.value for k in n.keywords if k.arg in _TRAINER_CPU]
        found.add("cpu" if any(not (isinstance(v, ast.Constant) and v.value is False) for v in cpu) else "device")
    return found.pop() if len(found) == 1 else None


def trainer_move(sem: SemanticModel, call: ast.Call, model, positional: bool = False) -> Optional[str]:
    """Where the Hugging Face trainer ``call`` given ``model`` (its ``model=``, or its
    first argument: ``positional``) moves it: ``"device"`` (``args.device``) or ``"cpu"``
    (:func:`_training_args`; no arguments: the defaults, ``"device"``), when there is no
    ``**`` and the model was loaded without a placement of its own (``device_map=``,
    4/8-bit quantization); None otherwise.  A same-file subclass with an ``__init__`` of
    its own is taken only by ``model=``."""
    if not is_trainer_call(sem, call, own_init=not positional) or any(isinstance(a, ast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    args = sem.keyword(call, "args")
    if args is None and len(call.args) > 1 and is_trainer_call(sem, call, own_init=False):
        args = call.args[1]
    where = "device" if args is None else _training_args(sem, args)
    if where is None:
        return None
    for o in sem.origins(model):
        n = _loading_call(o.node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "from_pretrained" \
                and any(k.arg is None or k.arg in _PLACED_LOAD for k in n.keywords):
            return None
    return where


def trainer_device_text(sem: SemanticModel, call: ast.Call, at) -> Optional[str]:
    """``trainer.args.device``: where the trainer made by ``call`` put its model, when
    ``call`` is assigned to a name that holds it (and nothing else) at ``at``."""
    stmt = sem.parent(call)
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return None
    name = stmt.targets[0].id
    bs = sem.lookup(sem.scope_of(at), name)
    if len(bs) != 1 or bs[0].target is not stmt.targets[0]:
        return None
    return f"{name}.args.device"


def device_label(sem: SemanticModel, dev) -> str:
    """The text that names the device expression ``dev`` in a message (a trainer's call:
    ``Trainer(...).args.device``)."""
    if isinstance(dev, ast.Call) and is_trainer_call(sem, dev):
        return f"{sem.segment(dev.func)}(...).args.device"
    return sem.segment(dev)


def _runs_before_calls(sem: SemanticModel, stmt, use) -> bool:
    """A move ``stmt`` of module-level code and a ``use`` in a module-level function: every
    call of that function in module-level code comes after the move, on its path (not
    before it, ``evaluate(); model.to("cuda")``, nor in another branch of an ``if`` around
    it: ``if mode == "train": model.cuda(); train() else: predict()``).  True when the
    function is not called at module level (an app, another function calls it) or either
    is elsewhere."""
    fn = sem.enclosing_function(use)
    if fn is None or sem.scope_of(stmt) is not sem.module_scope or sem.parent(fn) is not sem.module:
        return True
    calls = [c for c in sem.call_sites(fn).calls if sem.enclosing_function(c) is None]
    here = sem.position(stmt)
    ifs = {id(a) for a in sem.ancestors(stmt) if isinstance(a, ast.If)}
    for c in calls:
        if sem.position(c) < here:
            return False
        # the innermost ``if`` around both: the two in different branches of it
        a = next((a for a in sem.ancestors(c) if id(a) in ifs), None)
        if a is not None and _in_block(sem, stmt, a.body) != _in_block(sem, c, a.body):
            return False
    return True


def _in_block(sem: SemanticModel, node, block: list) -> bool:
    """``node`` is one of the statements of ``block`` or inside one."""
    ids = {id(x) for x in block}
    return id(node) in ids or any(id(a) in ids for a in sem.ancestors(node))


def _after(sem: SemanticModel, stmt, use) -> bool:
    """``stmt`` runs after ``use`` in straight-line code of the same scope (and no loop
    around both brings it back before the next use)."""
    if sem.scope_of(stmt) is not sem.scope_of(use):
        return False
    if (stmt.lineno, stmt.col_offset) < (use.lineno, use.col_offset):
        return False
    use_loops = {id(a) for a in sem.ancestors(use) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))}
    return not any(id(a) in use_loops for a in sem.ancestors(stmt))


def _model_paths(sem: SemanticModel, expr, use, depth: int, seen: set, builder: bool = False,
                 importers: bool = False) -> list:
    """The ways a module value reaches ``use``: ``(kind, moves, base)`` with kind
    "module" (a module constructor), "moved" (an unknown value that was moved),
    "handled:<why>" (a wrapper that places its inputs), "unknown"; ``base`` the
    expression the value was made by (the constructor call)."""
    if depth > 8:
        return [("unknown", [], expr)]
    if id(expr) in seen:
        # a way back to a value already on this path (``self.model = self.model.eval()``
        # among the attribute's values): it adds no way the others do not give
        return []
    if isinstance(expr, ast.Constant) and expr.value is None:
        # ``self.model = None`` until a method builds it: calling None would fail, so no
        # way the call runs something comes from there
        return []
    seen = seen | {id(expr)}
    if isinstance(expr, ast.Name):
        bs = sem.reaching(expr)
        if not bs:
            return [("unknown", [], expr)]
        out = []
        for b in bs:
            # (in place: a move of the object this binding holds, so by a reference it
            # reaches; ``model.cuda()`` before ``model = Other()`` moved another model)
            extra = _stmt_moves(sem, [r for r in sem.references(b) if any(x is b for x in sem.reaching(r))], use)
            if builder:
                extra = [Move(m.call, m.style, m.device, m.guard, True) for m in extra]
            for kind, moves, base in _binding_paths(sem, b, use, depth, seen, builder, importers):
                out.append((kind, moves + extra, base))
        return out
    if isinstance(expr, ast.Attribute):
        if sem.qualname(expr) is not None:
            return [("unknown", [], expr)]
        vals = sem.attribute_values(expr)
        if not vals:
            return [("unknown", [], expr)]
        extra = _attr_stmt_moves(sem, expr, use)
        out = []
        for v in vals:
            if v is None:
                return [("unknown", [], expr)]
            for kind, moves, base in _model_paths(sem, v, use, depth + 1, seen, builder, importers):
                out.append((kind, moves + extra, base))
        return out
    if isinstance(expr, ast.Call):
        mv = move_of(sem, expr)
        if mv is not None and mv.style == "to" and is_cpu_device(sem, mv.device):
            # ``.to("cpu")``: a module never moved stays where it is; one moved before is
            # back on the CPU (``model = model.to("cpu")`` after ``.to(device)``)
            back = Move(mv.call, "cpu", mv.device, guard_of(sem, sem.statement_of(expr), use), builder)
            return [(k, [back, *m] if m else m, b)
                    for k, m, b in _model_paths(sem, expr.func.value, use, depth + 1, seen, builder, importers)]
        if mv is not None:
            recv = expr.func.value
            mv = Move(mv.call, mv.style, mv.device, guard_of(sem, sem.statement_of(expr), use), builder)
            inner = _model_paths(sem, recv, use, depth + 1, seen, builder, importers)
            return [("moved" if k == "unknown" else k, [mv, *m], b) for k, m, b in inner]
        meth = sem.method_name(expr)
        if meth in SELF_METHODS or (meth == "to" and mv is None) or (
                meth == "type" and len(expr.args) == 1 and not expr.keywords and mv is None
                and _is_dtype(sem, expr.args[0])):
            # (``.to(torch.float64)``, ``.type(torch.float64)``: a cast of the same module; a
            # legacy tensor type, ``.type(torch.FloatTensor)``, names a device too: unknown)
            return _model_paths(sem, expr.func.value, use, depth + 1, seen, builder, importers)
        q = sem.call_qualname(expr)
        if q in ("torch.compile",) and expr.args:
            return _model_paths(sem, expr.args[0], use, depth + 1, seen, builder, importers)
        if q in _PARALLEL:
            return [("handled:`" + q.rsplit(".", 1)[-1] + "`", [], expr)]
        if _pipeline(q):
            return [("handled:`a pipeline`", [], expr)]
        dm = sem.keyword(expr, "device_map")
        if dm is not None:
            one = single_device_map(dm) if _hf_model_load(q) else None
            if one is not None:
                # ``from_pretrained(..., device_map="cuda")``: the whole model on that one
                # GPU, with no hooks that would place its inputs (as ``.to("cuda")``)
                return [("moved", [Move(expr, "to", one, guard_of(sem, sem.statement_of(expr), use), builder)], expr)]
            return [("handled:`device_map=`", [], expr)]
        if _prepared(sem, expr):
            return [(_PREPARED, [], expr)]
        target = sem.callee(expr)
        if isinstance(target, ast.ClassDef):
            if not is_module_class(sem, target):
                return [("unknown", [], expr)]
            return [("module", _self_moves(sem, target, expr, use), expr)]
        if isinstance(target, _DEFS):
            rets = [r for r in sem.returns(target) if r is not None]
            if not rets:
                return [("unknown", [], expr)]
            out = []
            for r in rets:
                out.extend(_model_paths(sem, r, use, depth + 1, seen, True, importers))
            return out
        if q is not None and (N.is_module_class(q) or N.is_model_zoo(q)):
            return [("module", [], expr)]
        if importers and isinstance(expr.func, (ast.Name, ast.Attribute)):
            return [(_MAYBE_MODULE, [], expr)]  # (``_sibling_module_class``, read only when it matters)
        return [("unknown", [], expr)]
    if isinstance(expr, ast.IfExp):
        return (_model_paths(sem, expr.body, use, depth + 1, seen, builder, importers)
                + _model_paths(sem, expr.orelse, use, depth + 1, seen, builder, importers))
    return [("unknown", [], expr)]


# CLIP's loaders, which return the model and its image transforms (to tensors):
# qualified name -> (the index of the model, the indexes of the transforms, the model is
# moved to ``device=`` (else to ``"cuda"`` when there is one: OpenAI's ``clip.load``))
CLIP_LOADERS = {
    "clip.load": (0, (1,), True), "clip.clip.load": (0, (1,), True),
    "open_clip.create_model_and_transforms": (0, (1, 2), False),
    "open_clip.create_model_from_pretrained": (0, (1,), False),
}
# the methods of a CLIP model that run it on what they get
CLIP_COMPUTES = frozenset({"encode_image", "encode_text"})
# ``model, preprocess = clip.load(`` from the start of a line to the call's bracket: the
# names it binds (groups 1-3)
_CLIP_LOAD_LINE = re.compile(
    r"[ \t]*(\w+)[ \t]*,[ \t]*(\w+)(?:[ \t]*,[ \t]*(\w+))?[ \t]*=[ \t]*(?:\w+\.)*"
    r"(?:load|create_model_and_transforms|create_model_from_pretrained)\(")
_CLIP_LOADER_WORDS = ("load(", "create_model_and_transforms(", "create_model_from_pretrained(")
_CLIP_LOADER_NAMES = frozenset(w[:-1] for w in _CLIP_LOADER_WORDS)


def clip_part(sem: SemanticModel, expr) -> Optional[tuple]:
    """``("model" | "transform", loader call)`` when the name ``expr`` is bound only to
    that element of a CLIP loader's result (``model, preprocess = clip.load(...)``, on
    one line, as :func:`_clip_lines` reads it)."""
    if not isinstance(expr, ast.Name) or not _clip_lines(sem.text):
        return None  # (no line of the file binds a loader's result: the text tells, once per file)
    bs = sem.reaching(expr)
    if len(bs) != 1 or bs[0].unpack is None:
        return None
    whole, path = bs[0].unpack
    if not isinstance(whole, ast.Call) or len(path) != 1:
        return None
    f = whole.func
    if (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None) not in _CLIP_LOADER_NAMES:
        return None  # (the callee's own name first: most unpacked calls are no loader's)
    spec = CLIP_LOADERS.get(sem.call_qualname(whole) or "")
    if spec is None or _of_the_tree(sem, f):
        return None  # (a ``clip`` module of the project's own is no CLIP: what it returns is read as anything else)
    if path[0] == spec[0]:
        return "model", whole
    return ("transform", whole) if path[0] in spec[1] else None


def _of_the_tree(sem: SemanticModel, func) -> bool:
    """``func`` (a callee) names a definition in a file of the project (a module of its
    own that shadows a library's name: a local ``clip.py``)."""
    return isinstance(func, (ast.Name, ast.Attribute)) and sem.sibling_definitions(func)[0] is not None


def clip_model_move(sem: SemanticModel, call: ast.Call) -> tuple:
    """``(moves, device)`` of a CLIP loader's call: whether it may move its model off the
    CPU, and the device it is given (``device=``; None for OpenAI's ``clip.load`` without
    one, which moves the model to its default, the GPU when there is one)."""
    spec = CLIP_LOADERS.get(sem.call_qualname(call) or "")
    if spec is None:
        return False, None
    dev = sem.keyword(call, "device")
    if dev is None and spec[2] and len(call.args) > 1:
        dev = call.args[1]
    if dev is not None and is_cpu_device(sem, dev):
        return False, dev
    return dev is not None or spec[2], dev


_MAYBE_MODULE = "maybe-module"


def _maybe_module_kind(sem: SemanticModel, call: ast.Call, moves: list, moved: bool, moved_bases: set) -> str:
    """The kind of a way a value made by ``call`` (a callee this file does not define)
    reaches its use: "module" when some way is moved and it is a module class of another
    file that stays where it is made; "moved" on a way that moves it; "moved" too, with
    no move on this way, when another way moves the value this very call made
    (``if args.cuda: model = model.cuda()``) and the callee's import names no file of
    the tree (an installed package, a module the tree lacks, or one it does not resolve):
    as where it is moved, a module, read as a plain one but marked guessed (its class,
    maybe in the tree after all, may place its inputs); "unknown" otherwise."""
    if moved and _sibling_module_class(sem, call):
        return "module"
    if moves:
        return "moved"
    if id(call) in moved_bases and (not _of_the_tree(sem, call.func) or _unread_factory(sem, call)):
        return _GUESSED
    return "unknown"


_GUESSED = "guessed"


def _unread_factory(sem: SemanticModel, call: ast.Call) -> bool:
    """``call`` runs a function of the tree (``model = get_model(config)``, maybe
    re-exported by a package's ``__init__``) every value it returns is a class, of its
    file or imported there from another file of the tree, known not to place its inputs
    (one that moves what it gets, moves itself, or a ``DataParallel``, which scatters
    them, leaves the way unknown), or one it cannot read (a class picked at run time,
    ``globals().get(...)``, or of a module the tree lacks): where its model is moved, it
    is read as a plain module, as one of a callee the tree lacks.  False for anything
    else: a class of the tree (``_sibling_module_class`` read it), one re-exported, a
    value returned by another function of the tree."""
    if sem.sibling_may_define(call.func, "class "):
        return False
    other, fdef = sem.sibling_callee(call)
    if fdef is None:
        return False  # (not a function of the tree: a re-exported class, a method, ...)
    for r in other.returns(fdef):
        if r is None:
            return False
        if isinstance(r, ast.Name):
            rs = [b.value for b in other.reaching(r) if b.kind is BindingKind.ASSIGNMENT and b.value is not None]
        else:
            rs = [r]
        for v in rs:
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _THROUGH_FACTORY:
                v = v.func.value  # (``return model.to(device)``, ``model.eval()``)
            if not isinstance(v, ast.Call):
                continue
            if other.call_qualname(v) in _PARALLEL:
                return False  # (``return nn.DataParallel(model)``: it scatters its inputs itself)
            where, cls = other, other.callee(v)
            if cls is None and isinstance(v.func, (ast.Name, ast.Attribute)):
                where, bs = other.sibling_definitions(v.func)  # (``from .nets import Net`` in the factory's file)
                if where is not None:
                    if len(bs) != 1 or bs[0].kind is not BindingKind.CLASS:
                        return False
                    cls = bs[0].node
            if cls is None:
                continue  # (a class it cannot read)
            if not isinstance(cls, ast.ClassDef) or not is_module_class(where, cls) or class_moves_arguments(where, cls) \
                    or _self_moves(where, cls, v, v):
                return False
    return True


_THROUGH_FACTORY = frozenset(MOVE_METHODS | SELF_METHODS)


def _sibling_class(sem: SemanticModel, call: ast.Call) -> tuple:
    """``(model of the other file, class)`` when ``call`` constructs a module class of
    another file of the project (``from model import VAE``; ``VAE(opt)``), else ``(None,
    None)``."""
    if not isinstance(call.func, (ast.Name, ast.Attribute)) or not sem.sibling_may_define(call.func, "class "):
        return None, None
    other, bs = sem.sibling_definitions(call.func)
    if other is None or len(bs) != 1 or bs[0].kind is not BindingKind.CLASS or not isinstance(bs[0].node, ast.ClassDef):
        return None, None
    return other, bs[0].node


def sibling_places_inputs(sem: SemanticModel, call: ast.Call) -> bool:
    """``call`` constructs a module class of another file of the project one of whose
    methods moves what it receives (``x = x.to(self.device)`` in ``forward``): it places
    its inputs itself, as :func:`class_moves_arguments` tells of a same-file one."""
    other, cls = _sibling_class(sem, call)
    return cls is not None and is_module_class(other, cls) and class_moves_arguments(other, cls)


def _sibling_module_class(sem: SemanticModel, call: ast.Call) -> bool:
    """``call`` constructs a module class of another file of the project (``from model
    import VAE``; ``VAE(opt)``) that neither moves itself in ``__init__`` nor moves what
    its methods receive: a module that stays where it is made, as a same-file one."""
    other, cls = _sibling_class(sem, call)
    if cls is None:
        return False
    got = _SIBLING_CLASSES.get(cls)
    if got is None and not is_module_class(other, cls):
        got = _SIBLING_CLASSES[cls] = False
    elif got is None and not any(w in other.segment(cls) for w in (".to(", ".cuda(")):
        got = _SIBLING_CLASSES[cls] = True  # (it moves nothing: neither itself nor what it gets)
    elif got is None:
        init = other.method(cls, "__init__")
        moves_itself = init is not None and any(
            isinstance(c, ast.Call) and move_of(other, c) is not None and isinstance(c.func.value, ast.Name)
            and c.func.value.id == "self" for c in ast.walk(init))
        got = _SIBLING_CLASSES[cls] = not moves_itself and not class_moves_arguments(other, cls)
    return got


# a class of another file (its node, in the project's model of that file) -> what
# ``_sibling_module_class`` found: read once for all the files that build it
_SIBLING_CLASSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_PREPARED = "handled:`prepare()`"


def _prepared(sem: SemanticModel, expr) -> bool:
    """``accelerator.prepare(model, ...)`` (Accelerate's API, or a stand-in for it): the
    returned model and loaders place batches themselves."""
    return isinstance(expr, ast.Call) and sem.method_name(expr) == "prepare"


def _binding_paths(sem: SemanticModel, b, use, depth, seen, builder, importers: bool = False) -> list:
    k = b.kind
    if k in (BindingKind.ASSIGNMENT, BindingKind.NAMED_EXPR) and b.value is not None:
        return _model_paths(sem, b.value, use, depth + 1, seen, builder, importers)
    if k is BindingKind.ASSIGNMENT and b.unpack is not None and _prepared(sem, b.unpack[0]):
        return [(_PREPARED, [], b.unpack[0])]
    if k is BindingKind.ASSIGNMENT and b.unpack is not None and b.target is not None:
        part = clip_part(sem, b.target)
        if part is not None and part[0] == "model":
            # ``model, preprocess = clip.load(name, device=device)``: the model, moved there
            call = part[1]
            moves, dev = clip_model_move(sem, call)
            if not moves:
                return [("module", [], call)]
            return [("moved", [Move(call, "to", dev, guard_of(sem, sem.statement_of(call), use), builder)], call)]
    if k is BindingKind.PARAMETER:
        fn = b.scope.node
        if isinstance(fn, _DEFS) and sem.self_class_of_param(b) is None:
            pv = sem.param_values(fn, b.name)
            if pv.complete and pv.values:
                out = []
                for v, _call, _ in pv.values:
                    out.extend(_model_paths(sem, v, use, depth + 1, seen, builder, importers))
                return out
            if importers and not pv.values:
                out = _importer_paths(sem, fn, b.name, depth)
                if out:
                    return out
    return [("unknown", [], b.target if b.target is not None else b.node)]


def _importer_paths(sem: SemanticModel, fn, name: str, depth: int) -> list:
    """The ways a module reaches parameter ``name`` of ``fn`` from the scripts that import
    this file and call ``fn`` (``net = Net().to(device); evaluate(net, loader)`` in
    main.py): their moves carry where they are (``Move.where``); [] when no importer
    passes a module."""
    import os

    out = []
    for other, arg, call in sem.importer_arguments(fn, name):
        where = f"{os.path.basename(other.path)} line {call.lineno}"
        for kind, moves, base in _model_paths(other, arg, call, depth + 1, set()):
            moves = [Move(m.call, m.style, m.device, None, m.builder, m.fed, where,
                          "cuda" if m.style == "cuda" and m.device is None
                          else device_label(other, m.device) if m.device is not None else "")
                     for m in moves]
            out.append((kind, moves, base))
    return out


def _attr_stmt_moves(sem: SemanticModel, expr: ast.Attribute, use) -> list:
    """``self.model.to(device)`` statements in the class of ``self.model``."""
    cls = sem.instance_class(expr.value)
    if cls is None:
        return []
    refs = []
    for a in sem.find_named((ast.Attribute,), (expr.attr,)):
        if sem.instance_class(a.value) is cls and isinstance(a.ctx, ast.Load):
            refs.append(a)
    return _stmt_moves(sem, refs, use)


# tensor methods whose result stays on the device of the tensor they are called on
DEVICE_KEEP_METHODS = frozenset({
    "float", "double", "half", "long", "int", "bfloat16", "view", "reshape", "unsqueeze", "squeeze", "clone",
    "detach", "contiguous", "flatten", "t", "requires_grad_", "sum", "mean", "max", "min", "pow", "sqrt", "abs",
    "exp", "log", "reciprocal", "softmax", "normal_", "type", "repeat", "expand", "permute", "transpose",
    "uniform_", "random_", "bernoulli_", "fill_", "zero_",
})
_DEVICE_MOVE_DEPTH = 6
_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp)


def _comprehension(sem: SemanticModel, n):
    """The comprehension ``n`` is (``[x.cuda() for x in batch]``) or that ``list(...)`` /
    ``tuple(...)`` of one makes (``tuple(t.to(device) for t in batch)``); None otherwise."""
    if isinstance(n, _COMPREHENSIONS):
        return n
    if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords and isinstance(n.args[0], _COMPREHENSIONS) \
            and sem.call_qualname(n) in ("builtins.list", "builtins.tuple"):
        return n.args[0]
    return None


def device_move(sem: SemanticModel, expr, depth: int = 0) -> Optional[Move]:
    """A device move that the value of ``expr`` comes out of on some way it is made: the
    tensor's own ``.to(device)``/``.cuda()``, a factory told ``device=`` (a move of
    style "to" whose call is the factory), or the output of a model moved so, read
    through methods that keep a tensor where it is (:data:`DEVICE_KEEP_METHODS`); None
    when none is proven (a move to a device that is the CPU on every way does not
    count)."""
    if depth > _DEVICE_MOVE_DEPTH:
        return None
    for o in sem.origins(expr):
        n = o.node
        if o.kind is OriginKind.PART and isinstance(n, ast.Name):
            # ``batch = tuple(t.to(device) for t in batch)``, then ``x, y = batch``: an element
            # of what every way the name is made gives
            made = sem.origins(n)
            comps = [_comprehension(sem, m.node) for m in made]
            if made and all(c is not None for c in comps) and all(m.kind is OriginKind.VALUE for m in made):
                got = [device_move(sem, c.elt, depth + 1) for c in comps]
                if all(g is not None for g in got):
                    return got[0]
            continue
        if o.kind is OriginKind.PART and isinstance(n, ast.Call):
            n = _comprehension(sem, n) or n  # ``list(x.cuda() for x in batch)``
        if o.kind is OriginKind.PART and isinstance(n, _COMPREHENSIONS):
            # an element of ``[x.to(device) for x in batch]`` (``X, y = [...]``): each one
            # is the comprehension's element expression
            got = device_move(sem, n.elt, depth + 1)
            if got is not None:
                return got
            continue
        if o.kind is not OriginKind.VALUE or not isinstance(n, ast.Call):
            continue
        mv = move_of(sem, n)
        if mv is not None:
            if mv.device is None or not is_cpu_device(sem, mv.device):
                return mv
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr in DEVICE_KEEP_METHODS and not sem.qualnames(n.func):
            got = device_move(sem, n.func.value, depth + 1)
            if got is not None:
                return got
            continue
        if n.args and not isinstance(n.args[0], ast.Starred) and sem.call_qualname(n) in _VARIABLE:
            # ``Variable(x.cuda(), requires_grad=True)``: the tensor it wraps, where it is
            got = device_move(sem, n.args[0], depth + 1)
            if got is not None:
                return got
            continue
        dev = next((k.value for k in n.keywords if k.arg == "device"), None)
        if dev is not None and N.is_tensor_factory(sem.call_qualname(n)) and not is_cpu_device(sem, dev):
            return Move(n, "to", dev)  # ``noise = torch.randn(b, nz, 1, 1, device=device)``: made there
        st = model_state(sem, n.func, n)
        if st is not None and st.moved and st.handled is None:
            for m in st.moves:
                if m.style != "cpu" and (m.device is None or not is_cpu_device(sem, m.device)):
                    return m
    return None


# ----------------------------------------------------------------------------- device text


def device_text_at(sem: SemanticModel, dev, at) -> Optional[str]:
    """Source text, valid at node ``at``, of an expression that holds the same device as
    the device expression ``dev`` (written elsewhere), or None.

    The same value is proven either way: both are bound only to the same known device
    values (see :func:`device_origins`), or both are the same variable -- ``dev`` is a
    name whose every binding reaches it, and the candidate is that name seen from ``at``,
    a parameter bound to it at every call site, an alias of it, or a ``self`` attribute
    assigned once from it.  ``args.device`` and other attributes of unknown objects
    match nothing.  A parameter of the function around ``at`` is preferred (the
    function's own name for the device), then ``dev`` itself, then a ``self`` attribute."""
    if isinstance(dev, ast.Constant):
        return sem.segment(dev) if isinstance(dev.value, (str, int)) and not isinstance(dev.value, bool) else None
    if isinstance(dev, ast.Call) and is_trainer_call(sem, dev):
        return trainer_device_text(sem, dev, at)
    want = device_origins(sem, dev)
    ident = _variable(sem, dev)
    if want is None and ident is None:
        return None

    def same(bindings) -> bool:
        if not bindings:
            return False
        if want is not None:
            got = _binding_device_origins(sem, bindings)
            if got is not None and got == want:
                return True
        return ident is not None and _same_variable(sem, bindings, ident, 0)

    scope = sem.scope_of(at)
    seen = set()
    s = scope
    while s is not None:
        fn = s.node
        if isinstance(fn, _DEFS):
            for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
                if a.arg in seen:
                    continue
                seen.add(a.arg)
                bs = sem.lookup(scope, a.arg)
                if bs and all(b.kind is BindingKind.PARAMETER for b in bs) and same(bs):
                    return a.arg
        s = s.parent
    if isinstance(dev, ast.Name):
        if same(sem.lookup(scope, dev.id)):
            return dev.id
    elif want is not None and visible_at(sem, dev, at) and not _rebound_between(sem, dev, at):
        return sem.segment(dev)  # an inline expression: ``torch.device("cuda")``
    # ``self.device`` in a method of the class that set it once
    fn = sem.enclosing_function(at)
    cls = sem.parent(fn) if isinstance(fn, _DEFS) else None
    params = [*fn.args.posonlyargs, *fn.args.args] if isinstance(fn, _DEFS) else []
    static = any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in getattr(fn, "decorator_list", ()))
    if isinstance(cls, ast.ClassDef) and params and not static:
        me = params[0].arg
        info = sem.class_info(cls)
        for attr, sets in info.attrs.items():
            if len(sets) != 1 or attr in info.class_attrs or sets[0][1] is None:
                continue
            v = sets[0][1]
            if want is not None and device_origins(sem, v) == want or (
                ident is not None and isinstance(v, ast.Name) and _same_variable(sem, sem.reaching(v), ident, 0)
            ):
                return f"{me}.{attr}"
    return None


def moved_call(node, fix_text: str):
    """The LibCST call ``<node><fix_text>`` (``fix_text``: ``.to(device)``, ``.cuda()``):
    a fix's move of ``node``, which is kept as it is (its comments and spacing)."""
    import libcst as cst

    moved = cst.parse_expression(f"x{fix_text}")  # ``x.to(device)``, with ``node`` for ``x``
    return moved.with_changes(func=moved.func.with_changes(value=node))


def bound_before(sem: SemanticModel, text: str, at) -> bool:
    """Every name the expression ``text`` reads holds a value when ``at`` runs: a
    parameter of the function around it, a name of its scope bound by a statement that
    runs before it (earlier in a block that holds ``at``), or a module name bound before
    the definition of the function that holds ``at``.  An attribute (set where, in which
    order?) is not taken, but for a trainer's ``trainer.args.device``
    (:func:`trainer_device_text`: set once the trainer is made) and for ``self.<name>``
    in a method, which the class's ``__init__`` sets before anything can run a method of
    the object (:func:`_set_by_init`)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    body = tree.body
    if isinstance(body, ast.Attribute) and isinstance(body.value, ast.Name) and body.value.id == "self":
        return _set_by_init(sem, body.attr, at)
    if isinstance(body, ast.Attribute) and body.attr == "device" and isinstance(body.value, ast.Attribute) \
            and body.value.attr == "args" and isinstance(body.value.value, ast.Name):
        tree = body.value.value
    if any(isinstance(n, ast.Attribute) for n in ast.walk(tree)):
        return False
    scope = sem.scope_of(at)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not any(_binding_before(sem, b, scope, at) for b in sem.lookup(scope, n.id)):
            return False
    return True


def _set_by_init(sem: SemanticModel, attr: str, at) -> bool:
    """``at`` is in a method (other than ``__init__``) of a class whose ``__init__`` sets
    ``self.<attr>`` by a statement of its own body before anything can run a method of
    the object: no call before it is given ``self`` or calls a method of it (``self.load()``,
    ``register(self)``, ``Thread(target=self.serve)``), and a ``super().__init__()`` before
    it is that of a class with no base but ``object`` or ``torch.nn.Module`` (another
    base's may call a method the class overrides).  The attribute then holds a value
    whenever another method of a made object runs."""
    fn = sem.enclosing_function(at)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "__init__" \
            or not fn.args.args or fn.args.args[0].arg != "self":
        return False
    cls = sem.parent(fn)
    init = sem.method(cls, "__init__") if isinstance(cls, ast.ClassDef) else None
    if init is None or not init.args.args or init.args.args[0].arg != "self":
        return False
    plain = all(sem.qualname(b) in _PLAIN_BASES or isinstance(b, ast.Name) and b.id == "object" for b in cls.bases)
    for st in init.body:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
        if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) and t.value.id == "self"
               for t in targets):
            return not any(isinstance(n, ast.Call) and _may_run_a_method(n, plain) for n in ast.walk(st))
        if any(isinstance(n, ast.Call) and _may_run_a_method(n, plain) for n in ast.walk(st)):
            return False
    return False


# bases whose ``__init__`` runs no method a subclass may override
_PLAIN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "builtins.object"})


def _may_run_a_method(call: ast.Call, plain: bool) -> bool:
    """``call`` (in an ``__init__``) may run a method of the object being made: it is
    given ``self`` (or its attributes), is called on it, or is ``super().<m>(...)`` of a
    class whose bases are not ``plain``."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) \
            and f.value.func.id == "super":
        return not plain
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(call))


def _binding_before(sem: SemanticModel, b, scope, at) -> bool:
    if b.kind is BindingKind.PARAMETER:
        return True
    stmt = b.stmt
    if stmt is None:
        return False
    # the statement of ``at`` in each enclosing block, innermost first
    for a in [sem.statement_of(at), *sem.ancestors(at)]:
        if not isinstance(a, ast.stmt):
            continue
        if b.scope is not scope and a is not None and isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and sem.scope_of(a) is b.scope:
            # a module (or outer) name: bound before the function (or the class of the method) is defined
            block = sem.block_of(a)
        elif b.scope is scope:
            block = sem.block_of(a)
        else:
            continue
        if block is not None and any(x is stmt for x in block):
            return next(i for i, x in enumerate(block) if x is stmt) < next(i for i, x in enumerate(block) if x is a)
    return False


def _variable(sem: SemanticModel, dev) -> Optional[frozenset]:
    """The bindings of the name ``dev`` when every one of them reaches it (no rebinding
    after it in its scope): the identity of the value it holds."""
    if not isinstance(dev, ast.Name):
        return None
    reach = sem.reaching(dev)
    every = sem.resolve(dev)
    if not reach or {id(b) for b in reach} != {id(b) for b in every}:
        return None
    if any(b.kind not in (BindingKind.ASSIGNMENT, BindingKind.PARAMETER, BindingKind.NAMED_EXPR) for b in every):
        return None
    return frozenset(id(b) for b in every)


def _same_variable(sem: SemanticModel, bindings, ident: frozenset, depth: int) -> bool:
    """``bindings`` (of some name) hold the variable ``ident``: they are its bindings, or
    a parameter bound to it at every call site, or an alias ``d = <it>``."""
    if {id(b) for b in bindings} == ident:
        return True
    if depth > 4 or len(bindings) != 1:
        return False
    b = bindings[0]
    if b.kind is BindingKind.PARAMETER:
        fn = b.scope.node
        if not isinstance(fn, _DEFS) or sem.self_class_of_param(b) is not None:
            return False
        pv = sem.param_values(fn, b.name)
        if not pv.complete or not pv.values:
            return False
        return all(_same_expr(sem, v, ident, depth + 1) for v, _, _ in pv.values)
    if b.kind is BindingKind.ASSIGNMENT and b.value is not None:
        return _same_expr(sem, b.value, ident, depth + 1)
    return False


def _same_expr(sem: SemanticModel, v, ident: frozenset, depth: int) -> bool:
    if isinstance(v, ast.Name):
        return _same_variable(sem, sem.reaching(v), ident, depth)
    if isinstance(v, ast.Attribute):
        vals = sem.attribute_values(v)
        return bool(vals) and len(vals) == 1 and vals[0] is not None and _same_expr(sem, vals[0], ident, depth + 1)
    return False


def _rebound_between(sem: SemanticModel, dev, at) -> bool:
    """A name of ``dev`` is bound more than once in the scope it is read from: its value
    at ``at`` may differ from its value at ``dev``."""
    for n in ast.walk(dev):
        if isinstance(n, ast.Name):
            bs = sem.resolve(n)
            if len(bs) > 1:
                got = _binding_device_origins(sem, bs)
                if got is None or got != device_origins(sem, n):
                    return True
    return False


def non_blocking_style(sem: SemanticModel) -> Optional[str]:
    """``"True"``/``"False"`` when the file's moves pass ``non_blocking=`` (the fix keeps
    the style), else None."""
    for c in sem.find(ast.Call, containing=("non_blocking",)):
        if sem.method_name(c) in ("to", "cuda"):
            v = sem.keyword(c, "non_blocking")
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                return str(v.value)
    return None


# ----------------------------------------------------------------------------- loaders

# iteration wrappers whose items are the wrapped iterable's items (``enumerate`` adds an index)
_WRAPPERS = frozenset({
    "builtins.enumerate", "builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm",
    "tqdm.rich.tqdm", "tqdm.autonotebook.tqdm", "itertools.islice",
})


@dataclass
class Loop:
    """Where DataLoader batches are bound: a ``for`` loop over them, or an assignment
    from ``next(iter(loader))`` (``node``).  ``names`` are the tensor names its target
    binds (``for x, y in loader``, ``for i, (x, y) in enumerate(loader)``), or
    ``container`` is the name of a whole batch (``for batch in loader``); ``body`` the
    statements the batch flows through (the loop body, or the statements after the
    assignment in its block); ``loaders`` the DataLoader calls."""

    node: ast.stmt
    names: list
    container: Optional[str]
    loaders: list
    body: list = field(default_factory=list)
    # one sample indexed out of a loader's dataset (``x, y = test_data[0]``): only what
    # reaches the model counts (its other fields may be Python numbers)
    sample: bool = False
    # a tensor the script makes on the CPU (``X = torch.from_numpy(a)``): no loader
    made: bool = False
    # the loaders are made by a function of another module (``loaders`` holds the calls
    # of it here: :func:`sibling_loader`)
    foreign: bool = False
    # a Hugging Face ``BatchEncoding`` the script makes (``container``: its name), whose
    # ``.to(device)`` moves every tensor in it in place (:func:`tokenizer_output`)
    encoding: bool = False

    @property
    def is_loop(self) -> bool:
        return isinstance(self.node, ast.For)


def loop_batch(sem: SemanticModel, loop) -> Optional[Loop]:
    """The batch a ``for`` loop binds, when it iterates plain DataLoaders."""
    got = _iterated(sem, loop)
    if got is None:
        return None
    it, target = got
    loaders = loader_of(sem, it)
    if loaders is None:
        loaders = param_loader(sem, it)
    foreign = False
    if loaders is None:
        loaders, foreign = sibling_loader(sem, it), True
    if loaders is None:
        return None
    got = _batch(loop, target, loaders, loop.body)
    if got is not None:
        got.foreign = foreign
    return got


def _iterated(sem: SemanticModel, loop) -> Optional[tuple]:
    """``(iterable, target)`` of a ``for`` loop under the wrappers that pass its items on
    (``enumerate``, ``tqdm``, ``iter``): ``for i, (x, y) in enumerate(tqdm(loader))`` gives
    ``(loader, (x, y))``; None for what is not such a loop."""
    if not isinstance(loop, ast.For):
        return None
    it, target, wrapped = loop.iter, loop.target, False
    it = _bound_wrapper(sem, it) or it  # ``pbar = tqdm(enumerate(loader)); for i, (x, y) in pbar:``
    while isinstance(it, ast.Call) and it.args and sem.call_qualname(it) in _WRAPPERS:
        if sem.call_qualname(it) == "builtins.enumerate":
            if wrapped or not isinstance(target, (ast.Tuple, ast.List)) or len(target.elts) != 2:
                return None
            if any(isinstance(e, ast.Starred) for e in target.elts):
                return None
            target, wrapped = target.elts[1], True
        it = it.args[0]
        it = _bound_wrapper(sem, it) or it  # (``with tqdm(loader) as bar: for i, (x, y) in enumerate(bar):``)
    return it, target


def _bound_wrapper(sem: SemanticModel, it) -> Optional[ast.Call]:
    """The wrapper call (``tqdm(loader)``, ``enumerate(loader)``) that the name ``it`` holds
    where it is read: bound to it alone, by an assignment or as the target of a ``with``
    (a progress bar's ``__enter__`` returns itself); None otherwise."""
    if not isinstance(it, ast.Name):
        return None
    bs = sem.reaching(it)
    if len(bs) != 1:
        return None
    b = bs[0]
    value = b.value if b.kind is BindingKind.ASSIGNMENT else sem.with_context(b)
    return value if isinstance(value, ast.Call) and sem.call_qualname(value) in _WRAPPERS else None


_WITNESSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def param_loader(sem: SemanticModel, it) -> Optional[list]:
    """A loader that reaches the loop as a parameter no call in the file binds (a
    trainer's ``self.valid_dataloader``, set from ``__init__(self, ..., valid_dataloader)``):
    taken as a plain DataLoader when another loop of the same class (or of the module's
    functions) over such a parameter moves its batch elements to a device first (its
    author's batches come out on the CPU).  Returns the parameters."""
    origins = sem.origins(it)
    if not origins or not all(o.kind is OriginKind.PARAMETER for o in origins):
        return None
    if not all(annotated_loader(sem, o.binding) for o in origins) and id(_owner(sem, it)) not in witness_owners(sem):
        return None
    return [o.node for o in origins]


def sibling_loader(sem: SemanticModel, it) -> Optional[list]:
    """The calls here of a function of another module of the project (or of a method of
    its class, on an instance made here) that returns the plain DataLoaders ``it`` is
    (``train_loader, test_loader = get_loaders(32)`` with ``get_loaders`` in data.py
    returning ``DataLoader(...)`` calls that :func:`loader_of` reads there, with the default
    collation), when no call hands it a device or device tensors (:func:`_hands_device`);
    None otherwise.  Asked only in a script that moves something
    (:func:`sibling_loader_text`, which the rule's gate reads too)."""
    if sem.project is None or not sibling_loader_text(sem.text):
        return None
    calls = []
    for o in sem.origins(it):
        call = o.node
        if o.kind not in (OriginKind.VALUE, OriginKind.PART) or not isinstance(call, ast.Call):
            return None
        if _hands_device(sem, call):
            return None  # a device (or device tensors) handed to the builder: its loaders may place batches
        other, values = sem.sibling_return_values(call, o.path if o.kind is OriginKind.PART else (), holds=("DataLoader",))
        if other is None:
            return None
        for v in values:
            made = loader_of(other, v)
            # (collated by default: each item of a batch is a tensor; what a collate_fn of
            # that module puts in it, ``lengths`` lists, is not known here)
            if made is None or any(other.argument(c, "collate_fn", 6) is not None for c in made):
                return None
        calls.append(call)
    return calls or None


def _hands_device(sem: SemanticModel, call: ast.Call) -> bool:
    """``call`` (or the constructor of the instance whose method it calls: ``dm =
    DataModule(X, y); dm.loader()``) is given something that names a device or may hold
    device tensors (``get_loaders(TensorDataset(X.cuda(), y))``, a name bound to such)."""
    given = [*call.args, *(k.value for k in call.keywords)]
    f = call.func
    if isinstance(f, ast.Attribute):
        recv = f.value
        made = [recv] if isinstance(recv, ast.Call) else [o.node for o in sem.origins(recv) if isinstance(o.node, ast.Call)]
        for m in made:
            given += [*m.args, *(k.value for k in m.keywords)]
    return mentions_device(sem, call) or any(_may_hold_device(sem, a, 2) for a in given)


def sibling_loader_text(text: str, has=None) -> bool:
    """What a file needs for :func:`sibling_loader` to be asked: it moves something
    (``.to(`` or ``.cuda(``: the model of a batch loop is moved here) and it is a script
    (it names ``__main__`` or loops at module level), not a library module: a module of
    functions that loop over loaders is handed them (``param_loader``)."""
    has = has or text.__contains__
    return (has(".to(") or has(".cuda(")) and (has("__main__") or has("\nfor ") or text.startswith("for "))


def may_have_sibling_loaders(path: str, text: str, project, has=None) -> bool:
    """A loop of the file may iterate loaders made in another module of the project
    (:func:`sibling_loader`): it is such a script, and one of its imports reaches a file
    that holds ``DataLoader`` (read without parsing)."""
    return sibling_loader_text(text, has) and project is not None and project.imports_holding(path, text, "DataLoader")


_LOADER_TYPES = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
# ``loader: DataLoader`` / ``Optional[DataLoader]`` / ``"DataLoader"`` in a signature
LOADER_ANNOTATION = re.compile(r"\w[ \t]*:[ \t]*(?:(?:typing\.)?Optional\[)?[\"']?(?:\w+\.)*DataLoader\b")


def has_loader_annotation(text: str) -> bool:
    """``LOADER_ANNOTATION.search(text) is not None``, the pattern tried on the lines that
    hold ``DataLoader`` only (it starts with a ``\\w``: a search of the whole text tries
    it at every position; a match holds no line break, and ends at that word)."""
    i = text.find("DataLoader")
    while i >= 0:
        a = text.rfind("\n", 0, i) + 1
        b = text.find("\n", i)
        b = len(text) if b < 0 else b
        if LOADER_ANNOTATION.search(text, a, b) is not None:
            return True
        i = text.find("DataLoader", b)
    return False


def annotated_loader(sem: SemanticModel, b) -> bool:
    """The parameter binding ``b`` is annotated as a torch DataLoader (``loader:
    DataLoader``, ``Optional[DataLoader]``, ``DataLoader | None``): its author says
    what it is."""
    node = getattr(b, "node", None) if b is not None else None
    ann = getattr(node, "annotation", None)
    if ann is None or b.kind is not BindingKind.PARAMETER:
        return False
    if isinstance(ann, ast.Subscript) and sem.qualname(ann.value) in ("typing.Optional",):
        ann = ann.slice
    elif isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        parts = [x for x in (ann.left, ann.right) if not (isinstance(x, ast.Constant) and x.value is None)]
        if len(parts) != 1:
            return False
        ann = parts[0]
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return False
    return isinstance(ann, (ast.Name, ast.Attribute)) and sem.qualname(ann) in _LOADER_TYPES


def witness_owners(sem: SemanticModel) -> frozenset:
    """The classes (or the module, for plain functions) that hold a loop over a parameter
    whose first statements move the loop's batch elements (``x, y = x.to(d), y.to(d)``)."""
    got = _WITNESSES.get(sem)
    if got is None:
        owners = set()
        text = sem.text
        lines = _move_lines(text)
        chunks = [c for c in sem.statement_chunks(("for",)) if lines and any(c.start <= x < c.end for x in lines)] \
            if lines else []
        for lp in sem.find(ast.For, containing=(".to(", ".cuda("), chunks=chunks) if chunks else ():
            got = _iterated(sem, lp)
            if got is None:
                continue
            it, target = got
            if not gives_an_item(lp, set(_target_names(target) or ())) or not _moves_first(sem, target, lp.body):
                continue  # (the loop's own statements first: where the iterable comes from may
                # take a search of the file's calls)
            origins = sem.origins(it)
            if origins and all(o.kind is OriginKind.PARAMETER for o in origins):
                owners.add(id(_owner(sem, lp)))
        got = _WITNESSES[sem] = frozenset(owners)
    return got


# the start of a statement ``x, y = x.to(`` (``x = x.cuda(``): a name moved and rebound
_MOVE_LINE = re.compile(r"[ \t]*[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]*=[ \t]*\(?[ \t]*[A-Za-z_]\w*$")


def _move_lines(text: str) -> list:
    """Offsets of the lines on which a statement ``x, y = x.to(d), ...`` or ``x =
    x.cuda()`` starts (the first move of the line stands right after the ``=``)."""
    out = []
    for needle in (".to(", ".cuda("):
        i = text.find(needle)
        while i >= 0:
            ls = text.rfind("\n", 0, i) + 1
            if _MOVE_LINE.fullmatch(text, ls, i):
                out.append(ls)
            i = text.find(needle, i + 1)
    return out


# a ``for`` statement's target: the statement starts its line; the target spans lines
# only inside brackets (two levels) or after a backslash
_FOR_TARGET = re.compile(
    r"^[ \t]*(?:async[ \t]+)?for\b((?:[^\n:()#\\]|\\\r?\n|\((?:[^()]|\([^()]*\))*\))*?)\bin\b", re.M)


@functools.lru_cache(maxsize=4)  # (TM101's gate and then its check ask for the same text)
def may_witness(text: str) -> bool:
    """The text form of :func:`witness_owners`: some statement ``x = x.to(...)`` (a
    :func:`_move_lines` line) moves a name that a ``for`` written before it, in the same
    top-level definition, may bind (the name stands between that ``for`` and its
    ``in``).  False only when no loop of the file can move a name its target binds
    among its first statements."""
    lines = _move_lines(text)
    if not lines:
        return False
    defs = _def_starts(text)
    loops: dict = {}  # definition index -> its loop targets (_LoopTargets)
    for ls in lines:
        # (the move stands on the line: the searches stop at its end, not at the file's)
        le = text.find("\n", ls)
        le = len(text) if le < 0 else le
        ends = [k for k in (text.find(".to(", ls, le), text.find(".cuda(", ls, le)) if k >= 0]
        j = k = min(ends)
        while k > ls and (text[k - 1].isalnum() or text[k - 1] == "_"):
            k -= 1
        name = text[k:j]
        i = bisect.bisect_right(defs, ls) - 1
        if i < 0 or not name:
            continue  # module-level code: no parameter to loop over
        got = loops.get(i)
        if got is None:
            got = loops[i] = _LoopTargets(text, defs[i], defs[i + 1] if i + 1 < len(defs) else len(text))
        if got.binds_before(text, name, defs[i], ls):
            return True
    return False


class _LoopTargets:
    """The ``for`` targets of ``text[start:end]`` (:data:`_FOR_TARGET`, as
    :func:`_matches_on_lines` finds them), read once: for each word a target holds (of a
    loop over no :data:`_NOT_A_LOADER`), where the first such loop's target ends."""

    __slots__ = ("starts", "reach", "first")

    def __init__(self, text: str, start: int, end: int):
        found = _matches_on_lines(_FOR_TARGET, text, "for", start, end)
        self.starts = [m.start() for m in found]
        self.reach = list(itertools.accumulate((m.end() for m in found), max))  # the furthest end so far
        self.first: dict = {}
        for m in found:
            if not _NOT_A_LOADER.match(text, m.end()):
                for w in _WORD_RUN.findall(m.group(1)):
                    self.first.setdefault(w, m.end())

    def binds_before(self, text: str, name: str, start: int, ls: int) -> bool:
        """``any(has_word(m.group(1), name) and not _NOT_A_LOADER.match(text, m.end()) for
        m in _matches_on_lines(_FOR_TARGET, text, "for", start, ls))``: the targets read
        over the whole span end where they would end before ``ls`` unless one runs past
        it (then asked again, up to ``ls``)."""
        k = bisect.bisect_left(self.starts, ls)
        if k and self.reach[k - 1] > ls:  # (a target that runs past the line: read up to it)
            return any(has_word(m.group(1), name) and not _NOT_A_LOADER.match(text, m.end())
                       for m in _matches_on_lines(_FOR_TARGET, text, "for", start, ls))
        return self.first.get(name, ls + 1) <= ls


_WORD_RUN = re.compile(r"\w+")


# what a ``for`` iterates that no parameter can be: a dict's or a module's own view, a
# ``zip``/``range``/``sorted`` (only a few wrappers pass a loader's items on: ``enumerate``,
# ``tqdm``, ``iter``, ``islice``)
_NOT_A_LOADER = re.compile(
    r"[ \t]*(?:[\w.]*\.(?:items|values|keys|parameters|named_parameters|modules|named_modules|children|"
    r"named_children|buffers|named_buffers|split|chunk|unbind)|zip|range|sorted|reversed|list|tuple|dict)[ \t]*\(")


def _owner(sem: SemanticModel, node):
    fn = sem.enclosing_function(node)
    cls = sem.enclosing(fn, ast.ClassDef) if fn is not None else None
    return cls if cls is not None else sem.module


def gives_an_item(loop, names, after=None) -> bool:
    """The loop's body (after the statement ``after``, when given) gives one of ``names``
    to a call as an argument (``model(x)``, ``criterion(out, y)``), not to a move: a batch
    goes to a model; a library's loop over tensors it moves (``for mask in masks: mask =
    mask.to(t.device)``) works on them with methods, and a module moved in place is
    called itself."""
    end = (after.end_lineno or after.lineno, after.end_col_offset or 0) if after is not None else (0, 0)
    for st in loop.body:
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and (n.lineno, n.col_offset) > end and any(
                    isinstance(a, ast.Name) and a.id in names for a in [*n.args, *(k.value for k in n.keywords)]):
                if not (isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda")):
                    return True
    return False


def _moves_first(sem: SemanticModel, target, body) -> bool:
    """One of the first statements of ``body`` moves a name ``target`` binds."""
    names = set(_target_names(target) or ())
    for st in body[:4]:
        if isinstance(st, ast.Assign):
            vals = st.value.elts if isinstance(st.value, ast.Tuple) else [st.value]
            for e in vals:
                mv = move_of(sem, e)
                if mv is not None and device_like(sem, mv) and isinstance(e.func.value, ast.Name) \
                        and e.func.value.id in names:
                    return True
    return False


def _batch(node, target, loaders, body) -> Optional[Loop]:
    if isinstance(target, ast.Name):
        return Loop(node, [], target.id, loaders, body)
    names = _target_names(target)
    if not names:
        return None
    return Loop(node, names, None, loaders, body)


def taken_batch(sem: SemanticModel, stmt) -> Optional[Loop]:
    """``x, y = next(iter(loader))`` (or ``next(it)`` with ``it = iter(loader)``, or older
    PyTorch's ``it.next()``): one batch taken from a plain DataLoader, flowing through the
    rest of the block."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    v = stmt.value
    if isinstance(v, ast.Call) and not v.args and not v.keywords and isinstance(v.func, ast.Attribute) \
            and v.func.attr in ("next", "__next__") and isinstance(v.func.value, ast.Name):
        it = v.func.value  # ``dataiter.next()`` (older PyTorch's loader iterators), ``it.__next__()``
    elif isinstance(v, ast.Call) and len(v.args) == 1 and not v.keywords and sem.call_qualname(v) == "builtins.next":
        it = v.args[0]
    else:
        return None
    loaders, foreign = [], False
    for o in sem.origins(it):
        n = o.node
        if not (o.kind is OriginKind.VALUE and isinstance(n, ast.Call) and sem.call_qualname(n) == "builtins.iter"
                and len(n.args) == 1):
            return None
        got = loader_of(sem, n.args[0])
        if got is None:
            got = param_loader(sem, n.args[0])
        if got is None:
            got, foreign = sibling_loader(sem, n.args[0]), True
        if got is None:
            return None
        loaders.extend(got)
    block = sem.block_of(stmt)
    if not loaders or block is None:
        return None
    i = next(k for k, s in enumerate(block) if s is stmt)
    lp = _batch(stmt, stmt.targets[0], loaders, block[i + 1:])
    if lp is not None:
        lp.foreign = foreign
    return lp


def taken_samples(sem: SemanticModel, loaders: list) -> list:
    """One sample indexed out of the dataset a plain DataLoader of the file reads
    (``x, y = test_data[0]``, ``x, y = test_data[0][0], test_data[0][1]``, ``sample =
    ds[i]``): it is on the CPU as the loader's batches are, and flows through the rest
    of its block."""
    out, seen = [], set()
    for call in loaders:
        if loader_of(sem, call) is None:
            continue  # a collate_fn or dataset that may place tensors
        ds = sem.argument(call, "dataset", 0)
        if not isinstance(ds, ast.Name):
            continue
        for b in sem.reaching(ds):
            if b.kind is not BindingKind.ASSIGNMENT or not isinstance(b.value, ast.Call) \
                    or not _tensor_items(sem, b.value):
                continue
            for ref in sem.references(b):
                if sem.reaching(ref) != [b]:
                    continue
                sub = sem.parent(ref)
                loop = _dataset_loop(sem, ref)
                if loop is not None:
                    # ``for img, label in test_data:``: the dataset's samples, one by one
                    loop, target = loop
                    if id(loop) not in seen:
                        seen.add(id(loop))
                        got = _batch(loop, target, [call], loop.body)
                        if got is not None:
                            got.sample = True
                            out.append(got)
                    continue
                if not (isinstance(sub, ast.Subscript) and sub.value is ref and isinstance(sub.ctx, ast.Load)
                        and not isinstance(sub.slice, ast.Slice)):
                    continue
                stmt = sem.statement_of(ref)
                if id(stmt) in seen or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                    continue
                target, value = stmt.targets[0], stmt.value
                if value is sub:
                    pass  # ``x, y = ds[i]``, ``sample = ds[i]``
                elif isinstance(value, ast.Tuple) and isinstance(target, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                        and all(isinstance(e, ast.Subscript) and isinstance(e.value, ast.Subscript) and isinstance(e.value.value, ast.Name)
                                and e.value.value.id == ref.id for e in value.elts) and any(e.value is sub for e in value.elts):
                    pass  # ``x, y = ds[0][0], ds[0][1]``
                else:
                    continue
                block = sem.block_of(stmt)
                if block is None:
                    continue
                seen.add(id(stmt))
                i = next(k for k, s in enumerate(block) if s is stmt)
                got = _batch(stmt, target, [call], block[i + 1:])
                if got is not None:
                    got.sample = True
                    out.append(got)
    return out


def _tensor_items(sem: SemanticModel, call: ast.Call) -> bool:
    """The dataset ``call`` makes gives tensors as its items, not only once a loader
    collates them (NumPy arrays, lists, numbers): a ``TensorDataset``, a torchvision
    dataset given a ``transform`` that may make them (:func:`_gives_tensors`), or a
    same-file class whose ``__getitem__`` returns a tensor it makes
    (``torch.tensor(...)``, ``torch.from_numpy(...)``, a ``ToTensor`` transform), first
    in the tuple it returns."""
    q = sem.call_qualname(call) or ""
    if q in ("torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"):
        return True
    if q.startswith("torchvision.datasets."):
        return _gives_tensors(sem, sem.argument(call, "transform"))
    cls = sem.callee(call)
    get = sem.method(cls, "__getitem__") if isinstance(cls, ast.ClassDef) else None
    if get is None:
        return False
    rets = [n.value for n in ast.walk(get) if isinstance(n, ast.Return) and n.value is not None]
    firsts = [r.elts[0] if isinstance(r, ast.Tuple) and r.elts else r for r in rets]
    return bool(firsts) and all(_a_tensor(sem, _made_origin(sem, x)) for x in firsts)


_TV_TRANSFORMS = ("torchvision.transforms.", "torchvision.transforms.v2.")
_TV_TENSOR_MAKERS = frozenset({"ToTensor", "PILToTensor", "ToImage", "ToImageTensor", "to_tensor", "pil_to_tensor"})


def _gives_tensors(sem: SemanticModel, t, depth: int = 0) -> bool:
    """A torchvision dataset's ``transform`` ``t`` may give tensors: not when there is
    none, nor when it is torchvision's own transforms none of which makes a tensor
    (``Resize(28)``, a literal ``Compose`` of such); what cannot be read (a user's
    function, a list built elsewhere) may."""
    if t is None or isinstance(t, ast.Constant):
        return False
    if t is UNKNOWN_ARG:
        return True
    if isinstance(t, ast.Name) and depth < 3:
        vals = [o.node for o in sem.origins(t) if o.kind is OriginKind.VALUE]
        return not vals or any(_gives_tensors(sem, v, depth + 1) for v in vals)
    if not isinstance(t, ast.Call):
        return True
    q = sem.call_qualname(t) or ""
    if not q.startswith(_TV_TRANSFORMS):
        return True
    last = q.rsplit(".", 1)[-1]
    if last in _TV_TENSOR_MAKERS:
        return True
    if last == "Compose" and t.args and isinstance(t.args[0], (ast.List, ast.Tuple)):
        return any(not isinstance(x, ast.Call) or _gives_tensors(sem, x, depth + 1) for x in t.args[0].elts)
    return last == "Compose"  # (a Compose of a list built elsewhere: may)


def _a_tensor(sem: SemanticModel, expr) -> bool:
    """``expr`` is a tensor made here: :func:`made_tensor`, or ``torch.tensor(...)`` /
    ``torch.as_tensor(...)`` of anything (a tensor of its argument's device: a dataset
    that may hold device tensors is no plain loader's, :func:`loader_of`)."""
    if made_tensor(sem, expr) is not None:
        return True
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _KEEP_METHODS \
            and sem.qualname(expr.func) is None:
        expr = expr.func.value
    return isinstance(expr, ast.Call) and N.factory_name(sem.call_qualname(expr)) in _DATA_FACTORIES


def _made_origin(sem: SemanticModel, expr):
    """``expr``, or the one value a name of the same function is bound to (``img =
    self.transform(img)`` then ``return img, label``)."""
    if isinstance(expr, ast.Name):
        got = sem.origins(expr)
        if len(got) == 1 and got[0].kind is OriginKind.VALUE:
            return got[0].node
    return expr


def _dataset_loop(sem: SemanticModel, ref: ast.Name) -> Optional[tuple]:
    """``(loop, target)`` of the ``for`` loop that iterates ``ref`` (a dataset) itself,
    under the wrappers that pass its items on (``for i, (x, y) in enumerate(test_data):``
    gives ``(x, y)``: :func:`_iterated`)."""
    node = ref
    for a in sem.ancestors(ref):
        if isinstance(a, ast.For):
            got = _iterated(sem, a) if a.iter is node else None
            return (a, got[1]) if got is not None and got[0] is ref else None
        if not (isinstance(a, ast.Call) and node in a.args):
            return None
        node = a
    return None


# tensor methods that keep a CPU tensor on the CPU (casts, shapes, copies)
_KEEP_METHODS = frozenset({
    "float", "double", "half", "long", "int", "bool", "byte", "short", "bfloat16", "view", "reshape", "unsqueeze",
    "squeeze", "permute", "transpose", "t", "contiguous", "clone", "detach", "requires_grad_", "flatten", "expand",
    "repeat", "view_as", "reshape_as", "normal_", "uniform_", "fill_", "zero_", "abs", "sqrt", "log", "exp",
    "random_", "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_",
})
# factories whose arguments are data (a tensor argument keeps its device): their data
# must come from the host for the result to be a CPU tensor
_DATA_FACTORIES = frozenset({"tensor", "as_tensor"})


def made_tensor(sem: SemanticModel, expr, _depth: int = 0) -> Optional[ast.Call]:
    """The factory call that made ``expr`` on the CPU: a ``torch`` factory without
    ``device=`` (``torch.from_numpy(a)``, ``torch.tensor(rows, dtype=...)``,
    ``torch.randn(8, 3)``, ``torch.FloatTensor(x)``), through casts and shape methods
    (``.float()``, ``.unsqueeze(0)``, ``.type(torch.FloatTensor)``) and
    ``Variable(...)``.  ``torch.tensor``/``as_tensor`` of something that may already be a
    tensor (a name, a call) keep its device and do not count, nor does a 0-dim tensor
    (``torch.tensor(2.0)``): it mixes with device tensors."""
    if _depth > 8 or not isinstance(expr, ast.Call):
        return None
    f = expr.func
    if isinstance(f, ast.Attribute) and sem.qualname(f) is None:  # a method, not ``torch.<function>``
        name = f.attr
        if name in _KEEP_METHODS or (name == "type" and expr.args and not type_moves(sem, expr)):
            return made_tensor(sem, f.value, _depth + 1)
    q = sem.call_qualname(expr)
    if q in ("torch.autograd.Variable", "torch.autograd.variable.Variable") and len(expr.args) == 1 and not expr.keywords:
        return made_tensor(sem, expr.args[0], _depth + 1)
    if q in _TO_TENSOR_FUNCTIONS or q in _CLIP_TOKENIZE and not _of_the_tree(sem, f) or (
            len(expr.args) == 1 and not expr.keywords and (
                _to_tensor_transform(sem, f) or _library_transform(sem, f) == "any" and _host_image(sem, expr.args[0]))):
        # ``ToTensor()(img)``, ``transform(img)`` of a Compose ending in one (or CLIP's
        # ``preprocess``), ``TF.to_tensor(img)``, ``clip.tokenize(texts)``
        return expr
    fname = N.factory_name(q)
    if fname not in MADE_FACTORIES or any(k.arg is None or k.arg == "device" for k in expr.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in expr.args):
        return None
    if fname in _DATA_FACTORIES or fname[:1].isupper():  # ``torch.tensor(data)``, ``torch.FloatTensor(data)``
        if len(expr.args) != 1 or not _host_data(sem, expr.args[0]):
            return None  # (``torch.Tensor(3, 4)``: a shape, fine too, but only data is taken)
    elif not expr.args:
        return None  # a 0-dim or empty shape
    return expr


# torchvision's conversions of an image or an array (nothing else) into a CPU tensor
_TO_TENSOR_CLASSES = frozenset({
    "torchvision.transforms.ToTensor", "torchvision.transforms.transforms.ToTensor",
    "torchvision.transforms.PILToTensor", "torchvision.transforms.transforms.PILToTensor",
})
_TO_TENSOR_FUNCTIONS = frozenset({
    "torchvision.transforms.functional.to_tensor", "torchvision.transforms.functional.pil_to_tensor",
})
_COMPOSE = frozenset({"torchvision.transforms.Compose", "torchvision.transforms.transforms.Compose"})
_CLIP_TOKENIZE = frozenset({"clip.tokenize", "clip.clip.tokenize"})


def _to_tensor_transform(sem: SemanticModel, f) -> bool:
    """``f`` (a callee) is a torchvision to-tensor transform: ``ToTensor()``, or a
    ``Compose`` (literal, or every value of a name) of torchvision's own transforms, one of
    them a to-tensor one and none a ``Lambda`` (a user's step may move the tensor)."""
    if isinstance(f, ast.Call):
        q = sem.call_qualname(f)
        if q in _TO_TENSOR_CLASSES:
            return True
        if q not in _COMPOSE or len(f.args) != 1 or not isinstance(f.args[0], (ast.List, ast.Tuple)):
            return False
        steps = [sem.call_qualname(e) if isinstance(e, ast.Call) else None for e in f.args[0].elts]
        return (any(x in _TO_TENSOR_CLASSES for x in steps)
                and all(x is not None and x.startswith("torchvision.transforms.") and not x.endswith(".Lambda")
                        for x in steps))
    if isinstance(f, ast.Name):
        part = clip_part(sem, f)
        if part is not None:
            return part[0] == "transform"  # (``preprocess`` of ``clip.load``: a Compose ending in ToTensor)
        origins = sem.origins(f)
        return bool(origins) and all(o.kind is OriginKind.VALUE and _to_tensor_transform(sem, o.node) for o in origins)
    return False


def _library_transform(sem: SemanticModel, f) -> Optional[str]:
    """``f`` (a callee) is a library's image transform that makes a CPU tensor of an
    image: "any" (it takes a tensor too, and keeps its device) for timm's
    ``create_transform(...)`` and torchvision's ``<Model>_Weights.<X>.transforms()``;
    None otherwise."""
    if isinstance(f, ast.Name):
        origins = sem.origins(f)
        kinds = {_library_transform(sem, o.node) if o.kind is OriginKind.VALUE else None for o in origins}
        return kinds.pop() if len(kinds) == 1 else None
    if not isinstance(f, ast.Call):
        return None
    q = sem.call_qualname(f)
    if q in ("timm.data.create_transform", "timm.data.transforms_factory.create_transform"):
        return "any"  # (its eval transforms end in MaybeToTensor: a tensor keeps its device)
    g = f.func
    if isinstance(g, ast.Attribute) and g.attr == "transforms" and not f.args and not f.keywords:
        w = g.value
        if isinstance(w, ast.Name):  # (``weights = ResNet50_Weights.DEFAULT``: an imported value)
            vals = [o.node for o in sem.origins(w) if o.kind in (OriginKind.VALUE, OriginKind.IMPORT)]
            w = vals[0] if len(vals) == 1 else None
        wq = sem.qualname(w) if isinstance(w, (ast.Name, ast.Attribute)) else None
        if wq is not None and wq.startswith("torchvision.models.") and "_Weights." in wq:
            return "any"
    return None


def _host_image(sem: SemanticModel, e) -> bool:
    """``e`` is an image on the host: ``Image.open(p)`` (and ``.convert(...)``, ``.resize(...)``
    of it), torchvision's ``read_image(p)`` (a CPU tensor), or a name every value of which
    is one."""
    if isinstance(e, ast.Name):
        origins = sem.origins(e)
        return bool(origins) and all(o.kind is OriginKind.VALUE and _host_image(sem, o.node) for o in origins)
    while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("convert", "resize", "crop"):
        e = e.func.value
    return isinstance(e, ast.Call) and (sem.call_qualname(e) or "").startswith(_HOST_IMAGES)


_HOST_IMAGES = ("PIL.Image.open", "PIL.Image.fromarray", "torchvision.io.read_image", "torchvision.io.decode_image",
                "torchvision.io.image.read_image", "torchvision.io.image.decode_image")


_HOST_DATA_LIBS = ("numpy.", "pandas.", "sklearn.", "scipy.", "json.", "pickle.", "csv.", "PIL.", "cv2.")
_HOST_DATA_BUILTINS = frozenset({"builtins.list", "builtins.range", "builtins.zip", "builtins.sorted", "builtins.map"})
# a Gym / Gymnasium environment: what its methods return (``obs, info = env.reset()``,
# ``env.step(a)``) are NumPy arrays and numbers
_GYM_MAKERS = frozenset({"gym.make", "gymnasium.make", "gym.vector.make", "gymnasium.make_vec"})
# simulators registered with Gymnasium that hand out torch tensors (imported), and the
# wrapper that makes any environment do so
_GPU_SIMULATORS = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:mani_skill|isaaclab|isaacgym|omni\.isaac|genesis|brax)\b"
                             r"|\bNumpyToTorch\b", re.M)


def _host_data(sem: SemanticModel, e, depth: int = 0) -> bool:
    """``e`` is host data: a literal container, a numpy array or a DataFrame's values
    (made by ``numpy``/``pandas``/``sklearn`` calls or methods of what they made,
    ``.values``, ``.to_numpy()``), what a Gym environment's methods return, followed
    through names."""
    if depth > 4:
        return False
    t = type(e)
    if t in (ast.List, ast.Tuple, ast.ListComp, ast.Dict):
        return True
    if t is ast.Attribute:
        return e.attr == "values" or _host_data(sem, e.value, depth + 1)
    if t is ast.Subscript:
        return _host_data(sem, e.value, depth + 1)
    if t in (ast.BinOp, ast.Compare, ast.UnaryOp):
        # ``arr > 0``, ``arr * 2``: host data with numbers
        parts = [e.left, e.right] if t is ast.BinOp else [e.left, *e.comparators] if t is ast.Compare else [e.operand]
        data = [p for p in parts if not isinstance(p, ast.Constant)]
        return bool(data) and all(_host_data(sem, p, depth + 1) for p in data)
    if t is ast.Call:
        q = sem.call_qualname(e) or ""
        if q.startswith(_HOST_DATA_LIBS) or q in _HOST_DATA_BUILTINS:
            return True
        if q in _GYM_MAKERS:
            # (simulators registered with Gymnasium that hand out torch tensors, on the GPU:
            # ManiSkill, Isaac Lab, Genesis, Brax, told a device or a GPU backend)
            return not any(k.arg in ("device", "sim_backend", "sim_device", "rl_device") for k in e.keywords) \
                and _GPU_SIMULATORS.search(sem.text) is None
        f = e.func
        # ``rng.integers(...)``, ``df.drop(...)``, ``a.astype(...)``: a method of host data
        if isinstance(f, ast.Attribute) and (f.attr in ("to_numpy", "tolist") or _host_data(sem, f.value, depth + 1)):
            return True
        # a same-file function or method every return of which is host data (a toy
        # environment's ``reset()`` returning ``np.random.randn(4)``)
        target = sem.callee(e)
        if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_generator(target) \
                and not _overridden(sem, target):
            rets = sem.returns(target)
            return bool(rets) and all(r is not None and _host_value(sem, r, depth + 1) for r in rets)
        return False
    if t is ast.Name:
        bs = sem.reaching(e)
        # (``obs, info = env.reset()``, ``X_tr, X_te = train_test_split(X)``: a part of host data)
        return bool(bs) and all(b.kind is BindingKind.ASSIGNMENT and (
            b.value is not None and _host_data(sem, b.value, depth + 1)
            or b.value is None and b.unpack is not None and _host_parts(sem, b.unpack[0], depth + 1)) for b in bs)
    return False


def _host_value(sem: SemanticModel, e, depth: int) -> bool:
    """:func:`_host_data`, with a tuple or list literal's elements looked into (a function
    that returns ``obs, reward, done``: each a number or host data, not a tensor)."""
    if isinstance(e, (ast.Tuple, ast.List)):
        return all(isinstance(x, ast.Constant) or _host_value(sem, x, depth + 1) for x in e.elts)
    return _host_data(sem, e, depth)


def _overridden(sem: SemanticModel, fn) -> bool:
    """``fn`` is a method that a same-file subclass of its class defines again (the
    instance may be one of that subclass)."""
    cls = sem.parent(fn)
    if not isinstance(cls, ast.ClassDef):
        return False
    return any(c is not cls and sem.derives_from_class(c, cls) and sem.method(c, fn.name) is not None
               for c in sem.find(ast.ClassDef, containing=(fn.name,)))


def _host_parts(sem: SemanticModel, e, depth: int) -> bool:
    """The parts of what ``e`` gives, unpacked, are host data: a call of a host-data library
    (``train_test_split(X, y)``) or a method of host data (``env.reset()`` of a Gym
    environment), not a builtin's (``map(lambda t: t.to(device), batch)``)."""
    return isinstance(e, ast.Call) and (sem.call_qualname(e) or "") not in _HOST_DATA_BUILTINS \
        and _host_data(sem, e, depth)


# the factories that make a script's data (from host data), its dummy inputs and its
# initial states (``h0 = torch.zeros(layers, batch, hidden)``); in a module's own code
# they are TM102's
MADE_FACTORIES = frozenset({
    "from_numpy", "tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "DoubleTensor",
    "BoolTensor", "ByteTensor", "HalfTensor", "randn", "rand", "randint", "zeros", "ones", "empty", "full",
})
# ``torch.<factory>(`` (one pattern with a literal head: the engine skips to each ``torch.``)
MADE_CALL = re.compile(r"torch\.(?:" + "|".join(sorted(MADE_FACTORIES)) + r")\(")
# ``import torch as th``: the module's other names (the semantic model resolves ``th.randn``)
_TORCH_AS = re.compile(r"^[ \t]*import[ \t]+(?:[\w.]+(?:[ \t]+as[ \t]+\w+)?[ \t]*,[ \t]*)*torch[ \t]+as[ \t]+(\w+)", re.M)


@functools.lru_cache(maxsize=4)  # (the gate, the made-tensor scan and the check ask for the same text)
def torch_names(text: str) -> tuple:
    """``torch`` and the names an ``import torch as X`` in the text gives it."""
    if "torch as" not in text:
        return ("torch",)
    return ("torch", *sorted({m.group(1) for m in _matches_on_lines(_TORCH_AS, text, "import")} - {"torch"}))


@functools.lru_cache(maxsize=16)
def _made_call(names: tuple):
    if names == ("torch",):
        return MADE_CALL
    return re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, names)) + r")\.(?:"
                      + "|".join(sorted(MADE_FACTORIES)) + r")\(")
# what stands before it on its line in a statement that makes a tensor: ``x = `` or ``x = Variable(``
MADE_PREFIX = re.compile(r"[ \t]*[A-Za-z_]\w*[ \t]*=[ \t]*(?:(?:\w+\.)*Variable\()?")


def moved_and_called(text: str, start: int = 0, end: Optional[int] = None) -> bool:
    """Something ``text[start:end]`` moves is also called there: ``model.to(device)`` or
    ``model = Net().to(device)`` (``self.model = ...cuda()``, ``model =
    X.from_pretrained(..., device_map="cuda")``), and ``model(`` (a tensor that is moved
    is not called).  The screen of where a tensor the script makes may
    meet a moved model (:func:`made_tensors`)."""
    end = len(text) if end is None else end
    seen: set = set()
    rest = []  # the names after the first few: looked up by one scan of the text (_any_called)
    for name in _moved_names(text, start, end):
        if name in seen:
            continue
        seen.add(name)
        if len(seen) <= _FEW_NAMES:
            if _calls_name(text, name, start, end):
                return True
        else:
            rest.append(name)
    return bool(rest) and _any_called(text, rest, start, end)


def _moved_names(text: str, start: int, end: int) -> Iterator[str]:
    """The names :func:`moved_and_called` asks about, in order (repeats left in)."""
    for needle in (".to(", ".cuda(", "device_map"):
        at = text.find(needle, start, end)
        while at >= 0:
            if needle == "device_map" and not _device_map_keyword(text, at):
                at = text.find(needle, at + 1, end)
                continue  # (not the keyword)
            i = at
            if needle == "device_map":
                # ``model = AutoModel.from_pretrained(name, device_map="cuda")``: the name the
                # call it is a keyword of is assigned to
                i = _opening_bracket(text, at, start, open_only=True)
            j = i
            while j > start and (text[j - 1].isalnum() or text[j - 1] in "_."):
                j -= 1
            name = text[j:i]
            if not name or text[i - 1] == ")" or needle == "device_map":  # ``Net().to(``: the name it is assigned to
                # (the line the call opens on: ``model = AutoModel.from_pretrained(\n...\n).to(``)
                k = _opening_bracket(text, i - 1, start) if text[i - 1] == ")" else i
                ls = text.rfind("\n", start, k) + 1
                m = _ASSIGNED.match(text, ls, i)
                name = m.group(1) if m else ""
            if name:
                yield name
            at = text.find(needle, at + 1, end)
    yield from _trainer_models(text, start, end)  # (a Hugging Face trainer moves the model it is given)
    yield from _clip_models(text, start, end)


def _clip_models(text: str, start: int = 0, end: Optional[int] = None, moving: bool = True) -> list:
    """The names a CLIP loader's line in ``text[start:end]`` binds its model to
    (``model, preprocess = clip.load(name, device=device)``); with ``moving``, only where
    it may move it: OpenAI's ``clip.load`` always may (its default device is the GPU), the
    others with ``device`` written in the call's line."""
    end = len(text) if end is None else end
    return [names[0] for at, names, moves in _clip_lines(text) if start <= at < end and (moves or not moving)]


@functools.lru_cache(maxsize=4)
def _clip_lines(text: str) -> tuple:
    """``(line start, (model, transform, transform or None), may move)`` for each line that
    binds a CLIP loader's result (:data:`_CLIP_LOAD_LINE`), found from the loaders' words
    (a ``^`` pattern would be tried at every position of the text), once per text."""
    if "clip" not in text:
        return ()  # (CLIP's and open_clip's loaders are imported from a module so named)
    out = []
    for ls, m in _binding_lines(text, _CLIP_LOAD_LINE, _CLIP_LOADER_WORDS):
        line_end = text.find("\n", ls)
        line = text[ls:line_end if line_end >= 0 else len(text)]
        out.append((ls, m.groups(), "clip.load(" in line or "device" in line))
    out.sort()
    return tuple(out)


def _binding_lines(text: str, pattern, words: tuple) -> Iterator[tuple]:
    """``(line start, match)`` for each place one of ``words`` ends a match of ``pattern``
    (a binding, ``x = ...word``) that runs from the start of its line: the words are
    searched for, not the pattern tried at every line."""
    for word in words:
        for i in occurrences(text, word):
            ls = text.rfind("\n", 0, i) + 1
            m = pattern.fullmatch(text, ls, i + len(word))
            if m is not None:
                yield ls, m


def occurrences(text: str, word: str, start: int = 0, end: Optional[int] = None) -> Iterator[int]:
    """Where ``word`` starts in ``text[start:end]``, in order."""
    end = len(text) if end is None else end
    j = text.find(word, start, end)
    while j >= 0:
        yield j
        j = text.find(word, j + 1, end)


@functools.lru_cache(maxsize=4)
def _library_transforms(text: str) -> tuple:
    """The names a line binds to a library's image transform that returns a tensor: a
    CLIP loader's (``model, preprocess = clip.load(...)``), timm's ``transform =
    create_transform(**config)``, torchvision's ``preprocess = weights.transforms()``
    (:func:`_to_tensor_transform` decides)."""
    out = [n for _, names, _ in _clip_lines(text) for n in names[1:] if n]
    out += [m.group(1) for _, m in _binding_lines(text, _TRANSFORM_LINE, ("create_transform(", ".transforms()"))]
    return tuple(out)


def _as_first_argument(text: str, call: str) -> list:
    """The starts of the lines where ``call`` (``name(``, a whole name) stands as the first
    argument of a model's call (:func:`_first_argument_of_a_model`)."""
    out = []
    for i in occurrences(text, call):
        ls = text.rfind("\n", 0, i) + 1
        if not (i and (text[i - 1].isalnum() or text[i - 1] in "_.")) and _first_argument_of_a_model(text, ls, i):
            out.append(ls)
    return out


def _first_argument_of_a_model(text: str, ls: int, at: int) -> bool:
    """The call at ``at`` (on the line starting at ``ls``) is the first argument of a call
    on that line (``model(torch.from_numpy(x))``) whose callee is not a library function
    or class (``torch.cat(``, ``nn.Parameter(``: no model)."""
    k = at - 1
    while k > ls and text[k] in " \t":
        k -= 1
    if not (k > ls and text[k] == "(" and (text[k - 1].isalnum() or text[k - 1] in "_)]")):
        return False
    b = k
    while b > ls and (text[b - 1].isalnum() or text[b - 1] in "_."):
        b -= 1
    callee = text[b:k]
    return not (callee.startswith(_LIBRARY_CALLEES) or callee.endswith(_NOT_MODELS))


def transform_names(text: str) -> tuple:
    """The names bound to an image transform that makes a tensor: a torchvision
    ``Compose``, or a library's (:func:`_library_transforms`)."""
    return (*_library_transforms(text), *_to_tensor_heads(text)[2:])


# ``transform = create_transform(`` / ``preprocess = weights.transforms()`` at the start of a line
_TRANSFORM_LINE = re.compile(r"[ \t]*(\w+)[ \t]*=[ \t]*(?:[\w.]+)?(?:create_transform\(|\.transforms\(\))")


# past this many names, whether any of them is called is told by one scan of the text
_FEW_NAMES = 8
# a name written as a callee of its own (``name(``) or as a receiver (``name.``, and the
# method called on it right there: ``name.meth(``)
_CALLEE_OR_RECEIVER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(\(|\.(?:(\w+)\()?)")


def _any_called(text: str, names, start: int, end: int) -> bool:
    """``any(_calls_name(text, n, start, end) for n in names)``, for many names: one scan
    of ``text[start:end]`` lists the names written as callees and those on which a method
    other than ``nn.Module``'s own is called; only such a receiver among them
    (``name.act(``) is asked about on its own.  (A name that is no plain identifier,
    ``self.model``, is asked as :func:`_calls_name` does.)"""
    names = set(names)
    plain = {n for n in names if _NAME.fullmatch(n)}
    if any(_calls_name(text, n, start, end) for n in names - plain):
        return True
    if not plain:
        return False
    called, receivers = set(), set()
    for m in _CALLEE_OR_RECEIVER.finditer(text, start, end):
        if m.group(2) == "(":
            called.add(m.group(1))
        elif m.group(3) is not None and m.group(3) not in _MODULE_API:
            receivers.add(m.group(1))
    if not plain.isdisjoint(called):
        return True
    return any(_calls_name(text, n, start, end) for n in plain & receivers)


# ``model=<name>``, a keyword (not ``==``), and the first argument of a call
_MODEL_KEYWORD = re.compile(r"(?<![\w.])model[ \t]*=(?!=)[ \t]*([A-Za-z_]\w*)")
_FIRST_ARGUMENT = re.compile(r"(?:\s|#[^\n]*)*([A-Za-z_]\w*)")


def _trainer_models(text: str, start: int = 0, end: Optional[int] = None) -> list:
    """The names a ``...Trainer(`` call in ``text[start:end]`` may be given as its model
    (:func:`trainer_move`): the first argument of each such call, and every ``model=<name>``
    from the first one on (a keyword is not told from an assignment: more names, never
    fewer)."""
    end = len(text) if end is None else end
    at = text.find("Trainer(", start, end)
    if at < 0:
        return []
    out = []
    first = at
    while at >= 0:
        m = _FIRST_ARGUMENT.match(text, at + 8, end)
        if m is not None:
            out.append(m.group(1))
        at = text.find("Trainer(", at + 8, end)
    out += [m.group(1) for m in _MODEL_KEYWORD.finditer(text, first, end)]
    return out


def _opening_bracket(text: str, close: int, start: int, open_only: bool = False) -> int:
    """Where the bracket that the ``)`` at ``close`` closes opens (brackets counted back
    to ``start``, over at most ``_BRACKET_REACH`` characters and ``_BRACKET_STEPS``
    brackets: strings are not told apart, and a bracket in one must not send every
    search far back); ``close`` itself when none is found.  With ``open_only``, ``close``
    is inside the brackets: where the innermost one around it opens.  The brackets of a
    short stretch before it are looked at first (most calls open there); the file's
    bracket positions are listed only when that is not enough."""
    lo = max(start, close - _BRACKET_REACH)
    end = close if open_only else close + 1
    near = max(lo, close - 300)
    got = _walk_back(text, [m.start() for m in _BRACKETS.finditer(text, near, end)], 1 if open_only else 0)
    if got is not None or near == lo:
        return close if got is None else got
    pos = _bracket_positions(text)
    i = bisect.bisect_left(pos, end)
    found = pos[max(0, i - _BRACKET_STEPS):i]
    got = _walk_back(text, [k for k in found if k >= lo], 1 if open_only else 0)
    return close if got is None else got


def _walk_back(text: str, found: list, depth: int) -> Optional[int]:
    """The bracket of ``found`` (positions in text order) at which ``depth`` (the
    brackets still open, counted from the end) comes to 0, walking back; None if none."""
    for k in reversed(found[-_BRACKET_STEPS:]):
        if text[k] in ")]}":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return k
    return None


@functools.lru_cache(maxsize=4)
def _bracket_positions(text: str) -> list:
    """Where the brackets of ``text`` stand (one scan per text)."""
    return [m.start() for m in _BRACKETS.finditer(text)]


_BRACKET_REACH = 2000
_BRACKET_STEPS = 64
_BRACKETS = re.compile(r"[()\[\]{}]")
# ``device_map=`` given one GPU (``"cuda"``, ``"cuda:1"``, ``0``, ``{"": 0}``: what
# :func:`single_device_map` takes for a move)
_DEVICE_MAP_KW = re.compile(r"device_map[ \t]*=[ \t]*(?:[\"']cuda(?::\d+)?[\"']|\d|\{[ \t]*(?:\"\"|'')[ \t]*:)")


def _device_map_keyword(text: str, at: int) -> bool:
    """The ``device_map`` at ``at`` is a keyword argument of a ``from_pretrained(`` call
    that puts the model on one GPU (not ``hf_device_map``, ``device_map="auto"``, ``dict(device_map=...)``)."""
    if (at and (text[at - 1].isalnum() or text[at - 1] in "_.")) or _DEVICE_MAP_KW.match(text, at) is None:
        return False
    k = _opening_bracket(text, at, 0, open_only=True)
    return text.startswith("(", k) and text.endswith("from_pretrained", 0, k)

# ``name =`` / ``self.name =`` at the start of a line
_ASSIGNED = re.compile(r"[ \t]*([A-Za-z_][\w.]*)[ \t]*=(?!=)")


def made_line_starts(text: str, start: int = 0, end: Optional[int] = None):
    """The offsets of the lines in ``text[start:end]`` that begin a statement ``x =
    torch.<factory>(`` (:data:`MADE_FACTORIES`; ``th.<factory>(`` after ``import torch as th``),
    or ``x = [obj.]maker(`` of a function that returns such a tensor (:func:`makers`)."""
    end = len(text) if end is None else end
    return (ls for ls in _made_scan(text).lines if start <= ls < end)


# what stands before a factory call on a ``return`` line: ``return torch.zeros(`` / ``return
# (torch.zeros(..), torch.zeros(..))`` / ``return Variable(torch.zeros(``
_RETURN_MADE = re.compile(r"([ \t]*)return[ \t]+\(?[ \t]*(?:(?:\w+\.)*Variable\()?")
_DEF_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.M)
# what stands before a maker's name on its line: ``h = `` and the receiver (``net.``, ``self.model.``)
_MAKER_PREFIX = re.compile(r"[ \t]*[A-Za-z_]\w*[ \t]*=[ \t]*(?:[A-Za-z_]\w*\.)*")


def makers(text: str) -> frozenset:
    """The names of the functions whose text returns a tensor it makes: a ``return``
    line that begins with ``torch.<factory>(`` (in brackets or ``Variable(`` too),
    under the nearest ``def`` line above it that is indented less (``def
    init_hidden(self, bs): return torch.zeros(1, bs, 64)``).  The semantic model then
    decides (:func:`made_by_call`)."""
    return _made_scan(text).makers


def _lines_calling(text: str, name: str, prefix, not_after: str) -> list:
    """The starts of the lines where ``name(`` (a word of its own: no letter, digit or
    one of ``not_after`` before it) follows what ``prefix`` matches from the line's
    start (a search for the literal: no pattern tried everywhere)."""
    out = []
    i = text.find(name + "(")
    while i >= 0:
        if not (i and (text[i - 1].isalnum() or text[i - 1] in not_after)):
            ls = text.rfind("\n", 0, i) + 1
            if prefix.fullmatch(text, ls, i):
                out.append(ls)
        i = text.find(name + "(", i + 1)
    return out


@functools.lru_cache(maxsize=4)
def _to_tensor_heads(text: str) -> tuple:
    """The words a statement that makes a tensor with torchvision's to-tensor transforms
    holds (:func:`_made_scan`): the transforms' names and the ``Compose`` names."""
    if "ToTensor" not in text and "to_tensor" not in text:
        return ()
    return ("ToTensor", "to_tensor", *sorted({m.group(1) for m in _matches_on_lines(_COMPOSE_NAME, text, "Compose(")}))


def _matches_on_lines(pattern, text: str, needle: str, start: int = 0, end: Optional[int] = None) -> list:
    """``list(pattern.finditer(text, start, end))`` for a ``re.M`` pattern that begins
    with ``^`` and whose every match holds ``needle`` on its first line: the pattern is
    tried only at the start of such lines (a ``^`` pattern is tried at every position of
    the text), from the end of the last match on, as ``finditer`` goes on."""
    end = len(text) if end is None else end
    out = []
    last = -1  # the last line start tried
    i = text.find(needle, start, end)
    while i >= 0:
        ls = text.rfind("\n", 0, i) + 1
        if ls >= start and ls > last and (not out or ls >= out[-1].end()):
            last = ls
            m = pattern.match(text, ls, end)
            if m is not None:
                out.append(m)
        i = text.find(needle, i + 1, end)
    return out


_TO_TENSOR_CALL = re.compile(r"(?:PIL)?ToTensor\(\)\(|(?<![\w])(?:pil_)?to_tensor\(")


def _to_tensor_calls(text: str) -> list:
    """The starts of the matches of ``_TO_TENSOR_CALL.finditer(text)``, found by looking
    for its two literal tails (a pattern that starts with an optional group or a
    look-behind is tried at every position of the text): ``ToTensor()(`` (with ``PIL``
    before it, the match starts there) and ``to_tensor(`` not after a word character
    (``pil_`` before it, not after one either: the match starts at ``pil_``)."""
    out = []
    i = text.find("ToTensor()(")
    while i >= 0:
        out.append(i - 3 if text.startswith("PIL", i - 3) and i >= 3 else i)
        i = text.find("ToTensor()(", i + 11)
    i = text.find("to_tensor(")
    while i >= 0:
        if i >= 4 and text.startswith("pil_", i - 4) and not (i > 4 and _word(text[i - 5])):
            out.append(i - 4)
        elif not (i and _word(text[i - 1])):
            out.append(i)
        i = text.find("to_tensor(", i + 10)
    out.sort()
    return out


# ``transform = transforms.Compose(`` / ``T.Compose(`` / ``Compose(`` at the start of a line
_COMPOSE_NAME = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:[\w.]+\.)?Compose\(", re.M)
_LIBRARY_CALLEES = ("torch.", "th.", "nn.", "F.", "np.", "numpy.", "math.", "self.register_buffer")
_NOT_MODELS = ("Parameter", "Buffer", "append", "extend", "print", "len", "list", "tuple", "float", "int", "isinstance")


class _MadeScan(NamedTuple):
    lines: tuple  # the starts of the lines that make a tensor (``x = torch.zeros(...)``, ``h = net.maker(...)``)
    makers: frozenset  # :func:`makers`
    inline: tuple  # the starts of the lines where one is made as a call's first argument


@functools.lru_cache(maxsize=4)
def _made_scan(text: str) -> _MadeScan:
    """One pass over the factory calls of ``text`` (:func:`made_line_starts`,
    :func:`makers`, :func:`made_lines_outside_classes`)."""
    starts, out, inline = [], set(), []
    for c in _made_call(torch_names(text)).finditer(text):  # (few: the pattern's literal head is skipped to)
        ls = text.rfind("\n", 0, c.start()) + 1
        if MADE_PREFIX.fullmatch(text, ls, c.start()):
            starts.append(ls)
            continue
        if _first_argument_of_a_model(text, ls, c.start()):
            inline.append(ls)
        m = _RETURN_MADE.fullmatch(text, ls, c.start())
        if m is None:
            continue
        indent = len(m.group(1).expandtabs(8))
        j = m.start()
        while j > 0:
            k = text.rfind("def", 0, j)
            if k < 0:
                break
            ls = text.rfind("\n", 0, k) + 1
            d = _DEF_LINE.match(text, ls)
            if d is not None and d.end(2) > k and len(d.group(1).expandtabs(8)) < indent:
                out.add(d.group(2))
                break
            j = ls - 1 if d is not None else k
    if "ToTensor" in text or "to_tensor" in text:
        # torchvision's to-tensor transforms (:func:`made_tensor` decides): ``ToTensor()(``,
        # ``to_tensor(``, and the names bound to a ``Compose(`` in a file that has one
        for c in _to_tensor_calls(text):
            ls = text.rfind("\n", 0, c) + 1
            if _MAKER_PREFIX.fullmatch(text, ls, c):
                starts.append(ls)
        for name in _to_tensor_heads(text)[2:]:  # (the names bound to a ``Compose(``)
            starts += _lines_calling(text, name, MADE_PREFIX, "_.")
    library = _library_transforms(text)
    for name in library:  # (``image = preprocess(Image.open(p)).unsqueeze(0)``)
        starts += _lines_calling(text, name, MADE_PREFIX, "_.")
    for name in transform_names(text):
        inline += _as_first_argument(text, name + "(")  # (``model(transforms(img).unsqueeze(0))``)
    if "clip.tokenize(" in text:  # (``text = clip.tokenize(["a dog"])``; ``model.encode_text(clip.tokenize(t))``)
        starts += _lines_calling(text, "tokenize", _MAKER_PREFIX, "_")
        inline += _as_first_argument(text, "clip.tokenize(")
    names = frozenset(out)
    for name in names:
        starts += _lines_calling(text, name, _MAKER_PREFIX, "_")
    if "return_tensors" in text:
        got, at_call = _encoding_lines(text)
        starts += got
        inline += at_call
    return _MadeScan(tuple(sorted(set(starts))), names, tuple(sorted(set(inline))))


_RETURN_TENSORS_PT = re.compile(r"return_tensors[ \t]*=[ \t]*[\"']pt[\"']")


def _encoding_lines(text: str) -> tuple:
    """The starts of the lines that begin a statement ``x = <name>(..., return_tensors="pt",
    ...)`` (``x = tokenizer(``, ``x = self.tok.encode(``; the keyword on a later line of the
    call too): what a Hugging Face tokenizer or processor makes on the CPU
    (:func:`tokenizer_output` decides); and of the lines where such a call is an argument
    of another call (``model(**tokenizer(text, return_tensors="pt"))``).  The call's
    opening bracket is found by counting brackets back from the keyword."""
    out, inline = [], []
    for m in _RETURN_TENSORS_PT.finditer(text):
        k = _opening_bracket(text, m.start(), 0, open_only=True)  # (a bounded search)
        if text[k] != "(":
            continue
        b = k
        while b > 0 and (text[b - 1].isalnum() or text[b - 1] == "_"):
            b -= 1
        ls = text.rfind("\n", 0, b) + 1
        if b < k and _MAKER_PREFIX.fullmatch(text, ls, b):
            out.append(ls)
            continue
        a = b
        while a > ls and (text[a - 1].isalnum() or text[a - 1] in "_."):
            a -= 1  # (the receiver: ``self.tok.``)
        before = text[ls:a].rstrip(" \t*")
        if before.endswith(("(", ",")):
            inline.append(ls)
    return out, inline


# a Hugging Face class whose ``from_pretrained`` makes a tokenizer or a processor (its
# calls with ``return_tensors="pt"`` give CPU tensors), and one that makes no model
_HF_TOKENIZER = re.compile(r"(?:Tokenizer|Processor|FeatureExtractor)(?:Fast)?$")
_HF_NOT_MODEL = re.compile(r"(?:Tokenizer|Processor|FeatureExtractor|Config|Pipeline)(?:Fast)?$")
# tokenizer methods that give one tensor with ``return_tensors="pt"`` (the others, and the
# tokenizer called, give a ``BatchEncoding``: a dict of tensors with an in-place ``.to``)
_HF_TENSOR_METHODS = frozenset({"encode", "apply_chat_template"})
_HF_ENCODING_METHODS = frozenset({"encode_plus", "batch_encode_plus", "pad", "prepare_seq2seq_batch"})
# the tensors of a ``BatchEncoding`` read as its attributes (``tok(text, return_tensors="pt").input_ids``)
_ENCODING_TENSORS = frozenset({
    "input_ids", "attention_mask", "token_type_ids", "position_ids", "pixel_values", "pixel_mask", "input_features",
    "input_values", "labels", "decoder_input_ids", "decoder_attention_mask",
})


def _hf_class(sem: SemanticModel, expr, pattern) -> bool:
    """Every way ``expr`` is made is ``transformers.<Class>.from_pretrained(...)`` (through
    module methods that return it: ``.to(device)``, ``.eval()``) with ``Class`` matching
    ``pattern``."""
    origins = sem.origins(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else []
    # (``self.tokenizer = None`` until it is loaded: calling None would fail anyway)
    origins = [o for o in origins if not (isinstance(o.node, ast.Constant) and o.node.value is None)]
    if not origins:
        return False
    for o in origins:
        n = o.node
        if o.kind is not OriginKind.VALUE or not isinstance(n, ast.Call):
            return False
        while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                n.func.attr in MOVE_METHODS or n.func.attr in SELF_METHODS):
            n = n.func.value
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "from_pretrained"):
            return False
        # the class: ``AutoTokenizer`` of ``transformers``, or each one a name may hold
        # (``model_class, tokenizer_class = MODELS[name]`` of a dict of such classes)
        q = sem.qualname(n.func.value)
        classes = [q] if q else [c.qualname for c in sem.origins(n.func.value)
                                 if c.kind is OriginKind.IMPORT] or [None]
        if len(classes) != len(sem.origins(n.func.value)) and not q:
            return False
        for c in classes:
            if not (c and c.startswith("transformers.")) or \
                    (pattern is _HF_NOT_MODEL) == bool(pattern.search(c.rsplit(".", 1)[-1])):
                return False
    return True


def single_device_map(dm) -> Optional[ast.expr]:
    """The GPU a ``device_map=`` literal puts a whole model on: ``"cuda"``, ``"cuda:1"``,
    ``0`` or ``{"": 0}`` (accelerate then moves the model there and installs no hook that
    would move its inputs); None for anything else (``"auto"`` may split it over devices,
    whose hooks place the inputs)."""
    if isinstance(dm, ast.Dict) and len(dm.keys) == 1 and isinstance(dm.keys[0], ast.Constant) and dm.keys[0].value == "":
        dm = dm.values[0]
    if not isinstance(dm, ast.Constant):
        return None
    v = dm.value
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v >= 0 or isinstance(v, str) and re.fullmatch(r"cuda(?::\d+)?", v):
        return dm
    return None


def _pipeline(q: Optional[str]) -> bool:
    """``q`` makes a pipeline, which places its inputs on its model's device itself:
    ``transformers.pipeline(...)``, a diffusers ``...Pipeline.from_pretrained(...)``
    (``latents=`` made on the CPU are moved by it), an Ultralytics model (``YOLO(...)``:
    calling it predicts, and its predictor moves a tensor it gets to the model's
    device)."""
    if not q:
        return False
    if q in ("transformers.pipeline", "transformers.pipelines.pipeline"):
        return True
    parts = q.split(".")
    if parts[0] == "ultralytics":
        return parts[-1] in _ULTRALYTICS_MODELS
    return parts[0] == "diffusers" and any("Pipeline" in p for p in parts[1:])


# the model classes of ``ultralytics`` (``ultralytics.YOLO``, ``ultralytics.models.RTDETR``)
_ULTRALYTICS_MODELS = frozenset({"YOLO", "YOLOWorld", "YOLOE", "RTDETR", "SAM", "FastSAM", "NAS", "Model"})


def _hf_model_load(q: Optional[str]) -> bool:
    """``q`` (a call's qualified name) loads a Hugging Face model:
    ``transformers.<Model>.from_pretrained`` (not a tokenizer, processor, config or
    pipeline; a diffusers pipeline places its own inputs)."""
    return bool(q) and q.startswith("transformers.") and q.endswith(".from_pretrained") \
        and _HF_NOT_MODEL.search(q.rsplit(".", 2)[-2]) is None


def _loading_call(n):
    """The ``from_pretrained(...)`` call a value made by a chain of method calls on it
    comes from (``X.from_pretrained(...).to(device).eval()``); the chain's first node when
    it holds none."""
    while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr != "from_pretrained":
        n = n.func.value
    return n


def hf_model(sem: SemanticModel, expr) -> bool:
    """``expr`` is a Hugging Face model (``AutoModelForCausalLM.from_pretrained(...)``,
    not a tokenizer, processor or config) loaded without ``device_map=`` (whose hooks
    place its inputs on the model's device themselves), or with one that puts it whole
    on one GPU (:func:`single_device_map`)."""
    if not _hf_class(sem, expr, _HF_NOT_MODEL):
        return False
    for o in sem.origins(expr):
        n = _loading_call(o.node)
        if not isinstance(n, ast.Call) or any(k.arg is None or k.arg == "device_map" and single_device_map(k.value) is None
                                              for k in n.keywords):
            return False
    return True


def tokenizer_output(sem: SemanticModel, expr) -> Optional[str]:
    """What a Hugging Face tokenizer or processor (``tok = AutoTokenizer.from_pretrained(...)``)
    called with ``return_tensors="pt"`` returns, on the CPU: ``"tensor"`` for
    ``tok.encode(...)``/``tok.apply_chat_template(...)`` (without ``return_dict=True``),
    ``"encoding"`` for ``tok(...)``/``tok.encode_plus(...)`` (a ``BatchEncoding``, a dict of
    tensors whose ``.to(device)`` moves it in place and returns it); ``"tensor"`` too for one
    tensor of such an encoding, ``tok(...).input_ids``, ``tok(...)["input_ids"]``; None otherwise."""
    if isinstance(expr, ast.Attribute) and expr.attr in _ENCODING_TENSORS or isinstance(expr, ast.Subscript) \
            and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str):
        return "tensor" if tokenizer_output(sem, expr.value) == "encoding" else None
    if not isinstance(expr, ast.Call):
        return None
    kw = next((k.value for k in expr.keywords if k.arg == "return_tensors"), None)
    if not (isinstance(kw, ast.Constant) and kw.value == "pt") or any(k.arg is None for k in expr.keywords):
        return None
    f = expr.func
    if isinstance(f, ast.Attribute) and f.attr in _HF_TENSOR_METHODS | _HF_ENCODING_METHODS:
        if not _hf_class(sem, f.value, _HF_TOKENIZER):
            return None
        if f.attr in _HF_TENSOR_METHODS:
            rd = next((k.value for k in expr.keywords if k.arg == "return_dict"), None)
            if rd is not None and not (isinstance(rd, ast.Constant) and rd.value is False):
                return None
            return "tensor"
        return "encoding"
    return "encoding" if _hf_class(sem, f, _HF_TOKENIZER) else None


def _module_instance(sem: SemanticModel, expr, depth: int = 0) -> Optional[ast.ClassDef]:
    """The same-file class ``expr`` is an instance of, seen through the module methods
    that return the module itself (``Net().to(device)``, ``.cuda()``, ``.train()``):
    every origin agreeing."""
    found = None
    origins = sem.origins(expr) if isinstance(expr, ast.Name) else []
    if not origins or depth > 3:
        return None
    for o in origins:
        if o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call):
            return None
        n = o.node
        while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
            n.func.attr in MOVE_METHODS or n.func.attr in SELF_METHODS
        ):
            n = n.func.value
        c = sem.callee(n) if isinstance(n, ast.Call) else _module_instance(sem, n, depth + 1)
        if not isinstance(c, ast.ClassDef) or (found is not None and found is not c):
            return None
        found = c
    return found


def made_by_call(sem: SemanticModel, expr) -> Optional[str]:
    """``"tensor"`` when ``expr`` calls a same-file function (or method) every ``return``
    of which gives a tensor it makes on the CPU (:func:`made_tensor`), ``"tuple"`` when
    each gives a tuple of them (an LSTM's ``(h0, c0)``); None otherwise (no return
    value, a generator, one path that returns something else)."""
    if not isinstance(expr, ast.Call) or isinstance(expr.func, ast.Call):
        return None
    fn = sem.callee(expr)
    if fn is None and isinstance(expr.func, ast.Attribute):
        cls = _module_instance(sem, expr.func.value)  # ``net = RNN().to(device)``; ``net.init_hidden(bs)``
        fn = sem.method(cls, expr.func.attr) if cls is not None else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name not in makers(sem.text):
        return None
    kinds = set()
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(n, ast.Return):
            v = n.value
            if isinstance(v, ast.Tuple) and v.elts and all(made_tensor(sem, e) is not None for e in v.elts):
                kinds.add("tuple")
            elif made_tensor(sem, v) is not None:
                kinds.add("tensor")
            else:
                return None
        stack.extend(ast.iter_child_nodes(n))
    return kinds.pop() if len(kinds) == 1 else None


# the line break before a line in column 0 (a literal head: a fast scan; a closing bracket
# in column 0 closes a signature or a call, no statement)
_NEXT_TOP = re.compile(r"\n[^ \t\r\n#)\]}]")


def made_lines_outside_classes(text: str, inline: bool = False):
    """The offsets of the lines that begin a statement ``x = torch.<factory>(`` where a
    moved model may be called: in module-level code when the file calls something it
    moves (:func:`moved_and_called` on the whole text), or in a top-level function or
    class that moves and calls something itself or calls a model the module-level code
    moves (a module class's own lines pass too: :func:`made_tensors` leaves them to
    TM102).  Read from the text alone (the last line at or before it that starts in
    column 0 is the top-level statement it belongs to), so that the text gate and
    :func:`made_tensors` agree however the file is cut; each top-level definition is
    judged once.  ``inline``: the lines where such a factory call is a call's first
    argument instead (``model(torch.from_numpy(x))``), in the same places."""
    return iter(_outside_classes(text)[1 if inline else 0])


@functools.lru_cache(maxsize=4)
def _outside_classes(text: str) -> tuple:
    """``(made lines, inline lines)`` of :func:`made_lines_outside_classes`, judged once."""
    scan = _made_scan(text)
    if not scan.lines and not scan.inline:
        return (), ()
    defs = _def_starts(text)
    judged: dict = {}  # definition start -> (its def/class line, its end, may meet)
    module_code = None
    out: tuple = ([], [])
    for which, starts in ((0, scan.lines), (1, scan.inline)):
        for ls in starts:
            k = bisect.bisect_right(defs, ls) - 1
            where = "code"  # module-level code: before any definition, or after the one above it ends
            if k >= 0 and defs[k] != ls:
                got = judged.get(defs[k])
                if got is None:
                    head, end = definition_span(text, defs[k])
                    got = judged[defs[k]] = (head, end, None)
                head, end, may = got
                if head < ls < end:
                    if may is None:
                        may = _definition_may_meet(text, head, end)
                        judged[defs[k]] = (head, end, may)
                    where = may
            if where == "code":
                if module_code is None:
                    module_code = moved_and_called(text)
                if module_code:
                    out[which].append(ls)
            elif where:
                out[which].append(ls)
    return tuple(out[0]), tuple(out[1])


@functools.lru_cache(maxsize=4)
def _def_starts(text: str) -> list:
    """Where the definitions in column 0 start (a decorator's line for a decorated one)."""
    defs = [d.start() + 1 for d in _TOP_DEF.finditer(text)]  # (in order: one pattern)
    if text.startswith(("class ", "def ", "async def ", "@")):
        defs.insert(0, 0)
    return defs


def definition_span(text: str, start: int) -> tuple:
    """The ``def``/``class`` line of the top-level definition starting at ``start`` (past
    its decorators) and the end of the definition: the next line in column 0 after it."""
    head = start
    while text.startswith("@", head):  # decorators, each maybe over several lines
        nl = text.find("\n", head)
        m = _NEXT_TOP.search(text, nl) if nl >= 0 else None
        if m is None:
            return head, len(text)
        head = m.start() + 1
    nl = text.find("\n", head)
    m = _NEXT_TOP.search(text, nl) if nl >= 0 else None
    return head, (m.start() + 1 if m is not None else len(text))


_TOP_DEF = re.compile(r"\n(?:class |def |async def |@)")


def _definition_may_meet(text: str, top: int, end: int) -> bool:
    """The top-level definition ``text[top:end]`` moves and calls something
    (:func:`moved_and_called`) or calls a name the module-level code moves; False for
    a class that defines a ``forward`` (a module, whose own code is TM102's)."""
    if text.startswith("class ", top) and text.find("def forward", top, end) >= 0:
        return False  # a trainer defines no forward
    if moved_and_called(text, top, end):
        return True
    # a model the module-level code moves, called in this definition
    names = _module_moved_names(text)
    if len(names) > _FEW_NAMES:
        return _any_called(text, names, top, end)
    return any(_calls_name(text, name, top, end) for name in names)


_NAME = re.compile(r"[A-Za-z_]\w*")


def _module_moved_names(text: str) -> frozenset:
    """The names module-level code moves: a line ``model = <...>.to(`` / ``model.to(`` /
    ``model.<...>.cuda(`` in column 0, or indented outside every top-level definition
    (under ``if __name__ == "__main__":``, an ``if``, a ``with``), and ``model =
    X.from_pretrained(..., device_map=...)`` in column 0."""
    return _module_moved_cached(text)


@functools.lru_cache(maxsize=4)
def _module_moved_cached(text: str) -> frozenset:
    if not (".to(" in text or ".cuda(" in text or "device_map" in text or "Trainer(" in text):
        return frozenset()
    out = set()
    defs, ends = None, {}  # the top-level definitions' starts, and their ends once read

    def definition_at(ls: int) -> tuple:
        """``(start, end)`` of the top-level definition last started at or before ``ls``
        ((-1, -1): none)."""
        nonlocal defs
        if defs is None:
            defs = _def_starts(text)
        k = bisect.bisect_right(defs, ls) - 1
        if k < 0:
            return -1, -1
        end = ends.get(k)
        if end is None:
            end = ends[k] = definition_span(text, defs[k])[1]  # (once per definition)
        return defs[k], end

    for needle in (".to(", ".cuda(", "device_map"):
        i = text.find(needle)
        while i >= 0:
            if needle == "device_map":  # (``model = X.from_pretrained(..., device_map="cuda")``)
                if not _device_map_keyword(text, i):
                    i = text.find(needle, i + 1)
                    continue  # (not the keyword)
                k = _opening_bracket(text, i, 0, open_only=True)
                ls = text.rfind("\n", 0, k) + 1
                m = _ASSIGNED.match(text, ls, k)
                if m is not None and "." not in m.group(1) and (ls == k or text[ls] not in " \t"):
                    out.add(m.group(1))
                i = text.find(needle, i + 1)
                continue
            ls = text.rfind("\n", 0, i) + 1
            start = ls
            while start < i and text[start] in " \t":
                start += 1
            m = _NAME.match(text, start, i)
            if m is not None and start > ls and ls < definition_at(ls)[1]:
                m = None  # in a definition: its own code
            if m is not None:
                rest = text[m.end():i]
                after = rest.lstrip(" \t")
                if rest == "" or rest.startswith(".") or (after.startswith("=") and not after.startswith("==")):
                    out.add(m.group(0))
            i = text.find(needle, i + 1)
    i = text.find("Trainer(")
    while i >= 0:  # a Hugging Face trainer made by module-level code moves the model it is given
        ls = text.rfind("\n", 0, i) + 1
        top, end = definition_at(ls)
        if (text[ls] in " \t" or top == ls) and ls < end:
            i = text.find("Trainer(", end)
            continue  # in a definition: its own code
        # the call's text: up to the next line that starts in column 0 (the statement's
        # end or later), to the end of the file should a triple-quoted string stand between
        m = _NEXT_TOP.search(text, i)
        stop = m.start() if m is not None else len(text)
        if '"""' in text[i:stop] or "'''" in text[i:stop]:
            stop = len(text)
        out.update(_trainer_models(text, i, stop))
        i = text.find("Trainer(", stop)
    return frozenset(out)


def _calls_name(text: str, name: str, start: int, end: int) -> bool:
    """``name(`` stands in ``text[start:end]`` as a callee of its own (not ``x.name(`` or
    ``othername(``), or ``name.meth(`` calls a method of the module's own class (one
    that is no ``nn.Module`` method: ``actor_critic.act(obs, masks)``) with a tensor the
    script makes (a name a :func:`made_line_starts` line binds, or a tokenizer's output
    made right there: ``return_tensors``) in its brackets."""
    k = text.find(name + "(", start, end)
    while k >= 0:
        if k == 0 or not (text[k - 1].isalnum() or text[k - 1] in "_."):
            return True
        k = text.find(name + "(", k + 1, end)
    k = text.find(name + ".", start, end)
    made = built = None
    while k >= 0:
        if k == 0 or not (text[k - 1].isalnum() or text[k - 1] in "_."):
            m = _METHOD_CALL.match(text, k + len(name) + 1, end)
            if m is not None and m.group(1) not in _MODULE_API and built is None:
                built = _built_by_a_class(text, name) or name in _clip_models(text, moving=False)
            if m is not None and m.group(1) not in _MODULE_API and built:
                if made is None:
                    made = _made_names(text)
                inside = text[m.end():min(end, m.end() + 400)]
                if made and any(has_word(inside, n) for n in made) or "return_tensors" in inside \
                        or "clip.tokenize(" in inside or any(n + "(" in inside for n in _library_transforms(text)):
                    return True  # (a made name, or a tokenizer's or CLIP's output made right there)
        k = text.find(name + ".", k + 1, end)
    return False


@functools.lru_cache(maxsize=256)
def _built_by_a_class(text: str, name: str) -> bool:
    """A line binds ``name`` to a call of a class-like (capitalised) callee: ``actor_critic =
    Policy(...)``, ``self.net = models.Net(...)``, ``model = AutoModel.from_pretrained(...)``
    (a module, not a tensor moved by name)."""
    k = text.find(name, 0)
    while k >= 0:
        if (k == 0 or not (text[k - 1].isalnum() or text[k - 1] in "_.")) and _CLASS_BUILT.match(text, k + len(name)):
            return True
        k = text.find(name, k + 1)
    return False


_CLASS_BUILT = re.compile(r"[ \t]*=[ \t]*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:\.from_pretrained)?\(")


@functools.lru_cache(maxsize=4)
def _made_names(text: str) -> frozenset:
    """The names the made-tensor lines of ``text`` bind (``x = torch.zeros(...)``)."""
    out = set()
    for ls in _made_scan(text).lines:
        m = _ASSIGNED.match(text, ls)
        if m is not None and m.group(1).isidentifier():
            out.add(m.group(1))
    return frozenset(out)


_METHOD_CALL = re.compile(r"(\w+)\(")
# ``nn.Module``'s own methods: calling them runs no layer on what they get
_MODULE_API = frozenset({
    "to", "cuda", "cpu", "train", "eval", "parameters", "named_parameters", "buffers", "named_buffers", "state_dict",
    "load_state_dict", "zero_grad", "modules", "named_modules", "children", "named_children", "apply", "half",
    "float", "double", "bfloat16", "type", "register_buffer", "register_parameter", "requires_grad_",
    "share_memory", "add_module", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
})


def made_tensors(sem: SemanticModel) -> list:
    """Tensors a script makes on the CPU (``X_train = torch.from_numpy(X)``, ``x =
    torch.randn(1, 3, 224, 224)``, ``h0 = torch.zeros(1, bs, 64)``) at module level, in a
    plain function or in a method of a class that is not a module (a trainer; a
    module's own code is TM102's), flowing through the rest of their block.
    Only the chunks where such a statement starts a line are parsed."""
    src, text = sem.source, sem.text
    lines, chunks = set(), {}
    for ls in made_lines_outside_classes(text):
        i = src.chunk_at(ls)
        if i < 0:
            continue
        c = src.chunks[i]
        chunks[i] = c
        lines.add(c.start_line + text.count("\n", c.start, ls))
    if not chunks:
        return []
    out = []
    heads = tuple(f"{n}." for n in torch_names(text)) + tuple(sorted(makers(text))) + _to_tensor_heads(text) \
        + tuple(_library_transforms(text)) + (("tokenize",) if "clip.tokenize(" in text else ())
    if "return_tensors" in text:
        heads += ("return_tensors",)
    for stmt in sem.find(ast.Assign, containing=heads, chunks=[chunks[i] for i in sorted(chunks)]):
        if stmt.lineno not in lines or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            continue
        encoding = False
        if made_tensor(sem, stmt.value) is None and made_by_call(sem, stmt.value) is None:
            kind = tokenizer_output(sem, stmt.value)
            if kind is None:
                continue
            encoding = kind == "encoding"
        fn = sem.enclosing_function(stmt)
        cls = sem.enclosing(fn, ast.ClassDef) if fn is not None else None
        if cls is not None and is_module_class(sem, cls):
            continue  # a module's own code: TM102's
        block = sem.block_of(stmt)
        if block is None:
            continue
        i = next(k for k, s in enumerate(block) if s is stmt)
        rest = block[i + 1:]
        loop = sem.parent(stmt)
        name = stmt.targets[0].id
        if isinstance(loop, ast.If) and runs_without_cuda(sem, stmt):
            continue  # (the ``else`` of ``if torch.cuda.is_available():``: no GPU on that path)
        rest = rest + _after_branches(sem, stmt)
        if isinstance(loop, (ast.For, ast.While)) and block is loop.body and not (
                isinstance(loop, ast.For) and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(loop.target))):
            # made for the next iteration (``masks = torch.FloatTensor(...)`` at the end of a
            # rollout loop): the statements of the body above it run with it then
            rest = rest + block[:i]
        if encoding:  # a ``BatchEncoding``: a dict of tensors, moved whole by its ``.to``
            out.append(Loop(stmt, [], name, [], rest, made=True, encoding=True))
        else:
            out.append(Loop(stmt, [name], None, [], rest, made=True))
    return out


def _after_branches(sem: SemanticModel, stmt) -> list:
    """The statements that run after the ``if``/``else`` branches and ``with`` blocks that
    hold ``stmt`` (``if n: enc = tok(a, ...) else: enc = tok(b, ...)``, then the code that
    reads ``enc``), up to the enclosing loop or function: the rest of the path a value
    made there takes."""
    out: list = []
    cur = stmt
    for _ in range(6):
        p = sem.parent(cur)
        if not isinstance(p, (ast.If, ast.With, ast.AsyncWith)):
            break
        block = sem.block_of(p)
        if block is None:
            break
        k = next((j for j, s in enumerate(block) if s is p), None)
        if k is None:
            break
        out += block[k + 1:]
        cur = p
    return out


def _target_names(t) -> Optional[list]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        out = []
        for e in t.elts:
            sub = _target_names(e)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def loader_of(sem: SemanticModel, expr, _depth: int = 0) -> Optional[list]:
    """The DataLoader constructor calls ``expr`` may be, when every origin is one whose
    batches come out on the CPU (no unknown ``collate_fn``, no dataset that holds or
    moves device tensors, no ``*args``); None otherwise."""
    calls = []
    for o in sem.origins(expr):
        if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Constant) and o.node.value is None:
            continue  # ``loader = None`` until it is built: iterating None would fail anyway
        if o.kind is not OriginKind.VALUE or not isinstance(o.node, ast.Call):
            return None
        call = o.node
        q = sem.call_qualname(call)
        if q in _WRAPPERS and q != "builtins.enumerate" and call.args and _depth < 4:
            inner = loader_of(sem, call.args[0], _depth + 1)  # ``pbar = tqdm(loader)``
            if inner is None:
                return None
            calls.extend(inner)
            continue
        if not N.is_loader(q):
            return None
        # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, ...,
        # generator (12th)); ``**kwargs`` dicts are looked into
        cf = sem.argument(call, "collate_fn", 6)
        ds = sem.argument(call, "dataset", 0)
        gen = sem.argument(call, "generator", 12)
        if UNKNOWN_ARG in (cf, ds, gen):
            return None
        if cf is not None and not _plain_collate(sem, cf):
            return None
        if ds is not None and _may_hold_device(sem, ds, 2):
            return None
        if gen is not None and mentions_device(sem, gen):
            return None
        calls.append(call)
    return calls or None


_COLLATORS = frozenset({"torch.utils.data.default_collate", "torch.utils.data.dataloader.default_collate"})


def _plain_collate(sem: SemanticModel, expr) -> bool:
    """A collate_fn known to leave tensors on the CPU: a Hugging Face data collator,
    torch's ``default_collate``, or a same-file function that never moves anything."""
    for o in sem.origins(expr):
        n = o.node
        if o.kind is OriginKind.IMPORT:
            q = o.qualname or ""
            if q in _COLLATORS:
                continue
            return False
        if o.kind is OriginKind.DEFINITION and isinstance(n, _DEFS):
            if mentions_device(sem, n) or "pin_memory" in sem.segment(n):
                return False
            continue
        if o.kind is OriginKind.VALUE and isinstance(n, ast.Call):
            q = sem.call_qualname(n) or ""
            if q.startswith("transformers.") and "collator" in q.lower() and not mentions_device(sem, n):
                continue
            return False
        return False
    return True


_MADE_FROM = (OriginKind.VALUE, OriginKind.UNKNOWN, OriginKind.PART, OriginKind.ITEM)


def _may_hold_device(sem: SemanticModel, expr, depth: int) -> bool:
    """``expr`` (a dataset) may hold or produce device tensors: its code, the values of
    the names it reads, or a same-file class/function it calls moves something."""
    if mentions_device(sem, expr):
        return True
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            if (clip_part(sem, n) or ("",))[0] == "transform":
                continue  # (CLIP's ``preprocess``: a Compose ending in ToTensor, whatever device the loader names)
            for o in sem.origins(n):
                node = o.node
                if o.kind is OriginKind.DEFINITION and node is not None and mentions_device(sem, node):
                    return True
                # (also what could not be followed, or is unpacked or iterated: ``x[idx]`` of
                # a device tensor, ``a, b = map(lambda t: t.to(device), (a, b))``)
                if o.kind in _MADE_FROM and isinstance(node, ast.expr) and node is not n:
                    if isinstance(node, ast.Call):
                        target = sem.callee(node)
                        if target is not None and mentions_device(sem, target):
                            return True
                    if depth > 0 and _may_hold_device(sem, node, depth - 1):
                        return True
                    if depth == 0 and mentions_device(sem, node):
                        return True  # (the value's own text, past the names followed: ``x = torch.tensor(v, device=d)``)
        elif isinstance(n, ast.Call):
            target = sem.callee(n)
            if target is not None and mentions_device(sem, target):
                return True
            if target is None and _foreign_mentions_device(sem, n.func):
                return True
    return False


def _foreign_mentions_device(sem: SemanticModel, func) -> bool:
    """``func`` names a class or function another module of the project defines (``from
    ds import Windows``) whose code moves something or names a device (a dataset that
    keeps its tensors on the GPU).  Read through the project; False when the module is
    no file of the tree (an installed package: torchvision's datasets, say)."""
    other, bs = sem.sibling_definitions(func)
    return any(b.kind in (BindingKind.CLASS, BindingKind.FUNCTION) and mentions_device(other, b.node) for b in bs)


# ----------------------------------------------------------------------------- frameworks


def framework_in_file(sem: SemanticModel) -> Optional[str]:
    """The training framework (Lightning, Accelerate, DeepSpeed, HF Trainer, ...) one of
    the file's imports (at any depth) belongs to: it places batches itself."""
    found = None
    for n in sem.find(ast.Import, ast.ImportFrom, containing=("import",)):
        if isinstance(n, ast.Import):
            qs = [a.name for a in n.names]
        elif n.level == 0 and n.module:  # a relative import is the user's own package
            qs = [f"{n.module}.{a.name}" for a in n.names] + [n.module]
        else:
            continue
        for q in qs:
            fw = N.framework_of(q)
            if fw is not None:
                found = fw
                break
        if found:
            break
    return found
