"""Semantic-model queries added for following values (TM102): bindings of a store,
reads a binding reaches (with rebindings that kill it), parameters bound by an argument,
in-file call sites without the project, nodes found by name."""

import ast

import pytest

from torchmend.semantic import SemanticModel


def model(src: str, **kw) -> SemanticModel:
    return SemanticModel(src, **kw)


def name_at(sem, ident, line, ctx=ast.Load):
    got = [n for n in sem.find_named((ast.Name,), (ident,)) if n.lineno == line and isinstance(n.ctx, ctx)]
    assert len(got) == 1, got
    return got[0]


def reads(sem, ident, line):
    b = sem.target_binding(name_at(sem, ident, line, ast.Store))
    return [n.lineno for n in sem.reads_of(b)]


SRC = """\
def f(c, d):
    t = g()
    t = t.to(d)
    use(t)
    u = g()
    if c:
        u = u.cuda()
    use(u)
    v = g()
    for i in range(3):
        use(v)
        v = h(v)
    use(v)
    w = g()
    if c:
        return
    w = k(w)
    use(w)
    try:
        z = g()
        z = k(z)
    except ValueError:
        use(z)
    q = g()
    q = k(q)
    use([q for _ in range(2)])
    use(q for _ in range(2))
"""


def test_reads_of_a_binding_stop_at_a_rebinding_in_its_block():
    sem = model(SRC)
    assert reads(sem, "t", 2) == [3]  # `use(t)` reads the moved value
    assert reads(sem, "u", 5) == [7, 8]  # a rebinding under `if` does not kill
    assert reads(sem, "v", 9) == [11, 12, 13]  # read before the rebinding, and after no iteration
    assert reads(sem, "w", 14) == [17]  # the `return` between is no jump past the rebinding
    # the handler may run after any statement of the ``try`` body: the value before the
    # rebinding reaches it (a ``try`` body does not dominate its handlers)
    assert reads(sem, "z", 20) == [21, 23]
    # a list comprehension runs where it stands; a generator may run later
    assert reads(sem, "q", 24) == [25, 27]


def test_a_parameter_is_killed_by_a_rebinding_in_the_body():
    sem = model("def f(x):\n    x = x.float()\n    return x\n")
    b = sem.module_scope.get("f")[0].node
    p = sem.scope_for(b).get("x")[0]
    assert [n.lineno for n in sem.reads_of(p)] == [2]


def test_value_reads_follow_plain_name_targets():
    sem = model("a = b = make()\nuse(a, b)\nc, d = make()\nuse(c)\n(e := make())\nuse(e)\n")
    first, second, third = [c for c in sem.find_named((ast.Call,), ("make",))]
    assert [n.id for n in sem.value_reads(first)] == ["a", "b"]
    assert sem.value_reads(second) == []  # an unpacking is not a plain name
    assert [n.id for n in sem.value_reads(third)] == ["e"]


def test_parameter_of_maps_arguments_to_parameters():
    src = (
        "class C:\n    def m(self, a, b=1, *, k=2):\n        pass\n\n    def run(self, x, y, args):\n"
        "        self.m(x, k=y)\n        C.m(self, y)\n        self.m(*args)\n\n"
        "def f(p, q):\n    pass\n\nf(1, q=2)\n"
    )
    sem = model(src)
    cls = sem.module_scope.get("C")[0].node
    m = sem.method(cls, "m")
    c1, c2, c3 = sem.find_named((ast.Call,), ("m",))
    assert sem.parameter_of(c1, m, c1.args[0]) == "a"  # `self` passed implicitly
    assert sem.parameter_of(c1, m, c1.keywords[0].value) == "k"
    assert sem.parameter_of(c2, m, c2.args[1]) == "a"  # `C.m(self, y)` passes it explicitly
    assert sem.parameter_of(c3, m, c3.args[0].value) is None  # behind a star
    fdef = sem.module_scope.get("f")[0].node
    (call,) = [c for c in sem.find_named((ast.Call,), ("f",))]
    assert sem.parameter_of(call, fdef, call.args[0]) == "p"
    assert sem.parameter_of(call, fdef, call.keywords[0].value) == "q"


class _NoProject:
    """A project that must not be asked anything."""

    def __getattr__(self, name):
        raise AssertionError(f"the project was asked {name!r}")


def test_file_call_sites_never_ask_the_project():
    src = (
        "def helper(x):\n    return x\n\nclass M:\n    def step(self, x):\n        return x\n\n"
        "    def run(self, x):\n        return self.step(helper(x))\n\nother.step(1)\n"
    )
    sem = model(src, path="pkg/mod.py", project=_NoProject(), package="pkg")
    helper = sem.module_scope.get("helper")[0].node
    cls = sem.module_scope.get("M")[0].node
    step = sem.method(cls, "step")
    sites = sem.file_call_sites(helper)
    assert [c.lineno for c in sites.calls] == [9] and sites.complete
    sites = sem.file_call_sites(step)
    assert [c.lineno for c in sites.calls] == [9] and not sites.complete  # `other.step(1)` may be one
    with pytest.raises(AssertionError, match="asked"):
        sem.call_sites(helper)  # call_sites asks whether other files may call it


def test_find_named_parses_only_chunks_with_the_words():
    src = "import torch\n\n\ndef a():\n    return torch.zeros(3)\n\n\ndef b():\n    return zeros\n\n\ndef c():\n    pass\n"
    sem = model(src, lazy_min_chars=0)
    got = sem.find_named((ast.Call,), ("zeros",), words=(".zeros(",))
    assert [n.lineno for n in got] == [5]
    assert [c.stmts is not None for c in sem.source.chunks] == [True, True, False, False]
    assert sem.find_named((ast.Call,), ("zeros",), words=(".zeros(",), screen=lambda t, a, b, hits: False) == []
    assert [n.lineno for n in sem.find_named((ast.Name,), ("zeros",))] == [9]


def test_instance_class_of_a_self_referencing_value_ends():
    src = "class A:\n    def f(self):\n        return self\n\nx = A()\nfor _ in range(3):\n    x = x.f().f()\n"
    sem = model(src)
    for call in sem.find_named((ast.Call,), ("f",)):
        sem.callee(call)  # no RecursionError


def test_parent_of_a_node_in_a_decorator_found_without_indexing_the_chunk():
    src = "import x\n\n\n@deco(a.b, key=lambda v: v)\ndef g(y):\n    return y + 1\n"
    sem = model(src, lazy_min_chars=0)
    g = sem.find_named((ast.FunctionDef,), ("g",))[0]
    attr = g.decorator_list[0].args[0]  # ``a.b``: no walk has recorded it
    assert sem.parent(attr) is g.decorator_list[0]
    assert list(sem.ancestors(attr))[-2:] == [g, sem.module]
    ret = g.body[0].value.left  # ``y`` in the body
    assert sem.parent(ret) is g.body[0].value
