"""The tool over the whole corpus: findings, safe and unsafe output, idempotence."""

import os

import pytest

from torchmend.engine import Options, process_text
from torchmend.registry import all_rules, pitfalls
from tests.corpus_cases import CORPUS, load_cases

CASES = load_cases()


def _run(case, data: bytes, **kw):
    return process_text(case.path(), data.decode("utf-8"), Options(**kw))


def test_every_case_file_is_declared():
    declared = {c.id for c in CASES}
    for pitfall in pitfalls():
        d = os.path.join(CORPUS, pitfall)
        if not os.path.isdir(d):
            continue
        for f in os.listdir(d):
            if f.endswith(".py"):
                name = f.split(".")[0]
                assert f"{pitfall}/{name}" in declared, f"{pitfall}/{f} has no entry in cases.toml"


@pytest.mark.parametrize("pitfall", pitfalls())
def test_corpus_size(pitfall):
    """The minimum each rule declares (bug variants, look-alikes) for its pitfall."""
    cases = [c for c in CASES if c.pitfall == pitfall]
    mins = [r.corpus_minimum for r in all_rules() if r.pitfall == pitfall]
    bugs, lookalikes = max(m[0] for m in mins), max(m[1] for m in mins)
    assert len([c for c in cases if c.kind == "bug"]) >= bugs
    assert len([c for c in cases if c.kind == "lookalike"]) >= lookalikes


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(case):
    src = case.read()
    assert src is not None, f"missing {case.path()}"
    assert case.kind in ("bug", "lookalike")
    check = _run(case, src, fix=False)
    assert check.error is None, check.error
    assert sorted(f.code for f in check.findings) == case.codes
    if case.kind == "lookalike":
        assert case.codes == [], "a look-alike reports nothing"
        assert case.read(".expected.py") is None and case.read(".unsafe.py") is None
    else:
        assert case.codes, "a bug case must be found"
    for unsafe, want in ((False, case.expected()), (True, case.expected_unsafe())):
        r = _run(case, src, unsafe_fixes=unsafe)
        assert r.error is None, r.error
        got = src if not r.changed else None
        if r.changed:
            from tests.patching import apply_patch

            got = apply_patch(src, r.diff)
        assert got.decode() == want.decode(), f"unsafe={unsafe}"
        # idempotent: the fixed text is a fixed point
        again = _run(case, want, unsafe_fixes=unsafe)
        assert not again.changed, again.diff.decode()


def test_readme_corpus_table_is_current():
    import re

    from tests.corpus_cases import ROOT

    readme = open(os.path.join(ROOT, "README.md")).read()
    for pitfall in pitfalls():
        cases = [c for c in CASES if c.pitfall == pitfall]
        bugs = [c for c in cases if c.kind == "bug"]
        safe = sum(1 for c in bugs if c.read(".expected.py") is not None)
        unsafe = sum(1 for c in bugs if c.read(".expected.py") is None and c.read(".unsafe.py") is not None)
        row = f"| {pitfall} | {safe} / {unsafe} / {len(bugs) - safe - unsafe} | {len(cases) - len(bugs)} |"
        assert row in readme, row
    n_bugs = sum(1 for c in CASES if c.kind == "bug")
    n_look = sum(1 for c in CASES if c.kind == "lookalike")
    assert re.search(rf"the {n_bugs} bug originals show their failure, the\s+fixed versions and all {n_look} look-alikes", readme)
