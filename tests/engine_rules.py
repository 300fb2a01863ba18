"""Engine-only test rules (not registered): small, predictable fixes to exercise the
engine without depending on the real rules."""

import libcst as cst
import libcst.matchers as m

from torchmend.rule import FileContext, Fix, Rule, Safety, Severity


class PrintToLog(Rule):
    """Rewrites ``print(x)`` to ``log(x)`` (safe), adding a ``log`` helper once."""

    code = "TM901"
    name = "print-to-log"
    pitfall = "test"
    summary = "print call"
    severity = Severity.INFO
    needles = ("print(",)

    def check(self, ctx: FileContext):
        for node in _walk(ctx.module):
            if m.matches(node, m.Call(func=m.Name("print"))):
                fix = Fix(
                    {node.func: cst.Name("log")},
                    helpers={"log": "def log(*a):\n    sys.stdout.write(repr(a))\n"},
                    imports=(("sys", None),),
                )
                yield ctx.finding(self, node, "print() call", fix)


class UnsafeRename(Rule):
    """Renames ``foo`` to ``bar`` (unsafe)."""

    code = "TM902"
    name = "unsafe-rename"
    pitfall = "test"
    summary = "foo name"
    needles = ("foo",)

    def check(self, ctx):
        for node in _walk(ctx.module):
            if m.matches(node, m.Name("foo")):
                yield ctx.finding(self, node, "foo", Fix({node: cst.Name("bar")}, safety=Safety.UNSAFE))


class InsertBeforeLoopBody(Rule):
    """Inserts ``pass`` before the first statement of every for loop without one (two
    fixes on one loop nest overlap: the engine needs two passes)."""

    code = "TM903"
    name = "insert-pass"
    pitfall = "test"
    summary = "loop"
    needles = ("for ",)

    def check(self, ctx):
        for node in _walk(ctx.module):
            if isinstance(node, cst.For):
                first = node.body.body[0]
                if not m.matches(first, m.SimpleStatementLine(body=[m.Pass()])):
                    yield ctx.finding(self, node, "loop", Fix(ctx.insert_before(first, cst.parse_statement("pass"))))


class NeverConverges(Rule):
    """Always finds something: appends ``x = 1`` forever (an idempotence bug)."""

    code = "TM904"
    name = "never-converges"
    pitfall = "test"
    summary = "bad"
    needles = ("",)

    def check(self, ctx):
        last = ctx.module.body[-1]
        yield ctx.finding(self, last, "bad", Fix(ctx.insert_after(last, cst.parse_statement("x = 1"))))


def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)


TEST_RULES = [PrintToLog, UnsafeRename, InsertBeforeLoopBody, NeverConverges]
