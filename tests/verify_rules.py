"""Test-only rules for the ``torchmend verify`` end-to-end tests (not registered): small,
predictable fixes of the exec fixtures, so that verify is tested independently of the
real rules (which are written elsewhere)."""

import libcst as cst
import libcst.matchers as m

from torchmend.rule import FileContext, Fix, Rule, Severity


def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)


class MoveBatch(Rule):
    """``for a, b in loader:`` in a script with ``device = torch.device(...)``: move the batch."""

    code = "TM991"
    name = "test-move-batch"
    pitfall = "device"
    summary = "batch not moved"
    severity = Severity.BUG
    needles = ("device = torch.device(",)

    def check(self, ctx: FileContext):
        for node in _walk(ctx.module):
            if m.matches(node, m.For(target=m.Tuple([m.Element(m.Name()), m.Element(m.Name())]))):
                a, b = (e.value.value for e in node.target.elements)
                if f"{a}.to(" in ctx.code(node.body):
                    continue
                stmt = cst.parse_statement(f"{a}, {b} = {a}.to(device), {b}.to(device)")
                fix = Fix(ctx.insert_before(node.body.body[0], stmt))
                yield ctx.finding(self, node, f"batch `{a}, {b}` not moved to `device`", fix)


class AddZeroGrad(Rule):
    """A loop whose body calls ``X.step()`` and has no zero_grad: insert ``X.zero_grad()``."""

    code = "TM992"
    name = "test-add-zero-grad"
    pitfall = "zero_grad"
    summary = "missing zero_grad"
    severity = Severity.BUG
    needles = ("backward",)

    def check(self, ctx: FileContext):
        for node in _walk(ctx.module):
            if not isinstance(node, cst.For) or "zero_grad" in ctx.code(node):
                continue
            for st in node.body.body:
                if m.matches(st, m.SimpleStatementLine([m.Expr(m.Call(m.Attribute(m.Name(), m.Name("step"))))])):
                    opt = st.body[0].value.func.value.value
                    fix = Fix(ctx.insert_before(node.body.body[0], cst.parse_statement(f"{opt}.zero_grad()")))
                    yield ctx.finding(self, node, f"`{opt}` never zeroes its gradients", fix)


class UselessFix(Rule):
    """In files marked ``# verify-test: useless fix``: a "fix" that changes nothing that
    matters (inserts ``pass`` into every for loop)."""

    code = "TM993"
    name = "test-useless-fix"
    pitfall = "device"
    summary = "useless"
    severity = Severity.BUG
    needles = ("# verify-test: useless fix",)

    def check(self, ctx: FileContext):
        for node in _walk(ctx.module):
            if isinstance(node, cst.For) and not m.matches(node.body.body[0], m.SimpleStatementLine([m.Pass()])):
                yield ctx.finding(self, node, "useless", Fix(ctx.insert_before(node.body.body[0], cst.parse_statement("pass"))))


VERIFY_TEST_RULES = [MoveBatch, AddZeroGrad, UselessFix]
