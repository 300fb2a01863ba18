"""TM301 dataloader-workers-without-main-guard."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..rule import Context, Fix, Rule, Safety, Severity, Verify
from ..semantic import UNKNOWN_ARG, BindingKind, OriginKind
from ..semantic import names as N
from ._device import move_of
from ._main_guard import _DEFS, DATASET_BASES, IMPORT_STATE, WORKER_ARGS, Analysis, Loader, is_main_guard, \
    sibling_iterates

_EXEC = frozenset({"builtins.exec", "builtins.eval", "builtins.globals", "builtins.vars"})


class DataLoaderWithoutMainGuard(Rule):
    """## What it does
    Finds scripts that iterate a `torch.utils.data.DataLoader` with `num_workers > 0`
    (or a worker count that is not a literal) while they are being imported -- at module
    level, or in a function or method that module-level code calls -- and have no
    `if __name__ == "__main__":` guard.  The loader is followed to where it is iterated
    through names, function arguments, `self` attributes, containers (`loaders["train"]`,
    `for dl in (train_dl, val_dl)`) and builder functions; a Lightning `Trainer`'s
    `fit`/`validate`/`test`/`predict` iterates the loaders given to it and those the
    `*_dataloader` hooks of a same-file model or datamodule given to it return.

    ## Why is this bad?
    With the spawn start method (Windows, macOS; and forkserver, the Linux default from
    Python 3.14) each worker process re-imports the main script.  Without the guard the
    re-import iterates the loader again and fails with "An attempt has been made to start
    a new process before the current process has finished its bootstrapping phase".

    The same start methods pickle what the workers run: the Dataset, `collate_fn` and
    `worker_init_fn`.  A class or function defined under `if __name__ == "__main__":`
    is missing from the `__mp_main__` the workers import (`Can't get attribute
    'MyDataset' on <module '__mp_main__'>`), one defined inside a function cannot be
    pickled (`Can't pickle local object 'main.<locals>.collate_fn'`), nor can a lambda;
    TM301 reports those for any loader with workers of a script, guarded or not (not
    fixed: the definition has to move to the top level), unless the loader asks for
    `multiprocessing_context="fork"`.  Loaders deriving from torch's (PyTorch Geometric's
    `NeighborSampler`/`NeighborLoader`/..., DGL's, MONAI's) count as DataLoaders.

    A worker count of 0, no count, or one that depends on the platform
    (`0 if os.name == "nt" else 4`, or set under `if os.name == "nt":`) starts no
    worker there and is not reported.  An info
    finding suggests `persistent_workers=True` for a loader with a literal worker count
    that the code run at import time (a script without the guard, a notebook) iterates
    every epoch; not yet for one iterated in a function the guard calls.

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

    ## Fix safety
    The fix indents the executable code of the script under the guard, from its first
    statement after the imports (the datasets read, the model built and moved to the
    GPU, `wandb.init()`: under spawn each worker would run them again), or, when code
    there cannot move (the workers read a name it binds, a definition needs it), from
    a later statement, at the latest the first that leads to an iteration; imports,
    `def`, `class` and the constants that definitions read stay at top level (above
    the guard, in their order), so the workers can still unpickle the Dataset.  The
    guard's block is indented as most of the code it holds.  It is safe when the loader
    is provably iterated; unsafe when it is only handed to a callee that cannot be
    followed (another module's `train(loader)`, the `fit(loader)` of a trainer that
    is not Lightning's), which may iterate it.  A loader a function of a sibling module
    makes, given a worker count known here to be above 0 (`train_loader, _ =
    dataset.get(..., num_workers=1)`) and iterated at import time, is reported without a
    fix, and so is one a sibling module makes at its top level with workers as it is
    imported (`from data import train_loader`, or `from data import *`) and the script
    iterates at import time.  It is report-only in a script written
    in cells (`# %%` markers of jupytext's percent format and of editors, or a jupytext
    header: it runs cell by cell or becomes a notebook, and a guard would indent its
    cells under one `if`), when another file
    of the project imports the script (a notebook's code cells too), when a definition
    needs code that would move (a default, a decorator, a base class), when what the
    workers run (the Dataset's methods, `collate_fn`, `worker_init_fn` and what they
    call) reads a name the moved code defines, when the loader gets a lambda or a local
    function (spawn cannot pickle it, guard or not), when the tail uses `global`, `exec`
    or a star import, when an import would move above a `sys.path`/`os.environ` change,
    when the file already has a guard, and when a library call (not a DataLoader)
    receives `num_workers` (or makes an object with it that a later import-time
    statement runs: fastNLP's `trainer = Trainer(..., num_workers=2)`, then
    `trainer.train()`).

    ## In a notebook
    A kernel runs the cells with `__name__ == "__main__"`, so a guard changes nothing.
    What fails there under spawn is a worker unpickling the Dataset (or `collate_fn`,
    `worker_init_fn`) whose class is defined in the notebook: the workers cannot import
    the kernel's `__main__` (`Can't get attribute 'MyDataset' on <module '__main__'>`).
    TM301 reports that, for a loader with workers the notebook iterates (under an `if
    __name__ == "__main__":` of a cell too: it runs), and only when
    such an object is defined in the notebook itself; the fix is yours: move the class
    to a `.py` module and import it, or use `num_workers=0` on spawn platforms.  A
    function or class defined inside another function (a `target_transform` made in
    the function that builds the loaders) cannot be pickled from anywhere: it is named
    as such, to be moved to the top level of a module.
    """

    code = "TM301"
    name = "dataloader-workers-without-main-guard"
    pitfall = "main_guard"
    summary = 'a DataLoader with workers is iterated at module level without `if __name__ == "__main__":`'
    severity = Severity.BUG
    # num_workers= (or a "num_workers" key of a **kwargs dict), or DataLoader's 6th
    # positional argument
    needles = ("num_workers", "DataLoader")
    verify = Verify("spawn", ("bootstrapping phase",))
    corpus_minimum = (8, 6)
    uses_project = True
    valid = (
        "from torch.utils.data import DataLoader\n\ndef main():\n    for b in DataLoader(ds, num_workers=2):\n"
        "        pass\n\nif __name__ == '__main__':\n    main()\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=0)\nfor b in loader:\n    pass\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nprint(len(loader))\n",
    )
    invalid = (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n",
        "from torch.utils.data import DataLoader\n\ndef train(dl):\n    for b in dl:\n        pass\n\n"
        "train(DataLoader(ds, num_workers=2))\n",
    )

    @classmethod
    def may_match_project(cls, path: str, text: str, has, project) -> bool:
        """A script that loops at module level (a line starting with ``for``) over what it
        may import from a module of the project that makes a loader with workers
        (``from data import train_loader``, ``from data import *``), or whose module-level
        code names a loader (:func:`_loader_at_module_level`: a function of another module
        may iterate it): one of its imports reaches a file that holds ``num_workers`` (read
        without parsing)."""
        return (_loops_at_module_level(text, has) or _loader_at_module_level(text, has)) and project is not None \
            and project.imports_holding(path, text, "num_workers")

    def check(self, ctx: Context):
        an = Analysis.of(ctx)
        if ctx.notebook:
            yield from self._notebook(ctx, an)
            return
        yield from self._unpicklable(ctx, an)
        if not an.loaders:
            if not an.guards:
                yield from self._library_call(ctx, an)
                yield from self._sibling_loaders(ctx, an)
            return
        loaders = an.sites()
        if not loaders:
            if not an.guards:
                yield from self._library_call(ctx, an)
                yield from self._sibling_loaders(ctx, an)
            return
        sem = ctx.sem
        definite = [ld for ld in loaders if any(not s.maybe for s in ld.sites)]
        pool = definite or loaders

        def first_site(ld, definite_only):
            sites = [s for s in ld.sites if not s.maybe] if definite_only else ld.sites
            return min(sites, key=lambda s: (s.stmt.lineno, s.stmt.col_offset))

        first = min(pool, key=lambda ld: ((first_site(ld, bool(definite)).stmt.lineno), sem.position(ld.call)))
        site = first_site(first, bool(definite))
        workers = sem.segment(first.workers)
        line = site.stmt.lineno
        if definite:
            by = f", by `{site.via}`" if site.via and not site.maybe else ""
            what = f"is iterated at import time (line {line}{by})"
        else:
            what = f"is passed to `{site.via}` at import time (line {line}), which may iterate it,"
        msg = (
            f"DataLoader `{first.name}` with num_workers={workers} {what} without "
            f'`if __name__ == "__main__":`; under spawn each worker re-runs the script'
        )
        if an.guards:
            g = an.guards[0]
            yield ctx.finding(
                self, first.call,
                f"DataLoader `{first.name}` with num_workers={workers} {what} outside the "
                f'`if __name__ == "__main__":` block (line {g.lineno}); under spawn each worker re-runs it '
                "(not fixed: move it under the guard)",
            )
            return
        start = min((s.stmt for ld in loaders for s in ld.sites), key=lambda s: (s.lineno, s.col_offset))
        plan = Plan(ctx, an, start, loaders)
        why_not = plan.unpicklable() or plan.why_not_fixable() or _cell_script(ctx.text)
        if not why_not:
            plan = _earlier_plan(ctx, an, start, loaders) or plan
        if why_not:
            yield ctx.finding(self, first.call, f"{msg} (not fixed: {why_not})")
        else:
            safety = Safety.SAFE if definite else Safety.UNSAFE
            yield ctx.finding(
                self, first.call, msg,
                Fix(plan.build, safety, message='indent the script\'s tail under `if __name__ == "__main__":`',
                    whole_module=True),
            )
        for ld in loaders:
            f = self._advice(ctx, ld)
            if f is not None:
                yield f

    # ------------------------------------------------------------------ notebooks
    def _notebook(self, ctx: Context, an: Analysis):
        """In a kernel ``__name__ == "__main__"`` holds: no guard to add.  What breaks is
        spawn's workers unpickling objects whose class or function lives in the
        notebook's ``__main__``, which they cannot import.  Reported (never fixed) for a
        loader with workers that the notebook iterates, only when its dataset,
        ``collate_fn`` or ``worker_init_fn`` is (or holds) such an object."""
        if not an.loaders:
            return
        sem = ctx.sem
        for ld in an.sites():
            ctx_arg = sem.argument(ld.call, "multiprocessing_context")
            if isinstance(ctx_arg, ast.Constant) and ctx_arg.value == "fork":
                continue  # forked workers inherit the objects: nothing is pickled
            found = _worker_objects(sem, ld.call)
            if not found:
                continue
            workers = sem.segment(ld.workers)
            lam = next((n for n in found if isinstance(n, ast.Lambda)), None)
            labels = []
            local = None  # (function or class, what holds it): defined inside a function
            for n in found:
                if isinstance(n, ast.Lambda):
                    continue
                holder = sem.enclosing_function(n)
                if holder is not None:
                    local = local or (n, holder)
                    continue
                top = sem.top_statement(n)
                label = getattr(top, "name", None) or getattr(n, "name", "?")
                if label not in labels:
                    labels.append(label)
            if local is not None:
                # (a module does not help: a local object cannot be pickled from anywhere)
                n, holder = local
                yield ctx.finding(
                    self, ld.call,
                    f"DataLoader `{ld.name}` with num_workers={sem.segment(ld.workers)}: its workers need `{n.name}`, "
                    f"defined inside `{getattr(holder, 'name', 'a lambda')}`, which spawn (macOS, Windows; forkserver, "
                    f"Linux from Python 3.14) cannot pickle (`Can't pickle local object '{_qualname(sem, n)}'`); "
                    "define it at the top level of a .py module and import it, or use num_workers=0 on spawn "
                    "platforms (not fixed)",
                )
                continue
            if labels:
                names = ", ".join(f"`{x}`" for x in labels[:3]) + (" ..." if len(labels) > 3 else "")
                what = (f"its workers need {names}, defined in this notebook: under spawn (macOS, Windows; "
                        f"forkserver, Linux from Python 3.14) they cannot import it from the kernel's __main__ "
                        f"(`Can't get attribute '{labels[0]}' on <module '__main__'>`)")
            else:
                what = (f"it gets a lambda (`{sem.segment(lam)}`), which spawn (macOS, Windows; forkserver, Linux "
                        "from Python 3.14) cannot pickle for its workers")
            it = "it" if len(labels) + (lam is not None) == 1 else "them"
            move = f"move {it} to a .py module and import {it}" if labels else "define it with `def` in a .py module and import it"
            yield ctx.finding(
                self, ld.call,
                f"DataLoader `{ld.name}` with num_workers={workers}: {what}; {move}, or use num_workers=0 on "
                'spawn platforms (not fixed: in a notebook `if __name__ == "__main__":` does not help)',
            )
        for ld in an.sites():
            f = self._advice(ctx, ld)
            if f is not None:
                yield f

    def _unpicklable(self, ctx: Context, an: Analysis):
        """A script's loader with workers whose dataset, ``collate_fn`` or
        ``worker_init_fn`` is (or holds) a class or function that spawn's workers cannot
        unpickle: defined under ``if __name__ == "__main__":`` (a worker imports the script
        as ``__mp_main__``, where that block does not run), inside a function (a local
        object), or a lambda.  Reported, not fixed: the definition has to move."""
        sem = ctx.sem
        words = an.loader_words()
        if not ctx.has("num_workers") or (not an.guards and not ctx.has("def ") and not ctx.has("lambda")):
            return  # (a worker count given by position only: not looked for)
        # loaders iterated at import time: the guard finding is theirs (report-only when they hold these)
        unguarded = {ld.call for ld in an.sites()}
        for call in sem.find(ast.Call, containing=words):
            if call in unguarded or not (sem.qualnames(call.func) & N.WORKER_LOADERS):
                continue
            value = sem.argument(call, "num_workers", position=5)
            if value is None or value is UNKNOWN_ARG or not an.worker_count(value)[0]:
                continue
            ctx_arg = sem.argument(call, "multiprocessing_context")
            if isinstance(ctx_arg, ast.Constant) and ctx_arg.value == "fork":
                continue  # forked workers inherit the objects: nothing is pickled
            why = None
            for n in _worker_objects(sem, call):
                if isinstance(n, ast.Lambda):
                    why = (f"it gets a lambda (`{sem.segment(n)}`), which cannot be pickled for them; define it with "
                           "`def` at the top level")
                    break
                holder = sem.enclosing_function(n)
                if holder is not None:
                    why = (f"they need `{n.name}`, defined inside `{getattr(holder, 'name', 'a lambda')}`, which cannot"
                           f" be pickled (`Can't pickle local object '{_qualname(sem, n)}'`); define it at the top level")
                    break
                if is_main_guard(sem.top_statement(n)):
                    why = (f"they need `{n.name}`, defined under `if __name__ == \"__main__\":`, and import this script"
                           f" as `__mp_main__`, where that block does not run (`Can't get attribute '{n.name}' on <module"
                           " '__mp_main__'>`); define it at the top level, above the guard")
                    break
            if why is None:
                continue
            yield ctx.finding(
                self, call,
                f"DataLoader `{an.name_of(call)}` with num_workers={sem.segment(value)}: under spawn (macOS, Windows;"
                f" forkserver, Linux from Python 3.14) its workers unpickle what it holds: {why}, or use"
                " num_workers=0 on spawn platforms (not fixed)",
            )

    def _library_call(self, ctx, an: Analysis):
        got = an.library_call()
        if got is None:
            return
        call, value, runs = got
        sem = ctx.sem
        then = f" and `{sem.segment(runs.func)}()` (line {runs.lineno}) runs it" if runs is not None else ""
        yield ctx.finding(
            self, call,
            f"`{sem.segment(call.func)}` receives num_workers={sem.segment(value)} at import time{then} without "
            f'`if __name__ == "__main__":`; if it starts DataLoader workers, spawn re-runs the script '
            "(not fixed: library call)",
        )

    def _sibling_loaders(self, ctx, an: Analysis):
        """A loader made by a function of another module of the project, given
        num_workers > 0 here (``train_loader, _ = dataset.get(..., num_workers=1)``), and
        iterated at import time: reported, not fixed (the loader is made elsewhere)."""
        import os

        sem = ctx.sem
        if ctx.project is None or not ctx.path:
            return
        here = ctx.has("num_workers")  # (a count given here: a loader a sibling's function makes)
        # (a loader a sibling module made as it was imported, or one a sibling's function
        # returns, iterated here or by a function of another module: ``engine.train(...)``)
        imported = _loops_at_module_level(ctx.text, ctx.has) or _loader_at_module_level(ctx.text, ctx.has)
        if not (here or imported):
            return
        regions = [*an.regions(), *(st for fn in an.reach() for st in fn.body)]
        for region in regions:
            for n in sem.walk(region, scopes=False):
                for expr, maybe, _via in an._iterated_by(n):
                    by = ""
                    if maybe:
                        if not (imported and isinstance(n, ast.Call) and sibling_iterates(sem, n, expr)):
                            continue
                        by = f", by `{sem.segment(n.func)}`"
                    got = self._made_by_sibling(sem, an, expr) if here else None
                    if got is not None:
                        call, workers, path = got
                        node, what = call, (f"`{sem.segment(call.func)}(...)` makes a DataLoader in"
                                            f" {os.path.basename(path)} with num_workers={sem.segment(workers)},")
                    else:
                        got = _imported_loader(sem, expr) if imported else None
                        returned = _returned_loader(sem, expr, an) if imported and got is None else None
                        if returned is not None:
                            call, workers, other = returned
                            node, what = call, (f"`{sem.segment(call.func)}(...)` returns a DataLoader made in"
                                                f" {os.path.basename(other.path)} with"
                                                f" num_workers={workers}, which is")
                        elif got is None:
                            continue
                        else:
                            name, workers, other = got
                            node, what = expr, (f"DataLoader `{name}` of {os.path.basename(other.path)}, made there"
                                                f" with num_workers={other.segment(workers)} as it is imported, is")
                    yield ctx.finding(
                        self, node,
                        f"{what} iterated at import time (line {sem.statement_of(n).lineno}{by}) without"
                        ' `if __name__ == "__main__":`; under spawn each worker re-runs the script (not fixed: put'
                        " the script's code under the guard)",
                    )
                    return

    @staticmethod
    def _made_by_sibling(sem, an: Analysis, expr):
        """``(call, workers, path)`` when ``expr`` holds what a call of a function of a
        sibling module returns, given a worker count known to be above 0, and that
        function's code makes a DataLoader."""
        for o in sem.origins(expr):
            call = o.node
            if o.kind not in (OriginKind.VALUE, OriginKind.PART) or not isinstance(call, ast.Call):
                continue
            workers = next((k.value for k in call.keywords if k.arg == "num_workers"), None)
            lit = an.worker_count(workers)[1] if workers is not None else None
            if (lit is None or lit <= 0) and not (workers is not None and _cpu_count(sem, workers)):
                continue  # (only a count known here: ``SETTINGS["num workers"]`` of another module may be 0)
            if (sem.qualname(call.func) or "").startswith("torchvision."):
                continue
            other, bs = sem.sibling_definitions(call.func)
            if len(bs) == 1 and bs[0].kind is BindingKind.FUNCTION and "DataLoader(" in other.segment(bs[0].node):
                return call, workers, other.path
        return None

    def _advice(self, ctx, ld: Loader):
        sem = ctx.sem
        an = Analysis.of(ctx)
        if ld.literal is None or ld.literal <= 0 or not any(
                _iterated_again(sem, ld.call, s) and an.repeats_for(ld, s) for s in ld.sites):
            return None
        # (said by keyword or in a ``**kwargs`` dict: ``sem.argument`` reads both)
        if sem.argument(ld.call, "persistent_workers") is not None:
            return None
        extra = ""
        if sem.argument(ld.call, "pin_memory") is None and _moves_to_cuda(sem):
            extra = ", and `pin_memory=True` speeds up the copies to the GPU"
        n = ld.literal
        return ctx.finding(
            self, ld.call,
            f"DataLoader `{ld.name}` starts its {n} worker{'s' if n > 1 else ''} again every epoch: "
            f"`persistent_workers=True` keeps them alive{extra}",
            severity=Severity.INFO,
        )


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _loops_at_module_level(text: str, has) -> bool:
    """A line of ``text`` starts with ``for`` or ``while`` in column 0 (the text test
    that lets a script whose loader comes from an import be read: ``_imported_loader``,
    ``_returned_loader``)."""
    return has("\nfor ") or has("\nwhile ") or text.startswith(("for ", "while "))


def _loader_at_module_level(text: str, has) -> bool:
    """A line of ``text`` that starts in column 0 with neither ``def``, ``class``,
    ``async``, a decorator nor a comment names a loader (``train_dataloader, test_dataloader,
    class_names = data_setup.create_dataloaders(``, ``from data import train_loader``, d2l's
    ``train_iter, test_iter = load_data_fashion_mnist(batch_size)``): the text test that
    lets a script whose loaders a sibling module makes, handed to a function of another
    module, be read (:func:`sibling_iterates`)."""
    for word in ("loader", "_iter"):
        if not has(word):
            continue
        i = text.find(word)
        while i >= 0:
            ls = text.rfind("\n", 0, i) + 1
            if not text[ls].isspace() and not text.startswith(("def ", "class ", "async ", "@", "#"), ls):
                return True
            nl = text.find("\n", i)
            i = text.find(word, nl + 1) if nl >= 0 else -1
    return False


def _literal_workers(sem, w) -> bool:
    """``w`` (a ``num_workers=`` value) is an int above 0 on every way it is bound: a
    literal, or a name bound only to such literals."""
    vals = [o.node for o in sem.origins(w)] if isinstance(w, ast.Name) else [w]
    return bool(vals) and all(isinstance(v, ast.Constant) and type(v.value) is int and v.value > 0 for v in vals)


def _returned_loader(sem, expr, an: Analysis):
    """``(call, workers, model of its file)`` when ``expr`` holds only what a call of a
    function of another module of the project returns (``train_loader =
    get_loader(...)`` of ``from dataset import get_loader``; ``train_dl, test_dl, names =
    create_dataloaders(...)`` of a returned tuple), and each value that function returns
    is a DataLoader it makes itself with ``num_workers=`` a count known to be above 0:
    one there, or its parameter's (:func:`_parameter_workers`).  ``workers``: the count's
    text."""
    origins = sem.origins(expr)
    if len(origins) != 1 or origins[0].kind not in (OriginKind.VALUE, OriginKind.PART) \
            or not isinstance(origins[0].node, ast.Call):
        return None
    call = origins[0].node
    other, rets = sem.sibling_return_values(call, path=origins[0].path or (), holds=("num_workers",))
    if other is None:
        return None
    fdef = sem.sibling_callee(call)[1]
    workers = None
    for r in rets:
        made = [o.node for o in other.origins(r)] if isinstance(r, ast.Name) else [r]
        if not made:
            return None
        for m in made:
            if not isinstance(m, ast.Call) or not other.qualnames(m.func) & N.WORKER_LOADERS:
                return None
            w = next((k.value for k in m.keywords if k.arg == "num_workers"), None)
            if w is None:
                return None
            if _literal_workers(other, w):
                workers = other.segment(w)
            else:
                workers = _parameter_workers(sem, an, call, other, fdef, w)
                if workers is None:
                    return None
    return (call, workers, other) if workers is not None else None


# calls that count the machine's CPUs: at least one wherever a script runs
_CPU_COUNTS = frozenset({"os.cpu_count", "multiprocessing.cpu_count"})


def _parameter_workers(sem, an: Analysis, call: ast.Call, other, fdef, w) -> Optional[str]:
    """The text of the worker count ``w`` (a name in ``other``, the model of the file of
    the function ``fdef`` that ``call`` here runs) when it is a parameter of ``fdef`` and
    is above 0 for this call: the value ``call`` passes, known here to be an int above
    0, or else the parameter's default, an int above 0 or the machine's CPU count
    (``os.cpu_count()``, also through a module-level name: learnpytorch's
    ``NUM_WORKERS = os.cpu_count()``); None otherwise."""
    if not isinstance(w, ast.Name) or not isinstance(fdef, ast.FunctionDef) or other.parent(fdef) is not other.module:
        return None
    bs = other.reaching(w)
    if len(bs) != 1 or bs[0].kind is not BindingKind.PARAMETER or bs[0].scope.node is not fdef:
        return None
    a = fdef.args
    if a.vararg is not None and a.vararg.arg == w.id:
        return None
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return None  # (``**cfg`` may hold the count)
    names = [x.arg for x in (*a.posonlyargs, *a.args)]  # (the positions a call's arguments fill)
    given = None if w.id in {x.arg for x in a.posonlyargs} else next(
        (k.value for k in call.keywords if k.arg == w.id), None)
    if given is None and w.id in names and names.index(w.id) < len(call.args):
        given = call.args[names.index(w.id)]
    if given is not None:
        lit = an.worker_count(given)[1]
        return sem.segment(given) if lit is not None and lit > 0 or _cpu_count(sem, given) else None
    if len(call.args) > len(names):
        return None  # (more arguments than positions: not read)
    defaults = dict(zip(names[len(names) - len(a.defaults):], a.defaults))
    defaults.update((x.arg, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    d = defaults.get(w.id)
    if d is None:
        return None
    vals = [o.node for o in other.origins(d)] if isinstance(d, ast.Name) else [d]
    if not vals or not all(isinstance(v, ast.Constant) and type(v.value) is int and v.value > 0 for v in vals) \
            and not _cpu_count(other, d):
        return None
    return f"{w.id} (default `{other.segment(d)}`)"


def _cpu_count(m, expr) -> bool:
    """Every value ``expr`` may hold (in the model ``m``) is the machine's CPU count:
    ``os.cpu_count()``, ``multiprocessing.cpu_count()``, also through names."""
    vals = [o.node for o in m.origins(expr)] if isinstance(expr, ast.Name) else [expr]
    return bool(vals) and all(isinstance(v, ast.Call) and not v.args and not v.keywords
                              and m.call_qualname(v) in _CPU_COUNTS for v in vals)


def _imported_loader(sem, expr):
    """``(name, workers, model of its file)`` when ``expr`` is a name this file imports
    from a module of the project (``from data import train_loader``, or a star import
    ``SemanticModel.star_definitions`` is sure of) that binds it, at that module's top
    level (not under a guard), only to a DataLoader made with ``num_workers=`` a count
    there known to be above 0."""
    if not isinstance(expr, ast.Name):
        return None
    origins = sem.origins(expr)
    if len(origins) != 1:
        return None
    if origins[0].kind is OriginKind.IMPORT:
        other, bs = sem.sibling_definitions(expr)
    elif origins[0].kind is OriginKind.UNKNOWN and not sem.resolve(expr):
        other, bs = sem.star_definitions(expr.id, before=expr)
    else:
        return None
    if other is None or not bs or any(b.kind is not BindingKind.ASSIGNMENT or not isinstance(b.value, ast.Call)
                                      or not other.qualnames(b.value.func) & N.WORKER_LOADERS
                                      or other.parent(other.statement_of(b.value)) is not other.module for b in bs):
        return None  # (a binding under ``if __name__ == "__main__":`` does not run as the module is imported)
    workers = None
    for b in bs:
        # the count said by keyword: what the project gate looks for in the module's text
        w = next((k.value for k in b.value.keywords if k.arg == "num_workers"), None)
        if w is None or not _literal_workers(other, w):
            return None  # (a count that may be 0, or depend on the platform)
        workers = w
    return expr.id, workers, other


def _iterated_again(sem, ctor: ast.Call, site) -> bool:
    """The loader built by ``ctor`` is iterated more than once at ``site``: the site
    repeats, and, when the loader is built in the same function, a loop between the two
    repeats it (a loader built again each time, in a loop around both or in a function
    called in a loop, has new workers either way).  Built in another function and
    bound here from a call (``_, loader = data_provider(args)``): the same test with
    that assignment for the constructor (a call there may return a kept loader, but
    then one built again each time is not told from it: nothing is advised)."""
    if not site.repeated or site.maybe:
        return False
    fn = sem.enclosing_function(ctor)
    here = sem.enclosing_function(site.node)
    if fn is here:
        return _loop_between(sem, ctor, site.node, fn)
    anchors = _local_call_bindings(sem, site.node, here)
    if anchors is None:
        return True
    return any(_loop_between(sem, a, site.node, here) for a in anchors)


def _loop_between(sem, anchor, node, fn) -> bool:
    """A loop around ``node`` (inside ``fn``) and not around ``anchor`` repeats it."""
    around = {id(a) for a in sem.ancestors(anchor) if isinstance(a, _LOOPS)}
    up = [node]
    for a in sem.ancestors(node):
        if a is fn:
            break
        if isinstance(a, _LOOPS) and id(a) not in around and not (
                isinstance(a, (ast.For, ast.AsyncFor)) and any(x is a.iter for x in up)):
            return True  # (the loop whose iterable it is runs it once)
        up.append(a)
    return False


def _local_call_bindings(sem, expr, fn) -> Optional[list]:
    """The statements that bind the name ``expr`` in the function ``fn`` (None: at module
    level) from a call's result, when those are all that may reach it; None otherwise."""
    if not isinstance(expr, ast.Name):
        return None
    bs = sem.reaching(expr)
    out = []
    for b in bs:
        if b.kind is not BindingKind.ASSIGNMENT or b.stmt is None \
                or (b.scope is not sem.module_scope if fn is None else b.scope.node is not fn):
            return None
        value = b.value if b.value is not None else (b.unpack[0] if b.unpack else None)
        if not isinstance(value, ast.Call):
            return None
        out.append(b.stmt)
    return out or None


def _qualname(sem, node) -> str:
    """Python's ``__qualname__`` of a function or class (``Data.setup.<locals>.f``)."""
    parts = [node.name]
    for a in sem.ancestors(node):
        if isinstance(a, _DEFS):
            parts.append(f"{a.name}.<locals>")
        elif isinstance(a, ast.Lambda):
            parts.append("<lambda>.<locals>")
        elif isinstance(a, ast.ClassDef):
            parts.append(a.name)
    return ".".join(reversed(parts))


# how deep the objects a loader holds are followed (constructor arguments, containers):
# a dataset's transform that holds a lambda, ``CIFAR10(transform=Compose([Lambda(lambda
# x: ...)]))``, is four levels down
_HELD_DEPTH = 4


def _worker_objects(sem, call) -> list:
    """The same-file classes, functions and lambdas a loader's workers must unpickle
    (its dataset, ``collate_fn``, ``worker_init_fn``)."""
    found: list = []
    for name, pos in WORKER_ARGS:
        arg = sem.argument(call, name, position=pos)
        if arg is not None and arg is not UNKNOWN_ARG:
            _notebook_objects(sem, arg, found, 0)
    return found


_SPLITS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"})


def _split_of(sem, o):
    """The dataset a part of ``random_split(ds, [48, 16])`` holds (``train_set, val_set =
    random_split(Toy(), ...)``: each part holds it), for the origin ``o`` of such a part;
    None for any other origin."""
    n = o.node
    if o.kind is OriginKind.PART and isinstance(n, ast.Call) and n.args and sem.call_qualname(n) in _SPLITS:
        a = n.args[0]
        return a.value if isinstance(a, ast.Starred) else a
    return None


def _notebook_objects(sem, expr, found: list, depth: int) -> None:
    """Add to ``found`` the same-file classes, functions and lambdas the value of
    ``expr`` is, is an instance of, or holds (arguments of constructors, containers):
    what a worker process must unpickle.  The result of a same-file function is not
    followed (it may be anything)."""
    for o in sem.origins(expr):
        n = o.node
        if o.kind is OriginKind.DEFINITION and isinstance(n, (*_DEFS, ast.ClassDef)):
            found.append(n)
        elif o.kind is OriginKind.VALUE and isinstance(n, ast.Lambda):
            found.append(n)
        elif o.kind is OriginKind.VALUE and isinstance(n, ast.Call):
            t = sem.callee(n)
            if t is None and isinstance(n.func, ast.Name):
                # a class defined twice (a notebook cell run again): the definitions that reach
                classes = [d.node for d in sem.origins(n.func)
                           if d.kind is OriginKind.DEFINITION and isinstance(d.node, ast.ClassDef)]
                for c in classes:
                    found.append(c)
                    found.extend(_lambdas_kept_by_init(sem, c))
            if isinstance(t, ast.ClassDef):
                found.append(t)
                found.extend(_lambdas_kept_by_init(sem, t))
            elif isinstance(t, _DEFS):
                continue
            if depth < _HELD_DEPTH:
                for a in _held_args(sem, n, t):
                    _notebook_objects(sem, a.value if isinstance(a, ast.Starred) else a, found, depth + 1)
        elif depth < _HELD_DEPTH and (split := _split_of(sem, o)) is not None:
            _notebook_objects(sem, split, found, depth + 1)
        elif o.kind is OriginKind.VALUE and isinstance(n, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and depth < _HELD_DEPTH:
            for e in (n.values if isinstance(n, ast.Dict) else n.elts):
                _notebook_objects(sem, e.value if isinstance(e, ast.Starred) else e, found, depth + 1)


def _lambdas_kept_by_init(sem, cls: ast.ClassDef) -> list:
    """The lambdas a same-file class's ``__init__`` stores in its instance
    (``self.transform = transforms.Compose([lambda x: Image.open(x), ...])``): pickling the
    instance pickles them."""
    init = sem.method(cls, "__init__")
    if init is None:
        return []
    out: list = []
    for n in ast.walk(init):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" for t in n.targets
        ):
            _kept_lambdas(sem, n.value, out, 0)
    return out


def _kept_lambdas(sem, value, out: list, depth: int) -> None:
    """The lambdas ``value`` keeps: itself, an element of a literal container, an argument
    of a constructor (not of a builtin that only reads it, ``sorted(xs, key=...)``)."""
    if isinstance(value, ast.Lambda):
        out.append(value)
    elif depth >= _HELD_DEPTH:
        return
    elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        for e in value.elts:
            _kept_lambdas(sem, e.value if isinstance(e, ast.Starred) else e, out, depth + 1)
    elif isinstance(value, ast.Dict):
        for v in value.values:
            _kept_lambdas(sem, v, out, depth + 1)
    elif isinstance(value, ast.Call):
        q = sem.call_qualname(value) or ""
        if q.startswith("builtins.") and q not in _COPIES or isinstance(sem.callee(value), _DEFS):
            return  # (a builtin only reads it; a function of the file returns anything)
        for a in [*value.args, *(k.value for k in value.keywords)]:
            _kept_lambdas(sem, a.value if isinstance(a, ast.Starred) else a, out, depth + 1)


# constructor arguments a library dataset uses while it is built and does not keep
_NOT_KEPT = frozenset({"is_valid_file", "key", "download"})


_COPIES = frozenset({"builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "builtins.frozenset"})


def _stored(sem, value) -> set:
    """The names whose values ``value`` keeps (``x``, ``[x, y]``, ``x or d``,
    ``Compose([t])``), not those a builtin only reads (``sorted(files, key=key)``)."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_stored(sem, e) for e in value.elts)) if value.elts else set()
    if isinstance(value, ast.Dict):
        return set().union(*(_stored(sem, v) for v in value.values)) if value.values else set()
    if isinstance(value, ast.BoolOp):
        return set().union(*(_stored(sem, v) for v in value.values))
    if isinstance(value, ast.IfExp):
        return _stored(sem, value.body) | _stored(sem, value.orelse)
    if isinstance(value, ast.Call):
        q = sem.call_qualname(value) or ""
        if q.startswith("builtins.") and q not in _COPIES:
            return set()
        return {x.id for x in ast.walk(value) if isinstance(x, ast.Name)}
    return set()


def _held_args(sem, call: ast.Call, cls) -> list:
    """The arguments of a constructor call that the object may keep (and a worker then
    unpickle): for a same-file class, those whose parameter its ``__init__`` stores in
    an attribute (``self.transform = transform``) or hands on (``super().__init__(x)``);
    for a library class, all but the ones it only uses while it is built."""
    args = [*call.args, *(k.value for k in call.keywords if k.arg not in _NOT_KEPT)]
    if not isinstance(cls, ast.ClassDef):
        return args
    init = sem.method(cls, "__init__")
    if init is None:
        return args
    kept: set = set()
    for n in ast.walk(init):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
            for target in n.targets for t in ast.walk(target)
        ):
            kept |= _stored(sem, n.value)  # (``self.a, self.b = a, b``: both values, conservatively)
        elif isinstance(n, ast.Call) and not isinstance(n.func, ast.Name) and sem.method_name(n) == "__init__":
            kept |= {x.id for x in ast.walk(n) if isinstance(x, ast.Name)}  # ``super().__init__(...)``
    if init.args.vararg is not None or init.args.kwarg is not None:
        return args
    out = []
    for a in [*call.args, *(k.value for k in call.keywords)]:
        p = sem.parameter_of(call, init, a)
        if p is None or p in kept:  # (None: after a ``*args``, into ``**kwargs``: kept)
            out.append(a)
    return out


def _moves_to_cuda(sem) -> bool:
    """The script copies something to the GPU: a ``.cuda()`` call, or a device move
    (``x.to(device)``, not ``x.to(torch.float16)``) in a file that names ``"cuda"``.  A
    CUDA device that is only made or printed copies nothing: ``pin_memory`` would not
    help."""
    if not any(move_of(sem, c) is not None for c in sem.find(ast.Call, containing=(".to(", ".cuda("))):
        return False
    for n in sem.find(ast.Attribute, ast.Constant, containing=("cuda",)):
        if isinstance(n, ast.Attribute) and n.attr == "cuda" and isinstance(sem.parent(n), ast.Call):
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"):
            return True
    return False


def _is_constant(node) -> bool:
    """A literal value (number, string, bool/None, and containers of them)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_constant(node.operand)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_constant(k) and _is_constant(v) for k, v in zip(node.keys, node.values))
    return False


class Plan:
    """The guard fix for one file: the tail from the unit holding ``start`` on; which
    of its top-level statements stay (definitions, imports, constants definitions
    read) and which move under the guard; and why it cannot be done, if so."""

    def __init__(self, ctx: Context, an: Analysis, start, loaders: list[Loader]):
        self.ctx = ctx
        self.sem = ctx.sem
        self.an = an
        self.loaders = loaders
        body = an.body()
        # statements sharing a line (``a = 1; b = 2``) are one unit: LibCST keeps them together
        units: list[list] = []
        for s in body:
            if units and s.lineno == units[-1][-1].end_lineno:
                units[-1].append(s)
                continue
            units.append([s])
        self.units = units
        self.i0 = next(i for i, u in enumerate(units) if any(s is start for s in u))
        self.kept, self.moved = self._classify()

    # ------------------------------------------------------------------ classification
    def _classify(self):
        tail = self.units[self.i0:]
        kept, moved = [], []
        for k, unit in enumerate(tail):
            if k == 0:
                moved.append(unit)
            elif len(unit) == 1 and isinstance(unit[0], (*_DEFS, ast.ClassDef)):
                kept.append(unit)
            elif all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in unit):
                kept.append(unit)
            elif len(unit) == 1 and self._constant_needed(unit[0]):
                kept.append(unit)
            else:
                moved.append(unit)
        return kept, moved

    def _constant_needed(self, stmt) -> bool:
        sem = self.sem
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            return False
        if not _is_constant(value):
            return False
        if target.id == "__all__":
            return True
        bs = sem.module_scope.get(target.id)
        if len(bs) != 1:
            return False
        return any(isinstance(sem.top_statement(r), (*_DEFS, ast.ClassDef)) for r in sem.references(bs[0]))

    def _bound(self, units) -> set[str]:
        """Names the statements of ``units`` bind at module level."""
        stmts = {s for u in units for s in u}
        out = set()
        for name, bs in self.sem.module_scope.bindings.items():
            for b in bs:
                if b.kind is BindingKind.STAR_IMPORT:
                    continue
                top = self.sem.top_statement(b.stmt) if b.stmt is not None else b.node
                if top in stmts:
                    out.add(name)
        return out

    def _module_reads(self, node, *, scopes: bool) -> set[str]:
        """Module-level names ``node`` reads (resolved, not spelled)."""
        sem = self.sem
        out = set()
        for n in sem.walk(node, scopes=scopes):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                bs = sem.resolve(n)
                if bs and all(b.scope is sem.module_scope for b in bs):
                    out.add(n.id)
        return out

    def _import_time_reads(self, stmt) -> set[str]:
        """Module names a def/class evaluates when it is defined (decorators, defaults,
        annotations, bases, the class body)."""
        parts = list(stmt.decorator_list)
        if isinstance(stmt, _DEFS):
            a = stmt.args
            parts += [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
            if not self._lazy_annotations():
                parts += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                          if x is not None and x.annotation is not None]
                if stmt.returns is not None:
                    parts.append(stmt.returns)
        else:
            parts += [*stmt.bases, *(k.value for k in stmt.keywords)]
            for s in stmt.body:
                if isinstance(s, (*_DEFS, ast.ClassDef)):
                    parts += self._header_parts(s)
                else:
                    parts.append(s)
        out = set()
        for p in parts:
            out |= self._module_reads(p, scopes=False)
        return out

    def _header_parts(self, d) -> list:
        parts = list(d.decorator_list)
        if isinstance(d, _DEFS):
            parts += [*d.args.defaults, *(x for x in d.args.kw_defaults if x is not None)]
        else:
            parts += [*d.bases, *(k.value for k in d.keywords)]
        return parts

    def _lazy_annotations(self) -> bool:
        for s in self.an.code[:20]:
            if isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations" for a in s.names):
                return True
        return False

    # ------------------------------------------------------------------ what the workers run
    def worker_code(self) -> list[tuple[str, ast.AST]]:
        """(name, definition) of the same-file code the worker processes may run: the
        classes of the Dataset and of the objects it holds (their methods but
        ``__init__``, which runs in the main process), ``collate_fn``,
        ``worker_init_fn``, and the functions and classes those read, transitively."""
        sem = self.sem
        roots: list = []
        fallback = False
        for ld in self.loaders:
            for name, pos in WORKER_ARGS:
                arg = sem.argument(ld.call, name, position=pos)
                if arg is None:
                    continue
                if arg is UNKNOWN_ARG:
                    fallback = True
                    continue
                fallback |= self._objects(arg, roots, 0)
        if fallback:
            for s in self.an.body():
                if isinstance(s, ast.ClassDef) and sem.derives_from(s, lambda q: q in DATASET_BASES):
                    roots.append((s, False))
        out: list = []
        seen: set = set()
        stack = list(roots)
        while stack:
            node, constructed = stack.pop()
            key = (id(node), constructed)
            if key in seen:
                continue
            seen.add(key)
            if isinstance(node, ast.ClassDef):
                for c in sem._mro(node):
                    for mname, ms in sem.class_info(c).methods.items():
                        if mname in ("__init__", "__new__") and not constructed:
                            continue
                        for m in ms:
                            stack.append((m, False))
                continue
            out.append((self._label(node), node))
            for n in sem.walk(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    for b in sem.resolve(n):
                        if b.scope is not sem.module_scope:
                            continue
                        if b.kind is BindingKind.FUNCTION and isinstance(b.node, _DEFS):
                            stack.append((b.node, False))
                        elif b.kind is BindingKind.CLASS:
                            called = isinstance(sem.parent(n), ast.Call) and sem.parent(n).func is n
                            stack.append((b.node, called))
        return out

    def _objects(self, expr, roots: list, depth: int) -> bool:
        """Add the same-file code of the objects ``expr`` may be; True when the value
        (at the top) cannot be followed."""
        sem = self.sem
        unknown = False
        for o in sem.origins(expr):
            n = o.node
            if o.kind is OriginKind.DEFINITION:
                roots.append((n, False))
            elif o.kind is OriginKind.VALUE and isinstance(n, ast.Call):
                t = sem.callee(n)
                if isinstance(t, ast.ClassDef):
                    roots.append((t, False))
                elif isinstance(t, _DEFS):
                    roots.append((t, False))
                if depth < _HELD_DEPTH:
                    for a in [*n.args, *(k.value for k in n.keywords)]:
                        self._objects(a.value if isinstance(a, ast.Starred) else a, roots, depth + 1)
            elif o.kind is OriginKind.VALUE and isinstance(n, ast.Lambda):
                roots.append((n, False))
            elif depth < _HELD_DEPTH and (split := _split_of(sem, o)) is not None:
                self._objects(split, roots, depth + 1)
            elif o.kind is OriginKind.VALUE and isinstance(n, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and depth < _HELD_DEPTH:
                elts = n.values if isinstance(n, ast.Dict) else n.elts
                for e in elts:
                    self._objects(e.value if isinstance(e, ast.Starred) else e, roots, depth + 1)
            elif o.kind in (OriginKind.UNKNOWN, OriginKind.PARAMETER, OriginKind.ITEM, OriginKind.PART):
                unknown = unknown or depth == 0
        return unknown

    def _label(self, node) -> str:
        top = self.sem.top_statement(node)
        return getattr(top, "name", None) or getattr(node, "name", None) or "<lambda>"

    # ------------------------------------------------------------------ refusals
    def unpicklable(self) -> Optional[str]:
        """A lambda or a function/class defined inside a function, handed to the loader:
        spawn must pickle it for the workers, and cannot, guard or not."""
        sem = self.sem
        for ld in self.loaders:
            for arg in [*ld.call.args, *(k.value for k in ld.call.keywords)]:
                for n in sem.walk(arg):
                    if isinstance(n, ast.Lambda):
                        return (f"the loader gets a lambda (`{sem.segment(n)}`), which spawn cannot pickle; "
                                "use a top-level def")
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        for b in sem.resolve(n):
                            if b.kind in (BindingKind.FUNCTION, BindingKind.CLASS) and b.scope is not sem.module_scope \
                                    and b.scope.kind.value != "class":
                                return f"`{n.id}` is defined inside a function, which spawn cannot pickle; define it at top level"
            # what the dataset holds too (a ``transforms.Lambda(lambda x: ...)`` in its Compose)
            for n in _worker_objects(sem, ld.call):
                if isinstance(n, ast.Lambda):
                    return (f"the loader's dataset holds a lambda (`{sem.segment(n)}`), which spawn cannot pickle"
                            " either; use a top-level def")
        return None

    def why_not_fixable(self) -> Optional[str]:
        ctx, sem = self.ctx, self.sem
        if ctx.project is not None and ctx.project.is_imported(ctx.path, namespace=True):
            return "another file of the tree imports this module; guarding would hide its names from the importer"
        kept, moved = self.kept, self.moved
        for unit in moved:
            for stmt in unit:
                for n in sem.walk(stmt, scopes=False):
                    if isinstance(n, (ast.Global, ast.Nonlocal)):
                        return "`global` statement in the code that would move"
                    if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
                        return "star import in the code that would move"
                    if isinstance(n, ast.Call) and sem.qualnames(n.func) & _EXEC:
                        return f"`{sem.segment(n.func)}()` in the code that would move"
        for unit in kept:
            for stmt in unit:
                if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                    return "star import after the first iteration"
        imports = [u for u in kept if not isinstance(u[0], (*_DEFS, ast.ClassDef)) and isinstance(u[0], (ast.Import, ast.ImportFrom))]
        if imports:
            last = imports[-1][0].lineno
            for unit in moved:
                if unit[0].lineno > last:
                    break
                for stmt in unit:
                    for n in sem.walk(stmt, scopes=False):
                        if isinstance(n, (ast.Attribute, ast.Name)) and sem.qualnames(n) & IMPORT_STATE:
                            return f"an import after `{sem.segment(n)}` would move above it"
        moved_names = self._bound(moved)
        outside = self._bound(self.units[: self.i0] + kept)
        only_moved = moved_names - outside
        for unit in kept:
            # (a kept statement runs before the guard: a clash only when code that moves
            # bound the name before it, and would now bind it after; a definition binds
            # its own name when it runs, a ``global`` in its body later)
            binds = {unit[0].name} if isinstance(unit[0], (*_DEFS, ast.ClassDef)) else self._bound([unit])
            before = [u for u in moved if u[0].lineno < unit[0].lineno]
            clash = binds & self._bound(before)
            if clash:
                return f"`{sorted(clash)[0]}` is bound both by code that stays and by code that would move"
            # code that would move below it reads the name it rebinds (``train =
            # TensorDataset(...)``, ``DataLoader(train, ...)``, then ``def train():``): it
            # would read the new value
            read = binds & {n.id for u in before for stmt in u for n in sem.walk(stmt, scopes=False)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            if read:
                return (f"`{sorted(read)[0]}` is read by code that would move and rebound by code that stays"
                        f" (line {unit[0].lineno})")
            stmt = unit[0]
            if isinstance(stmt, (*_DEFS, ast.ClassDef)):
                dep = self._import_time_reads(stmt) & only_moved
                if dep:
                    return f"`{stmt.name}` needs `{sorted(dep)[0]}`, defined by the code that would move"
        if only_moved:
            for label, node in self.worker_code():
                dep = self._module_reads(node, scopes=True) & only_moved
                if dep:
                    return f"`{label}` runs in the workers and reads `{sorted(dep)[0]}`, defined by the code that would move"
        return None

    # ------------------------------------------------------------------ the fix
    def build(self, view):
        import libcst as cst

        module = view.module
        first_lines = {u[0].lineno: ("kept" if any(u is k for k in self.kept) else "moved")
                       for u in self.units[self.i0:]}
        i0_line = self.units[self.i0][0].lineno
        body = list(module.body)
        i0 = None
        kind = []
        for i, stmt in enumerate(body):
            ln = view.range(stmt).start.line
            if i0 is None and ln >= i0_line:
                i0 = i
            if i0 is not None:
                kind.append(first_lines.get(ln, "moved"))
        if i0 is None:
            return {}
        tail = body[i0:]
        kept = [s for s, k in zip(tail, kind) if k == "kept"]
        moved = [s for s, k in zip(tail, kind) if k == "moved"]
        kept_ids = {id(s) for s in kept}
        first = moved[0]
        lead = list(first.leading_lines)
        k = 0
        while k < len(lead) and lead[k].comment is None:
            k += 1
        guard_lines, first_lead = lead[:k], lead[k:]
        prev = kept[-1] if kept else (body[i0 - 1] if i0 else None)
        if isinstance(prev, (cst.FunctionDef, cst.ClassDef)) and len(guard_lines) < 2:
            guard_lines = [cst.EmptyLine(indent=False)] * 2
        guard_lines = [ln.with_changes(indent=False) for ln in guard_lines]
        new_moved = []
        index = {id(s): i for i, s in enumerate(body)}
        for j, stmt in enumerate(moved):
            lines = first_lead if j == 0 else list(stmt.leading_lines)
            lines = [ln.with_changes(indent=False) if ln.comment is None else ln for ln in lines]
            p = index[id(stmt)]
            if j and id(body[p - 1]) in kept_ids:
                # it followed a definition that stays at top level: one blank line is enough now
                blank = 0
                while blank < len(lines) and lines[blank].comment is None:
                    blank += 1
                lines = lines[max(0, blank - 1):]
            new_moved.append(stmt.with_changes(leading_lines=lines))
        new_kept = []
        before = body[i0 - 1] if i0 else None
        for stmt in kept:
            lines = list(stmt.leading_lines)
            blank = 0
            while blank < len(lines) and lines[blank].comment is None:
                blank += 1
            p = index[id(stmt)]
            moved_up = before is not None and (p == 0 or body[p - 1] is not before)  # it follows another statement now
            defs = (cst.FunctionDef, cst.ClassDef)
            if blank < 2 and (isinstance(before, defs) or (moved_up and isinstance(stmt, defs))):
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * (2 - blank) + lines)
            new_kept.append(stmt)
            before = stmt
        q = _quote(module)
        guard = cst.If(
            test=cst.parse_expression(f"__name__ == {q}__main__{q}"),
            body=cst.IndentedBlock(body=new_moved, indent=_block_indent(module, moved)),
            leading_lines=guard_lines,
        )
        return {module: module.with_changes(body=[*body[:i0], *new_kept, guard])}


def _earlier_plan(ctx, an: Analysis, start, loaders) -> Optional["Plan"]:
    """The guard from the script's first executable statement before ``start`` (the
    model built and moved to the GPU, ``wandb.init()``, the datasets read: under spawn
    each worker would run them again) that the plan can move; None when none can (the
    tail from ``start`` then).  Moving more code only adds refusals, so the earliest
    start that leaves none is searched by halving (a few plans, however long the
    script's top level)."""
    body = an.body()
    # (never from above an import: what runs before it may change what it imports)
    last_import = max((k for k, s in enumerate(body) if _import_like(s)), default=-1)
    key = (start.lineno, start.col_offset)
    starts = [s for s in body[last_import + 1:] if _executable(s) and (s.lineno, s.col_offset) < key]
    best = None
    lo, hi = 0, len(starts)  # the earliest start that can move lies in starts[lo:hi], or none does
    while lo < hi:
        mid = (lo + hi) // 2
        plan = Plan(ctx, an, starts[mid], loaders)
        if plan.unpicklable() or plan.why_not_fixable():
            lo = mid + 1
        else:
            best, hi = plan, mid
    return best


def _import_like(stmt) -> bool:
    """An import, or a ``try``/``if`` of imports only (``try: import x except ImportError:
    pass``)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, (ast.Try, ast.If)):
        inner = [*stmt.body, *stmt.orelse, *(x for h in getattr(stmt, "handlers", ()) for x in h.body)]
        return all(isinstance(x, (ast.Import, ast.ImportFrom, ast.Pass)) for x in inner)
    return False


def _executable(stmt) -> bool:
    """A top-level statement that does work when it runs: not an import (nor a ``try``
    or ``if`` of imports only), a definition, a docstring or a constant's binding."""
    if _import_like(stmt) or isinstance(stmt, (*_DEFS, ast.ClassDef)):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False
    if isinstance(stmt, ast.Assign) and _is_constant(stmt.value):
        return False
    if isinstance(stmt, ast.AnnAssign) and (stmt.value is None or _is_constant(stmt.value)):
        return False
    return True


def _block_indent(module, moved) -> Optional[str]:
    """The indentation of the guard's block: the one most of the moved statements' blocks
    use (counted in the statements they hold: the guarded code reads alike), LibCST's
    default (the file's first indented block: None here) when they have none or use it."""
    import libcst as cst

    weight: dict = {}
    for stmt in moved:
        body = getattr(stmt, "body", None)
        if isinstance(body, cst.IndentedBlock):
            unit = body.indent if body.indent is not None else module.default_indent
            weight[unit] = weight.get(unit, 0) + _statements_in(body)
    if not weight:
        return None
    unit = max(weight, key=lambda u: (weight[u], u == module.default_indent))
    return unit if unit != module.default_indent else None


def _statements_in(block) -> int:
    """The statements of a LibCST block, nested blocks' included."""
    import libcst as cst

    n = 0
    for stmt in block.body:
        n += 1
        orelse = getattr(stmt, "orelse", None)  # (an ``else``/``elif`` clause holds a block)
        for inner in (getattr(stmt, "body", None), getattr(orelse, "body", None)):
            if isinstance(inner, cst.IndentedBlock):
                n += _statements_in(inner)
    return n


def _quote(module) -> str:
    import libcst as cst

    counts = {"'": 0, '"': 0}

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, node):
            q = node.value.lstrip("rbuRBUfF")[:1]
            if q in counts:
                counts[q] += 1

    module.visit(V())
    return "'" if counts["'"] > counts['"'] else '"'


# a cell marker of the percent format (jupytext, VS Code, Spyder, PyCharm): ``# %%``
_CELL_MARKER = re.compile(r"^#[ \t]*%%", re.M)
# jupytext's header in a script it pairs with a notebook (the light format has no markers)
_JUPYTEXT_HEADER = re.compile(r"^#[ \t]+jupyter:[ \t]*\n#[ \t]+jupytext:", re.M)


def _cell_script(text: str) -> Optional[str]:
    """Why a script in cells (``# %%`` markers, or a jupytext header) is not given the
    guard: it is run cell by cell, or converted to a notebook, and a guard would indent
    its cells under one ``if`` that no single cell can run."""
    if _JUPYTEXT_HEADER.search(text, 0, 2000) is not None or len(_CELL_MARKER.findall(text)) >= 2:
        return "a notebook in script form (`# %%` cells): a guard would split its cells; run it as a notebook, or guard it by hand"
    return None

