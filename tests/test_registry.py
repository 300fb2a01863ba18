import re

import pytest

from torchmend.registry import PITFALLS, all_rules, by_code, resolve


def test_codes_and_names_are_distinct_and_well_formed():
    rules = all_rules()
    codes = [r.code for r in rules]
    names = [r.name for r in rules]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for r in rules:
        assert re.fullmatch(r"TM[1-9]\d\d", r.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name)
        assert r.pitfall in PITFALLS
        assert r.code[2] == str(PITFALLS.index(r.pitfall) + 1), "code family follows the pitfall"
        assert r.summary and "\n" not in r.summary
        assert r.needles, "every rule has a textual pre-filter"


def test_every_pitfall_has_rules():
    assert {r.pitfall for r in all_rules()} == set(PITFALLS)


def test_selectors():
    assert resolve(["TM2"]) == {"TM201", "TM202"}
    assert resolve(["zero_grad"]) == {"TM201", "TM202"}
    assert resolve(["missing-zero-grad", "TM501"]) == {"TM201", "TM501"}
    assert resolve(["ALL"]) == {r.code for r in all_rules()}
    with pytest.raises(ValueError):
        resolve(["TM9"])
    assert by_code("tm101").code == "TM101"


def test_every_rule_is_documented_like_ruff():
    for r in all_rules():
        doc = r.doc()
        for part in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert part in doc, f"{r.code} lacks {part!r}"
