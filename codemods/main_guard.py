"""Pitfall: main_guard (see ../shared/pitfalls.md section 3).

TM301: a ``torch.utils.data.DataLoader`` with worker processes is iterated while the
script is being imported (module level, or in a function called at module level) and the
script has no ``if __name__ == "__main__":`` guard.  Under the spawn start method
(Windows, macOS; forkserver, the Linux default from Python 3.14, behaves alike) every
worker re-imports ``__main__``, which runs the iteration again and fails with "An attempt
has been made to start a new process before the current process has finished its
bootstrapping phase".

The fix indents the executable tail of the script (from the first statement that leads to
an iteration) under the guard.  Imports, ``def``/``class`` statements and the constants
they need stay at top level, so that workers can still unpickle the Dataset and call its
functions.  Whenever moving code could change what a definition or a worker sees, the
finding is report-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

import libcst as cst

from .astfacts import facts as _ast_facts
from .cstutil import children as _children, walk as _walk
from .rule import FileContext, Fix, Rule, Safety, Severity

DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
# builtins that consume an iterable right away (and so start the workers)
_CONSUMERS = {f"builtins.{n}" for n in ("iter", "next", "list", "tuple", "sorted", "set", "sum", "any", "all", "max", "min")}
# lazy wrappers: they iterate the loader when they are themselves iterated
_WRAPPERS = {"builtins.enumerate", "builtins.zip", "builtins.reversed", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm"}
# values that make a worker count platform-dependent (`0 if os.name == "nt" else 4`)
_PLATFORM = {
    "os.name", "sys.platform", "platform.system", "platform.platform", "platform.uname",
    "multiprocessing.get_start_method", "torch.multiprocessing.get_start_method",
}
_DATASET_BASES = ("torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset",
                  "torch.utils.data.dataset.IterableDataset", "torch.utils.data.Sampler", "torch.utils.data.sampler.Sampler")
# state that an import placed after it may depend on: imports are not hoisted past it
_IMPORT_STATE = {"sys.path", "sys.modules", "os.chdir", "os.environ", "os.putenv", "importlib.import_module"}
_WORKER_CALLABLE_KW = ("collate_fn", "worker_init_fn")


def _walk_no_defs(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Like _walk, but does not enter function/lambda bodies (code that does not run now)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if n is not node and isinstance(n, (cst.FunctionDef, cst.Lambda)):
            continue
        stack.extend(reversed(_children(n)))


def is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    t = stmt.test
    if len(t.comparisons) != 1 or not isinstance(t.comparisons[0].operator, cst.Equal):
        return False
    sides = [t.left, t.comparisons[0].comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strs = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strs) == 1


def _literal_int(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def _is_constant(node: cst.CSTNode) -> bool:
    """A literal value (number, string, bool/None, and containers of them)."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _is_constant(node.expression)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return all(isinstance(e, cst.Element) and _is_constant(e.value) for e in node.elements)
    if isinstance(node, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _is_constant(e.key) and _is_constant(e.value) for e in node.elements)
    return False


@dataclass
class _Loader:
    call: cst.Call
    workers: cst.CSTNode  # the num_workers value expression
    literal: Optional[int]  # the count when it is a literal
    name: str  # how to call it in messages
    sites: list = field(default_factory=list)  # (top-level stmt index, repeated)


class DataLoaderWithoutMainGuard(Rule):
    """A DataLoader with workers is iterated at import time without `if __name__ == "__main__":`.

    ## What it does
    Finds scripts that iterate a `torch.utils.data.DataLoader` with `num_workers > 0`
    (or a worker count that is not a literal) at module level, directly or through a
    function called at module level, and have no `if __name__ == "__main__":` guard.

    ## Why is this bad?
    With the spawn start method (Windows, macOS; and forkserver, the Linux default from
    Python 3.14) each worker process re-imports the main script. Without the guard the
    re-import iterates the loader again and fails with "An attempt has been made to start
    a new process before the current process has finished its bootstrapping phase".

    The fix indents the executable tail of the script under the guard; imports, `def`,
    `class` and the constants they need stay at top level, so the workers can still
    unpickle the Dataset. It is report-only when the script is imported by another file
    of the tree, when definitions depend on the code that would move, when the tail uses
    `global`, `exec` or star imports, and when a library call (not a DataLoader) receives
    `num_workers`. An info finding suggests `persistent_workers=True` for a loader with a
    literal worker count that is iterated every epoch.

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=32, num_workers=2)
    for epoch in range(10):
        for x, y in loader:
            ...
    ```

    ## Use instead
    ```python
    loader = DataLoader(ds, batch_size=32, num_workers=2)
    if __name__ == "__main__":
        for epoch in range(10):
            for x, y in loader:
                ...
    ```
    """

    code = "TM301"
    name = "dataloader-workers-without-main-guard"
    pitfall = "main_guard"
    summary = 'a DataLoader with workers is iterated at module level without `if __name__ == "__main__":`'
    severity = Severity.BUG
    # num_workers= (or a "num_workers" key of a **kwargs dict), or DataLoader's 6th
    # positional argument
    needles = ("num_workers", "DataLoader")

    @classmethod
    def ast_check(cls, tree) -> bool:
        f = _ast_facts(tree)
        if f.main_guard or not (f.num_workers or (f.six_positional and "DataLoader" in f.names)):
            return False
        return _module_level_may_iterate(tree, f)

    def check(self, ctx: FileContext):
        body = list(ctx.module.body)
        if any(is_main_guard(s) for s in body):
            return
        a = _Analysis(ctx)
        loaders = [ld for ld in a.loaders() if ld.sites]
        if not loaders:
            yield from a.library_calls(self)
            return
        first = min(loaders, key=lambda ld: (min(i for i, _ in ld.sites), ctx.position(ld.call)))
        i0 = min(i for i, _ in first.sites)
        line = ctx.position(body[i0])[0]
        workers = ctx.code(first.workers)
        msg = (
            f"DataLoader `{first.name}` with num_workers={workers} is iterated at import time (line {line}) "
            f'without `if __name__ == "__main__":`; under spawn each worker re-runs the script'
        )
        i_start = min(min(i for i, _ in ld.sites) for ld in loaders)
        why_not = a.unpicklable(loaders) or a.why_not_fixable(i_start)
        if why_not:
            yield ctx.finding(self, first.call, f"{msg} (not fixed: {why_not})")
        else:
            yield ctx.finding(self, first.call, msg, Fix({ctx.module: a.guarded(i_start)}, Safety.SAFE, whole_module=True))
        for ld in loaders:
            yield from a.advice(self, ld)


def _module_level_may_iterate(tree, f) -> bool:
    """The ``ast`` side of ``_Analysis``: a finding needs code that runs at import time
    (outside any def, class or lambda) and either iterates something (a ``for``, a
    comprehension, a call of a consuming builtin such as ``list``/``next``: the loader
    itself, or through ``enumerate``/``tqdm``), calls a top-level function of the file
    (which may iterate the loader: ``_note_use`` follows such calls), or passes
    ``num_workers`` to a call whose result it drops (``library_calls``).  Spelling stands in for qualified names;
    an ``as`` alias counts as what it imports."""
    import ast

    defs = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    eager = {q.split(".", 1)[1] for q in _CONSUMERS}
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    for stmt in tree.body:
        if isinstance(stmt, scopes):
            continue
        stack = [stmt]
        while stack:
            n = stack.pop()
            if isinstance(n, scopes):
                continue
            if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                return True
            if isinstance(n, ast.Call):
                fn = n.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
                if name is not None and (name in defs or f.aliases.get(name, name) in eager):
                    return True
            elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
                call = n.value  # a call whose result is dropped: library_calls
                if any(k.arg == "num_workers" for k in call.keywords) or any(
                    isinstance(a, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "num_workers" for k in a.keys)
                    for a in (*call.args, *(k.value for k in call.keywords))
                ):
                    return True
            stack.extend(ast.iter_child_nodes(n))
    return False


class _Analysis:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.body = list(ctx.module.body)
        self.top_index = {id(s): i for i, s in enumerate(self.body)}
        self.defs = {s.name.value: s for s in self.body if isinstance(s, cst.FunctionDef)}

    # ------------------------------------------------------------------ finding the loaders
    def top_stmt(self, node: cst.CSTNode) -> Optional[int]:
        for n in [node, *self.ctx.ancestors(node)]:
            i = self.top_index.get(id(n))
            if i is not None and self.body[i] is n:
                return i
        return None

    def enclosing_def(self, node: cst.CSTNode):
        """The innermost function/lambda/class around node, or None at module level."""
        for n in self.ctx.ancestors(node):
            if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return n
        return None

    def module_binding(self, name: str) -> Optional[cst.CSTNode]:
        """The value of the only module-level assignment of ``name``."""
        found = []
        for stmt in self.body:
            for n in _walk_no_defs(stmt):
                if isinstance(n, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                    for t in targets:
                        for tn in _walk(t):
                            if isinstance(tn, cst.Name) and tn.value == name:
                                found.append(n if isinstance(t, cst.Name) and not isinstance(n, cst.AugAssign) else None)
                elif isinstance(n, (cst.For, cst.CompFor)):
                    if any(isinstance(tn, cst.Name) and tn.value == name for tn in _walk(n.target)):
                        found.append(None)
        if len(found) == 1 and found[0] is not None:
            return found[0].value
        return None

    def _platform_dependent(self, node: cst.CSTNode, depth: int = 0) -> bool:
        for n in _walk(node):
            if isinstance(n, (cst.Name, cst.Attribute)) and self.ctx.qualnames(n) & _PLATFORM:
                return True
            if depth < 3 and isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in self.defs:
                if self._platform_dependent(self.defs[n.func.value], depth + 1):
                    return True
            if depth < 3 and isinstance(n, cst.Name) and n is not node and not isinstance(self.ctx.parent(n), cst.Attribute):
                v = self.module_binding(n.value)
                if v is not None and self._platform_dependent(v, depth + 1):
                    return True
        return False

    def worker_count(self, value: cst.CSTNode, depth: int = 0):
        """(has_workers, literal): literal 0 or platform-dependent -> no workers."""
        n = _literal_int(value)
        if n is not None:
            return (n > 0, n)
        if self._platform_dependent(value):
            return (False, None)
        if isinstance(value, cst.Name) and depth < 3:
            bound = self.module_binding(value.value)
            if bound is not None:
                has, lit = self.worker_count(bound, depth + 1)
                return (has, lit)
        if isinstance(value, cst.IfExp):
            a = self.worker_count(value.body, depth + 1)
            b = self.worker_count(value.orelse, depth + 1)
            return (a[0] or b[0], None)
        if isinstance(value, cst.Name) and value.value in ("None", "False"):
            return (False, None)
        return (True, None)

    def _kwargs_dict_value(self, name: str) -> tuple[bool, Optional[cst.CSTNode]]:
        """For ``**name``: (known, num_workers value or None)."""
        v = self.module_binding(name)
        if isinstance(v, cst.Dict):
            for e in v.elements:
                if not isinstance(e, cst.DictElement):
                    return (False, None)  # {**other}: unknown
                if isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == "num_workers":
                    return (True, e.value)
            return (True, None)
        if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value == "dict":
            for arg in v.args:
                if arg.keyword is None:
                    return (False, None)
                if arg.keyword.value == "num_workers":
                    return (True, arg.value)
            return (True, None)
        return (False, None)

    def loaders(self) -> list[_Loader]:
        ctx = self.ctx
        out = []
        for call in ctx.nodes(cst.Call):
            if not ctx.is_qualname(call.func, *DATALOADER):
                continue
            value = None
            for i, arg in enumerate(call.args):
                if arg.keyword is not None and arg.keyword.value == "num_workers":
                    value = arg.value
                elif arg.keyword is None and arg.star == "" and i == 5:
                    value = arg.value
                elif arg.star == "**" and value is None:
                    if not isinstance(arg.value, cst.Name):
                        continue
                    known, v = self._kwargs_dict_value(arg.value.value)
                    if known and v is not None:
                        value = v
            if value is None:
                continue
            has, lit = self.worker_count(value)
            if not has:
                continue
            ld = _Loader(call, value, lit, "DataLoader(...)")
            parent = ctx.parent(call)
            if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
                ld.name = parent.targets[0].target.value
                scope = ctx.scope(parent)
                if scope is not None:
                    for asg in scope.assignments[ld.name]:
                        if getattr(asg, "node", None) is parent.targets[0].target:
                            for acc in asg.references:
                                self._note_use(ld, acc.node)
            else:
                self._note_use(ld, call)
            out.append(ld)
        return out

    def _iterated(self, node: cst.CSTNode) -> bool:
        """Whether the value of ``node`` is iterated where it stands."""
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return True
        if isinstance(parent, cst.Arg) and parent.keyword is None:
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and call.func is not node:
                q = ctx.qualnames(call.func)
                if q & _CONSUMERS:
                    return True
                if q & _WRAPPERS:
                    return self._iterated(call)
        return False

    def _in_loop(self, node: cst.CSTNode, stop) -> bool:
        prev = node
        for a in self.ctx.ancestors(node):
            if a is stop:
                return False
            if isinstance(a, (cst.For, cst.While)) and prev is a.body:
                return True
            prev = a
        return False

    def _note_use(self, ld: _Loader, node: cst.CSTNode) -> None:
        if not self._iterated(node):
            return
        # where does this run?  module level, or in top-level functions called at module level
        seen: set[str] = set()
        work = [(node, False)]
        while work:
            site, repeated = work.pop()
            owner = self.enclosing_def(site)
            repeated = repeated or self._in_loop(site, owner)
            if owner is None:
                i = self.top_stmt(site)
                if i is not None:
                    ld.sites.append((i, repeated))
                continue
            if not isinstance(owner, cst.FunctionDef) or self.body[self.top_stmt(owner) or 0] is not owner:
                continue  # a method, nested function or lambda: unknown caller
            fname = owner.name.value
            if fname in seen:
                continue
            seen.add(fname)
            for call in self._calls_of(owner):
                work.append((call, repeated))

    def _calls_of(self, fdef: cst.FunctionDef) -> list[cst.Call]:
        ctx = self.ctx
        scope = ctx.scope(fdef)
        out = []
        if scope is None:
            return out
        for asg in scope.assignments[fdef.name.value]:
            if getattr(asg, "node", None) is not fdef:
                continue
            for acc in asg.references:
                p = ctx.parent(acc.node)
                if isinstance(p, cst.Call) and p.func is acc.node:
                    out.append(p)
        return out

    # ------------------------------------------------------------------ library calls (3.6)
    def library_calls(self, rule):
        """A call at module level that is not a DataLoader but receives num_workers > 0:
        it may build and iterate loaders itself (Lightning, Darts, PyG...)."""
        ctx = self.ctx
        for stmt in self.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            for n in _walk_no_defs(stmt):
                if not isinstance(n, cst.Call) or ctx.is_qualname(n.func, *DATALOADER):
                    continue
                if not isinstance(ctx.parent(n), cst.Expr):
                    continue  # a builder whose result is kept does not iterate yet
                if isinstance(n.func, cst.Name) and n.func.value in self.defs:
                    continue  # our own function: analysed through its DataLoader
                value = self._num_workers_passed(n)
                if value is None or not self.worker_count(value)[0]:
                    continue
                yield ctx.finding(
                    rule,
                    n,
                    f"`{ctx.code(n.func)}` receives num_workers={ctx.code(value)} at import time without "
                    f'`if __name__ == "__main__":`; if it starts DataLoader workers, spawn re-runs the script '
                    "(not fixed: library call)",
                )
                return

    def _num_workers_passed(self, call: cst.Call) -> Optional[cst.CSTNode]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "num_workers":
                return arg.value
            if isinstance(arg.value, cst.Dict):
                for e in arg.value.elements:
                    if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == "num_workers":
                        return e.value
        return None

    # ------------------------------------------------------------------ advice (info)
    def advice(self, rule, ld: _Loader):
        if ld.literal is None or ld.literal <= 0 or not any(rep for _, rep in ld.sites):
            return
        kws = {a.keyword.value for a in ld.call.args if a.keyword is not None}
        if "persistent_workers" in kws:
            return
        extra = ""
        if "pin_memory" not in kws and self._moves_to_cuda():
            extra = ", and `pin_memory=True` speeds up the copies to the GPU"
        yield self.ctx.finding(
            rule,
            ld.call,
            f"DataLoader `{ld.name}` starts its {ld.literal} worker{'s' if ld.literal > 1 else ''} again every epoch: "
            f"`persistent_workers=True` keeps them alive{extra}",
            severity=Severity.INFO,
        )

    def _moves_to_cuda(self) -> bool:
        for n in self.ctx.nodes(cst.Attribute, cst.SimpleString):
            if isinstance(n, cst.Attribute) and n.attr.value == "cuda" and isinstance(self.ctx.parent(n), cst.Call):
                return True
            if isinstance(n, cst.SimpleString) and n.evaluated_value.startswith("cuda"):
                return True
        return False

    # ------------------------------------------------------------------ the fix
    def _classify(self, i0: int):
        """Split the tail body[i0:] into statements kept at top level and moved ones."""
        tail = self.body[i0:]
        defs_text_names = self._names_used_in_definitions()
        kept, moved = [], []
        for k, stmt in enumerate(tail):
            if k == 0:
                moved.append(stmt)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                kept.append(stmt)
            elif isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                kept.append(stmt)
            elif self._constant_needed(stmt, defs_text_names):
                kept.append(stmt)
            else:
                moved.append(stmt)
        return kept, moved

    def _constant_needed(self, stmt, used: set[str]) -> bool:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        s = stmt.body[0]
        if isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name):
            name, value = s.targets[0].target.value, s.value
        elif isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name) and s.value is not None:
            name, value = s.target.value, s.value
        else:
            return False
        if not _is_constant(value):
            return False
        return name == "__all__" or (name in used and self.module_binding(name) is value)

    def _names_used_in_definitions(self) -> set[str]:
        used = set()
        for stmt in self.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                used |= {n.value for n in _walk(stmt) if isinstance(n, cst.Name)}
        return used

    def _bound_in(self, stmts) -> set[str]:
        """Names a list of top-level statements binds at module level."""
        out = set()
        for stmt in stmts:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                out.add(stmt.name.value)
                continue
            for n in _walk_no_defs(stmt):
                if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
                    out.add(n.name.value)
                elif isinstance(n, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                    for t in targets:
                        out |= {x.value for x in _names_in_target(t)}
                elif isinstance(n, (cst.For, cst.CompFor)):
                    out |= {x.value for x in _names_in_target(n.target)}
                elif isinstance(n, cst.AsName):
                    out |= {x.value for x in _names_in_target(n.name)}
                elif isinstance(n, cst.NamedExpr):
                    out |= {x.value for x in _names_in_target(n.target)}
                elif isinstance(n, (cst.Import, cst.ImportFrom)) and not isinstance(n.names, cst.ImportStar):
                    for alias in n.names:
                        if alias.asname is None:
                            out.add(ctx_code_first(alias.name))
        return out

    def _import_time_names(self, stmt) -> set[str]:
        """Names a def/class evaluates when it is defined (decorators, defaults,
        annotations, bases, the class body)."""
        out = set()
        if isinstance(stmt, cst.FunctionDef):
            parts = [d.decorator for d in stmt.decorators]
            params = stmt.params
            for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
                if p.default is not None:
                    parts.append(p.default)
                if p.annotation is not None:
                    parts.append(p.annotation)
            if stmt.returns is not None:
                parts.append(stmt.returns)
        else:
            parts = [d.decorator for d in stmt.decorators] + [a.value for a in stmt.bases] + [a.value for a in stmt.keywords]
            parts.append(stmt.body)
        for part in parts:
            out |= {n.value for n in _walk_no_defs(part) if isinstance(n, cst.Name)}
        return out

    def _worker_code(self) -> list[cst.CSTNode]:
        """Definitions that run in the worker processes: Dataset/Sampler classes and the
        functions passed as collate_fn / worker_init_fn."""
        ctx = self.ctx
        out = []
        names = set()
        for n in ctx.nodes(cst.Call):
            if ctx.is_qualname(n.func, *DATALOADER):
                for a in n.args:
                    if a.keyword is not None and a.keyword.value in _WORKER_CALLABLE_KW and isinstance(a.value, cst.Name):
                        names.add(a.value.value)
        for stmt in self.body:
            if isinstance(stmt, cst.ClassDef) and any(self.ctx.qualnames(b.value) & set(_DATASET_BASES) for b in stmt.bases):
                out.append(stmt)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value in names:
                out.append(stmt)
        return out

    def unpicklable(self, loaders: list) -> Optional[str]:
        """A lambda or a function/class defined inside a function, handed to the loader:
        spawn must pickle it for the workers, and cannot, guard or not (3.9)."""
        ctx = self.ctx
        for ld in loaders:
            for arg in ld.call.args:
                for n in _walk(arg.value):
                    if isinstance(n, cst.Lambda):
                        return f"the loader gets a lambda (`{ctx.code(n)}`), which spawn cannot pickle; use a top-level def"
                    if isinstance(n, cst.Name):
                        scope = ctx.scope(n)
                        if scope is None or scope is scope.globals:
                            continue
                        for asg in scope[n.value] if n.value in scope else ():
                            node = getattr(asg, "node", None)
                            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and ctx.scope(node) is not scope.globals:
                                return f"`{n.value}` is defined inside a function, which spawn cannot pickle; define it at top level"
        return None

    def why_not_fixable(self, i0: int) -> Optional[str]:
        ctx = self.ctx
        if ctx.path.endswith(".ipynb"):
            return "notebook: move the Dataset to a .py module or use num_workers=0"
        if ctx.project.is_imported_elsewhere(ctx.path):
            return "another file of the tree imports this module; guarding would hide its names from the importer"
        kept, moved = self._classify(i0)
        for stmt in moved:
            for n in _walk_no_defs(stmt):
                if isinstance(n, (cst.Global, cst.Nonlocal)):
                    return "`global` statement in the code that would move"
                if isinstance(n, cst.ImportStar):
                    return "star import in the code that would move"
                if isinstance(n, cst.Call) and ctx.qualnames(n.func) & {"builtins.exec", "builtins.eval", "builtins.globals", "builtins.vars"}:
                    return f"`{ctx.code(n.func)}()` in the code that would move"
        for stmt in kept:
            if any(isinstance(n, cst.ImportStar) for n in _walk_no_defs(stmt)):
                return "star import after the first iteration"
        hoisted_imports = [s for s in kept if isinstance(s, cst.SimpleStatementLine)]
        if hoisted_imports:
            first_import = min(self.top_index[id(s)] for s in hoisted_imports)
            for stmt in moved:
                if self.top_index[id(stmt)] > first_import:
                    break
                for n in _walk_no_defs(stmt):
                    if isinstance(n, (cst.Attribute, cst.Name)) and ctx.qualnames(n) & _IMPORT_STATE:
                        return f"an import after `{ctx.code(n)}` would move above it"
        moved_names = self._bound_in(moved)
        outside = self._bound_in(self.body[:i0] + kept)
        only_moved = moved_names - outside
        for stmt in kept:
            clash = self._bound_in([stmt]) & moved_names
            if clash:
                return f"`{sorted(clash)[0]}` is bound both by code that stays and by code that would move"
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                dep = self._import_time_names(stmt) & only_moved
                if dep:
                    return f"`{stmt.name.value}` needs `{sorted(dep)[0]}`, defined by the code that would move"
        for d in self._worker_code():
            dep = {n.value for n in _walk(d) if isinstance(n, cst.Name)} & only_moved
            if dep:
                return f"`{d.name.value}` runs in the workers and reads `{sorted(dep)[0]}`, defined by the code that would move"
        return None

    def _quote(self) -> str:
        single = double = 0
        for n in self.ctx.nodes(cst.SimpleString):
            if isinstance(n, cst.SimpleString):
                q = n.value.lstrip("rbuRBUfF")[:1]
                single += q == "'"
                double += q == '"'
        return "'" if single > double else '"'

    def guarded(self, i0: int) -> cst.Module:
        kept, moved = self._classify(i0)
        first = moved[0]
        lead = list(first.leading_lines)
        k = 0
        while k < len(lead) and lead[k].comment is None:
            k += 1
        guard_lines, first_lines = lead[:k], lead[k:]
        prev = kept[-1] if kept else (self.body[i0 - 1] if i0 else None)
        if isinstance(prev, (cst.FunctionDef, cst.ClassDef)) and len(guard_lines) < 2:
            guard_lines = [cst.EmptyLine(indent=False)] * 2
        guard_lines = [ln.with_changes(indent=False) for ln in guard_lines]
        new_moved = []
        kept_ids = {id(s) for s in kept}
        for j, stmt in enumerate(moved):
            lines = first_lines if j == 0 else list(stmt.leading_lines)
            lines = [ln.with_changes(indent=False) if ln.comment is None else ln for ln in lines]
            k = self.top_index[id(stmt)]
            if j and id(self.body[k - 1]) in kept_ids:
                # it followed a definition that stays at top level: one blank line is enough now
                blank = 0
                while blank < len(lines) and lines[blank].comment is None:
                    blank += 1
                lines = lines[max(0, blank - 1):]
            new_moved.append(stmt.with_changes(leading_lines=lines))
        new_kept = []
        before = self.body[i0 - 1] if i0 else None
        for stmt in kept:
            lines = list(stmt.leading_lines)
            blank = 0
            while blank < len(lines) and lines[blank].comment is None:
                blank += 1
            if isinstance(before, (cst.FunctionDef, cst.ClassDef)) and blank < 2:
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * (2 - blank) + lines)
            new_kept.append(stmt)
            before = stmt
        q = self._quote()
        guard = cst.If(
            test=cst.parse_expression(f"__name__ == {q}__main__{q}"),
            body=cst.IndentedBlock(body=new_moved),
            leading_lines=guard_lines,
        )
        return self.ctx.module.with_changes(body=[*self.body[:i0], *new_kept, guard])


def ctx_code_first(name: cst.CSTNode) -> str:
    """``a`` for ``import a.b.c`` (the name it binds)."""
    while isinstance(name, cst.Attribute):
        name = name.value
    return name.value if isinstance(name, cst.Name) else ""


def _names_in_target(t: cst.CSTNode) -> list[cst.Name]:
    if isinstance(t, cst.Name):
        return [t]
    if isinstance(t, (cst.Tuple, cst.List)):
        out = []
        for e in t.elements:
            out += _names_in_target(e.value)
        return out
    if isinstance(t, cst.StarredElement):
        return _names_in_target(t.value)
    return []
