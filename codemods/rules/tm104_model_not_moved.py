"""TM104 model-not-moved: the reverse of TM101 (the batch is moved, the model is not)."""

from __future__ import annotations

import ast
import bisect
import os
import re
from typing import Optional

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic import BindingKind, OriginKind, SemanticModel
from ..semantic import names as N
from ..semantic.source import callee_hits
from ._main_guard import is_main_guard
from ._device import (
    DEVICE_KEEP_METHODS, MISMATCH_EVIDENCE, SAME_PLACE_METHODS, Move, bound_before, class_moves_arguments, definition_span, device_move,
    device_like, device_text_at, file_mentions_device,
    framework_in_file, guard_of, is_cpu_device, is_known_device, is_module_class, move_of, moved_call, runs_without_cuda,
    visible_at,
)

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# attributes of a module that move it (or may: ``apply(fn)`` runs user code on every
# submodule, ``type(...)`` casts to a tensor type that may be a CUDA one)
_MOVERS = frozenset({
    "to", "cuda", "cpu", "apply", "to_empty", "_apply", "xpu", "mps", "npu", "ipu", "hpu", "mtia", "type",
    "share_memory", "register_module", "add_module",
})
# methods of a module that leave its parameters where they are
_READS = frozenset({
    "parameters", "named_parameters", "state_dict", "load_state_dict", "zero_grad", "children", "named_children",
    "modules", "named_modules", "buffers", "named_buffers", "train", "eval", "requires_grad_", "extra_repr",
    "get_parameter", "get_submodule", "get_buffer",
})
# calls a module may be passed to that neither move it nor keep it
_HARMLESS = frozenset({
    "builtins.print", "builtins.len", "builtins.str", "builtins.repr", "builtins.isinstance", "builtins.type",
    "builtins.id", "builtins.hasattr", "builtins.format", "torch.save",
})
# the text gate's screen (``_candidates``): ``name = [prefix.]Ctor(`` starting a line,
# outside the body of a class that may be a module
_ASSIGNED = r"[ \t]*(self\.)?[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[ \t]*((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)[ \t]*\("
# the same pattern with possessive quantifiers where giving back can never help (each is
# followed by a character it cannot match), which spares the engine the retries on
# every line that is no such assignment; Python 3.10 has none: the plain one there
_ASSIGNED_POSSESSIVE = (r"[ \t]*+(self\.)?[A-Za-z_]\w*+[ \t]*+(?::[^=\n]*+)?=[ \t]*+((?:[A-Za-z_]\w*+\.)*)"
                        r"([A-Za-z_]\w*+)[ \t]*+\(")
try:
    _ASSIGNED_CALL = re.compile("\n" + _ASSIGNED_POSSESSIVE)  # (a literal first: found by a fast scan)
except re.error:  # pragma: no cover - Python 3.10
    _ASSIGNED_CALL = re.compile("\n" + _ASSIGNED)
_ASSIGNED_FIRST = re.compile(_ASSIGNED)  # the first line
# what stands before the constructor's name on its line: ``model = `` / ``self.model = models.``
_BEFORE_CTOR = re.compile(r"[ \t]*(self\.)?[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[ \t]*(?:[A-Za-z_]\w*\.)*")
_CLASS_HEAD = re.compile(r"class[ \t]+([A-Za-z_]\w*)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_ZOO_IMPORT = re.compile(r"^[ \t]*from[ \t]+torchvision\.models[\w.]*[ \t]+import[ \t]+\(?([^)\n]*)", re.M)
_LAYERS = N.PARAM_LAYERS | {"Sequential"}
_MODULE_BASE = re.compile(r"Module|nn\.|" + "|".join(sorted(_LAYERS)))
_NOT_PLAIN = re.compile(
    r"Module|Model|Layer|Block|Net\b|nn\.|Attention|MLP|Encoder|Decoder|Embedding|Generation|Config|Head|Norm|Conv"
    r"|Transformer|PreTrained|Pretrained"
)
# ``from M import Name`` at the start of a line: the modules whose classes may be a
# user's models built on the CPU (not torch's, a framework's that places its modules, or
# a library's with no modules)
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+\(?([^)\n#;]*)", re.M)
_NOT_USER_MODELS = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "lightning", "pytorch_lightning", "accelerate", "deepspeed",
    "numpy", "sklearn", "scipy", "pandas", "tensorflow", "keras", "jax", "flax", "ignite", "fastai",
})
_CAMEL = re.compile(r"_?[A-Z]\w*[a-z]\w*")
# what shows that an object of an imported class is a module with parameters: they go to
# an optimizer (or are counted), or a state dict is loaded into it
_PARAMETERS = re.compile(r"\.(?:parameters|named_parameters|load_state_dict)\(")
_LAYOUT: list = [None, None]  # the text last asked about and its answer
_CANDIDATES: list = [None, (frozenset(), frozenset())]


def _layout(text: str) -> tuple:
    """The top-level classes of ``text``, read from the text: ``(starts, ends, kinds,
    module_like)``, a class's body ending at the next line that starts at column 0
    (:func:`definition_span`);
    kind ``"module"`` for a class whose header may make it a module (a base spelled like
    one: ``nn.Module``, ``Module``, a layer; or a class of the file), ``"plain"``
    otherwise (none, ``object``, an imported trainer base).  The semantic model decides
    what a class is; this only keeps the gate cheap."""
    if _LAYOUT[0] is text:
        return _LAYOUT[1]
    found = []
    i = 0 if text.startswith("class") else text.find("\nclass") + 1
    first = i == 0 and text.startswith("class")  # (a file whose first line starts a class)
    while i > 0 or first:
        first = False
        m = _CLASS_HEAD.match(text, i)
        if m is not None:
            end = definition_span(text, i)[1]
            found.append((i, end, m.group(1), m.group(2) or ""))
        else:
            end = i + 1
        i = text.find("\nclass", max(end - 1, 0)) + 1
    names = {f[2] for f in found}
    module_like = {n for _, _, n, bases in found if _MODULE_BASE.search(bases)}
    grew = True
    while grew:
        grew = False
        for _, _, n, bases in found:
            if n not in module_like and any(x.strip() in module_like for x in bases.split(",")):
                module_like.add(n)
                grew = True
    kinds = ["module" if _NOT_PLAIN.search(b) or any(x.strip() in names for x in b.split(",")) else "plain"
             for _, _, _, b in found]
    got = _LAYOUT[1] = ([f[0] for f in found], [f[1] for f in found], kinds, module_like)
    _LAYOUT[0] = text
    return got


def _context(text: str, ls: int) -> str:
    """Where the line starting at ``ls`` lies: ``""`` outside the top-level classes,
    else the kind of the class whose body holds it (:func:`_layout`)."""
    starts, ends, kinds, _ = _layout(text)
    k = bisect.bisect_right(starts, ls) - 1
    if k < 0 or starts[k] == ls or ls >= ends[k]:
        return ""
    return kinds[k]


def _candidates(text: str) -> tuple:
    """The callee names a model may be built by in ``text``: ``(plain, attribute)``, the
    constructors of assignments that start a line, to a plain name outside the classes
    that may be modules (a module class of the file, a ``torch.nn`` layer with
    parameters or ``Sequential``, a torchvision / timm builder: ``models.resnet18(``,
    ``create_model(``, a name imported from ``torchvision.models``), or to
    ``self.<name>`` in a plain class (a trainer: a module class or a builder only).  The
    gate and the check read the same answer (:func:`_ctor_keep`): no constructor
    outside it is looked at, with or without the gate."""
    if _CANDIDATES[0] is text:
        return _CANDIDATES[1]
    starts, ends, kinds, classes = _layout(text)
    zoo = set()
    if "torchvision.models" in text:  # (what the pattern holds: a search, not a try at every line)
        for m in _ZOO_IMPORT.finditer(text):
            zoo.update(w.split()[0] for w in m.group(1).split(",") if w.split())
    imported = None  # the class-like names imported from a module of the user's (read when needed)
    # the parts of the text to read: outside the classes that may be modules
    spans, pos = [], 0
    for a, z, kind in zip(starts, ends, kinds):
        if kind == "module":
            if pos < a:
                spans.append((pos, a))
            pos = z
    if pos < len(text):
        spans.append((pos, len(text)))
    plain, attr = set(), set()
    if not any(text.find(".to(", a, z) >= 0 or text.find(".cuda(", a, z) >= 0
               or (text.find("device=", a, z) >= 0 and made_on_device_line(text, a, z)) for a, z in spans):
        spans = []  # (the tensors' move, or a factory's ``device=``, stands where the model's calls do: outside the modules' code)
    for a, z in spans:
        found = list(_ASSIGNED_CALL.finditer(text, a - 1 if a else 0, z))
        first = _ASSIGNED_FIRST.match(text, 0, z) if a == 0 else None
        for m in ([first] if first is not None else []) + found:
            me, prefix, name = m.groups()
            if not prefix and name not in classes and _CAMEL.fullmatch(name) and imported is None:
                imported = _imported_classes(text) if _PARAMETERS.search(text) else frozenset()
            if name in classes or name in zoo or name == "create_model" or prefix.endswith("models.") \
                    or (not prefix and imported is not None and (name in imported or "*" in imported)):
                if not me:
                    plain.add(name)
                elif _context(text, m.start() + (text[m.start()] == "\n")) == "plain":
                    attr.add(name)
            elif name in _LAYERS and not me:
                plain.add(name)
    got = _CANDIDATES[1] = (frozenset(plain), frozenset(attr))
    _CANDIDATES[0] = text
    return got


# a tensor factory told its device on the line that calls it (``noise = torch.randn(b, nz,
# 1, 1, device=device)``): what lets a file whose tensors are made on the device, not
# moved, through the gate, and what ``_arg_move`` takes for such a move
_FACTORY_ON_DEVICE = re.compile(r"\b(?:torch|th)\.\w+\([^\n]*\bdevice=")


def made_on_device_line(text: str, start: int, end: int) -> bool:
    return _FACTORY_ON_DEVICE.search(text, start, end) is not None


def _imported_classes(text: str) -> frozenset:
    """The class-like names (``CamelCase``) ``text`` imports with ``from M import ...``
    from an absolute module ``M`` of no library in :data:`_NOT_USER_MODELS` (asked only
    of a text that reads a module's parameters or loads a state dict: :data:`_PARAMETERS`)."""
    out = set()
    if "import" not in text:
        return frozenset()
    for m in _FROM_IMPORT.finditer(text):
        if m.group(1).split(".")[0] in _NOT_USER_MODELS:
            continue
        for w in m.group(2).split(","):
            p = w.split()
            if p and (_CAMEL.fullmatch(p[-1]) or p[-1] == "*"):
                out.add(p[-1])  # (``*``: ``from models import *`` may bring any class)
    return frozenset(out)


def _ctor_keep(plain: frozenset, attr: frozenset):
    """A ``find_named`` ``keep``: the hits of the candidate names written as the callee
    of an assignment that starts its line, to a plain name (``plain``) outside the
    classes that may be modules, or to ``self.<name>`` (``attr``) in a plain class:
    what :func:`_candidates` reads."""
    names = tuple(sorted(plain | attr))
    hits_of = callee_hits(names)

    def keep(text: str, start: int, end: int, hits) -> list:
        out = []
        for h in hits_of(text, start, end, hits):
            ls = text.rfind("\n", 0, h) + 1
            m = _BEFORE_CTOR.fullmatch(text, ls, h)
            if m is None:
                continue
            name = max((n for n in names if text.startswith(n, h)), key=len)
            where = _context(text, ls)
            if where != "module" and name in plain and not m.group(1) or where == "plain" and name in attr \
                    and m.group(1):
                out.append(h)
        return out

    return keep


def _no_device_kw(call: ast.Call) -> bool:
    return not any(k.arg in ("device", "device_map") or k.arg is None for k in call.keywords)


def _weighted_layer(sem: SemanticModel, call: ast.Call) -> Optional[bool]:
    """True: ``call`` builds a ``torch.nn`` layer that owns parameters on the CPU; None:
    it may place them (``device=``, ``**kwargs``); False: no such layer."""
    layer = N.nn_layer(sem.call_qualname(call))
    if layer not in N.PARAM_LAYERS:
        return False
    if not _no_device_kw(call):
        return None
    switch = N.PARAM_SWITCHES.get(layer)
    if switch is not None:
        v = sem.keyword(call, switch)
        if v is not None and not (isinstance(v, ast.Constant) and v.value is True):
            return False
    return True


def _zoo(sem: SemanticModel, call: ast.Call) -> bool:
    q = sem.call_qualname(call) or ""
    return N.is_model_zoo(q) and q.startswith(("torchvision.models.", "timm."))


def _class_weighted(sem: SemanticModel, cls: ast.ClassDef, depth: int = 0) -> Optional[bool]:
    """A same-file module class whose ``__init__`` (or a same-file base's) builds a layer
    with parameters on the CPU (a ``torch.nn`` layer, ``nn.Parameter``, a torchvision
    builder, a same-file module class that does); None when one of its layers may be
    placed elsewhere (``device=``, ``**kwargs``)."""
    if depth > 3:
        return False
    found = False
    inits = [i for c in _lineage(sem, cls)
             for i in [next((s for s in c.body if isinstance(s, _DEFS) and s.name == "__init__"), None)] if i is not None]
    for init in inits:
        for n in ast.walk(init):
            if not isinstance(n, ast.Call):
                continue
            got = _weighted_layer(sem, n)
            if got is None:
                return None
            if got:
                found = True
                continue
            q = sem.call_qualname(n) or ""
            if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") or _zoo(sem, n):
                if not _no_device_kw(n):
                    return None
                found = True
                continue
            target = sem.callee(n)
            if isinstance(target, ast.ClassDef) and target is not cls and is_module_class(sem, target):
                sub = _class_weighted(sem, target, depth + 1)
                if sub is None:
                    return None
                found = found or sub
    return found


def _places_itself(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    """The class moves itself or its inputs, or works on the CPU on purpose: a method
    calls ``self.to(...)``/``self.cuda()``/``.cpu()`` (or moves every submodule it builds,
    :func:`_moves_its_submodules`), names a device (``self.device``),
    or moves what it receives (:func:`class_moves_arguments`)."""
    return any(_places_itself_here(sem, c) for c in _lineage(sem, cls))


def _lineage(sem: SemanticModel, cls: ast.ClassDef) -> list:
    """``cls`` and its same-file bases (at most 8)."""
    classes, work = [], [cls]
    while work and len(classes) < 8:
        c = work.pop()
        if all(c is not k for k in classes):
            classes.append(c)
            work.extend(b for b in map(sem.class_def, c.bases) if b is not None)
    return classes


def _places_itself_here(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    if class_moves_arguments(sem, cls) or _moves_its_submodules(sem, cls):
        return True
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute):
            if n.attr in ("cpu", "set_default_device"):
                return True
            v = n.value
            mine = (isinstance(v, ast.Name) and v.id == "self") or (
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super")
            if mine and (n.attr in _MOVERS or n.attr == "device"):
                return True  # ``self.to(d)``, ``super().cuda()``, ``self.device``
        elif isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in ("super", "isinstance")) and any(
            isinstance(a, ast.Name) and a.id == "self" for a in [*n.args, *(k.value for k in n.keywords)]
        ):
            return True  # ``place(self)``: code the file may not show gets the module
    return False


def _moves_its_submodules(sem: SemanticModel, cls: ast.ClassDef) -> bool:
    """``__init__`` moves every submodule it builds to a device (``self.network =
    nn.Sequential(...)`` then ``self.network.to(device)``: YuxuanZhao23's VGG): the
    class's parameters are all placed.  A submodule is an attribute set from a call of a
    ``torch.nn`` class or of a module class of the file; a move,
    ``self.<attr>.to(<a device>)`` or ``.cuda()`` anywhere in ``__init__`` (not a dtype
    cast)."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return False
    built, moved = set(), set()
    for st in init.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call):
            t = st.targets[0]
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                q = sem.call_qualname(st.value) or ""
                target = sem.callee(st.value)
                if q.startswith("torch.nn.") or isinstance(target, ast.ClassDef) and is_module_class(sem, target):
                    built.add(t.attr)
    for call in ast.walk(init):  # (also under ``if use_cuda:``)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            r = call.func.value
            if isinstance(r, ast.Attribute) and isinstance(r.value, ast.Name) and r.value.id == "self":
                mv = move_of(sem, call)
                if mv is not None and (mv.style == "cuda" or not is_cpu_device(sem, mv.device)):
                    moved.add(r.attr)
    return bool(built) and built <= moved


def _model_of(sem: SemanticModel, call: ast.Call, cache: dict) -> Optional[str]:
    """What ``call`` builds when it is a model with parameters made on the CPU: the
    kind for the message; None otherwise."""
    if not _no_device_kw(call):
        return None
    target = sem.callee(call)
    if isinstance(target, ast.ClassDef):
        key = ("TM104 class", id(target))
        ok = cache.get(key)
        if ok is None:  # (whether it places itself is asked last, of a model that is reported)
            ok = cache[key] = is_module_class(sem, target) and bool(_class_weighted(sem, target))
        if not ok:
            return None
        return "a module class of this file with layers that own parameters"
    if target is not None:
        return None
    q = sem.call_qualname(call)
    if _weighted_layer(sem, call):
        return f"a `{q}` layer"
    if N.is_sequential(q):
        layers = [a for a in call.args if isinstance(a, ast.Call)]
        if any(isinstance(a, ast.Starred) for a in call.args) or call.keywords:
            return None
        for a in layers:
            w = _weighted_layer(sem, a)
            if w is None:
                return None
            t = sem.callee(a)
            if isinstance(t, ast.ClassDef) and (not is_module_class(sem, t) or _places_itself(sem, t)
                                                 or _class_weighted(sem, t) is None):
                return None
        if any(_weighted_layer(sem, a) for a in layers):
            return "an `nn.Sequential` of layers that own parameters"
        return None
    if _zoo(sem, call):
        return f"a `{q}` model"
    return _imported_model(sem, call, q)


# what :func:`_imported_model` says of a class whose module this run cannot read
_UNSEEN = "a class of a module not read here"


def _imported_model(sem: SemanticModel, call: ast.Call, q: Optional[str]) -> Optional[str]:
    """``Name(...)`` of a class imported from a module of the user's (``from M import
    Name``, :func:`_imported_classes`), no argument of which names a device: when the
    project holds ``M``, what it is there (a module class with layers that own
    parameters, placing nothing itself); else :data:`_UNSEEN` (the caller asks for more
    evidence).  Returns :data:`_IMPORTED`: the module is read later, by
    :func:`_imported_kind`."""
    f = call.func
    if isinstance(f, ast.Name) and not q:
        # ``from models import *`` bringing a class (or a builder function) of a module of the
        # project (read when certain)
        other, bs = sem.star_binding(f)
        if other is not None and len(bs) == 1 and bs[0].kind in (BindingKind.CLASS, BindingKind.FUNCTION):
            q = f"{os.path.splitext(os.path.basename(other.path))[0]}.{f.id}"
    if not isinstance(f, ast.Name) or not q or "." not in q or not _CAMEL.fullmatch(f.id):
        return None
    mod, _, name = q.rpartition(".")
    if mod.split(".")[0] in _NOT_USER_MODELS or mod.startswith("."):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None  # (``Net(**cfg)``: the configuration may name a device)
    if _told_a_device(call):
        return None  # the class is told where to go
    return _IMPORTED


def _told_a_device(call: ast.Call) -> bool:
    """An argument of ``call`` names a device (``device``, ``cuda``, ``gpu``, ``rank``
    in a name, an attribute or a string)."""
    for a in [*call.args, *(k.value for k in call.keywords)]:
        for n in ast.walk(a):
            word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
                n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else ""
            if re.search(r"device|cuda|gpu|rank", word, re.I):
                return True
    return False


# what :func:`_imported_model` says of such a class before its module is read (the
# caller reads it, :func:`_imported_kind`, only for a model that gets a moved tensor)
_IMPORTED = "a class of a module of the user's"


def _imported_kind(sem: SemanticModel, call: ast.Call) -> Optional[str]:
    """What the class ``call`` builds (:func:`_imported_model`) is in the project's file
    of its module: a module class with layers that own parameters, placing nothing
    itself (a description), anything else (None); :data:`_UNSEEN` when the project
    does not hold that module."""
    other, cls = _imported_class(sem, call)
    if other is _UNSEEN:
        return _UNSEEN
    mod = (sem.call_qualname(call) or "").rpartition(".")[0] or (
        os.path.splitext(os.path.basename(other.path))[0] if other is not None else "")
    if cls is None or not is_module_class(other, cls) or not _class_weighted(other, cls) or _places_itself(other, cls):
        return None
    name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) \
        else cls.name
    if name != cls.name:  # (a builder function: :func:`_built_class`; the module the class is defined in)
        mod = os.path.splitext(os.path.basename(other.path))[0]
        return f"a `{cls.name}`, a module class of `{mod}` with layers that own parameters"
    return f"a module class of `{mod}` with layers that own parameters"


def _imported_class(sem: SemanticModel, call: ast.Call, depth: int = 0) -> tuple:
    """``(model of its file, class)`` of the class of the project that ``call`` builds
    (:func:`_imported_model`), also through a builder function of that module
    (:func:`_built_class`); ``(_UNSEEN, None)`` when the project does not hold its
    module, ``(model, None)`` or ``(None, None)`` when that file defines no such class."""
    if isinstance(call.func, (ast.Name, ast.Attribute)):
        # (where the class is defined: through a package's ``__init__`` that re-exports it)
        other, bs = sem.sibling_definitions(call.func)
        if other is not None:
            b = bs[0] if len(bs) == 1 else None  # (none: a name the module binds by a star import, or ``__getattr__``)
            if b is not None and isinstance(b.node, ast.FunctionDef) and b.kind is BindingKind.FUNCTION and depth == 0:
                return _built_class(other, b.node)
            node = b.node if b is not None and b.kind is BindingKind.CLASS else None
            return other, node if isinstance(node, ast.ClassDef) and other.parent(node) is other.module else None
    q = sem.call_qualname(call)
    if not q:
        return _UNSEEN, None
    mod, _, name = q.rpartition(".")
    project = sem.project
    path = project.module_file(mod, sem.path) if project is not None and sem.path else None
    if path is None:
        return _UNSEEN, None
    other = project.model_for(path)
    cls = None if other is None else next(
        (s for s in other.find(ast.ClassDef, containing=(name,)) if s.name == name and other.parent(s) is other.module),
        None)
    return other, cls


def _built_class(other: SemanticModel, fn: ast.FunctionDef) -> tuple:
    """``(model, class)`` of the class a module-level builder function of ``other``
    returns a fresh instance of (kuangliu's ``def ResNet18(): return ResNet(BasicBlock,
    [2, 2, 2, 2])``): its body, past a docstring, is one ``return Name(...)`` (or ``model =
    Name(...)`` then ``return model``) of a class
    of that module or one it imports from the project, no argument of which names a
    device, unpacking only the function's own ``*args`` / ``**kwargs`` (the caller's,
    read by :func:`_imported_model`); ``(other, None)`` otherwise."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        and isinstance(fn.body[0].value.value, str) else fn.body
    if len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 \
            and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return) \
            and isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id:
        body = [ast.Return(value=body[0].value)]  # ``model = ResNet(...)`` then ``return model``: the same
    if fn.decorator_list or other.parent(fn) is not other.module or len(body) != 1 \
            or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return other, None
    call = body[0].value
    own = {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    unpacked = [a.value for a in call.args if isinstance(a, ast.Starred)] + [k.value for k in call.keywords
                                                                              if k.arg is None]
    if not isinstance(call.func, ast.Name) or _told_a_device(call) \
            or any(k.arg in ("device", "device_map") for k in call.keywords) \
            or any(not (isinstance(u, ast.Name) and u.id in own) for u in unpacked):
        return other, None
    target = other.callee(call)
    if isinstance(target, ast.ClassDef):
        return other, target if other.parent(target) is other.module else None
    if target is not None:
        return other, None
    got = _imported_class(other, call, depth=1)
    return got if got[0] is not _UNSEEN and got[0] is not None else (other, None)


def _optimized(sem: SemanticModel, ctor: ast.Call) -> bool:
    """The parameters of what ``ctor`` builds go to a ``torch.optim`` optimizer
    (``optim.Adam(model.parameters())``): it is a module with parameters."""
    for e in sem.value_uses(ctor, through=_through(sem)).uses:
        p = sem.parent(e)
        if not (isinstance(p, ast.Attribute) and p.value is e and p.attr in ("parameters", "named_parameters")):
            continue
        for a in sem.ancestors(p):
            if isinstance(a, ast.stmt):
                break
            if isinstance(a, ast.Call) and (sem.call_qualname(a) or "").startswith("torch.optim."):
                return True
    return False


def _through(sem: SemanticModel):
    def through(e):
        p = sem.parent(e)
        if isinstance(p, ast.Attribute) and p.value is e and p.attr in SAME_PLACE_METHODS:
            c = sem.parent(p)
            if isinstance(c, ast.Call) and c.func is p:
                return c  # ``model.eval()``: the same module
        if isinstance(p, ast.Call) and p.args and p.args[0] is e and sem.call_qualname(p) == "torch.compile":
            return p
        return None

    return through


def _model_calls(sem: SemanticModel, ctor: ast.Call, cls: Optional[ast.ClassDef], cm=None) -> Optional[list]:
    """The calls of the model ``ctor`` builds (``model(x)``, ``model.forward(x)``,
    ``self.net(x)``) wherever it goes (names, ``self`` attributes, parameters of
    same-file functions); None when it may be moved or placed on some way: a move
    (``.to``, ``.cuda``, ``.apply``, ``to_empty``), a callee of another file
    (``accelerator.prepare``, ``DistributedDataParallel``, a trainer), a method of its
    class that moves it, a container, anything the model cannot follow.  ``cm``: the
    model of ``cls``'s file, when it is another file of the project."""
    cm = cm or sem
    flow = sem.value_uses(ctor, through=_through(sem))
    if flow.escapes:
        return None
    calls, stores = [], []
    for e in flow.uses:
        if any(isinstance(a, ast.ClassDef) and is_module_class(sem, a) for a in sem.ancestors(e)):
            return None  # held by another module (``self.inner = model``): moved with it, maybe
        p = sem.parent(e)
        if isinstance(p, ast.Call) and p.func is e:
            calls.append(p)
            continue
        if isinstance(p, ast.Attribute) and p.value is e:
            chain, top = [p.attr], p
            while isinstance(sem.parent(top), ast.Attribute) and sem.parent(top).value is top:
                top = sem.parent(top)
                chain.append(top.attr)
            if any(a in _MOVERS for a in chain):
                return None
            item = top  # (a store through items too: ``model.classifier[6] = nn.Linear(...)``)
            while isinstance(sem.parent(item), (ast.Attribute, ast.Subscript)) and sem.parent(item).value is item:
                item = sem.parent(item)
            if item is not top and isinstance(item.ctx, ast.Store):
                top = item
            if isinstance(top.ctx, ast.Store):
                st = sem.parent(top)
                value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else None
                if not _plain_value(sem, value):
                    stores.append(top)  # ``model.fc = nn.Linear(...)``: a new (CPU) submodule
                continue
            called = isinstance(sem.parent(top), ast.Call) and sem.parent(top).func is top
            if called and len(chain) == 1:
                if p.attr == "forward":
                    calls.append(sem.parent(top))
                elif p.attr in _READS:
                    pass
                elif cls is not None and cm.method(cls, p.attr) is not None:
                    m = cm.method(cls, p.attr)
                    if any(isinstance(n, ast.Attribute) and n.attr in _MOVERS for n in ast.walk(m)):
                        return None
                elif cls is not None and _submodule(cm, cls, p.attr):
                    calls.append(sem.parent(top))  # ``model.decoder(z)``: a part of the model runs
                else:
                    return None  # a library method: it may move the module
            continue
        if isinstance(p, ast.Expr) or isinstance(p, ast.FormattedValue):
            continue
        call = sem.parent(p) if isinstance(p, ast.keyword) else p
        if isinstance(call, ast.Call) and call.func is not e and sem.call_qualname(call) in _HARMLESS:
            continue
        if isinstance(p, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in p.ops):
            continue
        return None
    return calls, stores


def _submodule(sem: SemanticModel, cls: ast.ClassDef, attr: str) -> bool:
    """``attr`` of the same-file module class ``cls`` is a layer its methods build
    (``self.decoder = Decoder(...)``, every store a call of a module class of the file or
    of a ``torch.nn`` layer), and no class of its lineage defines it otherwise: calling
    it runs part of the model and moves nothing.  Every base of the lineage is a class
    of the file or ``torch.nn.Module`` (a library base may define a method that moves)."""
    lineage = _lineage(sem, cls)
    for c in lineage:
        info = sem.class_info(c)
        if attr in info.methods or attr in info.class_attrs:
            return False
        for b in c.bases:
            if sem.class_def(b) is None and sem.qualname(b) not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                return False
    stores = [st for c in lineage for st in sem.class_info(c).attrs.get(attr, ())]
    if not stores:
        return False
    for _, value, _ in stores:
        if not isinstance(value, ast.Call):
            return False
        target = sem.callee(value)
        if isinstance(target, ast.ClassDef):
            if not is_module_class(sem, target):
                return False
            continue
        q = sem.call_qualname(value)
        if q and q.endswith(".from_pretrained"):
            q = q[: -len(".from_pretrained")]  # ``nn.Embedding.from_pretrained(weights)``: a layer too
        if target is not None or not q or not (N.is_module_class(q) or N.is_sequential(q)):
            return False
    return True


def _plain_value(sem: SemanticModel, v) -> bool:
    """``v`` (stored in an attribute of the model) is no module: a constant, a tensor
    method's result (``model.h.detach()``), a torch function's that is no module class."""
    if isinstance(v, ast.Constant):
        return True
    if not isinstance(v, ast.Call):
        return False
    if isinstance(v.func, ast.Attribute) and v.func.attr in DEVICE_KEEP_METHODS | {"detach", "clone"} \
            and not sem.qualnames(v.func):
        return True
    q = sem.call_qualname(v)
    return bool(q) and N.is_torch(q) and not N.is_module_class(q) and not N.is_model_zoo(q) \
        and not q.startswith("torch.nn.")


def _reaches(sem: SemanticModel, call: ast.Call, ctor: ast.Call) -> bool:
    """The callee of ``call`` may hold what ``ctor`` built (through the names it is read
    by: a later rebinding to another model does not count)."""
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "forward":
        f = f.value
    if not isinstance(f, ast.Name):
        return True  # (``self.net``: value_uses followed the attribute's loads)
    seen, work = set(), [f]
    while work:
        e = work.pop()
        for o in sem.origins(e):
            n = o.node
            if n is ctor:
                return True
            if o.kind is OriginKind.VALUE and isinstance(n, ast.Call) and id(n) not in seen:
                seen.add(id(n))
                if isinstance(n.func, ast.Attribute) and n.func.attr in SAME_PLACE_METHODS:
                    work.append(n.func.value)
                elif sem.call_qualname(n) == "torch.compile" and n.args:
                    work.append(n.args[0])
    return False


def _sure_move(sem: SemanticModel, mv: Move) -> bool:
    """A move to a device that is not the CPU on every way: ``.cuda()``, ``.to(d)`` with
    ``d`` a known device value (``"cuda" if torch.cuda.is_available() else "cpu"``) or
    made by ``torch.device(...)``; not a value that may be a dtype (``x.to(dtype)``)."""
    if mv.style == "cuda":
        return mv.device is None or isinstance(mv.device, ast.Constant) or is_known_device(sem, mv.device)
    if mv.style != "to" or mv.device is None or is_cpu_device(sem, mv.device):
        return False
    if is_known_device(sem, mv.device):
        return True
    origins = sem.origins(mv.device)
    if bool(origins) and all(
        o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call) and sem.call_qualname(o.node) in N.DEVICE
        for o in origins
    ):
        return True
    # ``if args.device is None: device = "cuda" if torch.cuda.is_available() else "cpu"``,
    # ``else: device = args.device``: some way is the GPU where there is one, the others
    # the user's choice (a name spelled like a device)
    return isinstance(mv.device, ast.Name) and device_like(sem, mv) and any(
        o.kind is OriginKind.VALUE and is_known_device(sem, o.node) and not is_cpu_device(sem, o.node) for o in origins)


def _arg_move(sem: SemanticModel, call: ast.Call) -> Optional[Move]:
    for a in [*call.args, *(k.value for k in call.keywords if k.arg is not None)]:
        if isinstance(a, ast.Starred):
            a = a.value
        mv = device_move(sem, a)
        if mv is not None and N.is_tensor_factory(sem.call_qualname(mv.call)) and not _factory_line(sem, mv.call):
            continue  # (a factory told ``device=`` on another line than its own: not what the gate reads)
        if mv is not None and _sure_move(sem, mv):
            return mv
    return None


def _factory_line(sem: SemanticModel, call: ast.Call) -> bool:
    """``call`` (a factory told ``device=``) is written as the gate reads it: on its first
    line (:data:`_FACTORY_ON_DEVICE`)."""
    a, _ = sem.offsets(call)
    z = sem.text.find("\n", a)
    return made_on_device_line(sem.text, a, len(sem.text) if z < 0 else z)


def _ifs_around(sem: SemanticModel, node) -> list:
    """The ``if`` statements around ``node`` in its scope (not ``if __name__ == "__main__":``)."""
    out = []
    for a in sem.ancestors(node):
        if isinstance(a, (*_DEFS, ast.ClassDef, ast.Lambda, ast.Module)):
            break
        if isinstance(a, ast.If) and not is_main_guard(a):
            out.append(a)
    return out


def _in_with(sem: SemanticModel, node) -> bool:
    """``node`` runs inside a ``with`` block of its own scope (``with torch.device("cuda"):``
    builds modules on that device)."""
    for a in sem.ancestors(node):
        if isinstance(a, (*_DEFS, ast.ClassDef, ast.Lambda, ast.Module)):
            return False
        if isinstance(a, (ast.With, ast.AsyncWith)):
            return True
    return False


def _device_at(sem: SemanticModel, dev, at, depth: int = 0) -> Optional[str]:
    """:func:`device_text_at`, and through the values a parameter or a ``self`` attribute
    is bound to: ``dev`` (in ``train(net, loader, dev)``, or ``self.device`` set from
    ``__init__(self, model, device)``) named at ``at`` by what every call site passes,
    when all of them name the same device there."""
    t = device_text_at(sem, dev, at)
    if t is not None or depth > 3:
        return t
    vals = None
    if isinstance(dev, ast.Name):
        bs = sem.reaching(dev)
        if len(bs) == 1 and bs[0].kind is BindingKind.PARAMETER and isinstance(bs[0].scope.node, _DEFS):
            pv = sem.param_values(bs[0].scope.node, bs[0].name)
            if pv.complete and pv.values:
                vals = [v for v, _, _ in pv.values]
    elif isinstance(dev, ast.Attribute):
        vals = sem.attribute_values(dev)
    if not vals or any(v is None for v in vals):
        return None
    texts = {_device_at(sem, v, at, depth + 1) for v in vals}
    return texts.pop() if len(texts) == 1 else None


class ModelNotMoved(Rule):
    """## What it does
    Finds a model with parameters that is never moved to a device while a tensor moved
    there (`x.to(device)`, `x.cuda()`, the output of another moved model) or made there
    (`torch.randn(b, nz, device=device)`) goes into it:
    the reverse of TM101.  The model is a same-file `nn.Module` class whose `__init__`
    builds layers that own parameters, a `torch.nn` layer with parameters, an
    `nn.Sequential` of them, a torchvision / timm builder, or a class imported from a
    module of the user's (`from models.net import Net`: when the project holds that
    module, a module class there as above that places nothing itself; when it does not,
    a class whose parameters go to a `torch.optim` optimizer in this file), built
    without `device=` (nor an argument naming a device, a GPU or a rank, nor
    `**kwargs`) and bound by an assignment (`model = Net(...)`, `self.model =
    Net(...)`).  It is followed through names, `self` attributes, parameters of
    same-file functions and their returns, and `model.eval()`/`torch.compile(model)`;
    its calls are `model(x)`, `model.forward(x)` and the calls of the layers its class
    builds (`model.decoder(z)`; for a class of another file of the project, read in that
    file: `nn.Embedding.from_pretrained(...)` is a layer too, and a method of its own that
    moves nothing is no move).  A moved tensor is followed through names and methods that keep
    it where it is (`batch = tuple(t.to(device) for t in batch)`, then `x, y = batch`); the
    device must be one that is not the CPU on every way (`.cuda()`,
    a known device value, or `torch.device(...)`; also an attribute the script sets on its
    argument namespace before anything uses it: `args.device = torch.device(...)` right
    after `args = parser.parse_args()`, read as `args.device` or in `train(args)`); one
    way of which is the GPU and the others a name the user sets (`else: device =
    args.device`) counts too: the default fails on a GPU, and the fix moves the model to
    that same device.

    Not reported: a model moved anywhere (`.to`, `.cuda`, `.apply`, `to_empty`, a method
    of its class that moves it), passed to code of another file (`accelerator.prepare`,
    `fabric.setup`, `DistributedDataParallel`, FSDP, DeepSpeed, a trainer, an unknown
    helper) or into a container, built under a `with` block (`with torch.device("cuda"):`)
    or where CUDA is not available (the `else` of `if torch.cuda.is_available():`),
    or with `device=`/`device_map=`/`**kwargs`, or held by another module (`self.inner =
    model` in a module class: moving that one moves it); a class that moves itself or
    its inputs, names a device, calls `.cpu()` or hands `self` to other code; files that
    use a training framework or set a default device.

    ## Why is this bad?
    The first layer gets a CUDA input and CPU weights: the forward pass fails with
    `Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be
    the same` or `Expected all tensors to be on the same device`.

    ## Example
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    ```

    ## Fix safety
    The fix moves the model where it is built, with the device the tensors were moved
    with: `.to(device)` when that device can be named there (the same variable or the
    same known value, bound before the model is built: see TM103), `.cuda()` for an
    unconditional `.cuda()`.  When the tensors are moved under a condition (`if
    args.cuda: x = x.cuda()`), the same condition is copied into a statement right
    after the model is built (`if args.cuda: model = model.cuda()`), when its names are
    bound there.  `Module.to` moves the parameters in place, so an optimizer built
    from `model.parameters()` before the move keeps working.  It is safe when every
    call of the model gets a tensor moved the same way, unsafe otherwise (some call may
    give it CPU tensors on purpose), unsafe for an unconditional `.cuda()` copied
    from another function (that function may run only where CUDA is), and unsafe for a
    class of a module this run does not read (a class that places itself in `__init__`
    is not seen there; moving it again would be harmless).  A model changed
    after it is built (`model.fc = nn.Linear(...)`, `model.classifier[6] = ...`: the new
    head would stay on the CPU) is reported only.  Report only when the device cannot
    be named where the model is built, or the tensors are moved in more than one way.
    """

    code = "TM104"
    name = "model-not-moved"
    pitfall = "device"
    summary = "a tensor moved to the GPU goes into a model that is never moved"
    severity = Severity.BUG
    needles = (".to(", ".cuda(", "device=")
    verify = Verify("device", MISMATCH_EVIDENCE)
    corpus_minimum = (2, 3)
    valid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2).to('cuda')\nx = torch.randn(3, 4)\n"
        "print(model(x.to('cuda')))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\nmodel.cuda()\nprint(model(torch.randn(3, 4).cuda()))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\nmodel, opt = accelerator.prepare(model, opt)\n"
        "print(model(torch.randn(3, 4).to('cuda')))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\nprint(model(torch.randn(3, 4).to('cpu')))\n",
        "import torch\nfrom torch import nn\nwith torch.device('cuda'):\n    model = nn.Linear(4, 2)\n"
        "print(model(torch.randn(3, 4).to('cuda')))\n",
    )
    invalid = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\nx = torch.randn(3, 4)\n"
        "print(model(x.to('cuda')))\n",
        "import torch\nfrom torch import nn\nmodel = nn.Sequential(nn.Linear(4, 2), nn.ReLU())\n"
        "x = torch.randn(3, 4).cuda()\nprint(model(x))\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The text gate, tighter than the needles: a model may be built here
        (:func:`_candidates`); ``check`` looks at no other constructor."""
        has = has or text.__contains__
        if not file_mentions_device(text, has) or not super().may_match(text, has):
            return False
        plain, attr = _candidates(text)
        # (the default-device calls after the candidates: most files have none of either)
        return bool(plain or attr) and not (has("set_default_device") or has("set_default_tensor_type"))

    def check(self, ctx: Context):
        if not self.may_match(ctx.text, ctx.has):
            return
        sem = ctx.sem
        plain, attr = _candidates(ctx.text)
        ctors = sem.find_named((ast.Call,), plain | attr, keep=_ctor_keep(plain, attr))
        if not ctors:
            return
        framework = ...
        for ctor in ctors:
            f = self._check_ctor(ctx, ctor)
            if f is None:
                continue
            if framework is ...:
                framework = framework_in_file(sem)
            if framework is not None:
                return
            yield f

    def _check_ctor(self, ctx: Context, ctor: ast.Call):
        sem = ctx.sem
        stmt = sem.parent(ctor)
        if not (isinstance(stmt, ast.Assign) and stmt.value is ctor and len(stmt.targets) == 1):
            return None
        t = stmt.targets[0]
        if not (isinstance(t, ast.Name) or isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                and t.value.id == "self" and sem.instance_class(t.value) is not None):
            return None
        if _in_with(sem, stmt) or any(isinstance(a, ast.ClassDef) and is_module_class(sem, a)
                                      for a in sem.ancestors(stmt)):
            return None  # (in a module's own code: a submodule, or a layer made in ``forward``)
        if runs_without_cuda(sem, stmt):
            return None  # (``else: model = Net()`` of ``if torch.cuda.is_available():``: no GPU there)
        what = _model_of(sem, ctor, ctx.cache)
        if what is None:
            return None
        target = sem.callee(ctor)
        got = _model_calls(sem, ctor, target if isinstance(target, ast.ClassDef) else None)
        if got is None and what is _IMPORTED:
            # a method of a class of another file of the project (``model.encoder(x)``,
            # ``model.compute_prototypes(...)``): read in that file (only now: most such
            # values are no model)
            other, cls = _imported_class(sem, ctor)
            if cls is not None and other is not _UNSEEN:
                got = _model_calls(sem, ctor, cls, other)
        if got is None or not got[0]:
            return None
        calls, stores = got
        calls = [c for c in calls if _reaches(sem, c, ctor)]
        moves = [_arg_move(sem, c) for c in calls]
        known = [(c, m) for c, m in zip(calls, moves) if m is not None]
        if not known:
            return None
        if what is _IMPORTED:
            what = _imported_kind(sem, ctor)  # (its module read only now: most such values are no model)
            if what is None:
                return None
        unseen = what is _UNSEEN
        if unseen:
            if not _optimized(sem, ctor):
                return None
            # (its module is not read here: a class that places itself in ``__init__`` is not seen)
            what = (f"a module whose parameters go to an optimizer; `{sem.segment(ctor.func)}` comes from a module"
                    " not read here: unless it places itself")
        if isinstance(target, ast.ClassDef):
            key = ("TM104 places", id(target))
            places = ctx.cache.get(key)
            if places is None:
                places = ctx.cache[key] = _places_itself(sem, target)
            if places:
                return None
        call, move = known[0]
        tname = sem.segment(stmt.targets[0])
        made = N.is_tensor_factory(sem.call_qualname(move.call))
        how = f"made with `device={sem.segment(move.device)}`" if made else f"moved with `.{move.style}(...)`"
        msg = (
            f"`{tname}` ({what}) is never moved to a device, but `{sem.segment(call.func)}()` gets a tensor {how}"
            f" (line {call.lineno}); on a GPU the forward pass fails ('Expected all tensors to"
            " be on the same device', 'Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)"
            " should be the same')"
        )
        plan = self._plan(sem, stmt, ctor, known)
        if stores and not isinstance(plan, str):
            plan = (f"`{sem.segment(stores[0])}` is set after it is built (line {stores[0].lineno}): move it after"
                    " that")
        if isinstance(plan, str):
            return ctx.finding(self, ctor, f"{msg}; move the model where it is built ({plan})")
        text, guard = plan
        safety = Safety.SAFE if all(m is not None for m in moves) and not unseen else Safety.UNSAFE
        if text == "cuda()" and not guard and any(sem.scope_of(m.call) is not sem.scope_of(ctor) for _, m in known):
            safety = Safety.UNSAFE  # (an unconditional ``.cuda()`` in code that may run only where CUDA is)
        if not guard:
            fix_text = f".{text}"

            def build(view, ctor=ctor, fix_text=fix_text):
                node = view.node(ctor)
                return {node: moved_call(node, fix_text)}

            return ctx.finding(self, ctor, f"{msg}; move it: `{fix_text[1:]}`",
                               Fix(build, safety, message=f"move the model with `{fix_text[1:]}`"))
        line = f"if {guard}:\n    {tname} = {tname}.{text}\n"

        def build_guarded(view, stmt=stmt, line=line):
            import libcst as cst

            code = line.replace("\n    ", "\n" + view.module.default_indent)
            return view.insert_after(view.statement(stmt), cst.parse_statement(code))

        return ctx.finding(self, ctor, f"{msg}; move it under the same condition: `{line.splitlines()[1].strip()}`",
                           Fix(build_guarded, safety, message=f"move the model under `if {guard}:`"))

    @staticmethod
    def _plan(sem: SemanticModel, stmt, ctor: ast.Call, known: list):
        """``(move text, guard text)`` for the model built by ``ctor``, or why it cannot
        be placed there."""
        texts, guards = set(), set()
        for call, mv in known:
            if mv.style == "to":
                t = _device_at(sem, mv.device, ctor)
                if t is None or not bound_before(sem, t, ctor):
                    return f"`{sem.segment(mv.device)}` is not known where it is built"
                texts.add(f"to({t})")
            elif mv.device is None:
                if any(isinstance(a, ast.If) for a in _ifs_around(sem, sem.statement_of(mv.call))) and \
                        not guard_of(sem, sem.statement_of(mv.call), call):
                    return "the tensors are moved with `.cuda()` under a condition"
                texts.add("cuda()")
            else:
                return f"the tensors are moved with `{sem.segment(mv.call)}`"
            g = guard_of(sem, sem.statement_of(mv.call), call)
            if g is None or len(g) > 1:
                return "the tensors are moved under a condition that cannot be copied"
            guards.add(sem.segment(g[0]) if g else "")
            if g and not (visible_at(sem, g[0], ctor) and all(
                bound_before(sem, n.id, ctor) for n in ast.walk(g[0]) if isinstance(n, ast.Name)
            )):
                return f"`{sem.segment(g[0])}` is not known where it is built"
        if len(texts) > 1 or len(guards) > 1:
            return "the tensors are moved in more than one way"
        guard = guards.pop()
        if guard and not isinstance(stmt.targets[0], ast.Name):
            return "the tensors are moved under a condition"
        return texts.pop(), guard
