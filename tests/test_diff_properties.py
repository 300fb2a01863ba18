"""Property tests: our diffs round-trip through unidiff, git apply and patch."""

import os
import shutil
import subprocess
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchmend.gitdiff import unified_diff
from tests.patching import apply_patch

LINE = st.sampled_from(["a", "b", "x = 1", "    return y", "", "# c", "import torch", "é"])


@st.composite
def texts(draw):
    lines = draw(st.lists(LINE, max_size=25))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.booleans())
    s = nl.join(lines)
    if lines and final:
        s += nl
    return s.encode("utf-8")


@st.composite
def pairs(draw):
    old = draw(texts())
    nl = b"\r\n" if b"\r\n" in old else b"\n"
    lines = old.split(nl)
    # edits: replace, insert, delete lines, toggle final newline
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(lines)))
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        new_line = draw(LINE).encode()
        if op == "ins":
            lines.insert(i, new_line)
        elif lines and i < len(lines):
            if op == "del":
                del lines[i]
            else:
                lines[i] = new_line
    new = nl.join(lines)
    if draw(st.booleans()):
        new = new.rstrip(b"\r\n") if new.endswith(nl) else new + nl
    return old, new


@given(pairs())
@settings(max_examples=300, deadline=None)
def test_unidiff_roundtrip(pair):
    old, new = pair
    d = unified_diff(old, new, "f.py")
    if old == new:
        assert d == b""
        return
    assert apply_patch(old, d) == new


@given(pairs())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_git_apply_and_patch_accept(pair):
    old, new = pair
    if old == new:
        return
    d = unified_diff(old, new, "f.py")
    tmp = tempfile.mkdtemp()
    try:
        for tool in (["git", "apply", "-"], ["patch", "-p1", "-s", "--binary"]):
            with open(os.path.join(tmp, "f.py"), "wb") as f:
                f.write(old)
            p = subprocess.run(tool, input=d, cwd=tmp, capture_output=True)
            assert p.returncode == 0, (tool, p.stdout, p.stderr, d)
            with open(os.path.join(tmp, "f.py"), "rb") as f:
                assert f.read() == new, tool
    finally:
        shutil.rmtree(tmp)
