"""Proposed ``Rule.ast_check`` gates, for the benchmark only (``bench/run.py --gates``).

The rules on this branch are stubs: their ``needles`` send every torch file to LibCST.
These gates show what the engine does once rules answer the cheap stdlib-``ast`` question
"can I fire on this file at all?".  They are deliberately conservative (a wrong False is a
missed finding) and are a *proposal* for the rule owners, who know their rules' exact
triggers: nothing in the product imports this module.

Install with :func:`install` (patches the registered rule classes in this process), or
run the CLI through it: ``python bench/gates.py check --no-cache REPO``.
"""

from __future__ import annotations

import ast
import os
import sys

FACTORIES = {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace", "tensor", "logspace"}
CE_NAMES = {"cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss"}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


class _Facts:
    """One walk of a tree, shared by every gate (the gates run on the same tree)."""

    def __init__(self, tree: ast.AST):
        self.nodes = list(ast.walk(tree))
        self.calls = [n for n in self.nodes if isinstance(n, ast.Call)]
        self.names = {_name(n) for n in self.nodes if isinstance(n, (ast.Name, ast.Attribute))}


_LAST: list = [None, None]


def _facts(tree: ast.AST) -> _Facts:
    if _LAST[0] is not tree:
        _LAST[0], _LAST[1] = tree, _Facts(tree)
    return _LAST[1]


def _calls(tree: ast.AST):
    if isinstance(tree, ast.Module):
        return _facts(tree).calls
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _names(tree: ast.AST) -> set[str]:
    if isinstance(tree, ast.Module):
        return _facts(tree).names
    return {_name(n) for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute))}


MOVES = ("to", "cuda", "to_device", "move_to_device", "batch_to_device", "cuda_transfer", "prepare")


def _loops(tree: ast.Module):
    return [n for n in _facts(tree).nodes if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]


LOADERS = ("loader", "Loader", "batches", "dataset", "data", "dl")


def _over_batches(loop: ast.AST, loader_vars: set[str]) -> bool:
    it = loop.iter
    names = {_name(n) for n in ast.walk(it) if isinstance(n, (ast.Name, ast.Attribute))}
    return bool(names & loader_vars) or any(any(k in n for k in LOADERS) for n in names)


def device_batch(tree: ast.Module) -> bool:
    """TM101: a model moved somewhere, and a loop over batches whose body moves nothing
    (any call named like a move, or any unknown call receiving a device, counts as one)."""
    if not any(_name(c.func) in ("to", "cuda") for c in _calls(tree)):
        return False
    loader_vars = set()
    for n in _facts(tree).nodes:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and "DataLoader" in _name(n.value.func):
            loader_vars |= {_name(t) for t in n.targets}
    for loop in _loops(tree):
        if isinstance(loop, ast.While) or not _over_batches(loop, loader_vars):
            continue
        body = ast.Interactive(body=loop.body)  # not a Module: not the shared facts
        if not any(_name(c.func) in MOVES or any("device" in _names(x) for x in [*c.args, *c.keywords]) for c in _calls(body)):
            return True
    return False


def tensor_without_device(tree: ast.Module) -> bool:  # TM102: a factory in forward() without device=
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "forward":
            for c in _calls(fn):
                if _name(c.func) in FACTORIES and not any(k.arg == "device" for k in c.keywords):
                    return True
    return False


ZEROS = ("zero_grad", "zero_", "zero_gradients", "accumulate")


def zero_grad(tree: ast.Module) -> bool:
    """TM201/TM202: a loop that calls backward and step, where either no zeroing happens
    inside the loop (missing, or once per epoch), or a zeroing call sits between them."""
    for loop in _loops(tree):
        body = ast.Interactive(body=loop.body)  # not a Module: not the shared facts
        calls = list(_calls(body))
        names = [_name(c.func) for c in calls]
        if "backward" not in names or "step" not in names:
            continue
        if not any(n in ZEROS for n in names) and not any(
            isinstance(t, ast.Attribute) and t.attr == "grad" for n in ast.walk(body) if isinstance(n, ast.Assign) for t in n.targets
        ):
            return True  # no zeroing in the loop: missing or misplaced
        lines = {n: [c.lineno for c, m in zip(calls, names) if m == n] for n in ("backward", "step", "zero_grad")}
        if lines["zero_grad"] and min(lines["backward"]) < max(lines["zero_grad"]) < max(lines["step"]):
            return True  # zero_grad between backward and step
    return False


def main_guard(tree: ast.Module) -> bool:  # TM301: workers requested, code running at import
    workers = any(
        k.arg == "num_workers" and not (isinstance(k.value, ast.Constant) and k.value.value == 0)
        for c in _calls(tree)
        for k in c.keywords
    )
    if not workers:
        return False
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If) and "__name__" in _names(stmt.test):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            called = {_name(c.func) for c in _calls(stmt.value)}
            if called <= {"getLogger", "get_logger", "TypeVar", "namedtuple", "compile", "dict", "frozenset", "set", "tuple"}:
                continue
        return True
    return False


def filtered_load(tree: ast.Module) -> bool:  # TM401: load_state_dict after an attribute was replaced
    if not any(_name(c.func) == "load_state_dict" for c in _calls(tree)):
        return False
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                return True
        if isinstance(n, ast.Call) and _name(n.func) in ("setattr", "reset_classifier", "add_module"):
            return True
    return False


SOFTMAX = {"softmax", "Softmax", "log_softmax", "LogSoftmax"}


def softmax(tree: ast.Module) -> bool:
    """TM501/TM502: a softmax result (directly, or through names assigned from it) given
    to a cross-entropy: a call of a CE function or of a name bound to a CE module."""
    names = _names(tree)
    if not (names & SOFTMAX and names & CE_NAMES):
        return False
    ce_vars = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and _name(n.value.func) in CE_NAMES:
            ce_vars |= {_name(t) for t in n.targets}
    tainted: set[str] = set()
    for n in ast.walk(tree):  # names assigned from a softmax, or from an expression using one
        if isinstance(n, ast.Assign):
            uses = _names(n.value)
            if any(_name(c.func) in SOFTMAX for c in _calls(n.value)) or uses & tainted:
                tainted |= {_name(t) for t in n.targets if _name(t)}
    for c in _calls(tree):
        callee = _name(c.func)
        if callee in CE_NAMES or callee in ce_vars:
            for arg in [*c.args, *(k.value for k in c.keywords)]:
                if any(_name(x.func) in SOFTMAX for x in _calls(arg)) or _names(arg) & tainted:
                    return True
        # nn.Softmax() inside nn.Sequential feeding a CE: report-only territory, keep it
        if callee in ("Softmax", "LogSoftmax") and not isinstance(c.func, ast.Name) and "Sequential" in names:
            return True
    return False


GATES = {
    "TM101": device_batch,
    "TM102": tensor_without_device,
    "TM201": zero_grad,
    "TM202": zero_grad,
    "TM301": main_guard,
    "TM401": filtered_load,
    "TM501": softmax,
    "TM502": softmax,
}


def install() -> None:
    from codemods.registry import all_rules

    for rule in all_rules():
        gate = GATES.get(rule.code)
        if gate is not None and vars(rule).get("ast_check") is None:
            rule.ast_check = classmethod(lambda cls, tree, _g=gate: _g(tree))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    install()
    from cli.main import app

    app(prog_name="torchmend")
