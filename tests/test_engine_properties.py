"""Property tests over the real rules: valid Python out, idempotence, CRLF/BOM invariance."""

import ast
import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchmend.engine import Options, process_text
from torchmend.sourcefile import decode_source
from torchmend.engine import process_source
from tests.corpus_cases import load_cases
from tests.patching import apply_patch

BUGS = [c for c in load_cases() if c.kind == "bug"]
ALL = load_cases()


def _fixed(text: str, **kw) -> str:
    r = process_text("t.py", text, Options(**kw))
    assert r.error is None, r.error
    return apply_patch(text.encode(), r.diff).decode() if r.changed else text


@pytest.mark.skipif(not ALL, reason="corpus not present")
@given(st.lists(st.sampled_from(ALL or [None]), min_size=1, max_size=3, unique_by=lambda c: c.id), st.booleans())
@settings(max_examples=25, deadline=None)
def test_concatenated_scripts_fix_to_valid_idempotent_python(cases, unsafe):
    text = "\n\n".join(c.read().decode() for c in cases)
    out = _fixed(text, unsafe_fixes=unsafe)
    ast.parse(out)
    assert _fixed(out, unsafe_fixes=unsafe) == out


@pytest.mark.parametrize("case", BUGS, ids=lambda c: c.id)
def test_crlf_and_bom_give_the_same_fix(case):
    src = case.read().replace(b"\r\n", b"\n")
    want = case.expected().replace(b"\r\n", b"\n")
    crlf = codecs.BOM_UTF8 + src.replace(b"\n", b"\r\n")
    r = process_source(decode_source("t.py", crlf), Options())
    assert r.error is None, r.error
    new = apply_patch(crlf, r.diff) if r.changed else crlf
    assert new == codecs.BOM_UTF8 + want.replace(b"\n", b"\r\n")
