"""Robustness, edits beyond the finding (the part independent of the rules): the bytes
after the last line of code survive a fix exactly, whatever whitespace and line endings
they hold.  LibCST drops the last ``\\r`` of a CR-only file and blank lines before a
whitespace-only last line when it regenerates a module; sourcefile holds that tail back
and puts it back (issue 12, item 7)."""

import os
import subprocess
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchmend.engine import Options, process_source
from torchmend.sourcefile import decode_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUG = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py"), "rb").read().rstrip(b"\n")
FIXED = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.expected.py"), "rb").read().rstrip(b"\n")


def _fix(raw: bytes) -> bytes:
    r = process_source(decode_source("t.py", raw), Options())
    assert r.error is None, r.error
    assert r.changed
    return r


def _new(raw: bytes, r) -> bytes:
    """The fixed bytes, as `git apply` makes them from the diff (it splits at "\n" only,
    so CR-only files are one line to it, as to git)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.py"), "wb") as f:
            f.write(raw)
        subprocess.run(["git", "apply", "-"], input=r.diff, cwd=d, check=True, capture_output=True)
        with open(os.path.join(d, "t.py"), "rb") as f:
            return f.read()


@pytest.mark.parametrize(
    "tail",
    ["\n", "", "\n\n   ", "\n\n \n", "\n   ", "   ", "  \n", "\n\t\n\n", "\n\x0c", "\r\n", "\n\r", "\r", "\n# end\n\n  ", "\n\n    # indented comment\n", "\n\n # t\n\n"],
)
def test_the_tail_of_a_file_survives_a_fix(tail):
    raw = BUG + tail.encode()
    r = _fix(raw)
    assert _new(raw, r) == FIXED + tail.encode()


def test_cr_only_file_keeps_its_last_cr():
    raw = BUG.replace(b"\n", b"\r") + b"\r"
    r = _fix(raw)
    assert _new(raw, r) == FIXED.replace(b"\n", b"\r") + b"\r"


def test_blank_line_before_a_whitespace_only_last_line_is_kept():
    raw = BUG + b"\n\n   "
    assert _new(raw, _fix(raw)) == FIXED + b"\n\n   "


PIECES = st.sampled_from(["\n", "\r\n", "\r", " ", "\t", "\x0c", "  \n", "# t\n", "\n\n"])


@given(st.sampled_from(["\n", "\r\n", "\r"]), st.lists(PIECES, max_size=5))
@settings(max_examples=40, deadline=None)
def test_any_tail_in_any_line_ending_survives(nl, pieces):
    tail = "".join(pieces).encode()
    body, want = BUG.replace(b"\n", nl.encode()), FIXED.replace(b"\n", nl.encode())
    raw = body + nl.encode() + tail
    r = _fix(raw)
    assert _new(raw, r) == want + nl.encode() + tail
