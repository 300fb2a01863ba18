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


class _Loop:
    __slots__ = ("node", "calls", "grad_assign")

    def __init__(self, node):
        self.node, self.calls, self.grad_assign = node, [], False


class _Facts:
    """One walk of a tree, shared by every gate (they all run on the same tree): calls
    (with their callee's last name), names, loops with the calls of their body, and
    assignments with the calls and names of their value."""

    def __init__(self, tree: ast.AST):
        calls, names, loops, assigns, forwards = [], set(), [], [], []
        Call, Name, Attribute, Assign = ast.Call, ast.Name, ast.Attribute, ast.Assign
        loop_types = (ast.For, ast.AsyncFor, ast.While)
        stack = [(tree, (), None)]
        while stack:
            node, encl, asg = stack.pop()
            t = type(node)
            if t is Call:
                rec = (_name(node.func), node)
                calls.append(rec)
                for lp in encl:
                    lp.calls.append(rec)
                if asg is not None:
                    asg[2].append(rec[0])
            elif t is Name or t is Attribute:
                nm = node.id if t is Name else node.attr
                names.add(nm)
                if asg is not None:
                    asg[3].add(nm)
            elif t is Assign:
                rec = [node, [_name(x) for x in node.targets], [], set()]
                assigns.append(rec)
                for lp in encl:
                    if any(isinstance(x, Attribute) and x.attr == "grad" for x in node.targets):
                        lp.grad_assign = True
                stack.append((node.value, encl, rec))
                for x in node.targets:
                    stack.append((x, encl, None))
                continue
            elif (t is ast.FunctionDef or t is ast.AsyncFunctionDef) and node.name == "forward":
                forwards.append(node)
            elif t in loop_types:
                lp = _Loop(node)
                loops.append(lp)
                inner = encl + (lp,)
                for child in node.body:
                    stack.append((child, inner, asg))
                for child in ast.iter_child_nodes(node):
                    if child not in node.body:
                        stack.append((child, encl, asg))
                continue
            for child in ast.iter_child_nodes(node):
                stack.append((child, encl, asg))
        self.calls, self.names, self.loops, self.assigns, self.forwards = calls, names, loops, assigns, forwards


_LAST: list = [None, None]


def _facts(tree: ast.AST) -> _Facts:
    if _LAST[0] is not tree:
        _LAST[0], _LAST[1] = tree, _Facts(tree)
    return _LAST[1]


def _names(node: ast.AST) -> set[str]:
    return {_name(n) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


MOVES = ("to", "cuda", "to_device", "move_to_device", "batch_to_device", "cuda_transfer", "prepare")
LOADERS = ("loader", "Loader", "batches", "dataset", "data", "dl")


def device_batch(tree: ast.Module) -> bool:
    """TM101: a model moved somewhere, and a loop over batches whose body moves nothing
    (a call named like a move, or any call given something named like a device, counts)."""
    f = _facts(tree)
    if not any(n in ("to", "cuda") for n, _ in f.calls):
        return False
    loader_vars = {t for rec in f.assigns for t in rec[1] if "DataLoader" in rec[2]}
    for lp in f.loops:
        if isinstance(lp.node, ast.While):
            continue
        it = _names(lp.node.iter)
        if not (it & loader_vars or any(k in n for n in it for k in LOADERS)):
            continue
        if not any(n in MOVES or any("device" in _names(x) for x in [*c.args, *(k.value for k in c.keywords)]) for n, c in lp.calls):
            return True
    return False


def tensor_without_device(tree: ast.Module) -> bool:  # TM102: a factory in forward() without device=
    f = _facts(tree)
    if not f.forwards or not any(n in FACTORIES and not any(k.arg == "device" for k in c.keywords) for n, c in f.calls):
        return False
    for fn in f.forwards:
        for c in ast.walk(fn):
            if isinstance(c, ast.Call) and _name(c.func) in FACTORIES and not any(k.arg == "device" for k in c.keywords):
                return True
    return False


ZEROS = ("zero_grad", "zero_", "zero_gradients", "accumulate")


def zero_grad(tree: ast.Module) -> bool:
    """TM201/TM202: a loop that calls backward and step, where either no zeroing happens
    inside the loop (missing, or once per epoch), or a zeroing call sits between them."""
    for lp in _facts(tree).loops:
        names = [n for n, _ in lp.calls]
        if "backward" not in names or "step" not in names:
            continue
        if not any(n in ZEROS for n in names) and not lp.grad_assign:
            return True  # no zeroing in the loop: missing or misplaced
        lines = {k: [c.lineno for n, c in lp.calls if n == k] for k in ("backward", "step", "zero_grad")}
        if lines["zero_grad"] and min(lines["backward"]) < max(lines["zero_grad"]) < max(lines["step"]):
            return True  # zero_grad between backward and step
    return False


def main_guard(tree: ast.Module) -> bool:  # TM301: workers requested, code running at import
    workers = any(
        k.arg == "num_workers" and not (isinstance(k.value, ast.Constant) and k.value.value == 0)
        for _, c in _facts(tree).calls
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
            called = {_name(c.func) for c in ast.walk(stmt.value) if isinstance(c, ast.Call)}
            if called <= {"getLogger", "get_logger", "TypeVar", "namedtuple", "compile", "dict", "frozenset", "set", "tuple"}:
                continue
        return True
    return False


def filtered_load(tree: ast.Module) -> bool:  # TM401: load_state_dict after an attribute was replaced
    f = _facts(tree)
    if not any(n == "load_state_dict" for n, _ in f.calls):
        return False
    if any(n in ("setattr", "reset_classifier", "add_module") for n, _ in f.calls):
        return True
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                return True
    return False


SOFTMAX = {"softmax", "Softmax", "log_softmax", "LogSoftmax"}


def softmax(tree: ast.Module) -> bool:
    """TM501/TM502: a softmax result (directly, or through names assigned from it) given
    to a cross-entropy: a call of a CE function or of a name bound to a CE module."""
    f = _facts(tree)
    if not (f.names & SOFTMAX and f.names & CE_NAMES):
        return False
    ce_vars = {t for rec in f.assigns for t in rec[1] if set(rec[2]) & CE_NAMES}
    tainted: set[str] = set()
    for rec in f.assigns:  # in source order (the walk is depth-first): good enough
        if set(rec[2]) & SOFTMAX or rec[3] & tainted:
            tainted |= {t for t in rec[1] if t}
    for callee, c in f.calls:
        if callee in CE_NAMES or callee in ce_vars:
            for arg in [*c.args, *(k.value for k in c.keywords)]:
                used = _names(arg)
                if used & SOFTMAX or used & tainted:
                    return True
        # nn.Softmax() inside nn.Sequential feeding a CE: report-only territory, keep it
        if callee in ("Softmax", "LogSoftmax") and "Sequential" in f.names:
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
