"""Engine-only test rules (not registered): small, predictable fixes to exercise the
engine without depending on the real rules."""

import ast

import libcst as cst

from torchmend.rule import Context, Fix, Rule, Safety, Severity, Verify


class _TestRule(Rule):
    pitfall = "test"
    verify = Verify("plain", ())


class PrintToLog(_TestRule):
    """Rewrites ``print(x)`` to ``log(x)`` (safe), adding a ``log`` helper once."""

    code = "TM901"
    name = "print-to-log"
    summary = "print call"
    severity = Severity.INFO
    needles = ("print(",)

    def check(self, ctx: Context):
        for node in ctx.sem.find(ast.Call, containing=("print",)):
            if isinstance(node.func, ast.Name) and node.func.id == "print":
                fix = Fix(
                    lambda view, node=node: {view.node(node.func): cst.Name("log")},
                    helpers={"log": "def log(*a):\n    sys.stdout.write(repr(a))\n"},
                    imports=(("sys", None),),
                )
                yield ctx.finding(self, node, "print() call", fix)


class UnsafeRename(_TestRule):
    """Renames ``foo`` to ``bar`` (unsafe)."""

    code = "TM902"
    name = "unsafe-rename"
    summary = "foo name"
    needles = ("foo",)

    def check(self, ctx):
        for node in ctx.sem.find(ast.Name, containing=("foo",)):
            if node.id == "foo":
                yield ctx.finding(
                    self, node, "foo", Fix(lambda view, node=node: {view.node(node): cst.Name("bar")}, safety=Safety.UNSAFE)
                )


class InsertBeforeLoopBody(_TestRule):
    """Inserts ``pass`` before the first statement of every for loop without one (two
    fixes on one loop nest overlap: the engine needs two passes)."""

    code = "TM903"
    name = "insert-pass"
    summary = "loop"
    needles = ("for ",)

    def check(self, ctx):
        for node in ctx.sem.find(ast.For):
            first = node.body[0]
            if not isinstance(first, ast.Pass):
                yield ctx.finding(
                    self, node, "loop",
                    Fix(lambda view, first=first: view.insert_before(view.statement(first), cst.parse_statement("pass"))),
                )


class NeverConverges(_TestRule):
    """Always finds something: appends ``x = 1`` forever (an idempotence bug)."""

    code = "TM904"
    name = "never-converges"
    summary = "bad"
    needles = ("",)

    def check(self, ctx):
        last = ctx.sem.body()[-1]
        yield ctx.finding(
            self, last, "bad", Fix(lambda view, last=last: view.insert_after(view.statement(last), cst.parse_statement("x = 1")))
        )


TEST_RULES = [PrintToLog, UnsafeRename, InsertBeforeLoopBody, NeverConverges]


class DropTmp(_TestRule):
    """Removes every statement ``tmp = ...`` (safe), whether or not ``tmp`` is read after:
    a fix that may leave a name undefined."""

    code = "TM905"
    name = "drop-tmp"
    summary = "tmp assignment"
    needles = ("tmp",)

    def check(self, ctx):
        for node in ctx.sem.find(ast.Assign, containing=("tmp",)):
            if [getattr(t, "id", None) for t in node.targets] == ["tmp"]:
                yield ctx.finding(
                    self, node, "tmp", Fix(lambda view, node=node: {view.statement(node): cst.RemoveFromParent()})
                )
