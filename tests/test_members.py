"""A large class is parsed from its spine and its methods on first access
(semantic/members.py): whatever is read of the tree is exactly what one parse of the
whole file gives, a method no query reaches stays unparsed, and a wrong cut is never
silent (the model then parses the file whole)."""

from __future__ import annotations

import ast
import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchmend.semantic import SemanticModel
from torchmend.semantic.members import ClassDef as LazyClassDef
from torchmend.semantic.members import FunctionDef as LazyFunctionDef
from torchmend.semantic.members import pending
from torchmend.semantic.source import LazyParseError, ParsedSource

# members of a class body (4 spaces), each a shape the cut must get right
MEMBERS = [
    "    def plain(self, x):\n        y = x + 1\n        return y\n",
    "    @property\n    def prop(self):\n        return self._p\n",
    "    @decorator(\n        option=1,\n    )\n    def decorated(self):\n        return 1\n",
    "    def multi_line(\n        self,\n        a: int = 2,\n        b: str = \"):[\",\n    ) -> dict[str, int]:\n"
    "        return {b: a}\n",
    "    def colon_in_default(self, d={'a': 1}, s=':', f=lambda q: q):  # a comment: with a colon\n"
    "        return d, s, f\n",
    "    def one_liner(self): return 3\n",
    "    def stub(self) -> int: ...\n",
    "    async def coro(self, x):\n        await x\n        return x\n",
    "    class Nested:\n        def inner(self):\n            return 1\n",
    "    value = 3\n",
    "    table = [\n        1,\n        2,\n    ]\n",
    "    def docstring_with_code(self):\n        \"\"\"Code at the class's indentation:\n\n    def not_a_method(self):\n"
    "        pass\n    x = 1\n\"\"\"\n        return 1\n",
    "    def single_quoted_docstring(self):\n        '''\n    def fake(self):\n        '''\n        return 2\n",
    "    def continued(self, a, \\\n            b):\n        return a + \\\n            b\n",
    "    def comments_after(self):\n        return 1\n        # a trailing comment\n\n# a comment in column 0\n",
    "    def strings(self):\n        s = \"def x(self): pass\"\n        t = 'a\\'b:'\n        u = r\"\\\"\"\n        return s, t, u\n",
    "    def nested_defs(self):\n        def helper(z):\n            return z\n\n        @staticmethod\n"
    "        def other():\n            return 2\n        return helper(other())\n",
    "    @overload\n    def over(self, x: int) -> int: ...\n\n    def over(self, x):\n        return x\n",
    "    def fstring(self, n):\n        return f\"{n:>{4}}: {n!r}\"\n",
    "    if True:\n        def conditional(self):\n            return 1\n",
    "    def bracket_at_class_indent(self):\n        return foo(\n    1)\n",
    "    def comment_first(self):  # noqa\n        # a comment line first\n        return 1\n",
]


def _class(members, name="C", tail=True) -> str:
    text = "import torch\n\n\n@dataclass_like\nclass " + name + "(Base, metaclass=M):\n    \"\"\"The class.\"\"\"\n\n"
    text += "\n".join(members)
    return text + ("\nx = " + name + "()\n" if tail else "")


def _dump(stmts) -> str:
    return ast.dump(ast.Module(body=list(stmts), type_ignores=[]), include_attributes=True)


def _lazy_body(text: str):
    """The statements of ``text`` parsed with every class cut into its spine, or None
    when the cut was found wrong (LazyParseError: the caller parses the file whole)."""
    src = ParsedSource(text, min_chars=0)
    try:
        return src, src.body()
    except LazyParseError:
        return src, None


def _lazy_methods(stmts) -> list:
    return [m for s in stmts if isinstance(s, ast.ClassDef) for m in s.body if type(m) is LazyFunctionDef]


def test_every_shape_parses_to_the_full_parse():
    text = _class([m for m in MEMBERS if "bracket_at_class_indent" not in m])
    src, body = _lazy_body(text)
    assert body is not None
    lazy = _lazy_methods(body)
    assert {m.name for m in lazy} >= {"plain", "prop", "decorated", "multi_line", "colon_in_default",
                                      "continued", "strings", "nested_defs", "fstring", "comment_first"}
    # one-line bodies, async defs, nested classes, methods under an ``if`` and bodies
    # with a line at the class's indentation or left of it (a docstring's) are parsed
    # with the spine
    assert not {m.name for m in lazy} & {"one_liner", "stub", "coro", "inner", "conditional", "docstring_with_code",
                                         "single_quoted_docstring"}
    # the class ends with a method not parsed yet: it is a ClassDef that ends where the
    # method ends, read (and parsed) when asked
    cls = next(s for s in body if isinstance(s, ast.ClassDef))
    assert type(cls) is LazyClassDef and type(cls).__name__ == "ClassDef" and pending(cls.body[-1]) is not None
    assert all(pending(m) is not None for m in lazy)  # nothing read them yet
    assert _dump(body) == _dump(ast.parse(text).body)  # (reading them parses them)
    assert all(pending(m) is None for m in lazy)


@pytest.mark.parametrize("i", range(len(MEMBERS)))
def test_each_shape_between_methods(i):
    members = [MEMBERS[0], MEMBERS[i], MEMBERS[15], MEMBERS[i]]
    for tail in (True, False):
        text = _class(members, tail=tail)
        src, body = _lazy_body(text)
        if body is None:
            continue  # refused: parsed whole by the model
        assert _dump(body) == _dump(ast.parse(text).body)


def test_a_bracket_closed_at_the_class_indentation_is_refused_not_misread():
    text = _class([MEMBERS[0], MEMBERS[20], MEMBERS[0].replace("plain", "again")])
    src, body = _lazy_body(text)
    assert body is None or _dump(body) == _dump(ast.parse(text).body)
    # the model parses such a file whole and answers as for any file
    sem = SemanticModel(text, lazy_min_chars=0)
    try:
        got = [n.name for n in sem.find_named((ast.FunctionDef,), ("again",))]
    except LazyParseError:
        got = [n.name for n in SemanticModel(text, lazy=False).find_named((ast.FunctionDef,), ("again",))]
    assert got == ["again"]


def test_a_query_parses_only_the_methods_whose_text_holds_its_words():
    methods = [f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n" for i in range(6)]
    methods[3] = "    def m3(self, x):\n        return torch.zeros(3) + x\n"
    text = _class(methods)
    sem = SemanticModel(text, lazy_min_chars=0)
    calls = sem.find_named((ast.Call,), ("zeros",))
    assert [sem.segment(c) for c in calls] == ["torch.zeros(3)"]
    cls = sem.enclosing(calls[0], ast.ClassDef)
    fn = sem.enclosing_function(calls[0])
    assert fn.name == "m3" and type(fn) is LazyFunctionDef
    still = [m.name for m in cls.body if pending(m) is not None]
    assert still == ["m0", "m1", "m2", "m4", "m5"]
    # the class scope binds every method without parsing one
    assert sorted(sem.scope_for(cls).bindings) == ["m0", "m1", "m2", "m3", "m4", "m5"]
    assert [m.name for m in cls.body if pending(m) is not None] == still
    # find(containing=...) skips the others by their text too
    assert [n.name for n in sem.find(ast.FunctionDef, containing=("zeros",))] == ["m3"]
    assert [m.name for m in cls.body if pending(m) is not None] == still


def test_a_query_that_keeps_some_hits_parses_only_the_methods_that_hold_them():
    """``find_named(keep=...)``: a rule's test of each hit (TM102's factories, for one);
    a method whose hits it drops is not parsed, and what is found stands where a kept
    hit does."""
    methods = [f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n" for i in range(4)]
    methods[1] = "    def m1(self, x):\n        return torch.zeros(3, device=x.device) + x\n"
    methods[2] = "    def m2(self, x):\n        return torch.zeros(3) + x\n"
    text = _class(methods)
    seen = []

    def keep(text, start, end, hits):
        seen.append(len(hits))
        return [h for h in hits if "device=" not in text[h:text.index(")", h)]]

    sem = SemanticModel(text, lazy_min_chars=0)
    calls = sem.find_named((ast.Call,), ("zeros",), (".zeros(",), keep=keep)
    assert seen == [2] and [sem.segment(c) for c in calls] == ["torch.zeros(3)"]
    cls = sem.enclosing(calls[0], ast.ClassDef)
    assert [m.name for m in cls.body if pending(m) is not None] == ["m0", "m1", "m3"]
    assert sem.find_named((ast.Call,), ("zeros",), (".zeros(",), keep=lambda *a: []) == []


def test_calls_by_name_enter_only_the_methods_where_the_name_is_a_callee():
    """``keep=callee_hits(names)``: a method where the name only stands otherwise (an
    ``isinstance`` test, an annotation, a comment) is not parsed; a call written with
    spaces or a line break before its ``(`` is still one."""
    from torchmend.semantic.source import callee_hits

    methods = [f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n" for i in range(5)]
    methods[0] = "    def m0(self, x):\n        return isinstance(x, nn.CrossEntropyLoss)\n"
    methods[1] = "    def m1(self, x: CrossEntropyLoss):\n        return x  # CrossEntropyLoss\n"
    methods[2] = "    def m2(self, x):\n        return nn.CrossEntropyLoss ()(x, 1)\n"
    methods[3] = "    def m3(self, x):\n        return CrossEntropyLoss(\n            reduction='sum')\n"
    text = _class(methods)
    sem = SemanticModel(text, lazy_min_chars=0)
    names = ("CrossEntropyLoss",)
    calls = sem.find_named((ast.Call,), names, keep=callee_hits(names))
    assert [sem.enclosing_function(c).name for c in calls] == ["m2", "m3"]
    cls = sem.enclosing(calls[0], ast.ClassDef)
    assert [m.name for m in cls.body if pending(m) is not None] == ["m0", "m1", "m4"]


def test_a_lazy_method_is_a_function_def_to_every_reader():
    text = _class(MEMBERS[:3])
    src, body = _lazy_body(text)
    m = _lazy_methods(body)[0]
    assert isinstance(m, ast.FunctionDef) and type(m).__name__ == "FunctionDef"
    seen = []

    class V(ast.NodeVisitor):
        def visit_FunctionDef(self, node):
            seen.append(node.name)
            self.generic_visit(node)

    V().visit(body[-2] if isinstance(body[-2], ast.ClassDef) else next(s for s in body if isinstance(s, ast.ClassDef)))
    assert seen[:3] == ["plain", "prop", "decorated"]
    plain = ast.parse(text)
    want = next(s for s in plain.body if isinstance(s, ast.ClassDef)).body[1]
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(twin) is ast.FunctionDef
        assert ast.dump(twin, include_attributes=True) == ast.dump(want, include_attributes=True)
    assert ast.unparse(m) == ast.unparse(want)


def test_a_wrong_cut_raises_when_the_method_is_read():
    """A method whose own text does not parse as one ``def`` with the spine's name and
    position is never read as something else: a cut that ends inside a bracket (what a
    line at the class's indentation inside one would cause)."""
    call = "    def call(self, x):\n        y = f(\n            x,\n        )\n        return y\n"
    text = _class([call, MEMBERS[0]])
    src = ParsedSource(text, min_chars=0)
    cls = next(s for c in src.chunks if c.kind == "class" for s in src.parse(c))
    m = _lazy_methods([cls])[0]
    assert m.name == "call"
    d = m.__dict__
    t, first, a, b = d["_lz"]
    d["_lz"] = (t, first, a, t.index("            x,", a))  # the cut two lines early
    with pytest.raises(LazyParseError):
        m.body


_member = st.sampled_from(MEMBERS)


@settings(max_examples=150, deadline=None)
@given(st.lists(_member, min_size=1, max_size=8), st.booleans(), st.sampled_from([0, 1, 2, 3, 20_000]))
def test_any_class_parses_to_the_full_parse_or_is_refused(members, tail, pad):
    # (20,000 lines down, the class's spine and its methods are parsed at line 1 and
    # shifted: ``parse_at``)
    text = "\n" * pad + _class(members, tail=tail)
    try:
        full = ast.parse(text).body
    except SyntaxError:
        return
    src, body = _lazy_body(text)
    if body is not None:
        assert _dump(body) == _dump(full)
    # the model's answers either way: the methods by name, through the lazy cut
    sem = SemanticModel(text, lazy_min_chars=0)
    ref = SemanticModel(text, lazy=False)
    names = ("plain", "again", "prop", "inner", "helper", "over")
    words = ("return", "comment", "trailing", "C")

    def answers(m):
        return (
            [(n.lineno, n.col_offset) for n in m.find_named((ast.FunctionDef,), names)],
            [(n.lineno, n.col_offset) for n in m.find_named((ast.ClassDef,), ("C",))],
            [(n.lineno, n.col_offset, m.segment(n)) for n in m.find(ast.ClassDef, ast.FunctionDef, containing=words)],
        )

    try:
        got = answers(sem)
    except LazyParseError:
        return
    assert got == answers(ref)


def test_a_class_ending_with_an_unparsed_method():
    """The class's end is its last method's, read when asked (which parses that method
    alone); a word after the class (a comment below it) is not in the class."""
    methods = [f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n" for i in range(4)]
    text = _class(methods, tail=False) + "\n# trailing words: zeros\n"
    sem = SemanticModel(text, lazy_min_chars=0)
    ref = SemanticModel(text, lazy=False)
    assert [n.name for n in sem.find(ast.ClassDef, containing=("x * 1",))] == ["C"]
    cls = sem.find_named((ast.ClassDef,), ("C",))[0]
    assert type(cls) is LazyClassDef
    assert [m.name for m in cls.body if pending(m) is not None] == ["m0", "m2", "m3"]  # (m1 holds "x * 1")
    want = ref.find_named((ast.ClassDef,), ("C",))[0]
    # the comment below the class is in the last method's text: telling whether the
    # class holds it needs the class's end, which parses that method alone
    assert sem.find(ast.ClassDef, containing=("zeros",)) == [] == ref.find(ast.ClassDef, containing=("zeros",))
    assert [m.name for m in cls.body if pending(m) is not None] == ["m0", "m2"]
    assert (cls.end_lineno, cls.end_col_offset) == (want.end_lineno, want.end_col_offset)
    assert sem.segment(cls) == ref.segment(want)


@pytest.mark.parametrize("decorators", [
    "@dataclass\n",
    "@auto_docstring(\n    custom_intro=\"\"\"\n    class Mentioned: in a docstring\n    \"\"\"\n)\n@register(\"class\", subclass=True)\n",
    "",
])
def test_the_class_line_is_found_past_any_decorator(decorators):
    """The spine starts at the ``class`` line the cut found, not at the first ``class``
    in the text (``@dataclass``, a decorator's arguments or docstring)."""
    methods = "".join(f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n\n" for i in range(4))
    text = "import torch\n\n\n" + decorators + "class C(Base):\n" + methods + "\nx = C()\n"
    src, body = _lazy_body(text)
    assert body is not None
    assert [m.name for m in _lazy_methods(body)] == ["m0", "m1", "m2", "m3"]
    assert _dump(body) == _dump(ast.parse(text).body)


def test_quotes_of_the_other_kind_in_a_docstring_hide_no_method():
    """A docstring holding the other triple quote (``"^\'\'\'"`` in a ``\"\"\"``
    docstring, as in a real tokenizer) makes the next methods' lines look as if inside
    a string: no body that holds such a line is left out, so every method of the class
    is in the spine, where the class lists its methods without parsing a body."""
    odd = ('    def decode(self, ids):\n        """Patterns such as ["^#", "^\'\'\'"] are cut.\n\n'
           '        More text.\n        """\n        text = self.convert(ids)\n        return text\n')
    after = [f"    def m{i}(self, x):\n        y = x * {i}\n        return y\n" for i in range(3)]
    text = _class([MEMBERS[0], odd] + after, tail=True)
    full = next(s for s in ast.parse(text).body if isinstance(s, ast.ClassDef))
    src = ParsedSource(text, min_chars=0)
    try:
        cls = next(s for c in src.chunks if c.kind == "class" for s in src.parse(c))
    except LazyParseError:
        return
    assert [getattr(m, "name", None) for m in cls.body] == [getattr(m, "name", None) for m in full.body]
    assert "decode" not in [m.name for m in _lazy_methods([cls])]


@pytest.mark.parametrize("n", range(6))
def test_padding_puts_the_code_on_its_line(n):
    """``pad(n)``: the code after it starts on line n + 1, after at most one statement of
    its own (a string literal, past one line)."""
    from torchmend.semantic.source import pad

    body = ast.parse(pad(n) + "x = 1\n").body
    assert (body[-1].lineno, body[-1].col_offset) == (n + 1, 0)
    assert len(body) == (2 if n >= 2 else 1)
    assert n < 2 or (isinstance(body[0], ast.Expr) and body[0].value.value == "\n" * (n - 1))


@pytest.mark.parametrize("line", [1, 2, 3, 50, 4_000, 40_000])
def test_code_parsed_at_a_line_is_the_code_parsed_there_in_a_file(line):
    """``parse_at`` pads the code down to its line, or far down a file shifts its line
    numbers instead: either way the nodes and every position are those of the code
    standing on that line of a file."""
    from torchmend.semantic.source import SHIFT_RATIO, parse_at

    code = "".join(MEMBERS).replace("\n    ", "\n").lstrip() + "import a.b as c  # type: ignore\n"
    code = "@deco(k=1)\nasync def f(x: int, *a, y=2, **kw) -> T:\n    return [z async for z in g(x)], f'{x!r:>{y}}'\n" + code
    expected = ast.parse("\n" * (line - 1) + code).body
    assert _dump(parse_at(code, line)) == _dump(expected)
    assert (line - 1 > SHIFT_RATIO * len(code)) == (line == 40_000)  # (both ways are tried)


def test_a_lazy_method_can_be_changed_like_any_node():
    """Setting a field or a position (``ast.increment_lineno``) parses the method first:
    the other fields stay those of the full parse."""
    text = _class([MEMBERS[0], MEMBERS[1], MEMBERS[0].replace("plain", "again")])
    src, body = _lazy_body(text)
    m = _lazy_methods(body)[0]
    m.end_col_offset = m.end_col_offset  # (reads, then sets)
    m2 = _lazy_methods(body)[1]
    assert pending(m2) is not None
    m2.end_lineno = 99
    assert m2.end_lineno == 99 and [type(s).__name__ for s in m2.body] == ["Return"]
    cls = next(s for s in body if isinstance(s, ast.ClassDef))
    want = copy.deepcopy(next(s for s in ast.parse(text).body if isinstance(s, ast.ClassDef)))
    ast.increment_lineno(cls, 10)
    ast.increment_lineno(want, 10)
    want.body[2].end_lineno = 99 + 10  # (body[0] is the docstring, body[2] `prop`)
    assert ast.dump(cls, include_attributes=True) == ast.dump(want, include_attributes=True)


_PARAMS = ["a", "b: int = 1", "c='x:)'", 'd=r"\\\\"', "e=(1, 2)", "f={'k': [1]}", "g=f\"{x}:\"", 'h: "Dict[str, int]" = {}',
           "i=lambda y: y", "j='''a\n:)'''", "*args", "**kw", "k=[  # a comment: (\n 1]", "l=\\\n 2"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PARAMS), max_size=6), st.sampled_from([", ", ",\n    ", ",  # why: (\n    "]),
       st.sampled_from(["", " -> int", " -> 'A:B'"]), st.booleans())
def test_header_colon_is_the_tokenizers(params, sep, ret, is_class):
    """The ``:`` that ends a header, found without the tokenizer (brackets, strings,
    comments and continuations passed over), is the one the tokenizer ends it with."""
    import io
    import tokenize

    from torchmend.semantic.members import _header_colon

    head = ("class C(" if is_class else "def f(") + sep.join(params) + ")" + ("" if is_class else ret)
    text = "x = 1\n" + head + ":\n    pass\n"
    depth, want = 0, None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == ":" and depth == 0 and tok.start[0] > 1:
            line_start = sum(len(ln) for ln in text.splitlines(True)[: tok.start[0] - 1])
            want = line_start + tok.start[1]
            break
    assert want is not None
    assert _header_colon(text, len("x = 1\n"), len(text)) == want
