"""Test-only rules for the ``torchmend verify`` end-to-end tests (not registered): small,
predictable fixes of the exec fixtures, so that verify is tested independently of the
real rules (which are written elsewhere)."""

import ast

import libcst as cst

from torchmend.rule import Context, Fix, Rule, Severity, Verify


def _insert_first(loop, code: str) -> Fix:
    return Fix(lambda view: view.insert_before(view.statement(loop.body[0]), cst.parse_statement(code)))


class MoveBatch(Rule):
    """``for a, b in loader:`` in a script with ``device = torch.device(...)``: move the batch."""

    code = "TM991"
    name = "test-move-batch"
    pitfall = "device"
    summary = "batch not moved"
    severity = Severity.BUG
    needles = ("device = torch.device(",)
    verify = Verify("device", ("Expected all tensors to be on the same device",))

    def check(self, ctx: Context):
        for node in ctx.sem.find(ast.For):
            t = node.target
            if isinstance(t, ast.Tuple) and len(t.elts) == 2 and all(isinstance(e, ast.Name) for e in t.elts):
                a, b = (e.id for e in t.elts)
                if any(f"{a}.to(" in ctx.sem.segment(s) for s in node.body):
                    continue
                fix = _insert_first(node, f"{a}, {b} = {a}.to(device), {b}.to(device)")
                yield ctx.finding(self, node, f"batch `{a}, {b}` not moved to `device`", fix)


class AddZeroGrad(Rule):
    """A loop whose body calls ``X.step()`` and has no zero_grad: insert ``X.zero_grad()``."""

    code = "TM992"
    name = "test-add-zero-grad"
    pitfall = "zero_grad"
    summary = "missing zero_grad"
    severity = Severity.BUG
    needles = ("backward",)
    verify = Verify("zero_grad", ("TM201",))

    def check(self, ctx: Context):
        for node in ctx.sem.find(ast.For):
            if "zero_grad" in ctx.sem.segment(node):
                continue
            for st in node.body:
                v = st.value if isinstance(st, ast.Expr) else None
                if (
                    isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "step"
                    and isinstance(v.func.value, ast.Name)
                ):
                    opt = v.func.value.id
                    yield ctx.finding(self, node, f"`{opt}` never zeroes its gradients", _insert_first(node, f"{opt}.zero_grad()"))


class UselessFix(Rule):
    """In files marked ``# verify-test: useless fix``: a "fix" that changes nothing that
    matters (inserts ``pass`` into every for loop)."""

    code = "TM993"
    name = "test-useless-fix"
    pitfall = "device"
    summary = "useless"
    severity = Severity.BUG
    needles = ("# verify-test: useless fix",)
    verify = Verify("device", ("Expected all tensors to be on the same device",))

    def check(self, ctx: Context):
        for node in ctx.sem.find(ast.For):
            if not isinstance(node.body[0], ast.Pass):
                yield ctx.finding(self, node, "useless", _insert_first(node, "pass"))


VERIFY_TEST_RULES = [MoveBatch, AddZeroGrad, UselessFix]
