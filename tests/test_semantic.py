"""The shared semantic model (codemods/semantic): what each query answers."""

import ast

import pytest

from torchmend.semantic import BindingKind, OriginKind, SemanticModel, UNKNOWN_ARG
from torchmend.semantic.scope import ScopeKind


def model(src: str, **kw) -> SemanticModel:
    return SemanticModel(src, **kw)


def names(sem, ident):
    return [n for n in sem.find(ast.Name, containing=(ident,)) if n.id == ident]


def calls(sem, word):
    return [c for c in sem.find(ast.Call, containing=(word,))]


def test_bindings_and_kinds():
    src = (
        "import torch.nn as nn\nimport os.path\nfrom torch import optim as O\nx = 1\na, (b, c) = 1, (2, 3)\n"
        "for i, (j, k) in enumerate([]):\n    pass\nwith open('f') as fh:\n    pass\ndef f(p, q=2, *args, r, **kw):\n"
        "    y: int = 3\n    z += 1\n    return [w for w in p]\nclass C:\n    attr = 1\n"
        "try:\n    pass\nexcept ValueError as err:\n    pass\nif (n := 5):\n    del x\n"
    )
    sem = model(src)
    m = sem.module_scope
    kinds = {name: {b.kind for b in bs} for name, bs in m.bindings.items()}
    assert kinds["nn"] == {BindingKind.IMPORT} and m.get("nn")[0].qualname == "torch.nn"
    assert m.get("os")[0].qualname == "os"
    assert kinds["O"] == {BindingKind.FROM_IMPORT} and m.get("O")[0].qualname == "torch.optim"
    assert kinds["x"] == {BindingKind.ASSIGNMENT, BindingKind.DELETION}
    assert [ast.literal_eval(b.value) for b in m.get("c")] == [3]  # a, (b, c) = 1, (2, 3)
    assert kinds["j"] == {BindingKind.FOR_TARGET} and kinds["fh"] == {BindingKind.WITH_TARGET}
    assert kinds["f"] == {BindingKind.FUNCTION} and kinds["C"] == {BindingKind.CLASS}
    assert kinds["err"] == {BindingKind.EXCEPT_HANDLER} and kinds["n"] == {BindingKind.NAMED_EXPR}
    fn = m.get("f")[0].node
    fs = sem.scope_for(fn)
    assert fs.kind is ScopeKind.FUNCTION
    assert {n: {b.kind for b in bs} for n, bs in fs.bindings.items()} == {
        "p": {BindingKind.PARAMETER}, "q": {BindingKind.PARAMETER}, "args": {BindingKind.PARAMETER},
        "r": {BindingKind.PARAMETER}, "kw": {BindingKind.PARAMETER}, "y": {BindingKind.ASSIGNMENT},
        "z": {BindingKind.AUG_ASSIGNMENT},
    }
    assert ast.literal_eval(fs.get("q")[0].value) == 2  # the default


def test_unpacking_a_call_records_the_path():
    sem = model("def pair():\n    return 1, (2, 3)\na, (b, c) = pair()\n")
    (b,) = sem.module_scope.get("c")
    assert b.value is None and b.unpack[1] == (1, 1)
    (use,) = [o for o in sem.origins(names(sem, "c")[0])] if names(sem, "c") else [None]


def test_legb_class_scope_is_skipped_and_global_nonlocal():
    src = (
        "x = 'module'\nclass C:\n    x = 'class'\n    def m(self):\n        return x\n"
        "def outer():\n    y = 1\n    def inner():\n        nonlocal y\n        y = 2\n    return inner\n"
        "def g():\n    global x\n    x = 3\n"
    )
    sem = model(src)
    ret = next(n for n in names(sem, "x") if isinstance(sem.parent(n), ast.Return))
    assert {b.scope for b in sem.resolve(ret)} == {sem.module_scope}  # the class attribute is not visible
    inner_y = next(n for n in names(sem, "y") if n.lineno == 10)
    assert sem.scope_of(inner_y).kind is ScopeKind.FUNCTION
    # ``global x`` in g(): its assignment is a module binding, seen from the method too
    assert sorted(b.order[0] for b in sem.module_scope.get("x")) == [1, 14]
    # ``nonlocal y`` in inner(): its assignment binds outer()'s y
    got = sem.resolve(inner_y)
    assert {b.scope.node.name for b in got} == {"outer"} and sorted(b.order[0] for b in got) == [7, 10]


def test_comprehension_scope_and_walrus():
    sem = model("data = [1]\nout = [v for v in data if (last := v)]\nprint(v, last)\n")
    v_in_comp = next(n for n in names(sem, "v") if n.lineno == 2 and isinstance(n.ctx, ast.Load))
    assert sem.scope_of(v_in_comp).kind is ScopeKind.COMPREHENSION
    v_after = next(n for n in names(sem, "v") if n.lineno == 3)
    assert sem.resolve(v_after) == []  # the comprehension variable does not leak
    last = next(n for n in names(sem, "last") if n.lineno == 3)
    assert [b.kind for b in sem.resolve(last)] == [BindingKind.NAMED_EXPR]


def test_reaching_definitions():
    src = (
        "def f(c):\n    m = 1\n    m = 2\n    use(m)\n    if c:\n        m = 3\n    use(m)\n"
        "    for i in range(3):\n        use(m)\n        m = 4\n"
    )
    sem = model(src)
    uses = [n for n in names(sem, "m") if isinstance(n.ctx, ast.Load)]
    vals = [sorted(ast.literal_eval(b.value) for b in sem.reaching(u)) for u in uses]
    assert vals == [[2], [2, 3], [2, 3, 4]]


def test_reaching_definitions_across_branches():
    """A binding in an ``if`` body neither dominates nor reaches a use in its ``else``
    (or ``elif``), unless a loop around the ``if`` may run the body first; a ``try``
    body does not dominate its handlers."""
    src = (
        "def f(m, c):\n    if c:\n        m = 1\n    else:\n        use(m)\n"
        "    if c:\n        m = 2\n    elif c > 1:\n        use(m)\n"
        "    for i in range(3):\n        if c:\n            m = 3\n        else:\n            use(m)\n"
        "    try:\n        m = 4\n        m = g(m)\n    except ValueError:\n        use(m)\n"
    )
    sem = model(src)
    uses = [n for n in names(sem, "m") if isinstance(n.ctx, ast.Load) and isinstance(sem.parent(n), ast.Call)
            and sem.parent(n).func.id == "use"]

    def vals(u):
        return sorted("param" if b.value is None else ast.unparse(b.value) for b in sem.reaching(u))

    assert [vals(u) for u in uses] == [
        ["param"], ["1", "param"], ["1", "2", "3", "param"],
        # the handler may run before ``m = 4`` as well as after it
        ["1", "2", "3", "4", "g(m)", "param"],
    ]


def test_qualnames_through_imports_aliases_and_relative_imports():
    src = (
        "import torch.nn.functional as F\nfrom torch.nn import CrossEntropyLoss as CE\nimport torch\n"
        "Loss = torch.nn.NLLLoss\nfrom .models import Net\nF.softmax(x, 1)\nCE()\nLoss()\nNet()\nlen([])\n"
    )
    sem = model(src, package="pkg.sub")
    got = [sem.call_qualname(c) for c in sem.find(ast.Call) if c.lineno >= 6]
    assert got == ["torch.nn.functional.softmax", "torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss",
                   "pkg.sub.models.Net", "builtins.len"]


def test_qualnames_of_a_name_bound_to_a_conditional_choice():
    src = ("import torch\ncuda = torch.cuda.is_available()\nT = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
           "U = make() if cuda else torch.FloatTensor\nT(3)\nU(3)\n")
    sem = model(src)
    t, u = [c for c in sem.find(ast.Call) if c.lineno >= 5]
    assert sem.qualnames(t.func) == {"torch.cuda.FloatTensor", "torch.FloatTensor"}
    assert sem.call_qualname(t) is None  # (two names: no single one)
    assert sem.qualnames(u.func) == set()  # one side unknown


def test_origins_follow_params_attributes_containers_builders():
    src = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "def build(n):\n    if n:\n        return torch.nn.Linear(n, 2)\n    return torch.nn.Identity()\n"
        "class T:\n    def __init__(self, opt):\n        self.opt = opt\n    def fit(self):\n        self.opt.step()\n"
        "def train(loader, dev):\n    for x in loader:\n        x.to(dev)\n"
        "loaders = {'train': DataLoader([]), 'val': DataLoader([])}\n"
        "def main():\n    model = build(3)\n    T(torch.optim.SGD(model.parameters(), lr=1)).fit()\n"
        "    train(loaders['train'], 'cuda')\n    for k in ['train', 'val']:\n        train(loaders[k], 'cuda')\n"
        "main()\n"
    )
    sem = model(src)
    model_name = next(n for n in names(sem, "model") if isinstance(n.ctx, ast.Load))
    assert sorted(sem.call_qualname(o.node) for o in sem.origins(model_name)) == ["torch.nn.Identity", "torch.nn.Linear"]
    opt = next(a for a in sem.find(ast.Attribute, containing=("opt",)) if a.attr == "opt" and isinstance(a.ctx, ast.Load))
    (o,) = sem.origins(opt)
    assert o.kind is OriginKind.VALUE and sem.call_qualname(o.node) == "torch.optim.SGD"
    loader = next(n for n in names(sem, "loader") if isinstance(n.ctx, ast.Load))
    qs = [sem.call_qualname(o.node) for o in sem.origins(loader)]
    assert qs and set(qs) == {"torch.utils.data.DataLoader"} and len(qs) == 2  # 'train' and (any key) both
    dev = next(n for n in names(sem, "dev") if isinstance(n.ctx, ast.Load))
    assert {o.node.value for o in sem.origins(dev)} == {"cuda"}
    x = next(n for n in names(sem, "x") if isinstance(n.ctx, ast.Load))
    (item,) = sem.origins(x)
    assert item.kind is OriginKind.ITEM


def test_call_sites_completeness():
    src = (
        "def used(a):\n    return a\ndef passed(a):\n    return a\n@decorated\ndef deco(a):\n    return a\n"
        "used(1)\nused(a=2)\nmap(passed, [1])\ndeco(3)\n"
    )
    sem = model(src)
    defs = {b.name: b.node for bs in sem.module_scope.bindings.values() for b in bs if b.kind is BindingKind.FUNCTION}
    s = sem.call_sites(defs["used"])
    assert len(s.calls) == 2 and s.complete
    assert not sem.call_sites(defs["passed"]).complete  # passed around
    assert not sem.call_sites(defs["deco"]).complete  # a decorator may call it
    pv = sem.param_values(defs["used"], "a")
    assert pv.complete and [ast.literal_eval(v) for v, _, _ in pv.values] == [1, 2]


def test_param_values_defaults_starred_and_methods():
    src = (
        "def f(a, b=10):\n    return a + b\nf(1)\nf(2, 3)\nclass K:\n    def m(self, v):\n        return v\n"
        "    def run(self):\n        self.m(5)\nk = K()\nk.m(6)\ndef g(a):\n    return a\ng(*xs)\n"
    )
    sem = model(src)
    fs = {b.name: b.node for bs in sem.module_scope.bindings.values() for b in bs if b.kind is BindingKind.FUNCTION}
    pv = sem.param_values(fs["f"], "b")
    assert pv.complete and [(ast.literal_eval(v), d) for v, _, d in pv.values] == [(10, True), (3, False)]
    assert not sem.param_values(fs["g"], "a").complete  # *args at the call site
    cls = sem.module_scope.get("K")[0].node
    m = sem.method(cls, "m")
    pv = sem.param_values(m, "v")
    assert pv.complete and sorted(ast.literal_eval(v) for v, _, _ in pv.values) == [5, 6]


def test_dict_entry_through_kwargs_and_update():
    src = (
        "from torch.utils.data import DataLoader\nkw = {'batch_size': 4}\nextra = {'num_workers': 2}\n"
        "kw.update(extra)\nDataLoader(ds, **kw)\nDataLoader(ds, **unknown)\n"
    )
    sem = model(src)
    c1, c2 = [c for c in sem.find(ast.Call, containing=("DataLoader",)) if sem.call_qualname(c)]
    assert ast.literal_eval(sem.argument(c1, "num_workers", 5)) == 2
    assert sem.argument(c1, "pin_memory", 6) is None
    assert sem.argument(c2, "num_workers", 5) is UNKNOWN_ARG


def test_find_is_lazy_and_positions_count_characters():
    body = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(200))
    src = "import torch\n" + body + "class Net(torch.nn.Module):\n    def forward(self, x):\n        return 'é' + softmax(x)\n"
    sem = model(src)
    parsed_before = sum(c.stmts is not None for c in sem.source.chunks)
    (call,) = sem.find(ast.Call, containing=("softmax",))
    parsed_after = sum(c.stmts is not None for c in sem.source.chunks)
    assert parsed_after == parsed_before + 1 < len(sem.source.chunks) / 10  # one more chunk parsed
    line = src.splitlines()[call.lineno - 1]
    assert sem.position(call) == (call.lineno, line.index("softmax") + 1)  # characters, not UTF-8 bytes
    assert sem.segment(call) == "softmax(x)"


@pytest.mark.parametrize("lazy", [True, False])
def test_lazy_and_whole_parse_agree(lazy):
    body = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(100))
    src = "import torch\n" + body + "def use():\n    return helper_3(1)\n"
    sem = model(src, lazy=lazy)
    call = next(c for c in sem.find(ast.Call, containing=("helper_3",)) if isinstance(c.func, ast.Name))
    target = sem.callee(call)
    assert isinstance(target, ast.FunctionDef) and target.name == "helper_3" and target.lineno == 14


def test_a_walk_records_the_parents_of_what_it_reaches(monkeypatch):
    """What ``walk`` yields has its ancestors known at once (a rule that walks a
    statement asks next for the loop or scope around what it finds): the same ancestors
    a descent from the top-level statement gives, without that descent."""
    src = "import torch\n\nclass M:\n" + "".join(f"    def m{i}(self, x):\n        return x + {i}\n\n" for i in range(40)) + (
        "    def go(self, xs):\n        for x in xs:\n            y = self.m3(torch.relu(x))\n        return y\n")
    want_sem = model(src, lazy_min_chars=0)
    loop = want_sem.find(ast.For)[0]
    want = {ast.dump(c.func): [type(a).__name__ for a in want_sem.ancestors(c)] for c in want_sem.walk(loop) if isinstance(c, ast.Call)}
    sem = model(src, lazy_min_chars=0)
    go = next(b.node for b in sem.scope_for(next(iter(sem.module_scope.get("M"))).node).get("go"))
    loop = go.body[0]
    found = [n for n in sem.walk(loop) if isinstance(n, ast.Call)]
    assert len(found) == 2
    calls_made = []
    real = SemanticModel._adopt_around
    monkeypatch.setattr(SemanticModel, "_adopt_around", lambda self, node: calls_made.append(node) or real(self, node))
    got = {ast.dump(c.func): [type(a).__name__ for a in sem.ancestors(c)] for c in found}
    assert got == want and all(v[-3:] == ["FunctionDef", "ClassDef", "Module"] for v in got.values())
    assert [type(n).__name__ for n in calls_made] == ["For"]  # only the loop itself, reached through go.body


def test_callee_and_class_through_an_alias():
    """``Exp = Exp_Main; exp = Exp(args)`` (cure-lab/LTSF-Linear run_longExp.py): a name
    bound once to another name is that definition; bound twice, the one that reaches
    the call (``Twice = Exp_Main; Twice = run; Twice()`` runs ``run``); bound to
    something else, none."""
    src = ("class Exp_Main:\n    def train(self):\n        pass\n\n\ndef run():\n    pass\n\n\n"
           "Exp = Exp_Main\nE2 = Exp\nexp = E2(1)\nexp.train()\nr = run\nr()\n"
           "Other = Exp_Main if x else None\nOther()\nTwice = Exp_Main\nTwice = run\nTwice()\nSelf = Self\nSelf()\n")
    sem = model(src)
    cls = sem.find_named((ast.ClassDef,), ("Exp_Main",))[0]
    by_func = {sem.segment(c.func): c for c in calls(sem, "(")}
    assert sem.callee(by_func["E2"]) is cls and sem.callee(by_func["r"]).name == "run"
    assert sem.callee(by_func["exp.train"]).name == "train"
    assert sem.callee(by_func["Other"]) is None and sem.callee(by_func["Twice"]).name == "run"
    assert sem.callee(by_func["Self"]) is None
    assert sem.class_def(by_func["E2"].func) is cls and sem.class_def(by_func["r"].func) is None


_REGISTRY = """\
class A:
    pass


def b():
    pass


models = {"a": A, "b": b, "c": len}
{use}
m = models[name](1)
"""


@pytest.mark.parametrize("use,known", [
    ("", True),
    # reads leave it as it is
    ("choices = sorted(models)\nfor k in models:\n    pass\nok = name in models\nx = models.get('a')\n", True),
    # changed, handed on, bound again: not known
    ("models['d'] = print", False),
    ("models.update(d=print)", False),
    ("del models['a']", False),
    ("register(models)", False),
    ("alias = models", False),
    ("models = {}", False),
    ("def f():\n    global models\n    models = {}", False),
])
def test_callees_of_a_registry_dict(use, known):
    """``models[name](...)`` (the registries of real training scripts): the same-file
    definitions of a dict literal's values, None for a value that is none; nothing when
    the dict may be changed anywhere in the file."""
    sem = model(_REGISTRY.replace("{use}", use))
    call = next(c for c in calls(sem, "(") if sem.segment(c.func) == "models[name]")
    got = sem.callees(call)
    if known:
        assert [getattr(c, "name", None) for c in got] == ["A", "b", None]
        assert sem.dict_values(call.func) is not None
    else:
        assert got == [] and sem.dict_values(call.func) is None


def test_callees_of_a_plain_call_and_of_a_dict_with_a_spread():
    sem = model("class A:\n    pass\n\n\nbase = {'a': A}\nmodels = {**base, 'b': A}\nm = models[k]()\nA()\nunknown()\n")
    by_func = {sem.segment(c.func): c for c in calls(sem, "(")}
    assert [c.name for c in sem.callees(by_func["A"])] == ["A"]
    assert sem.callees(by_func["models[k]"]) == [] and sem.callees(by_func["unknown"]) == []


NAMESPACE = """\
import argparse
import types
import torch

def train(args):
    return args.device

{make}
{before}
args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{after}
train(args)
"""


def _device_read(sem):
    return next(a for a in sem.find(ast.Attribute, containing=("args.device",))
                if isinstance(a.ctx, ast.Load) and sem.enclosing_function(a) is not None)


@pytest.mark.parametrize("make", [
    "args = argparse.ArgumentParser().parse_args()",
    "args, unparsed = parser.parse_known_args()",
    "args = types.SimpleNamespace(lr=0.1)",
])
@pytest.mark.parametrize("before, after, values", [
    ("", "", ["torch.device"]),
    ("print(args.lr)", "", ["torch.device"]),  # another attribute read first
    ("", "if args.cpu:\n    args.device = 'cpu'", ["torch.device", "'cpu'"]),  # every store counts
    ("", "args.device = args.device.index", ["torch.device", "args.device.index"]),  # (origins follow it)
    ("", "setattr(args, 'device', 'cpu')", None),
    ("", "opts = args\nopts.device = 'cpu'", None),  # an alias: a store on it may be on this object
    ("setup(args)", "", None),  # read before the store: it may see another value
    ("other = argparse.Namespace()\nother.device = 'cpu'", "", ["torch.device"]),  # another object
])
def test_namespace_attribute_values(make, before, after, values):
    # ``args.device = torch.device(...)`` after ``args = parser.parse_args()``, read in
    # ``train(args)``: the values the file stores, when nothing else can have set it
    sem = model(NAMESPACE.format(make=make, before=before, after=after))
    got = sem.namespace_values(_device_read(sem))
    if values is None:
        assert got is None
    else:
        assert got is not None and sorted(ast.unparse(v).split("(")[0] for v in got) == sorted(values)
    assert (sem.attribute_values(_device_read(sem)) is None) == (values is None)


@pytest.mark.parametrize("src", [
    # an object of unknown kind: a method of its class may set the attribute
    "def train(args):\n    return args.device\nargs = load_config()\nargs.device = 'cuda'\ntrain(args)\n",
    # the store under a condition: before it the attribute holds what the parser gave
    "import argparse\ndef train(args):\n    return args.device\nargs = argparse.ArgumentParser().parse_args()\n"
    "if ok:\n    args.device = 'cuda'\ntrain(args)\n",
    # a caller of unknown arguments
    "import argparse\ndef train(args):\n    return args.device\nargs = argparse.ArgumentParser().parse_args()\n"
    "args.device = 'cuda'\ntrain(args)\ntrain(*rest)\n",
])
def test_namespace_attribute_values_unknown(src):
    sem = model(src)
    assert sem.namespace_values(_device_read(sem)) is None


def test_the_parent_of_a_node_in_a_long_run_of_module_statements():
    """In a chunk of many module-level statements the parent of a node no walk has
    recorded is found from the one statement that holds it (decorated definitions,
    statements sharing a line, nested bodies): the same parents as a walk of all."""
    import ast as _ast

    parts = []
    for i in range(120):
        parts.append(f"a{i} = f({i}); b{i} = [g(x) for x in range({i})]")
        if i % 10 == 0:
            parts.append(f"if a{i}:\n    c{i} = h(a{i}, key=lambda v: v + {i})\nelse:\n    c{i} = None")
        if i % 50 == 0:
            parts.append(f"@deco(k={i})\ndef fn{i}(x):\n    return x * {i}")
    text = "\n".join(parts) + "\n"
    sem = SemanticModel(text, "t.py")
    stmts = [st for c in sem.source.chunks for st in (c.stmts or [])]
    truth = {}
    for st in stmts:
        for p in _ast.walk(st):
            for ch in _ast.iter_child_nodes(p):
                truth[ch] = p
    nodes = [n for n in truth if hasattr(n, "lineno")]
    for n in nodes[::-1]:  # (from the end: nothing recorded for most of them yet)
        assert sem.parent(n) is truth[n], _ast.dump(n)[:80]
    assert sem._stmt_starts  # (the statement that holds each was found by its start)
