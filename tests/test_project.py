"""The import index (codemods/project.py) finds what the anchored multi-line regex finds."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from torchmend import project

_ANCHORED = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+\(?([\w, \t]*)|import\s+([\w., ]+))", re.M)

LINES = [
    "import os", "import a.b as c, d", "from . import x", "from pkg.mod import (A, B,", "    C)", "",
    "  import nested", "x = 1  # import not_this", "importlib.reload(m)", "from x import *", "\r",
    "s = 'import quoted'", "\t\tfrom t import u", "def f():", "\x0c", "import", "from m import",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_import_scan_matches_the_anchored_regex(lines, nl):
    text = nl.join(lines)
    want = [m.groups() for m in _ANCHORED.finditer(text)]
    got = [m.groups() for m in project._imports(text)]
    assert got == want
