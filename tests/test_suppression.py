"""Suppression comments (torchmend.suppression) through the real engine and rules, and
``check --add-noqa``."""

import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpus_cases import ROOT
from torchmend import suppression
from torchmend.engine import Options, process_text

LOOP = """import torch
import torch.nn as nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
loader = [(torch.randn(8, 4), torch.randn(8, 2))]

for inputs, targets in loader:
    loss = criterion(model(inputs), targets)
    loss.backward()
    opt.step(){comment}
"""


def codes(src: str, **kw) -> list:
    return [(f.code, f.line) for f in process_text("t.py", src, Options(fix=False, **kw)).findings]


def test_the_unsuppressed_case_fires():
    assert codes(LOOP.format(comment="")) == [("TM201", 12)]


def test_noqa_forms():
    assert codes(LOOP.format(comment="  # noqa")) == []
    assert codes(LOOP.format(comment="  # noqa: TM201")) == []
    assert codes(LOOP.format(comment="  # NOQA:TM201,E501")) == []
    assert codes(LOOP.format(comment="  # noqa: E501")) == [("TM201", 12)]  # another tool's code only
    assert codes(LOOP.format(comment="  # noqa: TM202")) == [("TM201", 12)]
    assert codes(LOOP.format(comment="  # type: ignore  # noqa: TM201")) == []


def test_torchmend_ignore_forms():
    for c in ("# torchmend: ignore", "# torchmend: ignore[TM201]", "# torchmend: ignore[TM2]",
              "# torchmend: ignore[missing-zero-grad]", "# torchmend: ignore[zero_grad]", "# torchmend: ignore[TM101, TM201]"):
        assert codes(LOOP.format(comment="  " + c)) == [], c
    assert codes(LOOP.format(comment="  # torchmend: ignore[TM1]")) == [("TM201", 12)]


def test_a_noqa_in_a_string_is_not_a_comment():
    src = LOOP.format(comment="; s = '# noqa'")
    assert codes(src) == [("TM201", 12)]


def test_any_line_of_a_multi_line_statement():
    src = LOOP.format(comment="").replace("    opt.step()\n", "    opt.step(\n    )  # noqa: TM201\n")
    assert codes(src) == []
    # a comment on the next statement does not count
    src = LOOP.format(comment="").replace("    opt.step()\n", "    opt.step()\n    x = 1  # noqa\n")
    assert codes(src) == [("TM201", 12)]
    # nor a comment line of its own before it
    src = LOOP.format(comment="").replace("    opt.step()\n", "    # noqa\n    opt.step()\n")
    assert codes(src) == [("TM201", 13)]


def test_file_level():
    base = LOOP.format(comment="")
    assert codes("# torchmend: ignore-file\n" + base) == []
    assert codes(base + "# torchmend: ignore-file[TM201]\n") == []
    assert codes("# torchmend: ignore-file[TM5]\n" + base) == [("TM201", 13)]


def test_suppressed_fix_is_not_applied():
    src = LOOP.format(comment="  # noqa: TM201")
    assert process_text("t.py", src, Options()).diff == b""
    assert process_text("t.py", LOOP.format(comment=""), Options()).diff != b""


def test_unknown_codes_are_warned_once_each_with_their_line():
    src = LOOP.format(comment="  # torchmend: ignore[TM999, not-a-rule]") + "y = 2  # noqa: TM77\nz = 3  # noqa: E501\nw = 4  # noqa:\n"
    r = process_text("t.py", src, Options(fix=False))
    assert r.warnings == [
        (12, "unknown rule code 'TM999' in a suppression comment (see `torchmend rules`)"),
        (12, "unknown rule code 'not-a-rule' in a suppression comment (see `torchmend rules`)"),
        (13, "unknown rule code 'TM77' in a suppression comment (see `torchmend rules`)"),
        (15, "`# noqa:` without codes suppresses nothing (write `# noqa` or `# noqa: TM201`)"),
    ]
    assert [f.code for f in r.findings] == ["TM201"]  # the unknown codes silence nothing


def test_statement_extents_only_when_needed():
    """The tokenizer runs only for a file with findings and a suppression comment."""
    calls = []
    real = suppression.parse

    def spy(text):
        calls.append(1)
        return real(text)

    suppression.parse, saved = spy, suppression.parse
    try:
        assert suppression.filter([], "x = 1  # noqa\n") == []
        assert suppression.filter(["f"], "x = 1\n") == ["f"]
        assert calls == []
    finally:
        suppression.parse = saved


def test_add_noqa_text():
    class F:
        def __init__(self, code, line):
            self.code, self.line = code, line

    text = "a = f(1,\n      2)\nb = 1  # noqa: E501\nc = '''x\ny''' + g(\n  3)\nd = 1 + \\\n    2\n"
    new, n = suppression.add_noqa(text, [F("TM201", 2), F("TM501", 3), F("TM101", 5), F("TM202", 7)])
    assert n == 4
    assert new == ("a = f(1,  # noqa: TM201\n      2)\nb = 1  # noqa: E501, TM501\nc = '''x\ny''' + g(  # noqa: TM101\n"
                   "  3)\nd = 1 + \\\n    2  # noqa: TM202\n")
    # idempotent: the findings are suppressed now
    assert suppression.filter([F("TM201", 1), F("TM501", 3), F("TM101", 4), F("TM202", 7)], new) == []
    again, n2 = suppression.add_noqa(new, [F("TM501", 3)])
    assert (again, n2) == (new, 0)


def tm(*args, cwd):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "torchmend", *args], cwd=cwd, env=env, capture_output=True)


def test_add_noqa_cli_adopts_a_codebase(tmp_path):
    import shutil

    for pitfall in ("zero_grad", "softmax"):
        shutil.copytree(os.path.join(ROOT, "corpus", pitfall), tmp_path / "corpus" / pitfall)
    before = tm("check", "corpus", "--no-cache", cwd=tmp_path)
    assert before.returncode == 1
    crlf = tmp_path / "corpus" / "zero_grad" / "missing_basic.py"
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    r = tm("check", "corpus", "--add-noqa", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert b"noqa directives to" in r.stderr
    after = tm("check", "corpus", "--no-cache", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == b"", after.stdout.decode()
    data = crlf.read_bytes()
    assert b"  # noqa: TM201\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    # a second run adds nothing and writes nothing
    st = {p: p.stat().st_mtime_ns for p in (tmp_path / "corpus").rglob("*.py")}
    again = tm("check", "corpus", "--add-noqa", "--no-cache", cwd=tmp_path)
    assert b"added 0 noqa directives to 0 files" in again.stderr
    assert st == {p: p.stat().st_mtime_ns for p in (tmp_path / "corpus").rglob("*.py")}


_COMMENT = st.tuples(
    st.sampled_from(["", "x = 1  ", "'#' + s  ", "y = '# noqa'  "]),
    st.sampled_from(["#", "# ", "#\t", "#\u00a0", "#  "]),
    st.sampled_from(["noqa", "NoQA", "NOQA", "torchmend", "TorchMend", "TORCHMEND", "nqa"]),
    st.sampled_from(["", " ", ":", ": ", " : "]),
    st.sampled_from(["", "ignore", "ignore-file", "Ignore"]),
    st.sampled_from(["", "TM999", "TM201", "E501", "[TM9]", "[TM201, XY1]", ", TM7"]),
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_COMMENT, min_size=1, max_size=4))
def test_the_directive_hint_hides_no_comment_warning(lines):
    """The text test that skips most files (a ``#`` then ``noqa``/``torchmend``, any
    case, spaces between) never hides a warning: ``comment_warnings`` gives what it
    gives with that test taken out."""
    import re

    from torchmend import suppression as S

    text = "\n".join(lines) + "\n"
    got = S.comment_warnings(text)
    hint = S._DIRECTIVE_HINT
    try:
        S._DIRECTIVE_HINT = re.compile("")  # matches every text
        want = S.comment_warnings(text)
    finally:
        S._DIRECTIVE_HINT = hint
    assert got == want, text
