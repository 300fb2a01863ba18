"""tests/test_corpus_exec.py's checks, run on a small corpus built from tests/exec_fixtures
with the test-only rules, so that the data-driven corpus execution is itself tested
before (and independently of) the real corpus and rules."""


import shutil

import pytest

import tests.corpus_cases as cc
import tests.test_corpus_exec as tce
from torchmend import engine
from tests.verify_rules import VERIFY_TEST_RULES
from tests.test_verify_harness import HERE

TOML = {
    "device": """
[batch_not_moved]
kind = "bug"
codes = ["TM991"]
run = "device"
before = "Expected all tensors to be on the same device"

[already_moved]
kind = "lookalike"
codes = []
run = "device"
""",
    "zero_grad": """
[missing]
kind = "bug"
codes = ["TM992"]
run = "zero_grad"
before = "TM201"

[accumulate]
kind = "lookalike"
codes = []
run = "zero_grad"
""",
}
FILES = {
    "device/batch_not_moved.py": "device_bug.py",
    "device/batch_not_moved.expected.py": "device_fixed.py",
    "device/already_moved.py": "device_fixed.py",
    "zero_grad/missing.py": "zero_grad_missing.py",
    "zero_grad/missing.expected.py": "zero_grad_fixed.py",
    "zero_grad/accumulate.py": "zero_grad_accumulate.py",
}


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    for pit, toml in TOML.items():
        (tmp_path / pit).mkdir()
        (tmp_path / pit / "cases.toml").write_text(toml)
    for dst, src in FILES.items():
        shutil.copy(f"{HERE}/{src}", tmp_path / dst)
    monkeypatch.setattr(cc, "CORPUS", str(tmp_path))
    monkeypatch.setattr(engine, "rules_for", lambda select: [c() for c in VERIFY_TEST_RULES])
    return {c.id: c for c in cc.load_cases()}


def test_selftest_originals_and_fixes(corpus, tmp_path):
    for cid in ("device/batch_not_moved", "device/already_moved", "zero_grad/missing", "zero_grad/accumulate"):
        d = tmp_path / ("orig_" + cid.replace("/", "_"))
        d.mkdir()
        tce.test_original(corpus[cid], d)
    for cid in ("device/batch_not_moved", "zero_grad/missing"):
        d = tmp_path / cid.replace("/", "_")
        d.mkdir()
        tce.test_fixed(corpus[cid], d)
        tce.test_mutation_unfixed_is_caught(corpus[cid], d)


def test_selftest_wrong_before_fails(corpus, tmp_path):
    case = corpus["zero_grad/missing"]
    case.before = "TM202"  # the detector says TM201
    with pytest.raises(AssertionError, match="must show 'TM202'"):
        tce.test_original(case, tmp_path)


def test_selftest_case_selection(corpus):
    cases = list(corpus.values())
    assert [c.id for c in tce.fixed_cases(cases)] == ["device/batch_not_moved", "zero_grad/missing"]
    assert [c.id for c in tce.mutation_cases(cases)] == ["device/batch_not_moved", "zero_grad/missing"]
