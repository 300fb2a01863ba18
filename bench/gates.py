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


def _calls(tree: ast.AST):
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            yield n


def _names(tree: ast.AST) -> set[str]:
    return {_name(n) for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute))}


def device_batch(tree: ast.Module) -> bool:  # TM101: a model moved and a loop to read batches in
    moved = any(_name(c.func) in ("to", "cuda") for c in _calls(tree))
    return moved and any(isinstance(n, (ast.For, ast.AsyncFor)) for n in ast.walk(tree))


def tensor_without_device(tree: ast.Module) -> bool:  # TM102: a factory in forward() without device=
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == "forward":
            for c in _calls(fn):
                if _name(c.func) in FACTORIES and not any(k.arg == "device" for k in c.keywords):
                    return True
    return False


def zero_grad(tree: ast.Module) -> bool:  # TM201/TM202: backward and a step somewhere
    names = {_name(c.func) for c in _calls(tree)}
    return "backward" in names and "step" in names


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


def softmax(tree: ast.Module) -> bool:  # TM501/TM502: a softmax and a cross-entropy in one file
    names = _names(tree)
    return bool(names & {"softmax", "Softmax", "log_softmax", "LogSoftmax"}) and bool(names & CE_NAMES)


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
