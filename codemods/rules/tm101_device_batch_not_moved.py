"""TM101 device-batch-not-moved."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Optional

from ..semantic.nodes import TRY, node_type
from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic import BindingKind, OriginKind, SemanticModel
from ..semantic import names as N
from ..semantic.source import callee_hits, continues_a_line, starts_statement
from ._device import (
    HOST_ATTRS, HOST_METHODS, MISMATCH_EVIDENCE, MOVE_METHODS, NOT_TENSOR_FUNCS, SAME_PLACE_METHODS, SELF_METHODS,
    TENSOR_FUNCS, Loop,
    ModelState, Move,
    is_cpu_device,
    bound_before, cpu_without_cuda, device_text_at, file_mentions_device, framework_in_file,
    is_known_device, is_module_class, loop_batch, made_by_call, made_lines_outside_classes, made_tensor, made_tensors,
    model_state, move_of, moved_call, torch_names, _model_paths,
    non_blocking_style, taken_batch, taken_samples, type_moves, visible_at, without_cuda,
    witness_owners, has_loader_annotation, may_witness, _iterated, device_like, gives_an_item, may_have_sibling_loaders,
    sibling_places_inputs, clip_part, CLIP_COMPUTES, transform_names, occurrences,
    hf_model, tokenizer_output, device_label, is_trainer_call, trainer_device_text, TRAINER_FRAMEWORKS as _TRAINER_FRAMEWORKS,
)
from ._device import class_moves_arguments as _class_moves_arguments
from ._main_guard import is_main_guard
from ._tensor_device import _short, is_test_path

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_DEFS, ast.ClassDef, ast.Lambda)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# tensor methods whose tensor arguments may live on another device than the receiver
_CROSSING = frozenset({
    "to", "cuda", "cpu", "copy_", "type_as", "view_as", "expand_as", "reshape_as", "new_tensor", "new_zeros",
    "new_ones", "new_empty", "new_full", "set_", "index_put_", "__getitem__", "__setitem__",
})
# torch functions whose tensor arguments may live on different devices
_TORCH_CROSSING = frozenset({
    "torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.utils.swap_tensors", "torch.is_tensor",
    "torch.numel", "torch.save",
})
_PACK = frozenset({"torch.nn.utils.rnn.pack_padded_sequence"})
# builtins whose result holds (or is) their tensor arguments
_BUILTIN_PASS = frozenset({"zip", "list", "tuple", "sorted", "reversed", "enumerate", "iter", "next", "map", "filter"})
# library prefixes whose functions are host-side (they neither move nor meet device tensors)
_HOST_LIBS = ("builtins.", "math.", "numpy.", "time.", "logging.", "json.", "os.", "sys.", "random.", "warnings.",
              "pickle.", "statistics.", "copy.", "sklearn.", "pandas.", "matplotlib.", "PIL.", "cv2.", "wandb.",
              "tensorboardX.", "itertools.", "functools.", "collections.", "datetime.", "pathlib.", "tqdm.", "scipy.",
              "seaborn.")
# of those, the libraries that read what they get as a NumPy array (a CUDA tensor fails there)
_NUMPY_READERS = ("numpy.", "sklearn.", "pandas.", "matplotlib.", "PIL.", "cv2.", "scipy.", "seaborn.")
# torchvision's image grids: a tensor where their input is
_GRID_MAKERS = frozenset({"torchvision.utils.make_grid"})
_COLLECT = frozenset({"append", "extend", "add", "insert", "update", "put", "put_nowait", "write", "set_postfix",
                      "set_description", "log", "info", "debug", "warning", "add_scalar", "add_scalars", "format"})
# an argument that names a device: the callee may move what it receives
_DEVICEY = re.compile(r"device|cuda|gpu|local_rank|\.to\(", re.I)
_EMPTY = (frozenset(), False)


_MOVES: list = [None, ()]  # the text last asked about and its answer (the gate's, then the check's)


def _statement_moves(text: str) -> tuple:
    """The ``name.to(`` / ``name.cuda(`` texts that start a statement (a line, or follow
    a ``:`` or ``;``): where a dropped move can be."""
    if _MOVES[0] is text:
        return _MOVES[1]
    got = _MOVES[1] = _find_statement_moves(text)
    _MOVES[0] = text
    return got


def _exprs_holding(sem, words: tuple) -> list:
    """``sem.find(ast.Expr, containing=words)`` for the statement moves ``words`` (each ends
    with ``.to(`` or ``.cuda(``): past a few dozen of them, the statements that hold either
    ending, kept when one of the words ends at one of its places there (each statement
    searched once per ending, not once per word)."""
    if len(words) <= 64:
        return sem.find(ast.Expr, containing=words)
    lengths: dict = {}  # ending -> the lengths of the words with that ending
    for w in words:
        lengths.setdefault(".to(" if w.endswith(".to(") else ".cuda(", set()).add(len(w))
    wordset, text = frozenset(words), sem.text
    out = []
    for e in sem.find(ast.Expr, containing=tuple(lengths)):
        a, b = sem.offsets(e)
        if any(a <= j + len(end) - n and text[j + len(end) - n: j + len(end)] in wordset
               for end, ns in lengths.items() for j in occurrences(text, end, a, b) for n in ns):
            out.append(e)
    return out


def _find_statement_moves(text: str) -> tuple:
    out = set()
    for needle in (".to(", ".cuda("):
        i = text.find(needle)
        while i >= 0:
            j = i
            if j > 1 and text[j - 1] == "]":
                # ``batch[key].to(``: an item of a name, its subscript on the same line
                k = text.rfind("[", 0, j - 1)
                if k > text.rfind("\n", 0, i) and "]" not in text[k + 1 : j - 1]:
                    j = k
            while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
                j -= 1
            if j < i and not text[j].isdigit() and starts_statement(text, j) and not continues_a_line(text, j):
                out.add(text[j: i + len(needle)])
            i = text.find(needle, i + 1)
    return tuple(sorted(out))


def _loader_calls(sem: SemanticModel) -> list:
    """The calls that make a torch ``DataLoader`` (``DataLoader(...)``, ``data.DataLoader(...)``):
    only the chunks where the word stands before a ``(`` are parsed (it is also in the
    type hints and docstrings of code that only receives loaders)."""
    calls = sem.find_named((ast.Call,), ("DataLoader",), ("DataLoader",), keep=callee_hits(("DataLoader",)))
    return [c for c in calls if N.is_loader(sem.call_qualname(c))]


@dataclass
class _Need:
    srcs: frozenset
    node: ast.AST  # where the batch meets the device (in the loop)
    model: Optional[str]  # the moved model's callee text, or None (an op with a device value)
    certain: bool = True
    why: str = ""
    what: str = ""  # the operation, for the message: "`criterion()`", "a comparison"
    via: str = ""  # the same-file helper it happens in


_HOST_RESULTS = frozenset({"cpu", "numpy", "tolist", "item"})


def _constructor_classes(sem: SemanticModel, callee):
    """For each way ``callee`` is made, the same-file class whose constructor call makes it
    (through methods called on it: ``Net().to(device)``), or None."""
    for o in sem.origins(callee):
        n = o.node
        while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            n = n.func.value
        cls = sem.callee(n) if isinstance(n, ast.Call) else None
        yield cls if isinstance(cls, ast.ClassDef) else None


def _returns_on_device(sem: SemanticModel, callee) -> bool:
    """Every way ``callee`` is made is a same-file module class whose ``forward`` returns
    no value it brings to the host (``out.cpu()``, ``.numpy()``, ``.tolist()``,
    ``.item()``): what a moved one returns stays on its device."""
    found = False
    for cls in _constructor_classes(sem, callee):
        fwd = sem.method(cls, "forward") if cls is not None else None
        if fwd is None:
            return False
        for r in sem.returns(fwd):
            if r is None:
                return False
            for x in sem.walk(r):
                if isinstance(x, ast.Attribute) and x.attr in _HOST_RESULTS:
                    return False
        found = True
    return found


def _places_inputs(sem: SemanticModel, callee) -> bool:
    """A module class that moves what its methods receive (``x = x.to(self.device)`` in
    ``forward`` or a preprocessing method), of this file or of another file of the
    project that the constructor names (``net.Net(...)``): it places its inputs itself.
    Tensors it makes (``torch.zeros(...).to(device)``) do not count."""
    for o in sem.origins(callee):
        n = o.node
        while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Call):
            n = n.func.value  # ``Net(...).to(device).eval()``; ``net.Net(...)`` stays
        if not isinstance(n, ast.Call):
            continue
        cls = sem.callee(n)
        if isinstance(cls, ast.ClassDef):
            if _class_moves_arguments(sem, cls):
                return True
        elif cls is None and sibling_places_inputs(sem, n):
            return True
    return False


def _store_result(stmt: ast.stmt, target: str, code: str):
    """A fix's ``build``: the statement ``code`` (a dropped move) becomes ``target =
    code``."""

    def build(view):
        import libcst as cst

        return {view.node(stmt): cst.parse_statement(f"{target} = {code}\n").body[0]}

    return build


def _dict_item(sem: SemanticModel, recv) -> bool:
    """``recv`` is an item of a dict: ``batch["x"]``, ``batch[key]`` in a loop over the
    batch's own keys, ``value`` of ``for key, value in batch.items()`` (an integer index
    may be one of a namedtuple batch, which cannot be assigned to)."""
    if isinstance(recv, ast.Name):
        return True  # (``_batch_item`` took it from ``.items()``)
    k = recv.slice
    if isinstance(k, ast.Constant):
        return isinstance(k.value, str)
    return isinstance(k, ast.Name) and _over_own_keys(sem, recv, k.id, recv.value.id)


_PLACES_ITS_INPUTS = "its forward() moves its inputs"
_ALL_KEYS = "all keys"
_SOME_KEYS = "some keys"


def _over_own_keys(sem: SemanticModel, node, key: str, container: str) -> bool:
    """``node`` runs in a loop whose target ``key`` takes every key of ``container``:
    ``for key in container``, ``for key in container.keys()`` (or ``list(...)`` of
    either), ``for key, value in container.items()``."""
    for a in sem.ancestors(node):
        if isinstance(a, _SCOPES):
            return False
        if not isinstance(a, ast.For):
            continue
        it, tg = a.iter, a.target
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "list" \
                and len(it.args) == 1 and not it.keywords:
            it = it.args[0]
        meth = None
        if isinstance(it, ast.Call) and not it.args and not it.keywords and isinstance(it.func, ast.Attribute):
            meth, it = it.func.attr, it.func.value
        if not (isinstance(it, ast.Name) and it.id == container):
            continue
        if meth in (None, "keys"):
            return isinstance(tg, ast.Name) and tg.id == key
        if meth == "items":
            return isinstance(tg, ast.Tuple) and len(tg.elts) == 2 and isinstance(tg.elts[0], ast.Name) \
                and tg.elts[0].id == key
        return False
    return False


@dataclass
class _Flow:
    """The data flow of one loop's batch through its body (and the same-file helpers it
    calls).  Values are summarised as ``(srcs, dev)``: the batch elements (CPU tensors)
    a value is derived from, and whether it may be a device tensor (a moved model's
    output, a moved tensor)."""

    sem: SemanticModel
    loop: Loop
    src: dict = field(default_factory=dict)  # name -> frozenset of batch element names
    dev: set = field(default_factory=set)
    order: list = field(default_factory=list)  # batch element names in the order they appear
    needs: list = field(default_factory=list)
    models: list = field(default_factory=list)  # (ModelState, callee text, call)
    container_use: set = field(default_factory=set)
    unpack: Optional[ast.stmt] = None  # `x, y = batch` (a statement of the loop body)
    unpacked: list = field(default_factory=list)
    skip: Optional[str] = None
    returns: list = field(default_factory=list)
    cache: dict = field(default_factory=dict)
    depth: int = 0
    call_site: Optional[ast.Call] = None  # in a helper: the loop's call that runs it
    stack: tuple = ()
    via: str = ""  # in a helper: its name (for messages)
    # batch elements a model must get on the CPU (``_host_args``): (elements, model text)
    host: list = field(default_factory=list)
    # same-file helpers given batch elements that make tensors on the CPU: (elements,
    # helper name, factory call); moving those elements first may make the two meet there
    cpu_made: list = field(default_factory=list)
    # batch elements read as host arrays (``plt.imshow(x[0])``, ``np.asarray(x)``,
    # ``y.numpy()``): (elements, what reads them, for messages); moving those elements
    # where they are made would hand device tensors there
    on_host: list = field(default_factory=list)
    # batch containers some of whose items were stored moved (``batch["x"] =
    # batch["x"].to(device)``): name -> the constant keys stored so, or _ALL_KEYS (a loop
    # over the container's own keys stored each one), or _SOME_KEYS (keys not told)
    keyed: dict = field(default_factory=dict)
    # batch elements unpacked as sequences (``a, b = samples``: the default collate of a
    # list item gives a list, which has no ``.to``)
    sequences: set = field(default_factory=set)

    # ------------------------------------------------------------------ setup
    def start(self) -> None:
        lp = self.loop
        for n in lp.names:
            self._element(n)
        if lp.container:
            self._element(lp.container)

    def _element(self, name: str) -> None:
        self.src[name] = frozenset({name})
        self.dev.discard(name)
        if name not in self.order:
            self.order.append(name)

    # ------------------------------------------------------------------ statements
    def run(self, body: list) -> None:
        for stmt in body:
            self.statement(stmt)
            if self.skip:
                return

    def statement(self, s) -> None:
        t = node_type(s)
        if t is ast.Assign:
            for tg in s.targets:
                self.bind(tg, s.value, s)
        elif t is ast.AnnAssign:
            if s.value is not None:
                self.bind(s.target, s.value, s)
        elif t is ast.AugAssign:
            v = self.val(s.value)
            cur = self.val(s.target)
            self.meet([cur, v], s)
            if isinstance(s.target, ast.Name):
                self.set(s.target.id, _merge([cur, v]))
        elif t is ast.Expr:
            self.val(s.value)
        elif t is ast.Return:
            self.returns.append(self.val(s.value) if s.value is not None else _EMPTY)
        elif t is ast.If and s.orelse and (without_cuda(self.sem, s.test, True)
                                           or without_cuda(self.sem, s.test, False)):
            self._cuda_branches(s)
        elif t in (ast.If, ast.While):
            self.val(s.test)
            self.run(s.body)
            if not self.skip:
                self.run(s.orelse)
        elif t in (ast.For, ast.AsyncFor):
            v = self.val(s.iter)
            self.bind_value(s.target, v)
            self.run(s.body)
            if not self.skip:
                self.run(s.orelse)
        elif t in (ast.With, ast.AsyncWith):
            for item in s.items:
                v = self.val(item.context_expr)
                if item.optional_vars is not None:
                    self.bind_value(item.optional_vars, v)
            self.run(s.body)
        elif t is ast.Try or t.__name__ == "TryStar":
            self.run(s.body)
            for h in s.handlers:
                if not self.skip:
                    self.run(h.body)
            if not self.skip:
                self.run(s.orelse)
            if not self.skip:
                self.run(s.finalbody)
        elif t is ast.Match:
            self.val(s.subject)
            for case in s.cases:
                if not self.skip:
                    self.run(case.body)
        elif t is ast.Assert:
            self.val(s.test)
        elif t in _SCOPES:
            return
        # pass, break, continue, global, delete, raise, import: nothing flows

    def bind(self, target, value, stmt) -> None:
        lp = self.loop
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Name) and value.id != lp.container:
            got = self.src.get(value.id)
            if got is not None and len(got) == 1 and value.id not in self.dev:
                self.sequences |= got
        if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and not any(
                isinstance(e, ast.Starred) for e in value.elts
            ):
                vals = [self.val(e) for e in value.elts]
                for t, v in zip(target.elts, vals):
                    self.bind_value(t, v)
                return
            if self.depth == 0 and lp.container and isinstance(value, ast.Name) and value.id == lp.container \
                    and self.src.get(lp.container) == frozenset({lp.container}):
                names = _names_of(target)
                if names:
                    # ``x, y = batch``: the parts become batch elements of their own
                    for n in names:
                        self._element(n)
                    if self.unpack is None and any(s is stmt for s in lp.body):
                        self.unpack = stmt
                        self.unpacked = names
                    return
        v = self.val(value)
        if v[1] and not v[0] and isinstance(target, ast.Name) and self._module_move(value):
            v = _EMPTY  # ``model = Net().to(device)`` (in a made tensor's block): a module, not a tensor
        self.bind_value(target, v)

    def _module_move(self, value) -> bool:
        """``value`` is a move of a module (``Net().to(device)``, ``model.cuda()``)."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in MOVE_METHODS):
            return False
        recv = value.func.value
        while isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr in SELF_METHODS:
            recv = recv.func.value
        if isinstance(recv, ast.Call):
            q = self.sem.call_qualname(recv)
            if q is not None:
                return N.is_module_class(q)
            cls = self.sem.class_def(recv.func)
            return cls is not None and is_module_class(self.sem, cls)
        if isinstance(recv, (ast.Name, ast.Attribute)):
            return model_state(self.sem, recv, value) is not None
        return False

    def bind_value(self, target, v) -> None:
        if isinstance(target, ast.Name):
            self.set(target.id, v)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self.bind_value(e, v)
        elif isinstance(target, ast.Starred):
            self.bind_value(target.value, v)
        else:  # attribute / subscript store
            if isinstance(target, ast.Subscript):
                self.val(target.value)
                self.val(target.slice)
                self._keyed_store(target, v)
            elif isinstance(target, ast.Attribute):
                self.val(target.value)

    def _keyed_store(self, target: ast.Subscript, v) -> None:
        """``c[k] = value`` into a batch container ``c``: a moved value moves that item
        (every item when ``k`` runs over ``c``'s own keys); a CPU value stored under a
        constant key undoes its move."""
        c = target.value
        if not isinstance(c, ast.Name) or not (self.src.get(c.id) or c.id in self.keyed):
            return
        k = target.slice
        got = self.keyed.get(c.id, frozenset())
        const = isinstance(k, ast.Constant) and isinstance(k.value, (str, int))
        if v[0] or not v[1]:
            if const and isinstance(got, frozenset) and k.value in got:
                self.keyed[c.id] = got - {k.value}
            return
        if got is _ALL_KEYS:
            return
        if const:
            self.keyed[c.id] = (got | {k.value}) if isinstance(got, frozenset) else got
        elif isinstance(k, ast.Name) and _over_own_keys(self.sem, target, k.id, c.id):
            self.keyed[c.id] = _ALL_KEYS
        else:
            self.keyed[c.id] = _SOME_KEYS

    def _cuda_branches(self, s: ast.If) -> None:
        """``if torch.cuda.is_available(): x = x.cuda() else: x = x``: the branch that
        runs without CUDA holds no GPU tensor, so what it binds cannot meet one; after
        the statement a name both branches bind holds what the CUDA branch bound (its
        own meetings are judged as usual: :meth:`_where_unmoved`)."""
        self.val(s.test)
        cuda_first = not without_cuda(self.sem, s.test, False)  # (``if not torch.cuda.is_available():``)
        gpu, cpu = (s.body, s.orelse) if cuda_first else (s.orelse, s.body)
        self.run(s.body)
        kept = None
        if cuda_first:
            kept = {n: self._binding_state(n) for n in _stored_names(gpu)}
        if self.skip:
            return
        self.run(s.orelse)
        if not cuda_first:
            kept = {n: self._binding_state(n) for n in _stored_names(gpu)}
        for n in _stored_names(cpu) & set(kept):
            self._restore(n, kept[n])

    def _binding_state(self, name: str) -> tuple:
        return self.src.get(name), name in self.dev, self.keyed.get(name, _NOT_KEYED)

    def _restore(self, name: str, state: tuple) -> None:
        srcs, dev, keyed = state
        self.set(name, (srcs, dev))
        if keyed is not _NOT_KEYED:
            self.keyed[name] = keyed

    def set(self, name: str, v) -> None:
        self.keyed.pop(name, None)
        srcs, dev = v
        if srcs:
            self.src[name] = srcs
        else:
            self.src.pop(name, None)
        if dev:
            self.dev.add(name)
        else:
            self.dev.discard(name)
        self.cache.pop(("free", name), None)
        self.cache[("bound", name)] = True

    # ------------------------------------------------------------------ expressions
    def val(self, e):
        if e is None:
            return _EMPTY
        t = type(e)
        if t is ast.Name:
            return self.name(e)
        if t is ast.Constant or t is ast.JoinedStr or t is ast.Lambda:
            return _EMPTY
        if t is ast.Attribute:
            v = self.val(e.value)
            self._container_attr(e)
            if e.attr in HOST_ATTRS:
                return _EMPTY
            return v
        if t is ast.Subscript:
            v = self.val(e.value)
            self.val(e.slice)
            self._container_sub(e)
            got = self.keyed.get(e.value.id) if isinstance(e.value, ast.Name) else None
            if got is not None:
                k = e.slice
                if got is _ALL_KEYS or (isinstance(k, ast.Constant) and isinstance(got, frozenset) and k.value in got):
                    return frozenset(), True  # an item stored moved
                if got is _SOME_KEYS or not isinstance(k, ast.Constant):
                    return _EMPTY  # maybe one of the moved items: no claim either way
                # an item no store moved: what the container holds (on the CPU)
                return self.src.get(e.value.id, frozenset()), e.value.id in self.dev
            return v
        if t is ast.Call:
            return self.call(e)
        if t is ast.BinOp:
            parts = [self.val(e.left), self.val(e.right)]
            self.meet(parts, e)
            return _result(parts)
        if t is ast.Compare:
            parts = [self.val(e.left), *[self.val(c) for c in e.comparators]]
            if not all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                self.meet(parts, e)
            return _result(parts)
        if t is ast.BoolOp:
            return _merge([self.val(v) for v in e.values])
        if t is ast.UnaryOp:
            return self.val(e.operand)
        if t is ast.IfExp:
            # ``v.to(device) if torch.is_tensor(v) else v``: a move on one side counts as moved
            self.val(e.test)
            return _result([self.val(e.body), self.val(e.orelse)])
        if t in (ast.Tuple, ast.List, ast.Set):
            return _merge([self.val(x) for x in e.elts])
        if t is ast.Dict:
            for k in e.keys:
                if k is not None:
                    self.val(k)
            return _merge([self.val(v) for v in e.values])
        if t in _COMPS:
            return self.comprehension(e)
        if t is ast.Starred:
            return self.val(e.value)
        if t is ast.NamedExpr:
            v = self.val(e.value)
            self.set(e.target.id, v)
            return v
        if t is ast.Await:
            return self.val(e.value)
        if t is ast.Slice:
            for x in (e.lower, e.upper, e.step):
                self.val(x)
            return _EMPTY
        return _EMPTY

    def name(self, e: ast.Name):
        n = e.id
        got = self.keyed.get(n)
        if got is not None and got != frozenset():
            if not self.depth and n == self.loop.container:
                self._container_name(e)
            # the whole container: on the device once every item was stored moved; with some
            # items moved, what a use of it needs cannot be told (no claim either way)
            return (frozenset(), True) if got is _ALL_KEYS else _EMPTY
        srcs = self.src.get(n, frozenset())
        dev = n in self.dev
        if srcs or dev or self.cache.get(("bound", n)):
            if not self.depth and n == self.loop.container:
                self._container_name(e)
            return srcs, dev
        return frozenset(), self.free_dev(e)

    def free_dev(self, e: ast.Name) -> bool:
        """A name not bound by the flow holds a device tensor: every value it may have is
        a ``.to(...)``/``.cuda()`` result or a factory call with ``device=``."""
        key = ("free", e.id)
        got = self.cache.get(key)
        if got is None:
            got = False
            os_ = self.sem.origins(e)
            if os_:
                got = True
                for o in os_:
                    n = o.node
                    if o.kind is not OriginKind.VALUE or not isinstance(n, ast.Call):
                        got = False
                        break
                    mv = move_of(self.sem, n)
                    if mv is None and not (_is_factory(self.sem, n) and self.sem.keyword(n, "device") is not None):
                        got = False
                        break
                    if mv is not None and self._callable_model(n):
                        got = False  # a module moved to the device, not a tensor
                        break
            self.cache[key] = got
        return got

    def _callable_model(self, call: ast.Call, depth: int = 0) -> bool:
        """``Net().to(device)``, ``model.to(device)`` of ``model = Net()``: a module moved,
        not a tensor."""
        base = call
        while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and (
            base.func.attr in MOVE_METHODS or base.func.attr in SELF_METHODS
        ):
            base = base.func.value
        if isinstance(base, ast.Name) and depth < 4:
            return any(
                o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call) and self._callable_model(o.node, depth + 1)
                for o in self.sem.origins(base)
            )
        if isinstance(base, ast.Call):
            target = self.sem.callee(base)
            if isinstance(target, ast.ClassDef):
                return True
            q = self.sem.call_qualname(base)
            return bool(q) and (N.is_module_class(q) or N.is_model_zoo(q))
        return False

    def comprehension(self, e):
        saved = {}
        for gen in e.generators:
            v = self.val(gen.iter)
            for n in _all_names(gen.target):
                if n not in saved:
                    saved[n] = (self.src.get(n), n in self.dev, self.cache.get(("bound", n)))
            self.bind_value(gen.target, v)
            for c in gen.ifs:
                self.val(c)
        if isinstance(e, ast.DictComp):
            self.val(e.key)
            out = self.val(e.value)
        else:
            out = self.val(e.elt)
        for n, (s, d, b) in saved.items():
            if s:
                self.src[n] = s
            else:
                self.src.pop(n, None)
            if d:
                self.dev.add(n)
            else:
                self.dev.discard(n)
            if b is None:
                self.cache.pop(("bound", n), None)
            else:
                self.cache[("bound", n)] = b
        return out

    # ------------------------------------------------------------------ container uses
    def _container_sub(self, e: ast.Subscript) -> None:
        c = self.loop.container
        if not c or not isinstance(e.value, ast.Name) or e.value.id != c or self.depth:
            return
        k = e.slice
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            self.container_use.add("dict")
        elif isinstance(k, ast.Constant) and isinstance(k.value, int):
            self.container_use.add("seq")
        else:
            self.container_use.add("other")

    def _container_name(self, e: ast.Name) -> None:
        """The whole batch passed on: ``model(**batch)`` (a dict), ``model(*batch)`` (a
        sequence), ``model(batch)`` (unknown structure)."""
        p = self.sem.parent(e)
        if isinstance(p, ast.keyword):
            self.container_use.add("dict" if p.arg is None else "direct")
        elif isinstance(p, ast.Starred):
            self.container_use.add("seq")
        elif isinstance(p, ast.Call) and p.func is not e:
            q = self.sem.call_qualname(p) or ""
            if not q.startswith("builtins."):
                self.container_use.add("direct")

    def _container_attr(self, e: ast.Attribute) -> None:
        c = self.loop.container
        if not c or not isinstance(e.value, ast.Name) or e.value.id != c or self.depth:
            return
        if e.attr not in ("items", "keys", "values", "get"):
            self.container_use.add("other")

    # ------------------------------------------------------------------ meetings
    def meet(self, parts, node, model: Optional[str] = None, certain: bool = True, why: str = "") -> None:
        """CPU batch values and device values in one operation: the batch values must move."""
        cpu = frozenset().union(*(s for s, _ in parts))
        if cpu and any(d for _, d in parts) and not self._where_unmoved(node):
            self.need(cpu, node, model, certain, why)

    def _where_unmoved(self, node) -> bool:
        """``node`` runs only where the models met so far are not moved: every move of
        theirs runs under ``if flag:`` and ``node`` sits in the ``else`` of an ``if flag:``
        (or under ``if not flag:``) in the loop: there their outputs are CPU tensors
        (``if CUDA: correct += (p.cpu() == y.cpu()).sum() else: correct += (p == y).sum()``);
        or every move is to CUDA or the CPU (``.cuda()``, ``"cuda" if
        torch.cuda.is_available() else "cpu"``) and ``node`` sits in the ``else`` of ``if
        torch.cuda.is_available():``, where the models are on the CPU."""
        sem = self.sem
        tests = set()
        guarded = True
        moves = [m for st, _, _ in self.models for m in st.moves]
        for m in moves:
            if not m.guard:
                guarded = False
                break
            tests.update(sem.segment(t) for t in m.guard)
        cuda_or_cpu = bool(moves) and all(not m.where and cpu_without_cuda(sem, m) for m in moves)
        if not (guarded and tests) and not cuda_or_cpu:
            return False
        child = node
        for a in sem.ancestors(node):
            if a is self.loop.node or isinstance(a, (*_DEFS, ast.ClassDef, ast.Module, ast.Lambda)):
                break
            if isinstance(a, ast.If):
                in_else = any(x is child for x in a.orelse)
                if cuda_or_cpu and without_cuda(sem, a.test, in_else):
                    return True
                if guarded and in_else and sem.segment(a.test) in tests:
                    return True
                if (guarded and any(x is child for x in a.body) and isinstance(a.test, ast.UnaryOp)
                        and isinstance(a.test.op, ast.Not) and sem.segment(a.test.operand) in tests):
                    return True
            child = a
        return False

    def may_move(self, why: str) -> None:
        """Something may move the batch from here on: the loop is left alone, unless the
        batch already met the device on the CPU (that cannot be undone later)."""
        if not any(n.certain for n in self.needs):
            self.skip = why

    def need(self, srcs, node, model, certain=True, why="") -> None:
        at = self.call_site if self.call_site is not None else node
        if isinstance(node, ast.Call):
            what = f"`{self.sem.segment(node.func)}()`"
        elif isinstance(node, ast.Compare):
            what = "a comparison"
        else:
            what = "an operation"
        if self.via:
            what = f"{what} in `{self.via}()`"
        self.needs.append(_Need(frozenset(srcs), at, model, certain, why, what, self.via))

    # ------------------------------------------------------------------ calls
    def call(self, c: ast.Call):
        sem = self.sem
        f = c.func
        recv = f.value if isinstance(f, ast.Attribute) else None
        meth = f.attr if isinstance(f, ast.Attribute) else None
        stmt = sem.parent(c)
        as_stmt = isinstance(stmt, ast.Expr) and stmt.value is c
        # a device move of a batch value
        if (meth in MOVE_METHODS and (meth != "to" or move_of(sem, c) is not None)) or (meth == "type" and type_moves(sem, c)):
            rv = self.val(recv)
            self._args(c)
            lp = self.loop
            if rv[0] and (as_stmt or lp.encoding and isinstance(recv, ast.Name) and recv.id == lp.container):
                # dropped (reported on its own) or in place (a container's own ``.to``; a
                # ``BatchEncoding``'s moves it in place whatever becomes of its result:
                # ``ids = inputs.to(device)["input_ids"]``)
                self.may_move("moved by a statement")
            return frozenset(), True
        if meth in HOST_METHODS:
            rv = self.val(recv)
            self._args(c)
            if meth == "numpy" and rv[0]:
                self.on_host.append((rv[0], f"`{sem.segment(c)}` reads"))  # (``y.numpy()`` of a CUDA tensor fails)
            return _EMPTY
        if meth == "add_graph" and len(c.args) >= 2 and not any(isinstance(a, ast.Starred) for a in c.args[:2]) \
                and _summary_writer(sem, recv):
            # TensorBoard's ``writer.add_graph(model, images)`` traces the model on the input
            st = self._model(c.args[0], c)
            if st is not None and st.moved and not st.handled:
                args = self._args(c)
                self.models.append((st, sem.segment(c.args[0]), c))
                if args[1][0] and not self._where_unmoved(c):
                    self.need(args[1][0], c, sem.segment(c.args[0]))
                return frozenset(), True
        # a method of a moved module that hands its arguments to the module's layers
        # (``actor_critic.act(obs, masks)`` running ``self.base(inputs, masks)``)
        fed = _fed_by_method(sem, recv, meth, c) if meth is not None and meth != "forward" else None
        given = [*c.args, *(k.value for k in c.keywords)]
        if fed and any(isinstance(n, ast.Name) and self.src.get(n.id) for i in fed for n in ast.walk(given[i])):
            st = self._model(recv, c)
            if st is not None and st.moved and not st.handled:
                args = self._args(c)
                self.models.append((st, sem.segment(recv), c))
                cpu = frozenset().union(*(s for i, (s, _) in enumerate(args) if i in fed))
                if cpu and not self._where_unmoved(c):
                    self.need(cpu, c, sem.segment(recv))
                return frozenset(), True
        # a module moved to a device (or not): model(x), self.net(x), model.forward(x)
        callee = f if meth != "forward" else recv
        back = not self._flow_root(f) and self._moved_back(callee, c)
        st = None if self._flow_root(f) or back else self._model(callee, c)
        if back:
            # ``model.to("cpu")`` above in the same function: a module run on the CPU on
            # purpose, whose inputs must stay there (what meets its output on the device
            # is said, not fixed: moving the batch would break this call)
            args = self._args(c)
            kept = frozenset().union(*(s for s, _ in args))
            if kept:
                self.host.append((kept, sem.segment(callee), "it was moved to the CPU above"))
            return _result(args)
        if st is not None:
            args = self._args(c)
            # (a model wrapped in ``DataParallel`` only on some ways, ``if device_count() > 1:``,
            # is the bare module on the others: one GPU gets the CPU inputs)
            parallel = st.handled == "`DataParallel`" and not st.bare
            if st.moved and (parallel or st.handled == _PLACES_ITS_INPUTS and _returns_on_device(sem, callee)):
                # ``nn.DataParallel(model).cuda()`` scatters its CPU inputs to the GPUs
                # itself, and gathers the outputs on the GPU; a moved model whose forward
                # moves its inputs returns device tensors: what meets them must be there
                self.models.append((st, sem.segment(callee), c))
                return frozenset(), True
            if st.handled and not (st.handled == "`DataParallel`" and st.moved):
                self.skip = st.handled
                return _EMPTY
            if not st.moved:
                # a module left where it is (a loss without parameters): its inputs still meet
                self.meet(args, c)
                return _result(args)
            self.models.append((st, sem.segment(callee), c))
            host = self._host_args(callee, c)
            cpu = frozenset().union(*(s for i, (s, _) in enumerate(args) if i not in host))
            kept = frozenset().union(*(s for i, (s, _) in enumerate(args) if i in host))
            if kept:
                self.host.append((kept, sem.segment(callee), "pack_padded_sequence lengths, host-side values"))
            if cpu and not self._where_unmoved(c):  # (``else: net(x)`` of ``if use_cuda: net(x.cuda())``)
                self.need(cpu, c, sem.segment(callee))
            return frozenset(), True
        if isinstance(f, ast.Call) and N.is_module_class(sem.call_qualname(f)):
            # ``nn.CrossEntropyLoss()(out, y)``: a library module made on the spot, on the CPU
            self.val(f)
            args = self._args(c)
            self.meet(args, c)
            return _result(args)
        target = sem.callee(c)
        if isinstance(target, _DEFS):
            return self.helper(c, target)
        qs = sem.qualnames(f) if isinstance(f, (ast.Name, ast.Attribute)) else set()
        q = next(iter(qs)) if len(qs) == 1 else None
        if q is not None and q.startswith("torch.utils.data."):
            self._args(c)
            return _EMPTY  # a dataset or a loader holds them: its batches are a loop's own
        if q is not None and N.is_torch(q):
            args = self._args(c, skip_lengths=q in _PACK)
            if q in _TORCH_CROSSING or N.is_module_class(q) or N.is_parallel_wrapper(q):
                if q in ("torch.tensor", "torch.as_tensor"):
                    dev = sem.keyword(c, "device")
                    if dev is not None and device_like(sem, Move(c, "to", dev)) and not is_cpu_device(sem, dev):
                        # ``labels = torch.tensor(labels, device=device)``: made on the device
                        # (its input may be a list the collate_fn returns: no ``.to`` there)
                        return frozenset(), True
                return _merge(args) if q in _TORCH_CROSSING else _EMPTY
            self.meet(args, c)
            return _result(args)
        if q is not None and q.startswith("builtins."):
            args = self._args(c)
            b = q.split(".", 1)[1]
            if b in _BUILTIN_PASS:
                if any(self._devicey(a) for a in [*c.args, *(k.value for k in c.keywords)]):
                    return _EMPTY
                return _merge(args)
            return _EMPTY
        if q in _GRID_MAKERS:
            return _merge(self._args(c))  # (``torchvision.utils.make_grid(images)``: where its input is)
        if q is not None and q.startswith(_HOST_LIBS):
            cpu = frozenset().union(*(s for s, _ in self._args(c)))
            if cpu and q.startswith(_NUMPY_READERS):
                self.on_host.append((cpu, f"`{sem.segment(f)}()` also gets"))
            return _EMPTY
        # a method of a tensor of the flow
        rv = self.val(recv) if recv is not None else _EMPTY
        if recv is not None and (rv[0] or rv[1]):
            args = self._args(c)
            if meth in _CROSSING:
                return rv if not meth.startswith("new_") else (frozenset(), rv[1])
            if meth in ("append", "extend", "insert"):
                return _EMPTY
            self.meet([rv, *args], c)
            if not rv[0] and meth not in _TENSOR_RESULTS:
                # a method of a moved object that is no batch value (a model's ``test()``,
                # ``predict()``, ``stats()``): where what it returns lives is not known
                return _EMPTY
            return _result([rv, *args])
        # a criterion object: nn.CrossEntropyLoss() and the like, called
        if isinstance(f, (ast.Name, ast.Attribute)) and self._torch_object(f):
            args = self._args(c)
            self.meet(args, c)
            return _result(args)
        if meth in _COLLECT:
            self._args(c)
            return _EMPTY
        fed = self._fed_model(c, callee)
        if fed is not None:
            return fed
        return self.unknown(c, as_stmt)

    def _fed_model(self, c: ast.Call, callee):
        """``self.model(x.to(self.device))`` with a model that comes in as a parameter (a
        trainer given its model, ``train(model, loader)``): it is handed a tensor moved to
        a device right there, so it runs on that device (else this very call fails) and
        its output lives there; what of the batch it does not get still meets that
        output on the CPU.  Only a callee every value of which is a parameter (no
        function or class of this file, no library call), its first argument a move to a
        device that may not be the CPU, and no other batch value among its arguments."""
        sem = self.sem
        if not c.args or isinstance(c.args[0], ast.Starred):
            return None
        mv = self._moved(c.args[0])
        if mv is None or mv.style not in ("to", "cuda") or (mv.device is not None and is_cpu_device(sem, mv.device)) \
                or not device_like(sem, mv):
            return None  # (``x.to(weight_dtype)`` casts: it says nothing of the model's device)
        if isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name) and callee.value.id == "self":
            vals = sem.attribute_values(callee)
            if not vals or not all(isinstance(v, ast.Name) for v in vals):
                return None
            origins = [o for v in vals for o in sem.origins(v)]
        elif isinstance(callee, ast.Name):
            origins = sem.origins(callee)
        else:
            return None
        if not origins or not all(o.kind is OriginKind.PARAMETER for o in origins):
            return None
        args = self._args(c)
        if any(s for s, _ in args):
            return self.unknown(c, False, args)
        stmt = sem.statement_of(c)
        loop = self.loop.node
        # unconditional when the call is a statement of the loop's own body; else not copyable
        guard = () if stmt is not None and any(x is stmt for x in getattr(loop, "body", ())) else None
        st = ModelState([Move(mv.call, mv.style, mv.device, guard, fed=True)])
        self.models.append((st, sem.segment(callee), c))
        return frozenset(), True

    def _moved(self, expr):
        """The device move ``expr`` is: a ``.to``/``.cuda`` call, or a name the loop body
        bound to one just before (``x = x.to(device)``, ``x, y = x.to(d), y``: the one
        binding that reaches the read, an assignment in the loop)."""
        sem = self.sem
        if isinstance(expr, ast.Name):
            bs = sem.reaching(expr)
            if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or bs[0].value is None:
                return None
            stmt = bs[0].node
            if not any(a is self.loop.node for a in sem.ancestors(stmt)):
                return None
            expr = bs[0].value
        return move_of(sem, expr)

    def _flow_root(self, f) -> bool:
        """``x.view`` of a tensor of the flow: a tensor method, not a model."""
        while isinstance(f, (ast.Attribute, ast.Subscript)):
            f = f.value
        return isinstance(f, ast.Name) and (bool(self.src.get(f.id)) or f.id in self.dev)

    def _args(self, c: ast.Call, skip_lengths: bool = False) -> list:
        out = []
        for i, a in enumerate(c.args):
            v = self.val(a)
            if skip_lengths and i == 1:
                continue
            out.append(v)
        for k in c.keywords:
            v = self.val(k.value)
            if skip_lengths and k.arg == "lengths":
                continue
            out.append(v)
        return out

    def _model(self, callee, call):
        if not isinstance(callee, (ast.Name, ast.Attribute)):
            return None
        key = ("model", self.sem.segment(callee), id(self.sem.scope_of(callee)))
        if key in self.cache:
            return self.cache[key]
        if isinstance(callee, ast.Name) and (self.src.get(callee.id) or callee.id in self.dev):
            st = None  # a tensor of the flow (``x(...)`` is not a model)
        elif self.sem.qualname(callee) is not None:
            st = None  # an imported function or class
        else:
            st = model_state(self.sem, callee, call, importers=True)
            if st is not None and st.moved and not st.handled and self._moves_own_inputs(callee):
                st = ModelState(st.moves, st.unmoved, _PLACES_ITS_INPUTS)
        self.cache[key] = st
        return st

    def _moved_back(self, callee, call: ast.Call) -> bool:
        """A move of ``callee`` to the CPU (``model.cpu()``, ``model.to("cpu")``, also
        chained, ``model.cpu().eval()``) comes before ``call`` in the function (or module)
        that holds it, and no later move to a device that runs whenever the code after it
        does (not in a branch, loop or handler: a ``with`` or ``try`` block runs) undoes
        it; a dtype cast (``model.to(torch.float64)``) is no move.  Said, not fixed: the
        module is, or may be, on the CPU at the call."""
        sem = self.sem
        code = sem.dotted(callee)
        if code is None:
            return False
        cpu_text = self.cache.get("has cpu")
        if cpu_text is None:
            cpu_text = self.cache["has cpu"] = "cpu" in sem.text
        if not cpu_text:
            return False
        key = ("moved back", code, id(sem.scope_of(callee)))
        got = self.cache.get(key)
        if got is None:
            fn = sem.enclosing_function(call)
            if fn is not None and "cpu" not in sem.segment(fn):
                self.cache[key] = []
                return False  # (no move to the CPU can stand in the function's text)
            body = fn.body if fn is not None else sem.module.body
            # (position, to the CPU, runs whenever the code after it does, the block around it
            # that leaves the function or None) of each move of ``code``, and of each binding
            got = []
            for st in body:
                for n in sem.walk(st, scopes=False):
                    if isinstance(n, ast.Assign) and any(sem.dotted(t) == code for t in n.targets):
                        # ``model = Net().to(device)``: another object (a CPU one when it is
                        # ``model = model.cpu()``)
                        v = n.value
                        cpu = isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and (
                            v.func.attr == "cpu" and not v.args
                            or v.func.attr == "to" and bool(v.args) and is_cpu_device(sem, v.args[0]))
                        got.append(((n.lineno, n.col_offset), cpu, _runs_always(sem, n, fn), _exits(sem, n, fn)))
                        continue
                    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                        continue
                    r = n.func.value
                    while isinstance(r, ast.Call) and isinstance(r.func, ast.Attribute) \
                            and r.func.attr in SAME_PLACE_METHODS:
                        r = r.func.value  # (``model.eval().cpu()``: the same module)
                    if sem.dotted(r) != code:
                        continue
                    if n.func.attr == "cpu" and not n.args:
                        cpu = True
                    else:
                        mv = move_of(sem, n)
                        if mv is None:
                            continue  # (not a move: a dtype cast, ``.eval()``)
                        cpu = mv.style == "to" and is_cpu_device(sem, mv.device)
                    got.append(((n.lineno, n.col_offset), cpu, _runs_always(sem, n, fn), _exits(sem, n, fn)))
            self.cache[key] = got
        at = (call.lineno, call.col_offset)
        # a move to the CPU before the call that no later move certainly undoes: the module
        # is (or may be) on the CPU there (a move in a branch leaves it open: not fixed);
        # not one in a block that leaves the function before the call (``if export: ...;
        # return``)
        for p, cpu, _, exits in sorted(m for m in got if m[0] < at):
            if cpu and not (exits is not None and not any(x is exits for x in sem.ancestors(call))) \
                    and not any(not c2 and a2 for p2, c2, a2, _ in got if p < p2 < at):
                return True
        return False

    def _host_args(self, callee, call: ast.Call) -> set:
        """The positions in ``_args(call)`` (positional arguments, then keywords) of the
        arguments that the model's ``forward`` uses only on the host (``_host_params``):
        a CPU tensor there is right.  Only when every way ``callee`` is made is a
        same-file module class whose ``forward`` takes the same positional parameters;
        empty otherwise."""
        key = ("host", self.sem.segment(callee), id(self.sem.scope_of(callee)))
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = self._host_forward(callee)
        host, positional = got
        out: set = set()
        if not host:
            return out
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred):
                return out  # the positions after it are unknown
            if i < len(positional) and positional[i] in host:
                out.add(i)
        for j, k in enumerate(call.keywords):
            if k.arg in host:
                out.add(len(call.args) + j)
        return out

    def _host_forward(self, callee) -> tuple:
        """(host-only parameters, positional parameter names after ``self``) of the
        ``forward`` of the same-file module classes ``callee`` is made from."""
        sem = self.sem
        answers = []
        classes = _module_classes(sem, callee, 0)
        for cls in classes or ():
            fwd = sem.method(cls, "forward")
            if fwd is None or fwd.args.vararg is not None:
                return frozenset(), ()
            names = tuple(a.arg for a in (*fwd.args.posonlyargs, *fwd.args.args))[1:]
            answers.append((_host_params(sem, fwd), names))
        if not answers or any(names != answers[0][1] for _, names in answers):
            return frozenset(), ()
        return frozenset.intersection(*(h for h, _ in answers)), answers[0][1]

    def _moves_own_inputs(self, callee) -> bool:
        return _places_inputs(self.sem, callee)

    def _torch_object(self, f) -> bool:
        """``criterion`` bound only to instances of torch classes (losses, layers)."""
        key = ("tobj", self.sem.segment(f), id(self.sem.scope_of(f)))
        got = self.cache.get(key)
        if got is None:
            os_ = self.sem.origins(f)
            got = bool(os_) and all(
                o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)
                and N.is_torch(self.sem.call_qualname(_base_call(o.node)))
                for o in os_
            )
            self.cache[key] = got
        return got

    def _devicey(self, a) -> bool:
        if _DEVICEY.search(self.sem.segment(a)):
            return True
        if isinstance(a, ast.Name):
            return is_known_device(self.sem, a)
        return False

    def unknown(self, c: ast.Call, as_stmt: bool, args: Optional[list] = None):
        """A callee that cannot be read: it may move what it receives (when it also gets a
        device), meet it with device values, or neither (``args``: its arguments' values,
        when already read)."""
        sem = self.sem
        recv = c.func.value if isinstance(c.func, ast.Attribute) else None
        args = self._args(c) if args is None else args
        exprs = [*c.args, *(k.value for k in c.keywords)]
        cpu = frozenset().union(*(s for s, _ in args))
        if not cpu:
            return _EMPTY
        if any(self._devicey(a) for a in exprs):
            if as_stmt:
                self.may_move("a helper receives the batch and a device")
            return _EMPTY
        lp = self.loop
        if lp.container and as_stmt and any(isinstance(a, ast.Name) and a.id == lp.container for a in exprs):
            self.may_move("an unknown callee receives the whole batch")  # it may move it in place
            return _EMPTY
        gets_model = any(self._model(a, c) is not None for a in exprs if isinstance(a, (ast.Name, ast.Attribute)))
        recv_model = recv is not None and self._model(recv, c) is not None
        if any(d for _, d in args) or gets_model or recv_model:
            name = sem.segment(c.func)
            self.need(cpu, c, None, certain=False, why=f"`{name}()`")
        return _EMPTY

    def helper(self, c: ast.Call, fn):
        """A same-file function or method: its body is read with its parameters bound to
        the values of the arguments."""
        sem = self.sem
        args = self._args(c)
        cpu = frozenset().union(*(s for s, _ in args))
        devs = any(d for _, d in args)
        as_stmt = isinstance(sem.parent(c), ast.Expr)
        if not cpu and not devs:
            return _EMPTY
        if fn in self.stack or self.depth >= 3 or _moves_anything(sem, fn):
            # a helper that moves tensors (or one too deep to read): it may move the batch
            if as_stmt and cpu:
                self.may_move(f"`{fn.name}()` may move the batch")
            return _EMPTY
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if isinstance(c.func, ast.Attribute) and isinstance(sem.parent(fn), ast.ClassDef) and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list
        ):
            params = params[1:]
        binding: dict = {}
        pos_vals = args[: len(c.args)]
        kw_vals = args[len(c.args):]
        for i, (a, v) in enumerate(zip(c.args, pos_vals)):
            if isinstance(a, ast.Starred) or i >= len(params):
                return self.unknown_after(c, cpu, devs, as_stmt)
            binding[params[i]] = v
        kwonly = {a.arg for a in fn.args.kwonlyargs}
        for k, v in zip(c.keywords, kw_vals):
            if k.arg is None or (k.arg not in params and k.arg not in kwonly):
                return self.unknown_after(c, cpu, devs, as_stmt)
            binding[k.arg] = v
        sub = _Flow(sem, self.loop, cache={}, depth=self.depth + 1,
                    call_site=self.call_site if self.call_site is not None else c, stack=(*self.stack, fn),
                    via=self.via or fn.name)
        for p, (s, d) in binding.items():
            sub.set(p, (s, d))
        sub.run(fn.body)
        if sub.skip:
            if as_stmt and cpu:
                self.may_move(sub.skip)
            return _EMPTY
        self.needs.extend(sub.needs)
        self.models.extend(sub.models)
        self.host.extend(sub.host)
        self.cpu_made.extend(sub.cpu_made)
        self.on_host.extend(sub.on_host)
        result = _merge(sub.returns) if sub.returns else _EMPTY
        if cpu and result[0]:  # it returns what it got from the batch: on its way to the model
            made = _cpu_factory(sem, fn)
            if made is not None:
                self.cpu_made.append((cpu, fn.name, made))
        return result

    def unknown_after(self, c, cpu, devs, as_stmt):
        if cpu and devs:
            self.need(cpu, c, None, certain=False, why=f"`{self.sem.segment(c.func)}()`")
        return _EMPTY


def _fresh_at_every_call(sem: SemanticModel, lp: Loop, flow: _Flow) -> bool:
    """The loop is in a module-level function that uses a global model another function
    moves (``def train(): model.to(device)``), and every call of the function is
    module-level code that rebinds the model to a new, unmoved module first, with no
    move of it in between (``model = Network(); model.load_state_dict(...); testBatch()``):
    there the model is on the CPU."""
    fn = sem.enclosing_function(lp.node)
    if not isinstance(fn, _DEFS) or sem.parent(fn) is not sem.module:
        return False
    names = {text for _, text, _ in flow.models}
    if not names or not all(n.isidentifier() for n in names):
        return False
    scope = sem.scope_for(fn)
    if any(scope.get(n) for n in names):
        return False  # a local of the function, not the global
    sites = sem.call_sites(fn)
    if not sites.complete or not sites.calls:
        return False
    movers = _movers(sem, names)
    if fn.name in movers:
        return False  # the function moves the model itself
    for c in sites.calls:
        stmt = sem.statement_of(c)
        if not isinstance(stmt, ast.Expr) or stmt.value is not c:
            return False
        top = sem.parent(stmt)
        if top is not sem.module and not (is_main_guard(top) and sem.parent(top) is sem.module):
            return False  # called from a function, a loop, a branch
        block = sem.block_of(stmt)
        if block is None:
            return False
        i = next(k for k, x in enumerate(block) if x is stmt)
        fresh = set()
        for prev in reversed(block[:i]):
            for n in names - fresh:
                if _rebinds_fresh(sem, prev, n):
                    fresh.add(n)
            if fresh == names:
                break
            if _may_move(sem, prev, names - fresh, movers):
                return False
        if fresh != names:
            return False
    return True


def _movers(sem: SemanticModel, names: set) -> set:
    """The names of the functions and methods of the file whose code moves a module of
    ``names`` (``model.to(...)``, ``model.cuda()``), and of those calling them (to a
    fixpoint)."""
    defs = [n for st in sem.body() for n in ast.walk(st) if isinstance(n, _DEFS)]
    out = set()
    for d in defs:
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MOVE_METHODS
               and isinstance(n.func.value, ast.Name) and n.func.value.id in names for n in ast.walk(d)):
            out.add(d.name)
    grew = True
    while grew:
        grew = False
        for d in defs:
            if d.name not in out and any(isinstance(n, ast.Call) and _called_name(n) in out for n in ast.walk(d)):
                out.add(d.name)
                grew = True
    return out


def _called_name(call: ast.Call) -> Optional[str]:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _rebinds_fresh(sem: SemanticModel, stmt, name: str) -> bool:
    """``name = Network(...)``: a same-file module class or a torch layer built anew,
    not moved (its ``__init__`` does not move it either)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name and isinstance(stmt.value, ast.Call)):
        return False
    v = stmt.value
    if move_of(sem, v) is not None:
        return False
    target = sem.callee(v)
    if isinstance(target, ast.ClassDef):
        return is_module_class(sem, target) and not _moves_anything(sem, target)
    return N.is_module_class(sem.call_qualname(v)) and not any(k.arg == "device" for k in v.keywords)


def _may_move(sem: SemanticModel, stmt, names: set, movers: set) -> bool:
    """``stmt`` may move a module of ``names``: it moves one, calls a function that does,
    or hands one to a call that is not known."""
    for n in ast.walk(stmt):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and any(
            isinstance(x, ast.Name) and x.id in names for x in ast.walk(n.value) if n.value is not None
        ):
            return True  # an alias (``m = net``) may be moved later
        if isinstance(n, ast.Call):
            f = n.func
            if _called_name(n) in movers:
                return True
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in names:
                if f.attr not in ("load_state_dict", "eval", "train", "state_dict", "parameters", "named_parameters"):
                    return True
            if any(isinstance(a, ast.Name) and a.id in names for a in [*n.args, *(k.value for k in n.keywords)]):
                q = sem.call_qualname(n) or ""
                if not q.startswith(("builtins.print", "torch.save")):
                    return True
    return False


def _cpu_factory(sem: SemanticModel, fn) -> Optional[ast.Call]:
    """A torch factory call in ``fn`` that says no ``device=`` (``torch.zeros(n)``:
    padding, a mask, a buffer made on the CPU)."""
    for n in sem.walk(fn):
        if isinstance(n, ast.Call) and N.is_tensor_factory(sem.call_qualname(n)) and not any(
            k.arg in ("device", None) for k in n.keywords
        ):
            p = sem.parent(n)
            if isinstance(p, ast.Attribute) and p.value is n and p.attr in MOVE_METHODS:
                continue  # ``torch.zeros(n).to(x.device)``, ``.type_as(x)``: moved at once
            return n
    return None


def _merge(vals):
    srcs = frozenset().union(*(s for s, _ in vals)) if vals else frozenset()
    return srcs, any(d for _, d in vals)


def _result(parts):
    """The result of an operation: a device tensor when a device value took part."""
    if any(d for _, d in parts):
        return frozenset(), True
    return _merge(parts)


def _names_of(t) -> Optional[list]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        out = []
        for e in t.elts:
            sub = _names_of(e)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _all_names(t) -> list:
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def _base_call(call):
    """``nn.CrossEntropyLoss()`` of ``nn.CrossEntropyLoss().to(device)``."""
    n = call
    while isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda", "float", "half", "double"):
        if isinstance(n.func.value, ast.Call):
            n = n.func.value
        else:
            break
    return n


def _is_factory(sem: SemanticModel, call) -> bool:
    q = sem.call_qualname(call)
    return bool(q) and N.is_tensor_factory(q)


def _module_classes(sem: SemanticModel, expr, depth: int) -> Optional[list]:
    """The same-file classes every value of ``expr`` is an instance of, through moves
    and mode switches (``model = Net(); model = model.to(device)``); None when some
    value is anything else or cannot be read."""
    out = []
    for o in sem.origins(expr):
        n = o.node
        if o.kind is not OriginKind.VALUE or not isinstance(n, ast.Call):
            return None
        if isinstance(n.func, ast.Attribute) and n.func.attr in MOVE_METHODS | SELF_METHODS:
            if depth > 4:
                return None
            got = _module_classes(sem, n.func.value, depth + 1)  # ``Net().to(device)``, ``model.eval()``
            if got is None:
                return None
            out.extend(got)
            continue
        cls = sem.callee(n)
        if not isinstance(cls, ast.ClassDef):
            return None
        out.append(cls)
    return out or None


def _host_params(sem: SemanticModel, fwd) -> frozenset:
    """The parameters of a module's ``forward`` that it uses only on the host: every read
    is the ``lengths`` of ``pack_padded_sequence`` (a CPU tensor by its contract: a CUDA
    one raises), the receiver of ``.cpu()``, ``.to("cpu")``, ``.tolist()``, ``.item()``,
    ``.size()`` or the like, a ``.shape``, or the argument of ``len()``.  A batch element passed there
    on the CPU is not a bug, and moving it would break ``pack_padded_sequence``."""
    scope = sem.scope_for(fwd)
    out = set()
    for a in (*fwd.args.posonlyargs, *fwd.args.args, *fwd.args.kwonlyargs):
        bs = [b for b in scope.get(a.arg) if b.kind is BindingKind.PARAMETER]
        if len(bs) != 1:
            continue
        reads = sem.reads_of(bs[0])
        if reads and all(_host_use(sem, r) for r in reads):
            out.add(a.arg)
    return frozenset(out)


def _host_use(sem: SemanticModel, r: ast.Name) -> bool:
    p = sem.parent(r)
    if isinstance(p, ast.Attribute) and p.value is r:
        if p.attr in HOST_ATTRS:
            return True
        gp = sem.parent(p)
        if p.attr == "to" and isinstance(gp, ast.Call) and gp.func is p:
            # ``lengths.to("cpu")`` (``torch.device("cpu")``): forward puts it on the host itself
            dev = gp.args[0] if gp.args else sem.keyword(gp, "device")
            if isinstance(dev, ast.Call) and len(dev.args) == 1 and sem.call_qualname(dev) in N.DEVICE:
                dev = dev.args[0]
            return isinstance(dev, ast.Constant) and dev.value == "cpu"
        return p.attr in HOST_METHODS and isinstance(gp, ast.Call) and gp.func is p
    if isinstance(p, ast.Call) and r in p.args:
        q = sem.call_qualname(p)
        if q in _PACK:
            return len(p.args) > 1 and p.args[1] is r
        return q == "builtins.len"
    if isinstance(p, ast.keyword) and p.arg == "lengths":
        call = sem.parent(p)
        return isinstance(call, ast.Call) and sem.call_qualname(call) in _PACK
    return False


def _moves_anything(sem: SemanticModel, fn) -> bool:
    return any(isinstance(n, ast.Call) and (sem.method_name(n) in MOVE_METHODS) for n in ast.walk(fn)) or bool(
        re.search(r"device|cuda", sem.segment(fn))
    )


# ----------------------------------------------------------------------------- the rule


# the methods and submodules of a Hugging Face model that run it (or a part of it) on their
# arguments (not ``floating_point_ops``, ``get_extended_attention_mask``, ``num_parameters``: no
# computation with the weights)
_HF_COMPUTES = frozenset({
    "generate", "forward", "get_text_features", "get_image_features", "get_audio_features", "get_video_features",
    "text_model", "vision_model", "audio_model", "encoder", "decoder", "model", "base_model", "transformer",
    "language_model", "vision_tower", "lm_head", "embeddings",
})


_SUMMARY_WRITERS = frozenset({
    "torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter", "tensorboardX.SummaryWriter",
    "tensorboardX.writer.SummaryWriter",
})


def _summary_writer(sem: SemanticModel, recv) -> bool:
    """Every way ``recv`` is made is a TensorBoard ``SummaryWriter(...)``."""
    if not isinstance(recv, (ast.Name, ast.Attribute)):
        return False
    origins = sem.origins(recv)
    return bool(origins) and all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)
                                 and sem.call_qualname(o.node) in _SUMMARY_WRITERS for o in origins)


def _clip_model(sem: SemanticModel, recv, _depth: int = 0) -> bool:
    """``recv`` is the model a CLIP loader returned (``model, preprocess = clip.load(...)``),
    or what ``.to()``/``.eval()`` of it return (``model = model.to(device)``)."""
    if not isinstance(recv, ast.Name) or _depth > 4:
        return False
    part = clip_part(sem, recv)
    if part is not None:
        return part[0] == "model"
    bs = sem.reaching(recv)
    for b in bs:
        v = b.value if b.kind is BindingKind.ASSIGNMENT else None
        while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _THROUGH_MODEL:
            v = v.func.value
        if not _clip_model(sem, v, _depth + 1):
            return False
    return bool(bs)


_THROUGH_MODEL = MOVE_METHODS | SELF_METHODS  # (``model.to(device)``, ``model.eval()``: the model itself)


def _fed_by_method(sem: SemanticModel, recv, meth: str, call: ast.Call) -> Optional[frozenset]:
    """The positions (in ``call``'s arguments, then its keywords) of the arguments that
    method ``meth`` of the module class ``recv`` is an instance of (of this file, or of a
    file of the project it imports) hands as they are to the module itself (``self(x)``,
    ``self.forward(x)``) or to one of its submodules (``self.base(x, masks)``); None when
    ``recv`` is no such module or ``meth`` no method of its class."""
    if not isinstance(recv, (ast.Name, ast.Attribute)) or meth.startswith("__"):
        return None
    if meth in _HF_COMPUTES and hf_model(sem, recv) or meth in CLIP_COMPUTES and _clip_model(sem, recv):
        # a Hugging Face model's ``generate``, ``get_text_features``, one of its usual
        # submodules (``clip_model.text_model(**inputs)``), a CLIP model's ``encode_image``:
        # they compute on what they are given
        return frozenset(range(len(call.args) + len(call.keywords)))
    where, cls = sem, sem.instance_class(recv)
    if cls is None:
        origins = sem.origins(recv)
        made = origins[0].node if len(origins) == 1 and origins[0].kind is OriginKind.VALUE else None
        if not (isinstance(made, ast.Call) and isinstance(made.func, (ast.Name, ast.Attribute))
                and sem.sibling_may_define(made.func, "class ")):
            return None
        where, bs = sem.sibling_definitions(made.func)
        if where is None or len(bs) != 1 or bs[0].kind is not BindingKind.CLASS:
            return None
        cls = bs[0].node
    if not isinstance(cls, ast.ClassDef) or not is_module_class(where, cls):
        return None
    fn = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == meth), None)
    if fn is None or fn.decorator_list or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]
    methods = {s.name for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    handed = set()
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        g = n.func
        if isinstance(g, ast.Name) and g.id == "self" or (
                isinstance(g, ast.Attribute) and isinstance(g.value, ast.Name) and g.value.id == "self"
                and (g.attr == "forward" or g.attr not in methods)):
            handed.update(a.id for a in [*n.args, *(k.value for k in n.keywords)] if isinstance(a, ast.Name))
    out = {i for i, _ in enumerate(call.args) if i < len(params) and params[i] in handed}
    out.update(len(call.args) + j for j, k in enumerate(call.keywords) if k.arg in handed)
    return frozenset(out)


@dataclass
class _Plan:
    """How to move the batch: ``style`` "to" with ``device`` (text valid in the loop) or
    "cuda"; ``guard`` the condition to copy ("" when none); ``why`` when not known."""

    style: str = ""
    device: Optional[str] = None
    guard: str = ""
    why: str = ""
    where: str = "a device"
    hint: bool = True  # end a report-only message with where to move the batch
    unsafe: str = ""  # why the fix is only offered (``--unsafe-fixes``)


def _exits(sem: SemanticModel, node, fn):
    """The innermost branch or loop body around ``node`` (inside ``fn``) that ends by
    leaving it (``return``, ``raise``, ``continue``, ``break``), as the statement that
    holds that body; None when none does."""
    child = node
    for a in sem.ancestors(node):
        if a is fn or a is sem.module:
            return None
        for block in (getattr(a, "body", None), getattr(a, "orelse", None)):
            if isinstance(block, list) and block and any(x is child for x in block) \
                    and isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)) \
                    and isinstance(a, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                return a
        child = a
    return None


def _runs_always(sem: SemanticModel, node, fn) -> bool:
    """``node`` runs whenever the body of ``fn`` (None: the module) runs past it: no
    branch, loop, handler or ``else`` between them (a ``with`` block and a ``try`` body
    run)."""
    child = node
    for a in sem.ancestors(node):
        if a is fn or a is sem.module:
            return True
        if isinstance(a, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler, ast.Match,
                          ast.BoolOp, *_COMPS, ast.Lambda)):
            return False
        if isinstance(a, (ast.Try, getattr(ast, "TryStar", ast.Try))) and not any(x is child for x in a.body):
            return False  # (its ``else``/``finally``: ``else`` may not run; ``finally`` runs, but rarely moves)
        child = a
    return True


def _expected_failures(sem: SemanticModel) -> list:
    """``(first line, last line, handler line)`` of the body of each ``try`` with an
    ``except RuntimeError`` (alone or in a tuple) handler."""
    out = []
    for t in sem.find(*TRY, containing=("RuntimeError",)):
        for h in t.handlers:
            types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type] if h.type is not None else []
            if any("builtins.RuntimeError" in sem.qualnames(x) for x in types) and t.body:
                out.append((t.body[0].lineno, t.body[-1].end_lineno or t.body[-1].lineno, h.lineno))
                break
    return out


class DeviceBatchNotMoved(Rule):
    """## What it does
    Finds loops over a `DataLoader` whose batch meets a device while it is still on the
    CPU: a batch element goes into a model that was moved with `model.to(device)` or
    `model.cuda()` (or whose `__init__` ends with `self.to(device)`), or into an operation with that model's output or another device
    tensor (the loss, a metric, a comparison).  Each loop is judged on its own (an
    evaluation loop that forgets the move is reported even when the training loop moves
    its batch), and every element that meets the device is moved, not only what reaches
    the model: a fix after which the labels still meet the output on the CPU would not
    be one (TensorBoard's `writer.add_graph(model, images)` runs the model on what it
    gets).  A batch taken with `next(iter(loader))` (or `it.next()` of older PyTorch)
    counts as a loop's, and so does a sample indexed out of the dataset a loader reads (`x, y = test_data[0]`, as in a
    prediction after training) or bound by a loop over that dataset (`for img, label in test_data:`), when its
    items are tensors (a `TensorDataset`, a torchvision dataset given a `transform` that may make them, a same-file class whose
    `__getitem__` makes them), of which only what reaches the model counts (a sample's
    label may be a Python number).  So does a tensor the script makes outside a module's
    code (at module level, in a function, in a method of a class that is not a module: a
    trainer) from its data, at random or as an initial state (`X_train =
    torch.from_numpy(X)`, `y = torch.tensor(df["y"].values)`, `dummy = torch.randn(1, 3,
    224, 224)`, `h0 = torch.zeros(layers, batch, hidden)`, an image made a tensor by
    torchvision, `img = transform(image).unsqueeze(0)` of a `Compose` of its transforms
    with a `ToTensor()`, `ToTensor()(img)`, `TF.to_tensor(img)`, timm's `create_transform(...)`
    and torchvision's `weights.transforms()` of an image, CLIP's `preprocess(img)` and
    `clip.tokenize(texts)` for the model's `encode_image`/`encode_text` (`model, preprocess =
    clip.load(name, device=device)`; open_clip's loaders too), what a Hugging Face tokenizer
    or processor (loaded with `from_pretrained`) returns with `return_tensors="pt"`: one
    tensor from `tokenizer.encode(...)` or of an encoding (`tokenizer(...).input_ids`,
    `tokenizer(...)["input_ids"]`), a `BatchEncoding` from `tokenizer(...)` (a dict of
    tensors whose own `.to(device)` moves it in place whatever becomes of the result;
    fixed with `inputs = inputs.to(device)`, report only when its items are also used on
    the host), fed to the model, its `generate`, `get_text_features` or one of its usual
    submodules (`clip_model.text_model(**inputs)`; a pipeline places its inputs itself:
    `transformers.pipeline`, a diffusers `...Pipeline`); a model loaded with
    `device_map="cuda"` (or `{"": 0}`) is on that GPU as after `.to("cuda")`, one loaded
    with another `device_map=` (`"auto"`) is not reported (its hooks may place its
    inputs); a model given to a Hugging Face trainer (`Trainer(model=model, args=args)`,
    `Seq2SeqTrainer`, TRL's trainers, a same-file subclass named `...Trainer`, by `model=`
    only when it has an `__init__` of its own) is moved by it to `args.device`, in place,
    for the code after it (the inference after `trainer.train()`; the fix moves to
    `trainer.args.device`), to the CPU with `use_cpu=True`/`no_cuda=True`, and not at all
    when the training arguments are not known or use DeepSpeed, FSDP or a half-precision
    evaluation, or the model places itself (`device_map=`, 4/8-bit quantization),
    through casts, shape methods
    and `Variable(...)`, `torch` under any name; not `torch.tensor(2.0)`, a 0-dim tensor
    that mixes with device tensors, nor `torch.tensor(t)` of what may already be a
    tensor), or returned by a same-file function or method called there, every return
    of which is such a tensor (`hidden = model.init_hidden(batch_size)` of `def
    init_hidden(self, bs): return torch.zeros(1, bs, self.hidden)`), with the rest of its
    block as the loop body (inside a loop, also the statements above it, which run with
    it on the next iteration: `masks = torch.FloatTensor(...)` at the end of a rollout):
    full-batch training, inference on a dummy input, an RNN's hidden state.  A method of
    a moved module that hands an argument as it is to the module or one of its layers
    (`actor_critic.act(obs, hidden, masks)` running `self.base(inputs, hidden, masks)`,
    the class of this file or of one it imports) is a call of the model for that
    argument.  Such a tensor made right in the call of a moved model
    (`model(torch.from_numpy(X_test))`, `model.generate(**tokenizer(text,
    return_tensors="pt"))`) is reported at the argument.  A loader that
    comes in as a parameter no call in the file binds (a trainer class given its loaders) counts as a plain
    DataLoader when it is annotated as one (`loader: DataLoader`, `Optional[DataLoader]`),
    or when a loop of the same class (or of the module's functions) over such a
    parameter moves its batch elements first (the validation loop that forgets the move
    the training loop makes; the loop that moves the images and forgets the labels): an
    `engine.py` that never names `DataLoader` too.  In a script (it names `__main__` or
    loops at module level), the loaders that a function of a module of the project it
    imports returns are read there (`train_loader, test_loader = get_loaders(32)` of
    data.py, or a method of its class on an instance the script makes): plain
    DataLoaders with the default collation count, unless the script hands that
    function (or that instance) something that names a device or may hold device
    tensors.
    A model that comes in as a parameter (a trainer given its model) and that the loop
    calls with a tensor it moves right there (`self.model(data.to(self.device))`, or a
    name the loop body has just bound to such a move: `images = images.to(device)`)
    runs on that device: the batch elements it is not given still meet its output on the CPU (the
    labels), and are moved to the same device expression at the top of the loop when the
    call is a statement of the loop's own body.  A loop over a name bound once to
    `tqdm(enumerate(loader))` iterates the loader.
    Same-file helpers the loop calls are read with their parameters bound to
    the loop's values; loaders, models and devices are followed through names, globals
    read in functions, parameters bound at their call sites, `self` attributes,
    containers (`loaders[phase]`) and builder functions.  A batch element is moved by
    `x.to(device)`, `x.cuda()`, or `x.type(T)` when `T` may be a CUDA tensor type
    (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`); a dtype or a CPU
    tensor type only casts it.  The branch of `if torch.cuda.is_available(): ... else:
    ...` that runs without CUDA holds no GPU tensor: what it binds (`else: inputs = img`)
    is not taken to reach a model after the statement, and a model called there with
    CPU tensors is not reported.  An argument that a same-file model's `forward` only uses
    on the host (the lengths of `pack_padded_sequence`, which must be a CPU tensor,
    `.cpu()`, `.tolist()`, `.item()`, `len()`) is right on the CPU: it is not reported,
    and when it sits in a batch that would be moved whole the finding is report-only.
    Also finds `t.to(device)` on a tensor whose result is dropped: `Tensor.to` is not
    in-place (a tensor of the code's own making, `Variable(torch.Tensor(rows))` and
    `torch.from_numpy(a).float()` too, a batch element, an item a loop
    unpacks from a loader passed in, `for x, y in loader: x.to(device)` (an unsafe fix:
    what the loader yields is not seen; storing the result is right for an object whose
    `.to` works in place too), a name under `if
    torch.is_tensor(t):` / `isinstance(t, torch.Tensor)`, a parameter annotated
    `torch.Tensor` or one the function uses as only a tensor can be used: `x.dim()`,
    `x.unsqueeze(0)`, `x[idx, :]`), and on an item of a DataLoader batch held whole
    (`batch[key].to(device)`, `value.to(device)` in `for key, value in batch.items():`).  A dict batch moved item by
    item, each result stored back (`batch[k] = v.to(device)` in a loop over its items or
    keys, or key by key), is moved: only the items no store moved are still on the CPU.

    A global model that another function moves (`def train(): model.to(device)`) is not
    on the device in a function that module-level code calls only after rebinding it to a
    new module with no move in between (`model = Network(); model.load_state_dict(...);
    test_batch()`).  A global model that module-level code moves, under `if __name__ ==
    "__main__":` too (`bart_model.to(device)` before the app that calls `summarize()`
    starts), is on the device in the functions it calls after the move (not in one that
    module-level code calls before it, or on another branch of an `if` around it).

    ## Why is this bad?
    The first forward pass fails with `RuntimeError: Expected all tensors to be on the
    same device` (or `Input type (torch.FloatTensor) and weight type
    (torch.cuda.FloatTensor) should be the same`); labels left on the CPU fail the same
    way in the loss.

    ## Example
    ```python
    model = Net().to(device)
    for x, y in loader:
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```

    ## Fix safety
    Safe when the device is known where the loop runs and every element that meets it
    is known.  The device is known when the loop can name a value equal to the one the
    model was moved with: bound only to a string, `"cuda" if torch.cuda.is_available()
    else "cpu"`, `torch.device(...)` of those or the current accelerator, or the very
    variable of the model's move (a parameter bound to it at every call site, a `self`
    attribute set once from it); `.cuda()` when the model was moved that way.  A move
    under an `if` is copied with its condition verbatim.  When an element also goes to a callee that cannot be
    read together with device values (an imported loss, a metric object) the fix moves
    it too and is unsafe.  Report only: an element also read as a NumPy array (`y.numpy()`,
    `plt.imshow(x[0])`: a CUDA tensor fails there), an element unpacked as a sequence (`a, b =
    samples`: the default collation of a list item is a list, which has no `.to`), an unknown device (`args.device`, `local_rank`),
    a model moved inside a builder function or under a condition that cannot be copied
    (a model made by a callee no file of the tree defines, `model = Net()` then `if
    args.cuda: model = model.cuda()`, is that module moved under that condition, the fix
    unsafe as its class may place its inputs; so is one a factory function of the
    project builds, `self.model = get_model(config)`, whose returned classes are not
    known to place their inputs; one whose class, of this file or another
    of the project, moves what its `forward` gets places its inputs: not reported),
    a batch whose structure is unknown, a model parameter of a function that only the
    scripts importing the file call (`net = Net().to(device); evaluate(net, loader)` in
    main.py, read there: the device is theirs), also one a class keeps from its
    constructor (`self.model = model`; `Evaluator(net, loader).run()` in main.py).  A made tensor is moved right after the
    statement that makes it, when the device's names are bound before it (in a method,
    `self.device` that `__init__` sets before anything can run a method of the object)
    and no read of
    the tensor is on the host (`X.numpy()`, `plt.plot(X)`, a dataset); otherwise report
    only; a call that returns a tuple of them (an LSTM's `(h0, c0)`) is reported only.
    One made as a moved model's argument gets the model's move there
    (`model(torch.from_numpy(X).to(device))`, `.cuda()`) when the model has one
    unconditional move and its device is bound at the call; otherwise it is reported only.
    A dropped move of a parameter shown a tensor only by its uses becomes `x =
    x.to(device)` as an unsafe fix (the caller's tensor stays where it is, and what the
    function writes into it in place would go to the copy).  A dropped move of a batch
    item becomes a store of its result (`batch[key] = batch[key].to(device)`,
    `batch[key] = value.to(device)`): safe for an item by a
    string key or a key of the batch's own when the loader collates by default (the
    values of a dict batch are tensors then); report only for an integer index (a
    namedtuple batch cannot be assigned to) or a same-file `collate_fn` (it may put
    objects whose `.to` is in place there).  Nothing is reported for files that use a
    training framework (Lightning, Accelerate, DeepSpeed, HF `Trainer`; but for the tensors
    a script that trains with a Hugging Face trainer makes itself), values that come
    out of `accelerator.prepare(...)`, models wrapped in `DistributedDataParallel` or
    FSDP or loaded with `device_map=`, the inputs of a model wrapped in `DataParallel`
    and moved (`nn.DataParallel(model).cuda()` scatters them itself; what meets its
    outputs, the labels in the loss, is still reported; a model wrapped only `if
    torch.cuda.device_count() > 1:` is the bare module on one GPU: reported; one wrapped
    whenever it is on a GPU, `if device == "cuda":`, is not), the inputs of same-file models
    that move what their methods receive (what meets their outputs is reported unless
    `forward` returns them to the host), models moved to the CPU, loaders with a
    `collate_fn` or dataset that may place tensors, and batches handed (before they
    meet the device) to helpers, prefetchers or callees that also receive a device.
    """

    code = "TM101"
    name = "device-batch-not-moved"
    pitfall = "device"
    summary = "the model is moved to a device but the batch from the DataLoader is not"
    severity = Severity.BUG
    # a loop over a torch DataLoader (resolved by qualified name, so the file spells
    # ``DataLoader``), or a dropped ``t.to(...)``/``t.cuda(...)``
    # (``clip``: CLIP's and open_clip's loaders move the model to their ``device=``; the
    # loader is imported from a module so named)
    needles = ("DataLoader", ".to(", ".cuda(", "device_map", "Trainer(", "clip")
    uses_project = True  # (loaders a function of an imported module makes; importers of a function)
    verify = Verify("device", MISMATCH_EVIDENCE)
    corpus_minimum = (20, 16)
    valid = (
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "model = torch.nn.Linear(4, 2).to('cuda')\nfor x, y in loader:\n"
        "    x, y = x.to('cuda'), y.to('cuda')\n    loss = torch.nn.functional.cross_entropy(model(x), y)\n",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "model = torch.nn.Linear(4, 2)\nfor x, y in loader:\n    loss = torch.nn.functional.cross_entropy(model(x), y)\n",
    )
    invalid = (
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "model = torch.nn.Linear(4, 2).to('cuda')\nfor x, y in loader:\n"
        "    loss = torch.nn.functional.cross_entropy(model(x), y)\n",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
        "model = torch.nn.Linear(4, 2).to('cuda')\nfor x, y in loader:\n    x = x.to('cuda')\n"
        "    loss = torch.nn.functional.cross_entropy(model(x), y)\n",
        "import torch\nx = torch.zeros(3)\nx.to('cuda')\n",
        "import torch\nmodel = torch.nn.Linear(4, 2).to('cuda')\nx = torch.randn(3, 4)\nprint(model(x))\n",
        "from transformers import AutoModel, AutoTokenizer, Trainer\ntok = AutoTokenizer.from_pretrained('m')\n"
        "model = AutoModel.from_pretrained('m')\ntrainer = Trainer(model=model)\ntrainer.train()\n"
        "inputs = tok('hi', return_tensors='pt')\nprint(model(**inputs))\n",
    )

    @classmethod
    def may_match(cls, text: str, has=None) -> bool:
        """The text gate, tighter than the needles: a DataLoader is spelled, a statement
        starts with ``name.to(`` / ``name.cuda(`` (a possibly dropped move), or a
        statement ``x = torch.<factory>(`` stands where :func:`made_tensors` reads
        (:func:`made_lines_outside_classes`).  ``check`` finds nothing in any other file."""
        has = has or text.__contains__
        # (the words every rule of the device pitfall needs first: most files name no device)
        if not (file_mentions_device(text, has) or has("Trainer(")) or not super().may_match(text, has):
            return False
        # (a dropped move of a batch item, ``batch[k].to(``, needs a loader: its class is
        # spelled ``...DataLoader``, which lets the file through already)
        if has("DataLoader") or any("[" not in w for w in _statement_moves(text)):
            return True
        if may_witness(text):
            return True  # a loop over a parameter may move its batch first (``param_loader``'s witness)
        # a tensor the script makes (``torch.from_numpy(a)``, a tokenizer's output) and a
        # move (of the model) (``torch`` with no dot: ``import torch as th`` names it once,
        # ``th.zeros(`` after)
        return (has(".to(") or has(".cuda(") or has("device_map") or has("Trainer(") or has("clip")) \
            and (has("torch") or has("return_tensors")) \
            and (next(made_lines_outside_classes(text), None) is not None
                 or next(made_lines_outside_classes(text, inline=True), None) is not None)

    @classmethod
    def may_match_project(cls, path: str, text: str, has, project) -> bool:
        """A file the text gate refused whose loops may iterate loaders that a function
        of a module it imports makes (``train_loader, _ = get_loaders(...)``)."""
        return file_mentions_device(text, has) and may_have_sibling_loaders(path, text, project, has)

    def check(self, ctx: Context):
        expected = None
        for f in self._check(ctx):
            if expected is None:
                expected = _expected_failures(ctx.sem) if ctx.has("RuntimeError") else []
            at = next((h for a, z, h in expected if a <= f.line <= z), None)
            if at is not None:
                # the author expects a RuntimeError there (a lesson that shows the mismatch,
                # a retry): said, not rewritten
                f.fix = f.safety = None
                f.message += f"; it runs under a `try` whose `except RuntimeError` (line {at}) expects a failure: not fixed"
            yield f

    def _check(self, ctx: Context):
        sem = ctx.sem
        if not file_mentions_device(ctx.text, ctx.has) and not ctx.has("Trainer("):
            return
        yield from self._noop_moves(ctx)
        if ctx.has("set_default_device") or ctx.has("set_default_tensor_type"):
            return  # (a default device: batches may be made on it)
        if not is_test_path(ctx.path):
            yield from self._made_inline(ctx)
        batches = []
        loader_calls = _loader_calls(sem) if ctx.has("DataLoader") else []
        framework = framework_in_file(sem) if loader_calls else ...  # (else asked when a flow needs it)
        if framework is not ... and framework is not None:
            if framework not in _TRAINER_FRAMEWORKS:
                return  # (before its loops are read: a framework's files make many loaders)
            loader_calls = None  # (a Hugging Face trainer's script: only the tensors it makes itself are read)
        passed = False
        if loader_calls == []:
            # no loader made here, but loaders that come in as parameters may be plain ones
            # (param_loader: another loop of the class moves its batches)
            annotated = ctx.has("DataLoader") and has_loader_annotation(ctx.text)
            owners = witness_owners(sem) if not annotated and may_witness(ctx.text) else frozenset()
            passed = (annotated or bool(owners)) and framework_in_file(sem) is None
            # loaders made by a function of an imported module (``may_match_project``)
            passed = passed or (may_have_sibling_loaders(ctx.path, ctx.text, ctx.project, ctx.has)
                                and framework_in_file(sem) is None)
        if loader_calls or passed:
            loops = sem.statement_chunks(("for",))
            batches = [loop_batch(sem, loop) for loop in sem.find(ast.For, containing=("for",), chunks=loops)] if loops else []
            batches += [taken_batch(sem, a) for a in sem.find(ast.Assign, containing=("next(",))]
            batches += taken_samples(sem, loader_calls or [])
        if not is_test_path(ctx.path):  # (test code makes CPU tensors on purpose: compared with device results)
            batches += made_tensors(sem)
        said: set = set()
        for lp in sorted((b for b in batches if b is not None), key=lambda b: (b.node.lineno, b.node.col_offset)):
            flow = _Flow(sem, lp)
            flow.start()
            flow.run(lp.body)
            if lp.sample:  # only what goes into the model: a sample's label may be a Python int
                called = {id(c) for _, _, c in flow.models}
                flow.needs = [n for n in flow.needs if id(n.node) in called]
            if flow.skip or not flow.needs or not flow.models:
                continue
            if framework is ...:
                framework = framework_in_file(sem)
            if framework is not None and not (lp.made and framework in _TRAINER_FRAMEWORKS):
                # (a tensor the script makes itself, given to the model after a Hugging Face
                # trainer moved it, is placed by no framework: ``model(**tokenizer(...))``)
                if framework in _TRAINER_FRAMEWORKS:
                    continue
                return
            if _fresh_at_every_call(sem, lp, flow):
                continue
            f = self._finding(ctx, flow)
            if f is not None and (f.line, f.col, f.message) not in said:
                # (a tensor made in both branches of an ``if`` meets the model at one place:
                # said once; the fix of the other branch follows on the next pass)
                said.add((f.line, f.col, f.message))
                yield f

    # ------------------------------------------------------------------ the finding
    def _plan(self, ctx: Context, flow: _Flow) -> _Plan:
        plan = self._move_plan(ctx, flow)
        guessed = next((text for st, text, _ in flow.models if st.guessed), None)
        if plan.style and guessed is not None:
            plan.unsafe = (f"`{guessed}` is moved only under a condition and made by a callee that no file of the tree"
                           " defines: whether it places its inputs itself is not known")
        needed = frozenset().union(*(n.srcs for n in flow.needs))
        for kept, use in flow.on_host if not flow.loop.made else ():  # (a made tensor: ``_made_fix_blocked``)
            if plan.style and kept & needed:
                # (``plt.imshow(images[0])``, ``y.numpy()`` beside ``model(images)``: a CUDA
                # tensor there fails)
                plan.style, plan.hint = "", False
                plan.why = f"{use} `{', '.join(sorted(kept & needed))}` on the host: move it only where the device needs it"
                break
        for _, text, c in flow.models if plan.style else ():
            line = _output_read_as_numpy(ctx.sem, c) if isinstance(c, ast.Call) else None
            if line is not None:
                # (moved, the batch gives an output on the device, which ``.numpy()`` refuses)
                plan.style, plan.hint = "", False
                plan.why = (f"the output of `{text}` is read with `.numpy()` (line {line}): move the batch to the"
                            " device and the output back to the host (`.cpu()`) before that read")
                break
        for kept, helper, made in flow.cpu_made:
            if plan.style and kept & needed:
                # the helper may combine them with what it makes on the CPU (padding)
                plan.style, plan.hint = "", False
                plan.why = (f"`{helper}()` gets `{', '.join(sorted(kept & needed))}` on its way to the model and makes a"
                            f" tensor on the CPU (`{ctx.sem.segment(made.func)}(...)`, line {made.lineno}): moving the"
                            " batch first may make the two meet on the device; move it after, or make that tensor"
                            " on the batch's device")
                break
        return plan

    def _move_plan(self, ctx: Context, flow: _Flow) -> _Plan:
        sem = ctx.sem
        loop = flow.loop.node
        moves, unmoved, stray, names = [], False, False, []
        for st, text, _ in flow.models:
            for m in st.moves:
                if m not in moves:
                    moves.append(m)
            unmoved = unmoved or st.unmoved
            # a module made elsewhere that is never moved (``train(Net())`` beside ``train(model)``)
            stray = stray or bool(st.unmoved_bases - st.moved_bases)
            if text not in names:
                names.append(text)
        mname = names[0]
        away = next((m for m in moves if m.where), None)
        if away is not None:  # moved by a script that imports this file: said, not fixed
            dev = away.text or "a device"
            return _Plan(why=f"`{mname}` comes from {away.where}, which moves it to `{dev}` (not known here)",
                         where=f"`{dev}`")
        needed = frozenset().union(*(n.srcs for n in flow.needs))
        for kept, model, why in flow.host:
            if kept & needed:
                # moving that element would move what the model keeps on the CPU too
                # (a dict batch moved whole, its lengths for ``pack_padded_sequence``; a
                # module moved back to the CPU)
                return _Plan(why=f"`{model}` gets part of `{', '.join(sorted(kept & needed))}` on the CPU on purpose "
                                 f"({why}): move only what needs the device", hint=False)
        if any(m.builder for m in moves):
            return _Plan(why=f"`{mname}` is built and moved by a helper")
        styles = {m.style for m in moves}
        if len(styles) > 1:
            return _Plan(why=f"`{mname}` is moved in more than one way")
        style = styles.pop()
        plan = _Plan(style=style)
        if style == "cuda":
            if any(m.device is not None for m in moves):
                return _Plan(why=f"`{mname}` is moved with `{sem.segment(moves[0].call)}`")
            plan.where = "cuda"
        else:
            texts = set()
            for m in moves:
                if m.device is None:  # (``self.to(<an expression>)`` in the constructor)
                    return _Plan(why=f"`{mname}` is moved by its constructor to a device not known here")
                t = device_text_at(sem, m.device, loop)
                if t is None and m.fed and _same_in_loop(sem, m.device, loop, m.call):
                    t = sem.segment(m.device)  # the very device the loop moves the tensor it gives the model to
                if t is None:
                    dev = device_label(sem, m.device)
                    how = "gets tensors moved" if m.fed else "is moved"
                    return _Plan(why=f"`{mname}` {how} to `{dev}`, which is not known here", where=f"`{dev}`")
                texts.add(t)
            if len(texts) > 1:
                return _Plan(why=f"`{mname}` is moved to more than one device")
            plan.device = texts.pop()
            plan.where = f"`{plan.device}`"
        guards = {tuple(sem.segment(g) for g in m.guard) if m.guard is not None else None for m in moves}
        if None in guards or len(guards) > 1:
            plan.style, plan.why = "", f"`{mname}` is moved under a condition that cannot be copied"
            return plan
        guard = guards.pop()
        if unmoved and (not guard or stray):
            plan.style, plan.why = "", f"`{mname}` reaches the loop both moved and not moved"
            return plan
        if len(guard) > 1:
            plan.style, plan.why = "", f"`{mname}` is moved under nested conditions"
            return plan
        if guard:
            if not all(visible_at(sem, g, loop) for m in moves for g in m.guard):
                plan.style, plan.why = "", f"`{mname}` is moved under `{guard[0]}`, which is not visible here"
                return plan
            plan.guard = guard[0]
        return plan

    def _finding(self, ctx: Context, flow: _Flow):
        sem = ctx.sem
        lp = flow.loop
        certain = [n for n in flow.needs if n.certain]
        if not certain:
            return None
        sink = certain[0]
        model_sink = next((n for n in certain if n.model), sink)
        mname = model_sink.model or flow.models[0][1]
        order = flow.order

        def ordered(names):
            return sorted(names, key=lambda s: order.index(s) if s in order else len(order))

        needed = ordered({s for n in certain for s in n.srcs})
        maybe = ordered({s for n in flow.needs if not n.certain for s in n.srcs} - set(needed))
        whys = []
        for n in flow.needs:
            if not n.certain and n.why not in whys and set(n.srcs) - set(needed):
                whys.append(n.why)
        plan = self._plan(ctx, flow)
        c = lp.container

        def label(names):
            return c if c and c in names else ", ".join(names)

        reach = ordered({s for n in certain if n.model for s in n.srcs})
        meet = [s for s in needed if s not in reach and not (c and c in reach)]
        ops = []
        for n in certain:
            if not n.model and set(n.srcs) & set(meet) and n.what not in ops:
                ops.append(n.what)
        via = next((f" in `{n.via}()`" for n in certain if n.model and n.via), "")
        what = "sample" if lp.sample else "encoding" if lp.encoding else "tensor" if lp.made else "batch"
        if reach:
            msg = f"{what} `{label(needed)}` reaches `{mname}`{via} on the CPU while the model is on {plan.where}"
            if meet:
                msg += f" (`{label(meet)}` meets its output in {', '.join(ops)})"
        else:
            msg = (f"{what} `{label(needed)}` reaches the output of `{mname}` on the CPU in {', '.join(ops)} while"
                   f" the model is on {plan.where}")
        if not plan.style:
            why = plan.why or "the device is not known here"
            hint = f" (move the batch to `next({mname}.parameters()).device`)" if plan.hint else ""
            return ctx.finding(self, sink.node, f"{msg}; {why}{hint}")
        move = needed + maybe
        unsafe = bool(maybe) or bool(plan.unsafe)
        extra = ""
        if maybe:
            extra = f"; `{', '.join(maybe)}` also goes to {', '.join(whys)} with device values: moved too"
        if plan.unsafe:
            extra += f"; {plan.unsafe}"
        body = lp.body
        if not body or lp.is_loop and sem.position(body[0])[0] == lp.node.lineno:
            return ctx.finding(self, sink.node, msg + extra)
        if lp.made:
            why = _made_fix_blocked(sem, lp, plan)
            if why:
                # (an index of a host tensor: the author keeps it there on purpose, maybe rightly)
                doubt = why.startswith(_INDEXES.format(made=lp.names[0] if lp.names else lp.container))
                return ctx.finding(self, sink.node, f"{msg}; {why}", **({"severity": Severity.WARNING} if doubt else {}))
        nb = non_blocking_style(sem)
        if c and c in move:
            if lp.encoding:  # a ``BatchEncoding``: its own ``.to`` moves it (a dict would lose its attributes)
                dev = plan.device if plan.style != "cuda" else '"cuda"'
                code = f"{c} = {c}.to({dev})"
            elif flow.container_use == {"dict"}:
                code = f"{c} = {{k: ({_move_expr('v', plan, nb)} if torch.is_tensor(v) else v) for k, v in {c}.items()}}"
            elif flow.container_use == {"seq"}:
                code = f"{c} = [({_move_expr('t', plan, nb)} if torch.is_tensor(t) else t) for t in {c}]"
            else:
                return ctx.finding(self, sink.node, f"{msg}; the batch structure is not known: move it before use")
            after = None if lp.is_loop else lp.node
        else:
            if any(n in flow.unpacked for n in move) and flow.unpack is None:
                return ctx.finding(self, sink.node, msg + extra)
            if c and not all(n in flow.unpacked for n in move):
                return ctx.finding(self, sink.node, msg + extra)
            seqs = [n for n in move if n in flow.sequences]
            if seqs:
                # (``a, b = samples``: a list of tensors, maybe; its parts are what to move)
                return ctx.finding(self, sink.node, f"{msg}{extra}; `{seqs[0]}` is unpacked as a sequence (it may be a"
                                   " list of tensors, which has no `.to`): move its parts")
            # an element that only may meet the device (an unknown callee) may not be a tensor
            rhs = [
                _move_expr(n, plan, nb) if n not in maybe
                else f"({_move_expr(n, plan, nb)} if torch.is_tensor({n}) else {n})"
                for n in move
            ]
            code = f"{', '.join(move)} = {', '.join(rhs)}"
            after = flow.unpack if c else None if lp.is_loop else lp.node
        guard = plan.guard
        first = body[0]

        def build(view, code=code, guard=guard, after=after, first=first):
            import libcst as cst

            text = code
            if guard:
                text = f"if {guard}:\n{view.module.default_indent}{code}\n"
            new = cst.parse_statement(text + "\n")
            if after is not None:
                return view.insert_after(view.statement(after), new)
            return view.insert_before(view.statement(first), new)

        imports = (("torch", None),) if "torch.is_tensor" in code else ()
        fix = Fix(build, safety=Safety.UNSAFE if unsafe else Safety.SAFE, message="move the batch", imports=imports)
        return ctx.finding(self, sink.node, msg + extra, fix)

    # ------------------------------------------------------------------ made as an argument
    def _made_inline(self, ctx: Context):
        """``model(torch.from_numpy(x))``: a tensor made on the CPU as the argument of a
        model that is moved (every way it reaches the call, one move): it gets the move."""
        sem, text = ctx.sem, ctx.text
        lines = set()
        for ls in made_lines_outside_classes(text, inline=True):
            lines.add(text.count("\n", 0, ls) + 1)
        if not lines:
            return
        heads = tuple(f"({n}." for n in torch_names(text)) + tuple(f"({n}(" for n in transform_names(text)) \
            + (("(clip.tokenize(",) if "clip.tokenize(" in text else ())
        if "return_tensors" in text:
            heads += ("return_tensors",)
        for call in sem.find(ast.Call, containing=heads):
            if call.lineno not in lines or not isinstance(call.func, (ast.Name, ast.Attribute)):
                continue
            arg, model, kind = None, call.func, None
            if call.args and not isinstance(call.args[0], ast.Starred) and made_tensor(sem, call.args[0]) is not None:
                arg = call.args[0]
                if isinstance(model, ast.Attribute) and model.attr in CLIP_COMPUTES and _clip_model(sem, model.value):
                    model = model.value  # (``model.encode_image(preprocess(img).unsqueeze(0))``)
            else:
                # a tokenizer's output given to a Hugging Face model, its ``generate`` or
                # another of its methods (``model(**tok(text, return_tensors="pt"))``)
                for a in (*call.args, *(k.value for k in call.keywords)):
                    kind = tokenizer_output(sem, a)
                    if kind is not None:
                        arg = a
                        break
                if arg is not None and isinstance(model, ast.Attribute) and model.attr in _HF_COMPUTES \
                        and hf_model(sem, model.value):
                    model = model.value
            if arg is None:
                continue
            st = model_state(sem, model, call)
            if st is None or not st.moved or st.handled or _places_inputs(sem, model):
                continue
            if st.unmoved and not _moved_after_made(sem, _model_paths(sem, model, call, 0, set())):
                continue
            mv = st.moves[0]
            # (the device as named at the call: a parameter of the function that shadows the
            # move's ``device`` is another value)
            target = "cuda" if mv.style == "cuda" else None if mv.device is None else \
                trainer_device_text(sem, mv.device, call) if is_trainer_call(sem, mv.device) \
                else device_text_at(sem, mv.device, call)
            code = sem.segment(arg)
            what = "tensors" if kind == "encoding" else "a tensor"
            msg = (f"`{_short(code)}` makes {what} on the CPU and gives {'them' if kind == 'encoding' else 'it'} to"
                   f" `{sem.segment(model)}`, which is on"
                   f" `{target or (device_label(sem, mv.device) if mv.device is not None else 'the GPU')}`; the first op fails with 'Expected all tensors to be on the same device'")
            stmt = sem.statement_of(call)
            fixable = len(st.moves) == 1 and not mv.builder and mv.guard == () and target is not None \
                and (mv.style == "cuda" or bound_before(sem, target, stmt))
            numpy = _read_as_numpy(sem, call)
            if numpy is not None:
                # (moved, the input gives an output on the device, which ``.numpy()`` refuses)
                yield ctx.finding(self, arg, msg + f"; move it to the model's device, and the output to the host"
                                                   f" before `{numpy}`")
                continue
            if not fixable:
                yield ctx.finding(self, arg, msg + "; move it to the model's device")
                continue
            # (a ``BatchEncoding`` has no ``.cuda()``)
            fix_text = (".cuda()" if kind != "encoding" else '.to("cuda")') if mv.style == "cuda" else f".to({target})"

            def build(view, arg=arg, fix_text=fix_text):
                node = view.node(arg)
                return {node: moved_call(node, fix_text)}

            yield ctx.finding(self, arg, msg, Fix(build, safety=Safety.SAFE,
                                                  message=f"move it: `{_short(code + fix_text)}`"))

    # ------------------------------------------------------------------ dropped moves
    def _noop_moves(self, ctx: Context):
        sem = ctx.sem
        # a dropped move is a statement ``name.to(...)``: it starts a line or follows a
        # ``:`` or ``;`` (only the definitions holding one are parsed)
        words = _statement_moves(ctx.text)
        if not words:
            return
        for e in _exprs_holding(sem, words):
            call = e.value
            if not isinstance(call, ast.Call) or sem.method_name(call) not in ("to", "cuda"):
                continue
            if move_of(sem, call) is None:
                continue  # a dropped dtype cast (``x.to(torch.float16)``): not a device move
            if ctx.notebook and sem.parent(e) is sem.module:
                from ..notebook import displayed

                if displayed(ctx.text, e):
                    continue  # a cell's last expression: the kernel shows the moved tensor
            recv = call.func.value
            code = sem.segment(call)
            item = self._batch_item(sem, recv, e)
            if item is not None:
                target, lp = item
                msg = (f"`{code}` does nothing: `Tensor.{call.func.attr}` is not in-place, so the batch's item stays"
                       f" on the CPU; store the result: `{target} = {code}`")
                if lp.loaders and not lp.foreign and all(sem.argument(c, "collate_fn", 6) is None for c in lp.loaders) \
                        and _dict_item(sem, recv):
                    # default collation: the values of a dict batch are tensors (or fail on ``.to``)
                    yield ctx.finding(self, e, msg, Fix(_store_result(e, target, code), safety=Safety.SAFE,
                                                        message="store the moved item"))
                else:
                    yield ctx.finding(self, e, msg)  # a collate_fn may put objects with an in-place ``.to`` there
                continue
            if not isinstance(recv, ast.Name):
                continue
            kind = self._tensor_kind(sem, recv, e, 0)
            if kind is None:
                continue
            msg = f"`{code}` does nothing: `Tensor.{call.func.attr}` is not in-place, assign the result"
            if kind == "tensor":
                yield ctx.finding(self, e, msg, Fix(_store_result(e, recv.id, code), safety=Safety.SAFE,
                                                    message="assign the moved tensor"))
            elif kind == "item":
                # an item of a tuple batch whose loader is not known here: a tensor, almost
                # surely; an object whose ``.to`` works in place returns itself, so storing
                # the result is right for it too (unsafe: what the loader yields is not seen)
                yield ctx.finding(self, e, msg, Fix(_store_result(e, recv.id, code), safety=Safety.UNSAFE,
                                                    message="assign the moved item"))
            elif kind == "param":
                # a tensor the caller passed: rebinding the name leaves the caller's tensor where
                # it is, and writes into it in place would go to the copy (unsafe)
                yield ctx.finding(self, e, msg, Fix(_store_result(e, recv.id, code), safety=Safety.UNSAFE,
                                                    message="assign the moved tensor (the caller's tensor stays where it is)"))
            else:
                yield ctx.finding(self, e, msg)

    @staticmethod
    def _batch_item(sem: SemanticModel, recv, at) -> Optional[tuple]:
        """``(where to store it, the loop)`` when ``recv`` is an item of a DataLoader batch
        held as a whole: ``batch[key]``, or ``value`` of ``for key, value in
        batch.items():`` (stored as ``batch[key]``), ``batch`` bound by the loader loop
        around ``at`` and nowhere else."""
        if isinstance(recv, ast.Subscript) and isinstance(recv.value, ast.Name):
            box, target = recv.value, sem.segment(recv)
        elif isinstance(recv, ast.Name):
            bs = sem.resolve(recv)
            if len(bs) != 1 or bs[0].kind is not BindingKind.FOR_TARGET:
                return None
            loop = bs[0].node
            it, tg = loop.iter, loop.target
            if not (isinstance(it, ast.Call) and not it.args and not it.keywords and isinstance(it.func, ast.Attribute)
                    and it.func.attr == "items" and isinstance(it.func.value, ast.Name)
                    and isinstance(tg, ast.Tuple) and len(tg.elts) == 2
                    and all(isinstance(x, ast.Name) for x in tg.elts) and tg.elts[1].id == recv.id):
                return None
            if not any(a is loop for a in sem.ancestors(at)):
                return None
            box, target = it.func.value, f"{it.func.value.id}[{tg.elts[0].id}]"
        else:
            return None
        bs = sem.resolve(box)
        if len(bs) != 1 or bs[0].kind is not BindingKind.FOR_TARGET:
            return None
        for a in sem.ancestors(at):
            if isinstance(a, _SCOPES):
                return None
            if a is bs[0].node and isinstance(a, ast.For):
                lp = loop_batch(sem, a)
                if lp is not None and (box.id == lp.container or box.id in lp.names) and not lp.made and not lp.sample:
                    return target, lp
                return None
        return None

    def _tensor_kind(self, sem: SemanticModel, name: ast.Name, at, depth: int) -> Optional[str]:
        """"tensor" when ``name`` is provably a tensor where ``at`` runs, "param" for a
        parameter the function uses as a tensor (its caller's tensor), "item" for an item
        of a tuple batch from a loader that comes in as a parameter, "likely" when made
        from one by a tensor method, None otherwise."""
        if depth > 3:
            return None
        if _shown_tensor(sem, name, at):
            return "tensor"
        reaching = sem.reaching(name)
        if len(reaching) == 1 and reaching[0].kind is BindingKind.PARAMETER \
                and _param_used_as_tensor(sem, reaching[0], name.id):
            return "param"
        bs = sem.resolve(name)
        # a batch element of a DataLoader loop around ``at``
        for a in sem.ancestors(at):
            if isinstance(a, _SCOPES):
                break
            if isinstance(a, ast.For) and any(b.kind is BindingKind.FOR_TARGET and b.node is a for b in bs):
                lp = loop_batch(sem, a)
                if lp is not None and name.id in lp.names and len(bs) == 1:
                    return "tensor"
                if len(bs) == 1 and _unpacked_from_parameter(sem, a, name.id) and gives_an_item(a, {name.id}, at):
                    return "item"  # an item of a tuple batch from a loader passed in, given to a call
                return None
        if len(bs) != 1 or bs[0].kind is not BindingKind.ASSIGNMENT or not isinstance(bs[0].value, ast.Call):
            return None
        v = bs[0].value
        if made_tensor(sem, v) is not None:
            return "tensor"  # made on the host: ``Variable(torch.Tensor(rows))``, ``torch.from_numpy(a).float()``
        q = sem.call_qualname(v)
        if q and q.startswith("torch.") and q.count(".") == 1:
            fname = q.split(".")[1]
            if fname in TENSOR_FUNCS:
                return "tensor"
            if fname[:1].islower() and fname not in NOT_TENSOR_FUNCS:
                return "likely"
            return None
        f = v.func
        if isinstance(f, ast.Attribute) and f.attr in _TENSOR_ONLY_METHODS:
            return "likely"  # ``img = tfms(image).unsqueeze(0)``: no module, array or image has it
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id != name.id:
            if self._tensor_kind(sem, f.value, bs[0].stmt or at, depth + 1) == "tensor":
                return "likely"
        return None


_NOT_KEYED = object()


def _stored_names(stmts: list) -> set:
    """The plain names the statements assign (not inside nested functions or classes)."""
    out = set()
    work = list(stmts)
    while work:
        n = work.pop()
        if isinstance(n, (*_DEFS, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        work.extend(ast.iter_child_nodes(n))
    return out


def _unpacked_from_parameter(sem: SemanticModel, loop, name: str) -> bool:
    """``name`` is one of the names a ``for`` unpacks each item into (``for x, y in
    loader``, ``for i, (x, y) in enumerate(loader)``) and what the loop iterates comes in
    as a parameter: an item of a tuple batch, which a collate puts tensors in (the
    objects whose ``.to`` works in place, a module, a graph batch, a tokenizer's
    encoding, are batches of their own, not unpacked)."""
    got = _iterated(sem, loop)
    if got is None:
        return False
    it, target = got
    if not isinstance(target, (ast.Tuple, ast.List)) or not any(
            isinstance(e, ast.Name) and e.id == name for e in target.elts):
        return False
    origins = sem.origins(it)
    return bool(origins) and all(o.kind is OriginKind.PARAMETER for o in origins)


def _same_in_loop(sem: SemanticModel, dev, loop, move: ast.Call) -> bool:
    """``dev`` (a name or ``self.<name>``) names the same value at the top of ``loop``'s
    body as at ``move``, a call inside that body: nothing in the loop assigns it."""
    if not any(a is loop for a in sem.ancestors(move)):
        return False
    if isinstance(dev, ast.Name):
        target = dev.id
    elif isinstance(dev, ast.Attribute) and isinstance(dev.value, ast.Name) and dev.value.id == "self":
        target = "self." + dev.attr
    else:
        return False
    return not any(isinstance(getattr(x, "ctx", None), ast.Store) and sem.dotted(x) == target for x in ast.walk(loop))


def _shown_tensor(sem: SemanticModel, name: ast.Name, at) -> bool:
    """The code says ``name`` holds a tensor where ``at`` runs: ``at`` is in the body of
    ``if torch.is_tensor(name):`` / ``if isinstance(name, torch.Tensor):`` (an ``elif``
    too) and no binding inside that body reaches it, or ``name`` is a parameter annotated
    ``torch.Tensor`` that nothing rebinds before it."""
    reaching = sem.reaching(name)
    if not reaching:
        return False
    child = at
    for a in sem.ancestors(at):
        if isinstance(a, _SCOPES):
            break
        if isinstance(a, ast.If) and any(x is child for x in a.body) and _tests_tensor(sem, a.test, name.id):
            return all((b.order[0], b.order[1]) <= (a.test.lineno, a.test.col_offset) for b in reaching)
        child = a
    if len(reaching) == 1 and reaching[0].kind is BindingKind.PARAMETER:
        ann = getattr(reaching[0].node, "annotation", None)
        return ann is not None and sem.qualname(ann) == "torch.Tensor"
    return False


# methods only a tensor has among what a parameter may hold (a module, a numpy array, an
# image, a list, a graph: PyTorch Geometric's ``Data`` has ``size()`` and a ``.to`` that
# works in place, so ``size`` is no evidence)
_TENSOR_USE_METHODS = frozenset({"dim", "numel", "unsqueeze", "permute", "narrow", "index_select",
                                 "masked_fill", "repeat_interleave", "expand_as", "view_as"})


def _param_used_as_tensor(sem: SemanticModel, binding, name: str) -> bool:
    """The function uses the parameter ``name`` itself as only a tensor can be used (a
    tensor-only method, ``x.dim()``, or an index with a slice, ``x[idx, :]``) and binds
    ``name`` nowhere else: whatever the callers pass is a tensor (a module's ``.to``
    works in place, so a dropped one on a module would be no bug)."""
    fn = binding.scope.node if binding.scope is not None else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for n in sem.walk(fn):
        recv = None
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in _TENSOR_USE_METHODS:
                recv = f.value
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple) \
                and any(isinstance(e, ast.Slice) for e in n.slice.elts):
            recv = n.value  # ``x[idx, :]``: no module or list takes it (and a numpy array has no ``.to``)
        if isinstance(recv, ast.Name) and recv.id == name:
            bs = sem.resolve(recv)
            if len(bs) == 1 and bs[0] is binding:
                return True
    return False


def _tests_tensor(sem: SemanticModel, test, name: str) -> bool:
    if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name) and test.args[0].id == name):
        return False
    q = sem.call_qualname(test)
    if q == "torch.is_tensor" and len(test.args) == 1:
        return True
    return (q == "builtins.isinstance" and len(test.args) == 2
            and sem.qualname(test.args[1]) in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"))


def _made_fix_blocked(sem: SemanticModel, lp: Loop, plan: _Plan) -> str:
    """Why a tensor the script makes cannot be moved right after it is made: the device
    is not bound there yet, or the tensor is also used on the host (``X.numpy()``,
    ``plt.plot(X)``, a dataset) where a device tensor would fail or be wrong."""
    stmt = lp.node
    made = lp.names[0] if lp.names else lp.container  # (a ``BatchEncoding`` is held whole)
    if made_by_call(sem, stmt.value) == "tuple":
        return (f"`{made}` holds several tensors made on the CPU (a tuple): make them with `device=` in"
                f" `{sem.segment(stmt.value.func)}`, or move each")
    if plan.style == "to" and not bound_before(sem, plan.device, stmt):
        return f"`{plan.device}` is not bound yet where `{made}` is made: move it where it meets the model"
    if plan.guard:
        # the names the copied condition reads (``args`` of ``args.cuda``) must hold values there
        roots = sorted({n.id for n in ast.walk(ast.parse(plan.guard, mode="eval")) if isinstance(n, ast.Name)})
        if roots and not bound_before(sem, " and ".join(roots), stmt):
            return f"`{plan.guard}` is not known yet where `{made}` is made: move it where it meets the model"
    b = sem.target_binding(stmt.targets[0])
    if b is None:
        return "where it is read cannot be told"
    for ref in sem.references(b):
        p = sem.parent(ref)
        if lp.encoding and (isinstance(p, ast.Subscript) or isinstance(p, ast.Attribute) and p.attr != "numpy") \
                and p.value is ref:
            # an item of a ``BatchEncoding`` (``enc["input_ids"]``, ``enc.input_ids``): read as the
            # encoding's own use (``enc["input_ids"].numpy()`` is host use of it)
            ref, p = p, sem.parent(p)
        host = False
        if isinstance(p, ast.Attribute) and p.value is ref and p.attr == "numpy":
            host = True
        elif isinstance(p, ast.keyword) or isinstance(p, ast.Call) and ref in p.args:
            call = sem.parent(p) if isinstance(p, ast.keyword) else p
            q = sem.call_qualname(call) or ""
            host = (q.startswith(_HOST_LIBS) and not q.startswith("builtins.")) or q.startswith("torch.utils.data.")
        if host:
            return (f"`{made}` is also used on the host (line {ref.lineno}): move it where it meets the model,"
                    " not where it is made")
        if isinstance(p, ast.Tuple) and isinstance(sem.parent(p), ast.Subscript) and sem.parent(p).slice is p:
            p, ref = sem.parent(p), p  # (``alpha[t, None]``)
        if isinstance(p, ast.Subscript) and p.slice is ref and _moved_after(sem, p):
            # ``a = scheduler.alpha[t].view(b, 1).cuda()``: an index of a host tensor (a
            # device one would fail there), and the model may take it on the host too
            # (``self.table[t].to(x.device)`` of a plain tensor attribute)
            return (_INDEXES.format(made=made) + f" `{_short(sem.segment(p.value))}` on the host (line {ref.lineno}),"
                    " whose item is moved after: a device index fails there, and the model may expect it on the host"
                    " too")
    return ""


def _moved_after_made(sem: SemanticModel, paths: list) -> bool:
    """Each way the module reaches the call unmoved (``_model_paths``) is the constructor
    of a statement that a move of it follows in the same block, unconditionally
    (``self.model = Net().type(torch.float64)``, then ``self.model =
    self.model.to(self.device)`` in ``__init__``): after that block it is moved.  Not
    when the move is in another function (``use_gpu()``, which may never run)."""
    unmoved = [b for _, m, b in paths if not m]
    for b in unmoved:
        bstmt = sem.statement_of(b) if isinstance(b, ast.AST) else None
        if bstmt is None:
            return False
        moves = [mv for _, ms, bb in paths if bb is b for mv in ms]
        if not moves:
            return False
        for mv in moves:
            mstmt = sem.statement_of(mv.call)
            if mstmt is None or mv.guard or sem.parent(mstmt) is not sem.parent(bstmt) \
                    or sem.block_of(mstmt) is not sem.block_of(bstmt) \
                    or (mstmt.lineno, mstmt.col_offset) <= (bstmt.lineno, bstmt.col_offset):
                return False
    return True


def _output_read_as_numpy(sem: SemanticModel, call: ast.Call) -> Optional[int]:
    """The line where the output of the model's ``call`` is read with ``.numpy()`` on the
    device (:func:`_read_as_numpy`), right there or through the one name it is assigned
    to (``out = model(x)``, then ``out.detach().numpy()``); None when it is not."""
    if _read_as_numpy(sem, call) is not None:
        return call.lineno
    p = sem.parent(call)
    if isinstance(p, ast.Assign) and p.value is call and len(p.targets) == 1 and isinstance(p.targets[0], ast.Name):
        b = sem.target_binding(p.targets[0])
        for ref in (sem.references(b) if b is not None else ()):
            if _read_as_numpy(sem, ref) is not None:
                return ref.lineno
    return None


def _read_on(sem: SemanticModel, node):
    """``(name, called)`` for each attribute read on what ``node`` evaluates to and then on
    each result, in order, up to 8 (``alpha[t].view(b, 1).cuda()``: ``view``, ``cuda``;
    ``out.data.numpy()``: ``data`` not called, then ``numpy``); stops at anything else."""
    cur = node
    for _ in range(8):
        p = sem.parent(cur)
        if not (isinstance(p, ast.Attribute) and p.value is cur):
            return
        call = sem.parent(p)
        called = isinstance(call, ast.Call) and call.func is p
        yield p.attr, called
        cur = call if called else p


def _read_as_numpy(sem: SemanticModel, node) -> Optional[str]:
    """The ``.numpy()`` that reads what ``node`` evaluates to, through tensor methods that
    keep its device (``model(x).detach().numpy()``), with no ``.cpu()`` or move before
    it: its text, else None."""
    for name, called in _read_on(sem, node):
        if not called:
            if name == "data":  # (``out.data.numpy()``)
                continue
            return None
        if name == "numpy":
            return ".numpy()"
        if name not in _TENSOR_RESULTS or name in ("to", "cuda", "type"):
            return None
    return None


_INDEXES = "`{made}` also indexes"  # (the start of _made_fix_blocked's reason for an index of a host tensor)


def _moved_after(sem: SemanticModel, node) -> bool:
    """What ``node`` evaluates to is moved by the expression around it, through tensor
    methods that keep its device (``alpha[t].view(b, 1, 1, 1).cuda()``)."""
    for name, called in _read_on(sem, node):
        if not called:
            return False
        if name in ("cuda", "to"):
            return True
        if name not in _TENSOR_RESULTS:
            return False
    return False


# tensor methods whose result lives where the tensor does (a method of a moved value
# outside this list may be a model's own method: its result is not followed)
_TENSOR_RESULTS = frozenset({
    "float", "long", "half", "double", "int", "bool", "bfloat16", "view", "reshape", "permute", "transpose", "t",
    "squeeze", "unsqueeze", "expand", "repeat", "sum", "mean", "max", "min", "argmax", "argmin", "softmax",
    "log_softmax", "sigmoid", "exp", "log", "abs", "clamp", "clip", "masked_fill", "gather", "index_select",
    "matmul", "mm", "bmm", "mul", "add", "sub", "div", "pow", "sqrt", "detach", "clone", "contiguous", "flatten",
    "narrow", "type_as", "expand_as", "view_as", "reshape_as", "eq", "ne", "gt", "lt", "ge", "le", "norm", "std",
    "var", "cumsum", "prod", "flip", "roll", "sign", "neg", "reciprocal", "floor", "ceil", "round", "relu", "tanh",
    "logsumexp", "square", "masked_select", "nonzero", "squeeze_", "unsqueeze_", "add_", "mul_", "sub_", "div_",
    "fill_", "zero_", "clamp_", "requires_grad_", "to", "cuda", "type", "new_zeros", "new_ones", "new_full",
    "new_empty", "new_tensor", "__getitem__",
})


# tensor methods that neither nn.Module nor numpy arrays nor PIL images have
_TENSOR_ONLY_METHODS = frozenset({"unsqueeze", "unsqueeze_", "permute", "narrow", "index_select", "masked_fill",
                                  "repeat_interleave", "expand_as", "view_as"})


def _move_expr(name: str, plan: _Plan, nb: Optional[str]) -> str:
    nbs = f"non_blocking={nb}" if nb else ""
    if plan.style == "cuda":
        return f"{name}.cuda({nbs})"
    return f"{name}.to({plan.device}{', ' + nbs if nbs else ''})"
