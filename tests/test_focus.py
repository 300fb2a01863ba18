"""codemods/focus.py: what is elided, what is kept, and that lines stay put.  That the
focus changes no finding is checked on the corpus and a generated tree by
tests/test_gates.py (check mode, focus on vs off)."""

from __future__ import annotations

import ast
import os
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

from torchmend import engine, focus, registry
from torchmend.engine import Options

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _focus(src: str):
    src = textwrap.dedent(src)
    return focus.focus(src, ast.parse(src))


FILLER = '''
def summarize(rows, width: int = 3):
    """Plain Python, nothing a rule looks at."""
    out = []
    for r in rows:
        out.append(str(r)[:width])
    return ", ".join(out)
'''


def test_elides_an_unreferenced_plain_function_keeping_lines():
    src = "import torch\n" + FILLER + "\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    got = _focus(src)
    assert got is not None and got.count("\n") == src.count("\n")
    assert "out.append" not in got and 'def summarize(rows, width: int = 3):\n    """torchmend-elided-' in got
    # every kept line is byte-identical, at the same line number
    for a, b in zip(src.splitlines(), got.splitlines()):
        assert a == b or b.strip() in ("", '"""') or b.strip().startswith('"""torchmend-elided-')
    ast.parse(got)


@pytest.mark.parametrize(
    "extra",
    [
        "print(summarize([1, 2]))\n",  # called from kept code
        "def train():\n    return summarize\n",  # named by a kept definition
        "@summarize\ndef f():\n    pass\n",  # a decorator runs at module level
        "SEEN = [torch.zeros(1)]\n",  # the body reads a module variable bound by relevant code
    ],
)
def test_keeps_what_kept_code_can_reach(extra):
    src = "import torch\n" + FILLER.replace("out = []", "out = list(SEEN)") + extra
    assert _focus(src) is None


def test_a_local_that_shares_a_function_name_is_not_a_reference():
    src = "import torch\n" + FILLER + "def train(model):\n    for summarize in model:\n        pass\n"
    got = _focus(src)
    assert got is not None and "out.append" not in got
    # but a global read of the same name is
    src2 = "import torch\n" + FILLER + "def train(model):\n    return [summarize for x in model]\n"
    assert _focus(src2) is None


def test_plain_module_constants_do_not_keep_a_reader():
    src = "import torch\nSEEN = [1, 2]\n" + FILLER.replace("out = []", "out = list(SEEN)")
    assert _focus(src) is not None


@pytest.mark.parametrize(
    "body",
    [
        "    x = model(1)\n    y = 2\n    return x\n",  # a pitfall word
        "    global counter\n    counter = 1\n    return 2\n",  # rebinds a module name
        "    t = torch.ones(1)\n    u = t\n    return u\n",
        "    out = CrossEntropyLoss()\n    v = 1\n    return out\n",  # camel-case humps
        "    z = my_loader\n    v = 1\n    return z\n",  # underscore parts
        "    x = y.to(dev)\n    v = 1\n    return x\n",
    ],
)
def test_keeps_definitions_that_mention_what_rules_start_from(body):
    assert _focus("import torch\ndef helper():\n" + body) is None


def test_relevant_words_cover_each_rules_entry_point():
    # the call every finding of a rule starts from; a new rule must add its own here
    entry = {
        "TM101": [".to(device)", ".cuda()", "DataLoader", "train_loader"],
        "TM102": ["forward", "torch.zeros"],
        "TM201": ["loss.backward()"],
        "TM202": ["loss.backward()", "optimizer.zero_grad()"],
        "TM301": ["DataLoader(ds, num_workers=2)"],
        "TM401": ["model.load_state_dict(torch.load(p))"],
        "TM501": ["F.cross_entropy", "nn.CrossEntropyLoss", "F.softmax", "nn.Softmax"],
        "TM502": ["F.log_softmax", "nn.LogSoftmax", "nn.NLLLoss"],
    }
    assert set(entry) == {r.code for r in registry.all_rules()}
    for code, texts in entry.items():
        for t in texts:
            assert focus.relevant(t), (code, t)
    for word in ("step", "grad", "head", "batch", "label", "output", "state"):
        assert not focus.relevant(word)  # everyday ML words do not keep a definition


def test_restore_puts_every_elided_body_back_or_refuses():
    src = "import torch\n" + FILLER + "\nx = 1\n" + FILLER.replace("summarize", "other") + "y = torch.ones(1)\n"
    fz = focus.focus_map(src, ast.parse(src))
    assert fz is not None and fz.text.count("torchmend-elided-") == 2
    assert fz.restore(fz.text) == src
    # code around the placeholders may change (a fix): the bodies still come back
    edited = fz.text.replace("x = 1\n", "x = 2  # fixed\n")
    assert fz.restore(edited) == src.replace("x = 1\n", "x = 2  # fixed\n")
    # a placeholder lost or doubled: no guess
    first = fz.text.index('    """torchmend-elided-')
    assert fz.restore(fz.text[:first]) is None
    block_end = fz.text.index('"""\n', first + 10) + 4
    assert fz.restore(fz.text + fz.text[first:block_end]) is None


def test_short_and_same_line_bodies_are_left_alone():
    assert _focus("def f(): return 1\nclass A: pass\ndef g(a,\n      b): return a\n") is None


def test_crlf_and_form_feed_lines_keep_their_numbers():
    src = "import os\r\n\x0c\r\n" + FILLER.replace("\n", "\r\n") + "x = 1\r\n"
    got = focus.focus(src, ast.parse(src))
    assert got is not None and got.count("\r\n") == src.count("\r\n") and got.endswith("x = 1\r\n")
    assert "\x0c" in got


def test_engine_analyses_focused_text_in_check_mode_and_whole_text_for_fixes(monkeypatch):
    with open(os.path.join(ROOT, "corpus", "device", "cuda_flag_guard.py"), encoding="utf-8") as f:
        bug = f.read()
    head, tail = bug.split("\n\nclass Regressor", 1)
    src = head + "\n" + FILLER + "\n\nclass Regressor" + tail
    assert focus.focus(src, ast.parse(src)) is not None  # the filler is elided
    check = engine.process_text("t.py", src, Options(fix=False))
    diff = engine.process_text("t.py", src, Options(fix=True))
    key = [(f.code, f.line, f.col, f.message) for f in check.findings]
    assert key and key == [(f.code, f.line, f.col, f.message) for f in diff.findings]
    # the fix is made on the whole text: the same diff as without focus, filler untouched
    monkeypatch.setattr(engine, "FOCUS", False)
    assert diff.diff and diff.diff == engine.process_text("t.py", src, Options(fix=True)).diff
    assert b"out.append" not in diff.diff


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([FILLER, "x = 1\n", "class K:\n    a = 1\n    b = 2\n    c = 3\n", "\n# c\n", "def f():\n    return 1\n"]), max_size=8))
def test_focused_text_parses_keeps_line_count_and_restores(parts):
    src = "".join(parts)
    fz = focus.focus_map(src, ast.parse(src))
    if fz is not None:
        ast.parse(fz.text)
        assert fz.text.count("\n") == src.count("\n") and fz.restore(fz.text) == src


def test_a_failed_restore_redoes_the_file_unfocused(monkeypatch):
    with open(os.path.join(ROOT, "corpus", "device", "cuda_flag_guard.py"), encoding="utf-8") as f:
        bug = f.read()
    head, tail = bug.split("\n\nclass Regressor", 1)
    src = head + "\n" + FILLER + "\n\nclass Regressor" + tail
    want = engine.process_text("t.py", src, Options(fix=True))
    assert want.diff
    calls = []

    def refuse(self, code):
        calls.append(code)
        return None

    monkeypatch.setattr(focus.Focused, "restore", refuse)
    got = engine.process_text("t.py", src, Options(fix=True))
    assert calls  # the focused attempt was made and given up
    assert got.diff == want.diff and [f.message for f in got.findings] == [f.message for f in want.findings]
    new = engine.fix_text("t.py", src, Options(fix=True))[1]
    assert "out.append" in new and new != src
