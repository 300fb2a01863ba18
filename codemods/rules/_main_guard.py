"""What TM301 needs: the DataLoaders that start worker processes, the code that runs
while the script is imported, where such a loader is iterated there, and the guard fix
(which top-level statements move under ``if __name__ == "__main__":`` and which stay).

Everything is followed through the semantic model: a loader reaches its iteration
through names, parameters bound at the import-time call sites of same-file functions
and methods, ``self`` attributes, containers (``loaders["train"]``, ``for dl in [a, b]``,
``d.values()``), builder functions and unpacking.  A loader handed at import time to a
callee that cannot be followed (another module's ``train(model, loader)``, the
``fit(loader)`` of a trainer that is not Lightning's) may be iterated there: such a
finding's fix is unsafe.  A Lightning ``Trainer`` run iterates what it is given and
what the data hooks of the model or datamodule it is given return.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from ..semantic import UNKNOWN_ARG, BindingKind, OriginKind, SemanticModel, is_generator
from ..semantic import names as N

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# the methods that run what an object made with workers was made for (a trainer's loop)
_RUNS = frozenset(("train", "fit", "run", "start", "evaluate", "test", "validate", "predict"))
_SCOPES = (*_DEFS, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# values that make a worker count platform-dependent (`0 if os.name == "nt" else 4`)
PLATFORM = frozenset({
    "os.name", "sys.platform", "platform.system", "platform.platform", "platform.uname",
    "multiprocessing.get_start_method", "torch.multiprocessing.get_start_method",
})
DATASET_BASES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset",
    "torch.utils.data.dataset.IterableDataset",
})
# state that an import placed after it may depend on: imports are not hoisted past it
IMPORT_STATE = frozenset({"sys.path", "sys.modules", "os.chdir", "os.environ", "os.putenv", "importlib.import_module"})
# DataLoader parameters whose objects run in the worker processes, with their positions
WORKER_ARGS = (("dataset", 0), ("collate_fn", 6), ("worker_init_fn", 10))
# builtins known not to iterate what they receive
_HARMLESS = frozenset(f"builtins.{n}" for n in (
    "len", "print", "isinstance", "issubclass", "id", "type", "repr", "str", "format", "hasattr", "getattr",
    "setattr", "vars", "callable", "hash", "bool", "super",
))
_DUNDER_INIT = ("__init__", "__new__", "__post_init__")


def is_main_guard(stmt) -> bool:
    """``if __name__ == "__main__":`` (either side)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    t = stmt.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    strs = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(strs) == 1


def module_code(sem: SemanticModel) -> list:
    """The top-level statements of the module's code chunks (definitions are not parsed)."""
    out = []
    for c in sem.source.chunks:
        if c.kind == "code":
            out.extend(sem._parse(c))
    return out


def _in_loop(sem: SemanticModel, node, stop, value=None) -> bool:
    """``node`` runs in a loop body below ``stop`` (a function, or None: the module).
    With ``value`` (the expression iterated at ``node``), a loop whose target binds a
    name ``value`` reads does not count: it steps through loaders, each one once
    (``for name, dl in (("train", a), ("val", b))``, ``for phase in phases``)."""
    reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
    child = node
    for a in sem.ancestors(node):
        if a is stop or isinstance(a, _SCOPES) and stop is None:
            return False
        target = None
        if isinstance(a, (ast.For, ast.AsyncFor)) and any(s is child for s in a.body):
            target = a.target
        elif isinstance(a, ast.While) and any(s is child for s in a.body):
            return True
        elif isinstance(a, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            gens = [g for g in a.generators if g is not child and g.iter is not child]
            if gens and not any(reads & {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)} for g in gens):
                return True
        if target is not None and not reads & {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}:
            return True
        child = a
    return False


@dataclass
class Loader:
    call: ast.Call
    workers: ast.AST  # the num_workers value expression
    literal: Optional[int]  # the count when it is known to be a literal
    name: str  # how to call it in messages
    sites: list = field(default_factory=list)  # Site objects


@dataclass
class Site:
    stmt: ast.stmt  # the top-level statement from which the iteration runs
    repeated: bool  # in a loop (or called from one)
    maybe: bool  # handed to a callee that cannot be followed (it may iterate it)
    node: ast.AST  # the iterated expression (or the call that receives the loader)
    via: str = ""  # for `maybe`: the callee's text


@dataclass
class _Reach:
    stmt: ast.stmt
    repeated: bool
    maybe: bool


# what reads a dict and leaves it as it is: its methods, builtins given it
_DICT_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__"})
_DICT_READERS = frozenset({"builtins." + n for n in ("print", "len", "str", "repr", "dict", "sorted", "list", "tuple",
                                                     "iter", "format")}) | {"json.dumps", "pprint.pprint"}


class Analysis:
    """The loaders of one file and where they run at import time (``Analysis.of(ctx)``)."""

    @classmethod
    def of(cls, ctx) -> "Analysis":
        got = ctx.cache.get(cls)
        if got is None:
            got = ctx.cache[cls] = cls(ctx)
        return got

    def __init__(self, ctx):
        self.ctx = ctx
        self.sem: SemanticModel = ctx.sem
        self.code = module_code(self.sem)
        self.guards = [s for s in self.code if is_main_guard(s)]
        self._body: Optional[list] = None
        self._reach: Optional[dict] = None
        self._sited = False
        self.calls_of: dict = {}  # function -> its import-time calls
        self.loaders = self._find_loaders()
        self.by_call = {ld.call: ld for ld in self.loaders}

    # ------------------------------------------------------------------ loaders
    def loader_words(self) -> tuple[str, ...]:
        words = {"DataLoader"}
        for name, bs in self.sem.module_scope.bindings.items():
            for b in bs:
                if b.kind in (BindingKind.IMPORT, BindingKind.FROM_IMPORT) and b.qualname in N.WORKER_LOADERS:
                    words.add(name)
        return tuple(sorted(words))

    def _find_loaders(self) -> list[Loader]:
        """The DataLoaders with workers that code running at import time creates (a
        loader made elsewhere cannot be iterated at import)."""
        sem = self.sem
        words = self.loader_words()
        if not any(sem.source.holding(w) for w in words):
            return []  # (a test of the text: nothing parsed)
        calls = []
        for region in [*self.regions(), *(s for fn in self.reach() for s in fn.body)]:
            for n in sem.walk(region, scopes=False):
                if isinstance(n, ast.Call) and any(w in sem.segment(n.func) for w in words):
                    calls.append(n)
        out = []
        for call in calls:
            if not any(k.arg in ("num_workers", None) for k in call.keywords) and len(call.args) < 6 \
                    and not any(isinstance(a, ast.Starred) for a in call.args):
                continue  # no worker count given: the default, 0
            if not (sem.qualnames(call.func) & N.WORKER_LOADERS):
                continue
            value = sem.argument(call, "num_workers", position=5)
            if value is None or value is UNKNOWN_ARG:
                continue
            has, lit = self.worker_count(value)
            if not has:
                continue
            out.append(Loader(call, value, lit, self.name_of(call)))
        return out

    def name_of(self, call) -> str:
        """How messages call the loader: the name or attribute it is assigned to, an
        element of a container assigned to a name (``loaders["train"]``, ``loaders[...]``)."""
        sem = self.sem
        node, key = call, ""
        parent = sem.parent(node)
        if isinstance(parent, ast.Dict):
            i = next((j for j, v in enumerate(parent.values) if v is node), None)
            k = parent.keys[i] if i is not None else None
            key = f"[{sem.segment(k)}]" if isinstance(k, ast.Constant) else "[...]"
            node, parent = parent, sem.parent(parent)
        elif isinstance(parent, (ast.DictComp, ast.ListComp, ast.List, ast.Tuple)):
            key = "[...]"
            node, parent = parent, sem.parent(parent)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], (ast.Name, ast.Attribute)):
            return sem.segment(parent.targets[0]) + key
        return "DataLoader(...)"

    def platform_dependent(self, expr, depth: int = 0) -> bool:
        sem = self.sem
        for n in sem.walk(expr):
            if isinstance(n, (ast.Name, ast.Attribute)) and sem.qualnames(n) & PLATFORM:
                return True
            if depth < 3 and isinstance(n, ast.Call):
                target = sem.callee(n)
                if isinstance(target, _DEFS) and self.platform_dependent(target, depth + 1):
                    return True
            if depth < 3 and isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n is not expr:
                for b in sem.reaching(n):
                    if b.kind is BindingKind.ASSIGNMENT and b.value is not None and self.platform_dependent(b.value, depth + 1):
                        return True
        return False

    def _under_platform_test(self, b) -> bool:
        """The binding's statement runs under an ``if`` (or its ``else``) whose test reads
        the platform: the count was chosen per platform, like ``0 if os.name == "nt"
        else 4``."""
        stmt = b.stmt if b.kind is BindingKind.ASSIGNMENT else None
        if stmt is None:
            return False
        for a in self.sem.ancestors(stmt):
            if isinstance(a, (*_DEFS, ast.ClassDef, ast.Lambda)):
                return False
            if isinstance(a, ast.If) and self.platform_dependent(a.test):
                return True
        return False

    def worker_count(self, value, depth: int = 0) -> tuple[bool, Optional[int]]:
        """(may start workers, the literal count if known): a literal 0, None/False or a
        platform-dependent count start none."""
        sem = self.sem
        if isinstance(value, ast.Constant):
            v = value.value
            if isinstance(v, bool) or v is None:
                return (bool(v), None)
            if isinstance(v, int):
                return (v > 0, v)
            return (True, None)
        if self.platform_dependent(value):
            return (False, None)
        if depth > 4:
            return (True, None)
        if isinstance(value, ast.Name):
            bs = sem.reaching(value)
            if not bs:
                return (True, None)
            if any(self._under_platform_test(b) for b in bs):
                return (False, None)  # ``if os.name == "nt": workers = 0 else: ...``
            results = []
            for b in bs:
                if b.kind is BindingKind.ASSIGNMENT and b.value is not None:
                    results.append(self.worker_count(b.value, depth + 1))
                elif b.kind is BindingKind.PARAMETER and isinstance(b.scope.node, _DEFS):
                    pv = sem.param_values(b.scope.node, b.name)
                    if pv.complete and pv.values:
                        results.extend(self.worker_count(v, depth + 1) for v, _, _ in pv.values)
                    else:
                        results.append((True, None))
                else:
                    results.append((True, None))
            return _merged(results)
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and sem.self_class(value.value) is not None:
            # ``self.num_workers`` set from the constructor's parameter (a DataModule)
            vals = sem.attribute_values(value)
            if not vals or any(v is None for v in vals):
                return (True, None)
            return _merged([self.worker_count(v, depth + 1) for v in vals])
        got = self._kwargs_get(value, depth)
        if got is not None:
            return got
        if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and self._plain_dict(value.value):
            # ``CFG["num_workers"]`` of a dict literal (with its later ``CFG[k] = v`` stores)
            vals = sem.element_values(value)
            if vals:
                return _merged([self.worker_count(v, depth + 1) for v in vals])
        if isinstance(value, ast.IfExp):
            a = self.worker_count(value.body, depth + 1)
            b = self.worker_count(value.orelse, depth + 1)
            return (a[0] or b[0], None)
        return (True, None)

    def _plain_dict(self, name) -> bool:
        """``name`` (a dict) is only read (by key, ``get()``, ``print``, an f-string) and stored
        into by constant key with ``=``: no ``update()``, ``+=``, alias or call that may
        change it."""
        sem = self.sem
        if not isinstance(name, ast.Name):
            return False
        bs = sem.reaching(name)
        if not bs:
            return False
        for b in bs:
            for r in sem.references(b):
                p = sem.parent(r)
                if isinstance(p, ast.Attribute) and p.value is r and p.attr in _DICT_READS:
                    continue  # ``CFG.get(k)``, ``CFG.items()``
                if isinstance(p, ast.FormattedValue) or isinstance(p, ast.Call) and r in p.args \
                        and sem.call_qualname(p) in _DICT_READERS:
                    continue  # ``print(CFG)``, ``f"{CFG}"``
                if not (isinstance(p, ast.Subscript) and p.value is r):
                    return False
                if isinstance(p.ctx, ast.Load):
                    continue
                st = sem.parent(p)
                if not (isinstance(st, ast.Assign) and isinstance(p.slice, ast.Constant)):
                    return False
        return True

    def _kwargs_get(self, value, depth: int) -> Optional[tuple]:
        """``kwargs.get("num_workers", 0)`` of a function's ``**kwargs``: what the file's
        calls of the function pass for that key, the default where one passes none; None
        when ``value`` is no such read."""
        sem = self.sem
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
                and isinstance(value.func.value, ast.Name) and value.args and not value.keywords
                and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
            return None
        bs = sem.resolve(value.func.value)
        fn = bs[0].scope.node if len(bs) == 1 and bs[0].kind is BindingKind.PARAMETER else None
        if not isinstance(fn, _DEFS) or fn.args.kwarg is None or fn.args.kwarg.arg != value.func.value.id:
            return None
        key = value.args[0].value
        default = value.args[1] if len(value.args) > 1 else ast.Constant(value=None)
        sites = sem.call_sites(fn)
        if not sites.complete or not sites.calls:
            return (True, None)
        results = []
        for call in sites.calls:
            if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                return (True, None)
            given = next((k.value for k in call.keywords if k.arg == key), None)
            results.append(self.worker_count(given if given is not None else default, depth + 1))
        return _merged(results)

    # ------------------------------------------------------------------ import time
    def body(self) -> list:
        """Every top-level statement (parses the whole file)."""
        if self._body is None:
            self._body = self.sem.body()
        return self._body

    def _callees(self, call) -> list:
        """Same-file functions a call runs: a function or method, or a class's
        constructor methods."""
        sem = self.sem
        t = sem.callee(call)
        if isinstance(t, _DEFS):
            return [t]
        if isinstance(t, ast.ClassDef):
            return [m for m in (sem.method(t, n) for n in _DUNDER_INIT) if m is not None]
        if isinstance(call.func, ast.Attribute) and call.func.attr in N.LIGHTNING_RUNS:
            got = self._lightning(call)  # (a Lightning run calls the data hooks)
            if got is not None:
                return [*got[2], *got[1]]
        return []

    def _unknown_callee(self, call) -> Optional[str]:
        """The text of a callee that cannot be followed (None for same-file ones and for
        builtins that do not iterate what they get)."""
        sem = self.sem
        if self._callees(call) or sem.callee(call) is not None:
            return None
        qs = sem.qualnames(call.func)
        if qs and all(q in _HARMLESS or q in N.CONSUMERS or q in N.ITER_WRAPPERS or q in N.WORKER_LOADERS for q in qs):
            return None
        if qs and all(q.startswith(("builtins.", "torch.", "os.", "math.", "logging.", "json.", "time.")) for q in qs):
            return None
        return sem.segment(call.func)

    def regions(self) -> list:
        """The top-level statements that run at import: not definitions, imports or a
        ``__main__`` guard (in a notebook the guard's body runs, not its ``else``:
        ``__name__`` is ``"__main__"`` in a kernel)."""
        out = []
        for s in self.code:
            if is_main_guard(s):
                if self.ctx.notebook:
                    out += [x for x in s.body if not isinstance(x, (*_SCOPES, ast.Import, ast.ImportFrom))]
            elif not isinstance(s, (*_SCOPES, ast.Import, ast.ImportFrom)):
                out.append(s)
        return out

    def reach(self) -> dict:
        """function -> _Reach: the same-file functions and methods that run while the
        module is imported (from which top-level statement, in a loop, or only through
        a callee that cannot be followed)."""
        if self._reach is not None:
            return self._reach
        sem = self.sem
        reach: dict = {}
        work = []

        def visit(region, top, repeated, maybe, owner):
            for n in sem.walk(region, scopes=False):
                if not isinstance(n, ast.Call):
                    continue
                rep = repeated or _in_loop(sem, n, owner)
                for fn in self._callees(n):
                    self.calls_of.setdefault(fn, []).append(n)
                    work.append((fn, _Reach(top, rep, maybe)))
                if self._unknown_callee(n) is not None:
                    # a same-file function handed to an unknown callee may be called there
                    for a in [*n.args, *(k.value for k in n.keywords)]:
                        if isinstance(a, ast.Name):
                            bs = sem.resolve(a)
                            if len(bs) == 1 and bs[0].kind is BindingKind.FUNCTION and isinstance(bs[0].node, _DEFS):
                                work.append((bs[0].node, _Reach(top, rep, True)))

        for stmt in self.regions():
            visit(stmt, stmt, False, False, None)
        while work:
            fn, r = work.pop()
            old = reach.get(fn)
            if old is not None:
                first = old.stmt if old.stmt.lineno <= r.stmt.lineno else r.stmt
                new = _Reach(first, old.repeated or r.repeated, old.maybe and r.maybe)
                if (new.stmt, new.repeated, new.maybe) == (old.stmt, old.repeated, old.maybe):
                    continue
                r = new
            reach[fn] = r
            for stmt in fn.body:
                visit(stmt, r.stmt, r.repeated, r.maybe, fn)
        self._reach = reach
        return reach

    # ------------------------------------------------------------------ iterations
    def sites(self) -> list[Loader]:
        """The loaders with the places where they are (or may be) iterated at import."""
        if self._sited:
            return [ld for ld in self.loaders if ld.sites]
        self._sited = True
        sem = self.sem
        reach = self.reach()
        regions = [(stmt, _Reach(stmt, False, False), None) for stmt in self.regions()]
        regions += [(s, r, fn) for fn, r in reach.items() for s in fn.body]
        for region, r, owner in regions:
            for n in sem.walk(region, scopes=False):
                for expr, maybe, via in self._iterated_by(n):
                    lds = self.loaders_of(expr)
                    if not lds:
                        continue
                    if maybe and isinstance(n, ast.Call) and sibling_iterates(sem, n, expr):
                        maybe = False  # (``engine.train(...)``: another module's function that iterates it)
                    rep = r.repeated or _in_loop(sem, n, owner, expr)
                    for ld in lds:
                        ld.sites.append(Site(r.stmt, rep, maybe or r.maybe, expr, via))
        return [ld for ld in self.loaders if ld.sites]

    def _iterated_by(self, n):
        """(expression, maybe, via) for each value ``n`` iterates (or may iterate)."""
        sem = self.sem
        if isinstance(n, (ast.For, ast.AsyncFor)):
            yield from self._unwrap(n.iter)
        elif isinstance(n, ast.comprehension):
            yield from self._unwrap(n.iter)
        elif isinstance(n, ast.Call):
            qs = sem.qualnames(n.func)
            lightning = self._lightning_run(n)
            if lightning is not None:
                yield from ((e, False, sem.segment(n.func)) for e in lightning)
            elif qs & N.CONSUMERS and n.args:
                yield from self._unwrap(n.args[0])
            elif sem.method_name(n) == "__iter__":
                yield from self._unwrap(sem.receiver(n))
            elif not qs & N.ITER_WRAPPERS:
                via = self._unknown_callee(n)
                if via is not None:
                    for a in [*n.args, *(k.value for k in n.keywords)]:
                        a = a.value if isinstance(a, ast.Starred) else a
                        yield a, True, via

    def _lightning(self, call) -> Optional[tuple[list, list, list]]:
        """A Lightning ``Trainer``'s ``fit``/``validate``/``test``/``predict`` call: (the
        values given to it, the ``*_dataloader`` hooks it calls on a same-file model or
        datamodule given to it, the hooks that prepare the data first: ``prepare_data``,
        ``setup``); None for any other call."""
        sem = self.sem
        hooks = N.LIGHTNING_RUNS.get(sem.method_name(call) or "")
        if hooks is None:
            return None
        origins = sem.origins(sem.receiver(call))
        if not origins or not all(o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call)
                                  and sem.call_qualname(o.node) in N.LIGHTNING_TRAINERS for o in origins):
            return None
        given, loaders, prepare = [], [], []
        for a in [*call.args, *(k.value for k in call.keywords)]:
            a = a.value if isinstance(a, ast.Starred) else a
            given.append(a)
            cls = sem.instance_class(a)
            if cls is not None:
                loaders += [fn for fn in (sem.method(cls, h) for h in hooks) if fn is not None]
                prepare += [fn for fn in (sem.method(cls, h) for h in ("prepare_data", "setup")) if fn is not None]
        return given, loaders, prepare

    def _lightning_run(self, call) -> Optional[list]:
        """What a Lightning run iterates: the loaders given to it and those its
        ``*_dataloader`` hooks return; None for any other call."""
        got = self._lightning(call)
        if got is None:
            return None
        given, hooks, _ = got
        return given + [r for fn in hooks for r in self.sem.returns(fn) if r is not None]

    def _unwrap(self, expr):
        sem = self.sem
        if isinstance(expr, ast.Call) and sem.qualnames(expr.func) & N.ITER_WRAPPERS:
            for a in expr.args:
                yield from self._unwrap(a.value if isinstance(a, ast.Starred) else a)
            return
        yield expr, False, ""

    def loaders_of(self, expr, depth: int = 0) -> list[Loader]:
        """The worker loaders the value of ``expr`` may be.  A parameter of a function
        that runs at import time takes what its import-time calls pass (not what a call
        elsewhere passes)."""
        if depth > 6:
            return []
        sem = self.sem
        if isinstance(expr, ast.Call) and expr in self.by_call:
            return [self.by_call[expr]]
        out: list[Loader] = []
        if isinstance(expr, ast.Name):
            reach = self.reach()
            for b in sem.reaching(expr):
                fn = b.scope.node
                if b.kind is BindingKind.PARAMETER and fn in reach and sem.self_class_of_param(b) is None:
                    out.extend(self._param_loaders(b, depth))
                elif b.kind is BindingKind.WITH_TARGET:
                    # ``with tqdm(loader) as bar:``: a progress bar's ``__enter__`` returns itself
                    ce = sem.with_context(b)
                    if isinstance(ce, ast.Call) and sem.qualnames(ce.func) & N.ITER_WRAPPERS:
                        for a in ce.args:
                            out.extend(self.loaders_of(a.value if isinstance(a, ast.Starred) else a, depth + 1))
                else:
                    out.extend(self._from_origins(sem.binding_origins(b), depth))
        else:
            out = self._from_origins(sem.origins(expr), depth)
        seen, uniq = set(), []
        for ld in out:
            if id(ld) not in seen:
                seen.add(id(ld))
                uniq.append(ld)
        return uniq

    def _from_origins(self, origins, depth: int) -> list[Loader]:
        sem = self.sem
        out: list[Loader] = []
        for o in origins:
            if o.kind is OriginKind.VALUE and isinstance(o.node, ast.Call):
                ld = self.by_call.get(o.node)
                if ld is not None:
                    out.append(ld)
                elif sem.qualnames(o.node.func) & N.ITER_WRAPPERS and depth < 6:
                    # ``tqdm(loader)`` handed on: iterating it iterates the loader
                    for a in o.node.args:
                        out.extend(self.loaders_of(a.value if isinstance(a, ast.Starred) else a, depth + 1))
            elif o.kind is OriginKind.ITEM and o.node is not None:
                for e in sem.element_origins(o.node, o.path):
                    if e.kind is OriginKind.VALUE and isinstance(e.node, ast.Call) and e.node in self.by_call:
                        out.append(self.by_call[e.node])
                    elif e.kind is OriginKind.PARAMETER and e.binding is not None:
                        out.extend(self._param_loaders(e.binding, depth))
            elif o.kind is OriginKind.PARAMETER and o.binding is not None:
                out.extend(self._param_loaders(o.binding, depth))
        return out

    def repeats_for(self, ld: Loader, site: Site) -> bool:
        """The iteration at ``site`` repeats for the loader ``ld`` itself: when the site
        iterates a parameter of a function (``for x, y in data_loader:`` of
        ``compute_accuracy(model, data_loader)``) and is in no loop there, a call that
        passes ``ld`` runs in a loop (or in a function that does): one called once after
        training with the test loader does not repeat it, even if another call, in the
        epoch loop, repeats it for the validation loader."""
        if not site.repeated:
            return False
        sem = self.sem
        expr = site.node
        fn = sem.enclosing_function(expr)
        if not isinstance(expr, ast.Name) or fn is None or _in_loop(sem, expr, fn):
            return True
        bs = sem.reaching(expr)
        if len(bs) != 1 or bs[0].kind is not BindingKind.PARAMETER or bs[0].scope.node is not fn:
            return True
        calls = self.calls_of.get(fn, ())
        if not calls:
            return True
        reach = self.reach()
        for call in calls:
            arg = sem.call_argument(fn, call, bs[0].name)
            if arg is None or arg is UNKNOWN_ARG:
                return True
            if not any(x is ld for x in self.loaders_of(arg)):
                continue
            owner = sem.enclosing_function(call)
            if _in_loop(sem, call, owner) or (owner is not None and (owner not in reach or reach[owner].repeated)):
                return True
        return False

    def _param_loaders(self, b, depth) -> list[Loader]:
        """A parameter whose callers are not all known: what its import-time calls pass."""
        fn = b.scope.node
        out = []
        for call in self.calls_of.get(fn, ()):
            arg = self.sem.call_argument(fn, call, b.name)
            if arg is not None and arg is not UNKNOWN_ARG:
                out.extend(self.loaders_of(arg, depth + 1))
        return out

    # ------------------------------------------------------------------ library calls
    def library_call(self):
        """A module-level call (not a DataLoader, not a same-file function) whose result
        is dropped and that receives num_workers > 0: it may build and iterate loaders
        itself (Lightning, Darts, PyG...); or such a call that makes an object one name
        holds, whose ``train``/``fit``/``run``/... method a later module-level statement
        calls (fastNLP's ``trainer = Trainer(..., num_workers=2)``, then
        ``trainer.train()``).  (call, value, the running call or None) or None."""
        sem = self.sem
        made: dict = {}  # the module-level name -> (call, value) of an object made with workers
        for stmt in self.code:
            if isinstance(stmt, _SCOPES) or is_main_guard(stmt):
                continue
            for n in sem.walk(stmt, scopes=False):
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], ast.Name):
                    got = self._library_workers(n.value)
                    if got is not None:
                        made[n.targets[0].id] = got
                    continue
                if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Call):
                    continue
                call = n.value
                got = self._library_workers(call)
                if got is not None:
                    return call, got[1], None
                f = call.func
                if isinstance(f, ast.Attribute) and f.attr in _RUNS and isinstance(f.value, ast.Name) \
                        and f.value.id in made:
                    maker, value = made[f.value.id]
                    bs = sem.reaching(f.value)
                    if len(bs) == 1 and bs[0].kind is BindingKind.ASSIGNMENT and bs[0].value is maker:
                        return maker, value, call
        return None

    def _library_workers(self, call: ast.Call):
        """``(call, value)``: ``call`` (of no DataLoader, of no same-file function) gets a
        worker count above 0 as ``value``; else None."""
        sem = self.sem
        value = self._num_workers_passed(call)
        if value is None or not self.worker_count(value)[0]:
            return None
        if sem.qualnames(call.func) & N.WORKER_LOADERS or sem.callee(call) is not None:
            return None
        return call, value

    @staticmethod
    def _num_workers_passed(call: ast.Call):
        for k in call.keywords:
            if k.arg == "num_workers":
                return k.value
        for a in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(a, ast.Dict):
                for key, v in zip(a.keys, a.values):
                    if isinstance(key, ast.Constant) and key.value == "num_workers":
                        return v
        return None


def _merged(results: list) -> tuple:
    """``worker_count``'s answer for a value that may be any of ``results``."""
    has = any(h for h, _ in results)
    lits = {lit for _, lit in results}
    return (has, lits.pop() if len(lits) == 1 else None)


def sibling_iterates(sem, call: ast.Call, expr) -> bool:
    """``call`` runs a function of another module of the project (``engine.train(...)``
    of ``import engine``) that iterates the parameter ``expr`` is passed to (a ``for``
    over it, also through ``enumerate``/``tqdm``), itself or through a function of its
    own module it hands the parameter to (``train_step(dataloader=train_dataloader)``)."""
    other, fdef = sem.sibling_callee(call, holds=("for ",))
    if other is None:
        return False
    return _iterates_parameter(other, fdef, call, expr, 0)


def _iterates_parameter(m, fdef, call: ast.Call, expr, depth: int) -> bool:
    """The function ``fdef`` of the model ``m`` (a module-level function) iterates the
    parameter that ``expr``, an argument of ``call``, is passed to (see
    :func:`sibling_iterates`); two calls deep at most."""
    if not isinstance(fdef, ast.FunctionDef) or m.parent(fdef) is not m.module or depth > 2 or is_generator(fdef):
        return False  # (a generator iterates nothing until it is itself iterated: ``engine.cycle(loader)``)
    if any(isinstance(x, ast.Starred) for x in call.args):
        return False
    a = fdef.args
    names = [x.arg for x in (*a.posonlyargs, *a.args)]
    param = next((k.arg for k in call.keywords if k.value is expr), None)
    if param is None:
        i = next((i for i, x in enumerate(call.args) if x is expr), None)
        if i is None or i >= len(names):
            return False
        param = names[i]
    elif param not in names and param not in {x.arg for x in a.kwonlyargs}:
        return False

    def of_param(e) -> bool:
        while isinstance(e, ast.Call) and m.qualnames(e.func) & N.ITER_WRAPPERS and e.args:
            e = e.args[0]
        if not isinstance(e, ast.Name) or e.id != param:
            return False
        bs = m.reaching(e)
        return len(bs) == 1 and bs[0].kind is BindingKind.PARAMETER and bs[0].scope.node is fdef

    for n in m.walk(fdef, scopes=False):
        if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and of_param(n.iter):
            return True
        if isinstance(n, ast.Call) and depth < 2:
            for x in [*n.args, *(k.value for k in n.keywords)]:
                if isinstance(x, ast.Name) and x.id == param and of_param(x):
                    t = m.callee(n)
                    if isinstance(t, ast.FunctionDef) and t is not fdef and _iterates_parameter(m, t, n, x, depth + 1):
                        return True
    return False
