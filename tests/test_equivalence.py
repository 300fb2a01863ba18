"""The shortcuts are sound.  ``Options.shortcuts`` (on by default) is each rule's text gate
(``needles``) plus parsing only the parts of a file the rules reach (semantic/source.py:
top-level definitions parsed on demand).  With it off every rule runs on every file,
parsed whole.  On every corpus case, every corpus case padded with code that exercises
the cutting (decorated, async, nested and overloaded definitions, black-style multi-line
signatures, docstrings with code in column 0, module code between definitions), and a
generated tree, both give exactly the same findings, the same diff of the safe fixes and
the same suggested diff of every unsafe fix.  The cut is forced on every file
(``lazy_min_chars=0``) so that the corpus exercises it."""

from __future__ import annotations

import ast
import os
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchmend import runner
from torchmend.engine import Options
from torchmend.semantic.source import ParsedSource
from tests.corpus_cases import load_cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import generate  # noqa: E402

MODES = {
    "check": dict(fix=False),
    "diff": dict(fix=True),
    "unsafe": dict(fix=True, unsafe_fixes=True),
}

# code around a case: every shape the cut must get right
PAD_HEAD = '''

@staticmethod_like
@decorator(
    option=1,
)
def decorated_helper(
    a,
    b: int = 2,
) -> int:
    """Docstring with code in column 0:

def not_a_function():
    pass

class NotAClass:
    x = 1
"""
    return a + b


async def async_helper(x):
    async with x as y:
        return y


class Outer:
    class Inner:
        def method(self):
            return 1

    @property
    def prop(self):
        return self.Inner()


PAD_CONSTANT = {
    "k": 1,
}
'''
PAD_TAIL = '''


def overloaded(x: int) -> int: ...


def overloaded(x):  # noqa: F811
    return x


if PAD_CONSTANT:
    PAD_FLAG = True
else:
    PAD_FLAG = False


class Late:
    value = 3
'''


def _summary(res: runner.RunResult):
    out = {}
    for r in res.results:
        out[r.path] = (
            [(f.code, f.line, f.col, f.message, f.applied, f.safety) for f in r.findings],
            r.diff,
            [(s.finding.code, s.finding.line, s.diff) for s in r.suggestions],
        )
    return out


def _compare(paths, modes=tuple(MODES)):
    shipped, reference = {}, {}
    for m in modes:
        shipped[m] = runner.run(paths, Options(**MODES[m], lazy_min_chars=0), jobs=1)
        reference[m] = runner.run(paths, Options(**MODES[m], shortcuts=False), jobs=1)
    for m in modes:
        s, r = shipped[m], reference[m]
        assert [x.path for x in s.results] == [x.path for x in r.results]
        se = {x.path: x.error for x in s.results if x.error}
        re_ = {x.path: x.error for x in r.results if x.error}
        # without the text gate, unparsable files are analysed and reported; with it they may be skipped
        assert all(e.startswith("syntax error") for p, e in re_.items() if p not in se), re_
        assert all(re_.get(p) == e for p, e in se.items()), (se, re_)
        ss, rs = _summary(s), _summary(r)
        diff = {p: (ss[p], rs[p]) for p in ss if ss[p] != rs[p]}
        assert not diff, (m, diff)
    return shipped, reference


def test_shortcuts_are_sound_on_the_corpus():
    cases = load_cases()
    assert cases
    _compare([c.path() for c in cases])


def test_shortcuts_are_sound_on_corpus_cases_padded(tmp_path):
    paths = []
    for c in load_cases():
        with open(c.path(), encoding="utf-8") as f:
            lines = f.read().splitlines(keepends=True)
        at = max((i + 1 for i, ln in enumerate(lines) if ln.startswith(("import ", "from "))), default=0)
        text = "".join(lines[:at]) + PAD_HEAD + "".join(lines[at:]) + PAD_TAIL
        ast.parse(text)
        dest = tmp_path / c.pitfall / os.path.basename(c.path())
        dest.parent.mkdir(exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        paths.append(str(dest))
    _compare(paths)
    # the padding is cut into chunks, most of them left unparsed by the rules
    src = ParsedSource(open(paths[0], encoding="utf-8").read(), min_chars=0)
    assert sum(c.kind != "code" for c in src.chunks) >= 6


def test_shortcuts_are_sound_on_a_generated_tree(tmp_path):
    generate.generate(str(tmp_path / "mono"), 40, seed=7)
    shipped, reference = _compare([str(tmp_path / "mono")], modes=("check", "diff"))
    assert sum(len(r.findings) for r in shipped["diff"].results) > 0


TRAINER_WITH_TORCH_ALIASED = """\
import torch as th
from torch import nn


class CPC(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=8, hidden_size=8, num_layers=2, batch_first=True)

    def forward(self, x, hidden):
        return self.gru(x, hidden)


class Model:
    def __init__(self, device):
        self.device = device
        self.cpc = CPC()
        self.cpc.to(self.device)

    def fit(self, batches, bs):
        for xb in batches:
            hidden = th.zeros(2, bs, 8)
            out, hidden = self.cpc(xb, hidden)
"""


def test_shortcuts_are_sound_when_torch_is_imported_under_another_name(tmp_path):
    # the made-tensor gate of TM101 looked for ``torch.``, which ``th.zeros(`` lacks
    path = tmp_path / "cpc.py"
    path.write_text(TRAINER_WITH_TORCH_ALIASED, encoding="utf-8")
    shipped, _ = _compare([str(path)], modes=("check",))
    assert [f.code for r in shipped["check"].results for f in r.findings] == ["TM101"]


ENGINE_LOOPS = [
    "def fit(model, loader, device):\n    for x, y in loader:\n        x = x.to(device)\n"
    "        acc = (model(x).argmax(1) == y).float()\n",
    "def fit(model, loader, device):\n    for i, (x,\n            y) in enumerate(loader):  # in\n"
    "        x, y2 = (x.to(device), y)\n        print(F.cross_entropy(model(x), y))\n",
    "def fit(model, loader, device):\n    # for each batch\n    for x, \\\n            y in loader:\n"
    "        x = x.to(device)\n        print((model(x) - y).abs())\n",
    "class T:\n    def __init__(self, model):\n        self.model = model\n\n    def fit(self, loader):\n        for batch_x, batch_y in loader:\n"
    "            batch_x = batch_x.cuda(non_blocking=True)\n            out = self.model(batch_x)\n"
    "            print(F.nll_loss(out, batch_y))\n",
]


@pytest.mark.parametrize("body", ENGINE_LOOPS)
def test_shortcuts_are_sound_on_loops_over_a_loader_passed_in(tmp_path, body):
    # the text gate's ``may_witness`` against the model's ``witness_owners``
    from torchmend.rules import _device as D
    from torchmend.semantic import SemanticModel

    text = "import torch\nimport torch.nn.functional as F\n\n\n" + body
    assert D.witness_owners(SemanticModel(text, "e.py")) and D.may_witness(text)
    path = tmp_path / "engine.py"
    path.write_text(text, encoding="utf-8")
    shipped, _ = _compare([str(path)], modes=("check",))
    assert [f.code for r in shipped["check"].results for f in r.findings] == ["TM101"]


@pytest.mark.parametrize("seed", range(3))
def test_cut_parses_to_the_same_tree(seed):
    """Parsing chunk by chunk gives exactly the statements (with positions) that one
    parse of the whole file gives."""
    rng = random.Random(seed)
    gen = generate.Gen(rng)
    parts = [PAD_HEAD, PAD_TAIL] + ["\n".join(gen.klass() if i % 3 == 0 else gen.function()) for i in range(12)]
    rng.shuffle(parts)
    text = "import torch\n" + "\n\n".join(parts) + "\n"
    whole = ast.parse(text)
    src = ParsedSource(text, min_chars=0)
    assert len(src.chunks) > 5
    got = ast.Module(body=src.body(), type_ignores=[])
    assert ast.dump(got, include_attributes=True) == ast.dump(whole, include_attributes=True)


def _gen_text(seed: int) -> str:
    rng = random.Random(seed)
    gen = generate.Gen(rng)
    parts = [PAD_HEAD, PAD_TAIL] + ["\n".join(gen.klass() if i % 3 == 0 else gen.function()) for i in range(12)]
    rng.shuffle(parts)
    return "import torch\n" + "\n\n".join(parts) + "\n"


@pytest.mark.parametrize("seed", range(3))
def test_joined_parse_of_any_chunks_is_each_chunk_alone(seed):
    """``parse_all`` parses several chunks in one call (their texts joined at their own
    lines): every chunk gets exactly the statements, with positions, that parsing it
    alone gives, whichever chunks are asked for together."""
    text = _gen_text(seed)
    alone = ParsedSource(text, min_chars=0)
    for c in alone.chunks:
        alone.parse(c)
    rng = random.Random(seed)
    for _ in range(5):
        joined = ParsedSource(text, min_chars=0)
        some = [c for c in joined.chunks if rng.random() < 0.5]
        joined.parse_all(some)
        for c, a in zip(joined.chunks, alone.chunks):
            if c in some or c.kind == "code":
                assert c.stmts is not None
                assert [ast.dump(s, include_attributes=True) for s in c.stmts] == [ast.dump(s, include_attributes=True) for s in a.stmts]
            else:
                assert c.stmts is None  # not asked for: not parsed


def test_joined_parse_does_not_hide_a_wrong_cut():
    """A cut inside a statement whose brackets the next chunk closes: joined, the text
    parses, but no chunk holds whole statements: each chunk is parsed alone, and the one
    that does not parse says so (the caller then parses the file whole)."""
    from torchmend.semantic.source import Chunk, LazyParseError

    text = "def f(\n    a,\n):\n    return a\n\n\ndef g():\n    return 1\n"
    src = ParsedSource(text, min_chars=0)
    # a wrong cut, made by hand: "def f(" alone, the rest of f with g
    lines = text.splitlines(keepends=True)
    a = Chunk(0, len(lines[0]), 1, 1, "def", "f")
    b = Chunk(len(lines[0]), len(text), 2, len(lines), "def", "g")
    src.chunks = [a, b]
    with pytest.raises(LazyParseError):
        src.parse_all([a, b])


@pytest.mark.parametrize("seed", range(3))
def test_chunks_holding_a_word_are_those_whose_text_contains_it(seed):
    """``ParsedSource.holding`` (one scan of the text) gives the chunks a search of each
    chunk's own text finds, for words inside chunks, across their ends and nowhere;
    ``find_named`` with one name gives what ``find`` and an exact-name filter give."""
    from torchmend.semantic.model import SemanticModel

    text = _gen_text(seed)
    src = ParsedSource(text, min_chars=0)
    assert len(src.chunks) > 5
    words = {w for w in ast.walk(ast.parse(text)) for w in [getattr(w, "id", None) or getattr(w, "attr", None)] if w}
    words |= {"\n\n", "):\n", "torch.", "zeros(", "no such word"}
    words |= {text[c.end - 3 : c.end + 3] for c in src.chunks[:-1]}  # across a chunk's end
    for w in sorted(words):
        assert [src.chunks[i] for i in src.holding(w)] == [c for c in src.chunks if text.find(w, c.start, c.end) >= 0], w
    for name in sorted(w for w in words if w.isidentifier()):
        sem, ref = SemanticModel(text, lazy_min_chars=0), SemanticModel(text, lazy_min_chars=0)
        for t, field in ((ast.Name, "id"), (ast.Attribute, "attr")):
            want = [(n.lineno, n.col_offset) for n in ref.find(t, containing=(name,)) if getattr(n, field) == name]
            assert [(n.lineno, n.col_offset) for n in sem.find_named((t,), (name,))] == want, (name, t)
    # several words: one scan of the text, its hits handed to their chunks, finds what
    # asking for each word alone (a search per chunk) finds
    calls = [n.func for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)]
    names = sorted({f.attr for f in calls if isinstance(f, ast.Attribute)})[:4] + sorted({f.id for f in calls if isinstance(f, ast.Name)})[:3]
    words = tuple(f".{n}(" for n in names[:4]) + tuple(f"{n}(" for n in names[4:])
    got = [(n.lineno, n.col_offset) for n in SemanticModel(text, lazy_min_chars=0).find_named((ast.Call,), names, words)]
    want = set()
    for w in words:
        want |= {(n.lineno, n.col_offset) for n in SemanticModel(text, lazy_min_chars=0).find_named((ast.Call,), names, (w,))}
    assert got == sorted(want) and got
    # several names (no words given): only whole-word hits, as with one name
    some = tuple(sorted({f.attr for f in calls if isinstance(f, ast.Attribute)})[:5])
    ref = SemanticModel(text, lazy_min_chars=0)
    want = [(n.lineno, n.col_offset) for n in ref.find(ast.Attribute, containing=some) if n.attr in some]
    assert [(n.lineno, n.col_offset) for n in SemanticModel(text, lazy_min_chars=0).find_named((ast.Attribute,), some)] == want


def _statement_chunks_case(seed, keywords, types, shapes, lookalikes):
    """``shapes`` and ``lookalikes`` shuffled into generated code: the positions of the
    ``types`` statements found in the chunks ``statement_chunks(keywords)`` picks, those
    ``ast.walk`` finds, the chunks picked and the model."""
    from torchmend.semantic.model import SemanticModel

    rng = random.Random(seed)
    parts = [_gen_text(seed)] + shapes + lookalikes
    rng.shuffle(parts)
    text = "\n\n".join(parts)
    want = sorted((n.lineno, n.col_offset) for n in ast.walk(ast.parse(text)) if isinstance(n, types))
    sem = SemanticModel(text, lazy_min_chars=0)
    chosen = sem.statement_chunks(keywords)
    got = sorted((n.lineno, n.col_offset) for n in sem.find(*types, containing=keywords, chunks=chosen))
    return got, want, chosen, sem


@pytest.mark.parametrize("seed", range(3))
def test_declaring_chunks_hold_every_declaration(seed):
    """The chunks ``statement_chunks`` picks (a ``global``/``nonlocal`` that may start a
    statement) hold every ``Global``/``Nonlocal`` statement of the file, whatever stands
    around it, and not the chunks where the words are parts of names or prose."""
    decls = [
        "def g1():\n    global counter\n    counter = 1\n",
        "def g2():\n    if True: global a; a = 2\n",
        "def g3():\n    x = 1; global b\n    b = x\n",
        "def g4():\n    global \\\n        c\n    c = 3\n",
        "def g5():\n    y = 0\n    def inner():\n        nonlocal y\n        y += 1\n    return inner\n",
        "def g6():\n\tglobal\td\n\td = 4\n",
    ]
    lookalikes = ["def h1(global_step):\n    return global_step  # the global step\n",
                  "def h2():\n    s = 'nonlocal x'\n    return {1: global_max}\n"]
    got, want, chosen, sem = _statement_chunks_case(seed, ("global", "nonlocal"), (ast.Global, ast.Nonlocal), decls, lookalikes)
    assert got == want and len(want) == len(decls)
    assert {c.name for c in chosen} == {"g1", "g2", "g3", "g4", "g5", "g6"}
    # the module sees the names they bind
    assert {"counter", "a", "b", "c", "d"} <= set(sem.module_scope.bindings)


@pytest.mark.parametrize("seed", range(3))
def test_file_calls_are_the_call_sites_found_by_lookup(seed):
    """``file_calls`` (no lookup when the text holds no call of the function in the form
    a call site takes) gives ``file_call_sites(...).calls`` for every function, method and
    constructor, with calls spelled every way the text test must see (spaces before the
    ``(``, a parenthesised callee, a line continuation) and look-alikes that are none (a
    ``def``/``class`` line, a longer name, an attribute that is not called)."""
    from torchmend.semantic.model import SemanticModel

    shapes = [
        "def plain(a):\n    return a\n\n\ndef caller(x):\n    return plain (x)\n",
        "def uncalled(a):\n    return a\n\n\ndef lookalike(x):\n    return uncalled_too(x), x.uncalled\n",
        "class Box:\n    def __init__(self, v):\n        self.v = v\n\n\ndef make(v):\n    return (Box)(v)\n",
        "class Lonely(object):\n    def __init__(self):\n        self.t = 1\n\n    def helper(self):\n        return 2\n",
        "class Net:\n    def forward(self, x):\n        return self \\\n            .step(x)\n\n    def step(self, x):\n        return x\n",
        "class Other:\n    def step(self, y):\n        return y\n",
    ]
    rng = random.Random(seed)
    parts = [_gen_text(seed)] + shapes
    rng.shuffle(parts)
    text = "\n\n".join(parts)
    for lazy in (0, 10**9):
        sem, ref = SemanticModel(text, lazy_min_chars=lazy), SemanticModel(text, lazy_min_chars=lazy)
        defs = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found = set()
        for d in defs:
            f = next(n for n in sem.find(type(d), containing=(d.name,)) if (n.lineno, n.col_offset) == (d.lineno, d.col_offset))
            g = next(n for n in ref.find(type(d), containing=(d.name,)) if (n.lineno, n.col_offset) == (d.lineno, d.col_offset))
            got = [(c.lineno, c.col_offset) for c in sem.file_calls(f)]
            assert got == [(c.lineno, c.col_offset) for c in ref.file_call_sites(g).calls], d.name
            if got:
                found.add(d.name)
        assert {"plain", "__init__", "step"} <= found and "uncalled" not in found and "helper" not in found


@pytest.mark.parametrize("seed", range(3))
def test_find_named_answers_again_as_a_fresh_model(seed):
    """``find_named`` keeps its answers (a name many classes share is looked for once):
    asked again, and after a caller changed the list it got, it gives what a model that
    was never asked gives; with a screen (a caller's own test) nothing is kept."""
    from torchmend.semantic.model import SemanticModel

    shared = "".join(
        f"class M{i}(nn.Module):\n    def _init_weights(self, m):\n        return self._init_weights\n\n"
        f"    def forward(self, x):\n        return self.forward(x) + torch.zeros(3)\n\n\n"
        for i in range(4)
    )
    text = _gen_text(seed) + "\n\n" + shared
    asks = [((ast.Attribute,), ("_init_weights",), None), ((ast.Attribute,), ("forward",), None),
            ((ast.Call,), ("zeros",), (".zeros(",)), ((ast.Name,), ("self", "x"), None),
            ((ast.FunctionDef, ast.Attribute), ("forward",), None)]

    def spans(nodes):
        return [(type(n).__name__, n.lineno, n.col_offset) for n in nodes]

    for lazy in (0, 10**9):
        sem = SemanticModel(text, lazy_min_chars=lazy)
        for types, names, words in asks * 3:
            got = sem.find_named(types, names, words)
            want = SemanticModel(text, lazy_min_chars=lazy).find_named(types, names, words)
            assert spans(got) == spans(want) and got, (types, names)
            got.clear()  # the caller's list: the next answer is whole
        seen: list = []
        for _ in range(2):
            sem.find_named((ast.Call,), ("zeros",), (".zeros(",), screen=lambda *a: seen.append(a[1]) or True)
        assert seen and seen[: len(seen) // 2] == seen[len(seen) // 2 :]  # the screen is asked each time


@pytest.mark.parametrize("seed", range(3))
def test_chunk_of_line_is_the_chunk_whose_lines_hold_it(seed):
    """``chunk_of_line`` (a bisection) gives the chunk a scan of every chunk finds."""
    text = _gen_text(seed)
    for lazy in (0, 10**9):
        src = ParsedSource(text, min_chars=lazy)
        n = text.count("\n") + 2
        for line in range(0, n + 1):
            want = next((c for c in src.chunks if c.start_line <= line <= c.end_line), None)
            assert src.chunk_of_line(line) is want, line


_CALLEE_PIECES = ["f", "g", "ff", "x_f", "f2", "é", "self.", ".", " ", "\t", "\n", "\\\n", "(", ")", "def ", "class ",
                  "undef ", "xclass ", "def", ".f", "#", "'", "\u00a0", ","]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_CALLEE_PIECES), max_size=40))
def test_callees_index_answers_as_the_search_of_each_name(pieces):
    """``Callees`` reads every ``(`` once after many names were asked about; it gives
    what searching the text for each name gives (places, after a dot, not a definition
    line), for names in and around every shape of callee and look-alike."""
    from torchmend.semantic.source import Callees

    text = "".join(pieces)
    searched, indexed = Callees(text), Callees(text)
    for i in range(Callees.SCAN_LIMIT + 1):
        indexed.get(f"other{i}")  # past the limit: the index is built
    assert indexed._all is not None
    for name in ("f", "g", "ff", "x_f", "f2", "é", "a"):
        assert indexed.get(name) == searched._scan(name), (text, name)
    assert Callees("def f(x):\n    return f (x)\n").get("f") == (2, False, True)
    assert Callees("class C:\n    def m(self):\n        return self.\\\n m()\n").get("m") == (2, True, True)
    assert Callees("def f(x):\n    pass\n").get("f") == (1, False, False)


@pytest.mark.parametrize("seed", range(3))
def test_descend_is_the_stack_walk_over_iter_child_nodes(seed):
    """``nodes.descend`` (the model's walks over chunks and statements) yields the nodes,
    in the same order, that a stack walk over ``ast.iter_child_nodes`` (contexts left
    out) yields, with the parent of each recorded; a statement ``enter`` refuses is
    neither yielded nor entered.  ``child_nodes`` lists what ``iter_child_nodes`` gives."""
    from torchmend.semantic.nodes import child_nodes, descend

    text = _gen_text(seed) + "\n" + PAD_HEAD + "\nasync def a(x, *ys, k=None, **kw):\n    async with f() as g, h():\n" \
        "        return [y async for y in g if y] or {k: v for k, v in kw.items()} or f'{x!r:>{k}}'\n"
    tree = ast.parse(text)

    def kids(n):
        return [c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.expr_context)]

    def reference(roots, enter=None):
        out, stack = [], list(roots)
        while stack:
            n = stack.pop()
            if enter is not None and isinstance(n, ast.stmt) and not enter(n):
                continue
            out.append((n, [(c, n) for c in kids(n)]))
            stack.extend(kids(n))
        return out

    for n in ast.walk(tree):
        assert child_nodes(n) == kids(n)
    defs = {id(s) for s in ast.walk(tree) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for enter in (None, lambda st: id(st) not in defs):
        parent: dict = {}
        got = list(descend(tree.body, parent, enter))
        want = reference(tree.body, enter)
        assert [id(n) for n in got] == [id(n) for n, _ in want] and len(got) > 20
        operators = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)  # shared: their parent is the last one met
        assert all(parent[c] is p for _, cs in want for c, p in cs if not isinstance(c, operators))


@pytest.mark.parametrize("seed", range(3))
def test_loop_chunks_hold_every_for_loop(seed):
    """``statement_chunks(("for",))`` (the chunks TM101 reads for loops) holds every
    ``for``/``async for`` statement however it is written, and not the chunks where
    the word is part of a name (``forward``, ``format``) or a comprehension's."""
    loops = [
        "def l1(xs):\n    for x in xs:\n        pass\n",
        "async def l2(xs):\n    async  for x in xs:\n        pass\n",
        "def l3(xs):\n    if xs: for_ = 1\n    for(a, b) in xs: pass\n",
        "def l4(xs):\n    for\\\n y in xs: pass\n",
        "def l5(xs):\n    for[a, b] in xs: pass\n",
    ]
    lookalikes = ["def h1(self):\n    return self.forward(format(1))\n",
                  "def h2(xs):\n    return [x for x in xs]\n"]
    got, want, chosen, _ = _statement_chunks_case(seed, ("for",), (ast.For, ast.AsyncFor), loops, lookalikes)
    assert got == want and len(got) >= len(loops)
    assert not {"h1", "h2"} & {c.name for c in chosen}


_LAYERISH = ["Conv2d(", "LazyConv2d(", "Linear(", "LazyLinear(", "Bilinear(", "Transformer(", "TransformerEncoder(",
             "TransformerEncoderLayer(", "Lazy", "Conv", "2d", "Linear", "Encoder", "Layer", "(", ")", "x", " ", "\n", "é"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_LAYERISH), max_size=30), st.integers(0, 200), st.integers(0, 200))
def test_words_backwards_find_what_the_forward_pattern_finds(pieces, a, b):
    """``source.Words`` runs words that all end with ``(`` (and begin with several
    letters) over the reversed text; the spans, in a whole text and in any range of it,
    are those of the forward pattern (the longest word first)."""
    import re

    from torchmend.semantic.source import Words

    ws = ("Conv2d(", "LazyConv2d(", "Linear(", "LazyLinear(", "Bilinear(", "Transformer(", "TransformerEncoder(",
          "TransformerEncoderLayer(")
    back = Words(ws)
    assert back.backwards and not Words((".zeros(", ".ones(")).backwards
    forward = re.compile("|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True)))
    text = "".join(pieces)
    start, end = sorted((min(a, len(text)), min(b, len(text))))
    assert back.spans(text) == [m.span() for m in forward.finditer(text)]
    assert back.spans(text, start, end) == [m.span() for m in forward.finditer(text, start, end)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(_LAYERISH), max_size=12), st.integers(0, 80), st.integers(0, 80),
                          st.booleans()), min_size=1, max_size=6))
def test_words_keep_only_the_answer_for_the_same_text_and_range(asks):
    """``Words.spans`` keeps its last answer: a sequence of questions about texts (the
    same object asked again, or an equal copy) and ranges gets, each time, what a fresh
    ``Words`` gives."""
    from torchmend.semantic.source import Words

    ws = ("Conv2d(", "Linear(", "LazyLinear(", "Transformer(")
    kept = Words(ws)
    last = None
    for pieces, a, b, again in asks:
        text = last if again and last is not None else "".join(pieces)
        start, end = sorted((min(a, len(text)), min(b, len(text))))
        assert kept.spans(text, start, end) == Words(ws).spans(text, start, end)
        assert kept.spans("".join(list(text)), start, end) == Words(ws).spans(text, start, end)  # an equal copy
        last = text


_ENCODING_PIECES = [b"# -*- coding: latin-1 -*-", b"# coding=utf-8", b"#coding:cp1252", b"# vim: set fileencoding=koi8-r :",
                    b"# coding: utf-16", b"# coding: nosuch", b"x = 1", b"#!/usr/bin/env python", b"", b"  ", b"\xef\xbb\xbf",
                    b"\xff\xfe", b"caf\xc3\xa9", b"caf\xe9", b"# codin", b"coding", b"\r", b"\\", b"'''"]


@given(st.lists(st.sampled_from(_ENCODING_PIECES), max_size=8), st.sampled_from([b"\n", b"\r\n", b"\r", b""]))
@settings(max_examples=400, deadline=None)
def test_the_encoding_shortcut_answers_as_tokenize(pieces, nl):
    """Without the word ``coding`` in the first two lines the reader does not call
    tokenize.detect_encoding: the encoding (or the refusal) is the one it gives."""
    from torchmend.sourcefile import SourceError, declared_encoding

    raw = nl.join(pieces) + nl

    def answer(shortcut):
        try:
            return declared_encoding(raw, shortcut)
        except SourceError as e:
            return ("error", str(e))

    assert answer(True) == answer(False)


_GLOBS = ["a", "build", "dist/", "*.py", "*_pb2.py", "gen*", "a?", ".venv", "x", "data/", "[ab]c", "sub/x", "!keep.py", "**/tmp"]
_PARTS = ["a", "b", "x", "z", "ac", "bc", "build", "dist", "gen1", "data", "m.py", "m_pb2.py", ".venv", "keep.py", "tmp", "sub"]


@given(
    st.lists(st.tuples(st.sampled_from(["", "a", "a/b", "z"]), st.sampled_from(_GLOBS)), min_size=1, max_size=4),
    st.lists(st.sampled_from(_PARTS), max_size=3),
)
@settings(max_examples=600, deadline=None)
def test_name_matches_answer_as_path_matches(patterns, parts):
    """In a directory where :meth:`Excludes.by_name_in` holds, an entry's name alone
    decides: ``match_name`` answers as ``match`` on the entry's whole path (globs
    rooted at, above and beside the directory, name and path globs, negations), for
    every name, as a file and as a directory."""
    from torchmend.discovery import Excludes

    base = "/r"
    ex = Excludes([(os.path.join(base, root) if root else base, glob) for root, glob in patterns])
    d = "/".join([base] + parts)
    if ex.by_name_in(d):
        for name in _PARTS:
            for is_dir in (False, True):
                assert ex.match_name(name, is_dir) == ex.match(d + "/" + name, is_dir), (name, is_dir)


def test_name_matches_are_taken_where_they_apply():
    """(The shortcut is used: the defaults' entries under their root are matched by name.)"""
    from torchmend.discovery import DEFAULT_EXCLUDES, Excludes

    ex = Excludes([("/r", g) for g in DEFAULT_EXCLUDES])
    assert ex.by_name_in("/r") and ex.by_name_in("/r/a/b") and ex.match_name("build", True)
    assert not ex.by_name_in("/r/build") and not ex.by_name_in("/elsewhere")  # inside an excluded one; outside the root
    assert not Excludes([("/r", "src/gen/*.py")]).by_name_in("/r/src")  # a path glob: the whole path is matched


@given(st.lists(st.sampled_from(["a", "b.py", ".", "..", "", ".x", "x."]), max_size=5), st.booleans(), st.booleans())
@settings(max_examples=500, deadline=None)
def test_cache_paths_are_the_normalised_absolute_paths(parts, lead, trail):
    """The cache's absolute path of a file (joined without normpath when the path is
    already in normal form) is ``normpath(join(cwd, path))`` for any spelling."""
    from torchmend.cache import Cache

    path = ("/" if lead else "") + "/".join(parts) + ("/" if trail else "")
    c = Cache.__new__(Cache)
    for cwd in ("/w/x", "/"):
        c._cwd, c._cwd_pre = cwd, cwd if cwd.endswith("/") else cwd + "/"
        assert c._abs(path) == os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["x", "é", "日本", " ", "\n", "\r\n", "\r", "#", "'"]), max_size=40))
def test_the_lines_holding_non_ascii_are_those_a_line_split_finds(pieces):
    """``SemanticModel._non_ascii_lines`` (one search per such line, the next from the
    line after it) gives the 1-based lines, as the tokenizer splits them, holding a
    character outside ASCII."""
    from torchmend.semantic.model import SemanticModel
    from torchmend.semantic.source import line_starts

    text = "".join(pieces)
    starts = line_starts(text)
    want = {i + 1 for i, a in enumerate(starts)
            if not text[a : starts[i + 1] if i + 1 < len(starts) else len(text)].isascii()}

    class Probe:
        pass

    probe = Probe()
    probe.text, probe._starts = text, lambda: starts
    assert SemanticModel._non_ascii_lines(probe) == want


_ASSIGNMENT_PIECES = ["\n", "    ", "\t", "self.", "self", "model", "m2", "_x", " ", "=", "==", ":", "Dict[str, int]",
                      "nn.", "models.", "a.b.", "Net", "(", ")", ".", "x", "é", "#", "'", "\\"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(_ASSIGNMENT_PIECES), max_size=40))
def test_the_possessive_assignment_pattern_matches_as_the_plain_one(pieces):
    """TM104's screen looks for ``name = [prefix.]Ctor(`` lines with possessive
    quantifiers where giving back cannot help: the same matches, with the same groups,
    as the plain pattern (Python 3.10 uses the plain one)."""
    import re

    from torchmend.rules import tm104_model_not_moved as tm104

    try:
        fast = re.compile("\n" + tm104._ASSIGNED_POSSESSIVE)
    except re.error:  # pragma: no cover - Python 3.10
        pytest.skip("no possessive quantifiers before Python 3.11")
    plain = re.compile("\n" + tm104._ASSIGNED)
    text = "".join(pieces)
    assert [(m.span(), m.groups()) for m in fast.finditer(text)] == [(m.span(), m.groups()) for m in plain.finditer(text)]
    assert tm104._ASSIGNED_CALL.pattern == fast.pattern


_FEW_PIECES = ["cross_entropy", "CrossEntropyLoss", "cross", "Loss", "CE(", "CE", "nll_loss", "_", "(", " ", "\n",
               "é", "x", "crossCrossEntropyLoss", "CEcross_entropy"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_FEW_PIECES), max_size=30), st.integers(0, 200), st.integers(0, 200),
       st.sampled_from([("cross_entropy", "CrossEntropyLoss"), ("CE", "CE(", "cross_entropy", "CrossEntropyLoss"),
                        ("nll_loss", "_loss", "loss", "Loss", "CE", "cross")]))
def test_few_words_are_found_as_the_pattern_finds_them(pieces, a, b, ws):
    """``source.Words`` looks for a few words that begin differently one by one and
    merges their places: the spans, in a whole text and in any range of it, are those of
    the pattern (the longest word first at a place, none inside the last match)."""
    import re

    from torchmend.semantic.source import Words

    few = Words(ws)
    assert few.few is not None
    pattern = re.compile("|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True)))
    text = "".join(pieces)
    start, end = sorted((min(a, len(text)), min(b, len(text))))
    assert few.spans(text) == [m.span() for m in pattern.finditer(text)]
    assert Words(ws).spans(text, start, end) == [m.span() for m in pattern.finditer(text, start, end)]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([".", "step", "steps", " ", "\n", "\\", "#", "# c", "x", "(", ")", "\t", "a.b",
                                 "##", "#.", "\r", "\u00a0"]),
                max_size=16))
def test_a_method_call_is_looked_for_backwards_as_forwards(pieces):
    """The zero_grad rules' gate looks for ``.name`` with spaces, continuations or
    comments between the dot and the name by the reversed pattern over the reversed
    text: it stands there exactly where the forward pattern finds it."""
    import re

    from torchmend.rules._zero_grad import method_may_be_called

    text = "".join(pieces)
    for name in ("step", "backward"):
        want = re.search(r"\.(?:\s|\\|#[^\n]*)*" + re.escape(name), text) is not None
        assert method_may_be_called(text, name) is want


def test_a_banner_of_hashes_is_read_in_one_pass():
    """(EECS 498 network_visualization.py: ``# ####...####`` banners near ``step``: the
    plain reverse of the pattern split each banner in exponentially many ways; a file
    of 155 lines took minutes in the text gate)"""
    from torchmend.rules._zero_grad import method_may_be_called

    banner = "#" * 70
    text = f"x = 1\n{banner}\n# {banner}\nstep_size = 3  # step\n{banner}\n"
    assert method_may_be_called(text, "step") is False
    assert method_may_be_called(text + f"opt.  # {banner}\n  step()\n", "step") is True


def _split_tail_copying(text: str) -> tuple[str, str]:
    """The held-back tail as first written, on copies of the text (rstrip, slices): the
    reference for ``sourcefile._split_tail``, which works on offsets."""
    import re

    ws = " \t\f\r\n"
    core = text.rstrip(ws)
    while core:
        start = max(core.rfind("\n"), core.rfind("\r")) + 1
        if not core[start:].lstrip(" \t\f").startswith("#"):
            break
        core = core[:start].rstrip(ws)
    tail = text[len(core):]
    if not core or re.match(r"(?:\r?\n)*\Z", tail):
        return text, ""
    nl = "\r\n" if tail.startswith("\r\n") else "\n" if tail.startswith("\n") else ""
    return core + nl, tail


_TAIL_PIECES = ["x = 1", "y", "# c", "  # c", "#", "\t#x", "\n", "\r\n", "\r", " ", "\t", "\f", " " * 70, "\n" * 66, "'#'"]


@given(st.lists(st.sampled_from(_TAIL_PIECES), max_size=14))
@settings(max_examples=1500, deadline=None)
def test_the_tail_is_held_back_as_the_copying_form_holds_it(pieces):
    from torchmend.sourcefile import _split_tail

    text = "".join(pieces)
    assert _split_tail(text) == _split_tail_copying(text)


@given(
    st.lists(st.sampled_from(["x = 1", "# @generated", "# DO NOT EDIT", "", "\r", "\f", "\x1c", "\u2028", "y" * 900,
                              "Generated by the protocol buffer compiler"]), max_size=10),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
@settings(max_examples=800, deadline=None)
def test_generated_files_are_told_as_the_first_lines_tell_them(pieces, nl):
    """A generated-file marker is looked for in the first 4096 characters before the
    first five lines are split: a file is skipped exactly when a marker stands in them."""
    from torchmend.sourcefile import GENERATED_MARKERS, Skipped, decode_source

    text = nl.join(pieces) + nl
    head = "\n".join(text[:4096].splitlines()[:5])
    try:
        decode_source("t.py", text.encode("utf-8"))
        skipped = False
    except Skipped:
        skipped = True
    assert skipped == any(m in head for m in GENERATED_MARKERS)


@given(
    st.lists(st.sampled_from(["cross_entropy", "CrossEntropyLoss", "ntropy", "entropy", "cross_", "Entropy", "Loss(",
                              "x = 1", "\n", "num_workers", "DataLoader", "orkers"]), max_size=8),
    st.sampled_from([("cross_entropy", "CrossEntropyLoss"), ("num_workers", "DataLoader"), ("Loss(", "_loss("),
                     ("backward",), ("xworkers", "yworkersz", "workers")]),
)
@settings(max_examples=800, deadline=None)
def test_a_needles_common_part_answers_as_the_needles(pieces, needles):
    """The gate looks first for the longest part every needle holds (when it is 4
    characters or more): it lets a text through exactly when one of the needles does."""
    from torchmend.rule import Rule, common_part

    class R(Rule):
        pass

    R.needles = needles
    text = "".join(pieces)
    part = common_part(needles)
    assert part is None or all(part in n for n in needles)
    assert R.may_match(text) == any(n in text for n in needles)


_TO_TENSOR_PIECES = ["ToTensor()(", "ToTensor()", "PIL", "PILToTensor()(", "to_tensor(", "pil_", "pil_to_tensor(",
                     "x", "_", "é", ".", " ", "\n", "(", "F.to_tensor(", "Xpil_to_tensor(", "é_to_tensor("]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(_TO_TENSOR_PIECES), max_size=30))
def test_the_to_tensor_calls_are_the_patterns_matches(pieces):
    """TM101's made-tensor scan finds torchvision's to-tensor calls by their literal
    tails: the same starts as the pattern's matches (an optional ``PIL``/``pil_`` head,
    no word character before ``to_tensor``)."""
    from torchmend.rules import _device

    text = "".join(pieces)
    assert _device._to_tensor_calls(text) == [m.start() for m in _device._TO_TENSOR_CALL.finditer(text)]


_LINE_PIECES = ["for", " for ", "for x in y:", "async for (a, b) in c:", "    ", "\t", "\n", "\\\n", "(", ")", " in ",
                "import torch as th", "import os, torch as T", "import", "torch", " as ", "t = T.Compose(", "Compose(",
                "x", "#", ":", "é", "in", "forx"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=40), st.integers(0, 300), st.integers(0, 300))
def test_patterns_tried_on_the_lines_of_a_word_match_as_finditer(pieces, a, b):
    """``_matches_on_lines`` tries a ``^`` pattern only at the start of the lines that
    hold its word, from the end of the last match on: the same matches (spans and
    groups) as ``finditer`` over the text or a range of it, for each pattern it serves."""
    from torchmend.rules import _device

    text = "".join(pieces)
    a, b = min(a, len(text)), min(b, len(text))
    a, b = min(a, b), max(a, b)
    for pattern, word in ((_device._FOR_TARGET, "for"), (_device._TORCH_AS, "import"), (_device._COMPOSE_NAME, "Compose(")):
        for start, end in ((0, len(text)), (a, b)):
            want = [(m.span(), m.groups()) for m in pattern.finditer(text, start, end)]
            got = [(m.span(), m.groups()) for m in _device._matches_on_lines(pattern, text, word, start, end)]
            assert got == want


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(["loader", ":", " ", "\t", "Optional[", "typing.", "'", '"', "torch.utils.data.",
                                 "DataLoader", "DataLoaders", "\n", "\r", "x", "é", "(", "]"]), max_size=30))
def test_a_loader_annotation_is_found_on_its_line_as_in_the_text(pieces):
    """TM101 looks for ``name: DataLoader`` annotations on the lines that hold the word:
    the same answer as the pattern's search of the whole text."""
    from torchmend.rules import _device

    text = "".join(pieces)
    assert _device.has_loader_annotation(text) == (_device.LOADER_ANNOTATION.search(text) is not None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["x", "é", " ", "\n", "\r\n", "\r", "\n\n", "#"]), max_size=40))
def test_line_starts_are_where_the_tokenizer_starts_lines(pieces):
    """``line_starts`` (a search of the line breaks) gives the offset of each line as the
    tokenizer splits them: ``\\r\\n``, ``\\r`` and ``\\n`` end a line."""
    import re

    from torchmend.semantic.source import line_starts

    text = "".join(pieces)
    want, at = [], 0
    for line in re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text):
        want.append(at)
        at += len(line)
    assert line_starts(text) == want


_LINES = ["x.to(d)", "y = f(", "z = [", "w = {", "a = 1 + \\", "x.cuda()", ")", "]", "}", "2", "s = '''(", "'''",
          "t = \"\"\"[", "\"\"\"", "# a comment (", "u = g(  # why (", "if a:", "def h(", "):", "b = 1,", "x.to(d),",
          "x.to(d))", "pass", "q = r'\\\\'", "v = '#' + k(", "    ", "if a:\n    x.to(d)", "while b: x.cuda()",
          "with c:\n    x = y(\n        z.to(d))\n    x.to(d)"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "    ", "\t"]), st.sampled_from(_LINES)), max_size=12),
       st.sampled_from(["\n", "\r\n"]))
def test_no_statement_starts_on_a_line_that_continues_the_one_above(lines, nl):
    """``continues_a_line`` (TM101's text screen for a dropped move leaves out the
    ``x.to(`` that stand on such lines) is never true where a statement starts, in any
    text that parses."""
    from torchmend.semantic.source import continues_a_line, line_starts

    text = "".join(indent + line + nl for indent, line in lines)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    starts = line_starts(text)
    for n in ast.walk(tree):
        if isinstance(n, ast.stmt):
            assert not continues_a_line(text, starts[n.lineno - 1] + n.col_offset), (text, n.lineno)


def test_a_line_inside_brackets_continues_the_one_above():
    from torchmend.semantic.source import continues_a_line

    text = "out = F.conv1d(\n    hidden.to(w.dtype),\n)\nx = [\n  y.to(d)]\nf(a,  # (\n  b.to(d))\nz.to(d)\n"
    at = {w: text.index(w) for w in ("hidden", "y.to", "b.to", "z.to")}
    assert continues_a_line(text, at["hidden"]) and continues_a_line(text, at["y.to"])
    assert not continues_a_line(text, at["b.to"])  # (a ``#`` above: not told)
    assert not continues_a_line(text, at["z.to"])
