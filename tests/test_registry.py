"""Every rule declares everything about itself beside its code (and nothing elsewhere
lists rules): code, name, pitfall, summary, severity, text gate, verify mode, corpus
minimum, Fixit-style examples, Ruff-style documentation."""

import ast
import os
import re

import pytest

from torchmend.engine import Options, process_text
from torchmend.registry import all_rules, by_code, pitfalls, resolve
from torchmend.rule import Rule, Severity, Verify
from tests.corpus_cases import CORPUS

RULES = all_rules()
VERIFY_MODES = ("device", "zero_grad", "softmax", "spawn", "load", "plain")


def test_codes_and_names_are_distinct_and_well_formed():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    family: dict[str, set[str]] = {}
    for r in RULES:
        assert re.fullmatch(r"TM[1-9]\d\d", r.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name)
        family.setdefault(r.pitfall, set()).add(r.code[2])
    # one code family (the hundreds digit) per pitfall, a different one for each
    assert all(len(d) == 1 for d in family.values()), family
    digits = [next(iter(d)) for d in family.values()]
    assert len(set(digits)) == len(digits)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_declares_everything(rule: type[Rule]):
    v = vars(rule)
    for attr in ("code", "name", "pitfall", "summary", "needles", "verify", "corpus_minimum", "valid", "invalid"):
        assert attr in v, f"{rule.code} does not declare {attr!r} itself"
    assert isinstance(rule.severity, Severity)
    assert rule.summary and "\n" not in rule.summary
    assert rule.needles and all(isinstance(n, str) and n for n in rule.needles), "a text gate"
    assert isinstance(rule.verify, Verify) and rule.verify.mode in VERIFY_MODES
    bugs, look = rule.corpus_minimum
    assert isinstance(bugs, int) and isinstance(look, int) and bugs > 0 and look > 0
    assert rule.valid and rule.invalid, "Fixit-style examples"
    assert os.path.isdir(os.path.join(CORPUS, rule.pitfall)), f"corpus/{rule.pitfall}/ is missing"
    assert rule.__module__.startswith("torchmend.rules.")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_is_documented_like_ruff(rule):
    doc = rule.doc()
    for part in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert part in doc, f"{rule.code} lacks {part!r}"
    assert "pitfalls.md" not in doc


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_examples(rule):
    """Fixit-style: each invalid example is reported by the rule, each valid one is not."""
    opts = Options(select=frozenset({rule.code}), fix=False)
    for i, code in enumerate(rule.invalid):
        r = process_text(f"invalid_{i}.py", code, opts)
        assert r.error is None, r.error
        assert [f.code for f in r.findings] and {f.code for f in r.findings} == {rule.code}, (code, r.findings)
    for i, code in enumerate(rule.valid):
        r = process_text(f"valid_{i}.py", code, opts)
        assert r.error is None, r.error
        assert not r.findings, (code, [f.format() for f in r.findings])


def test_pitfalls_are_derived_from_the_rules():
    assert pitfalls() == tuple(sorted({r.pitfall for r in RULES}))
    assert set(pitfalls()) == {"device", "filtered_load", "main_guard", "softmax", "zero_grad"}


def test_selectors():
    assert resolve(["TM2"]) == {"TM201", "TM202"}
    assert resolve(["zero_grad"]) == {"TM201", "TM202"}
    assert resolve(["missing-zero-grad", "TM501"]) == {"TM201", "TM501"}
    assert resolve(["ALL"]) == {r.code for r in RULES}
    with pytest.raises(ValueError):
        resolve(["TM9"])
    assert by_code("tm101").code == "TM101"


@pytest.mark.parametrize(
    "text, called",
    [
        ("loss.backward()\n", True),
        ("(loss\n    .backward())\n", True),
        ("(loss.  # why\n    backward())\n", True),
        ("def backward(ctx, g):\n    return g\n", False),
        ('"""Runs backward."""\nstep_size = 3\n', False),
    ],
)
def test_method_may_be_called(text, called):
    """The zero_grad rules' gate: a method call may stand in the text (the loop facts
    only count attribute calls), however it is spelled across lines."""
    from torchmend.rules._zero_grad import method_may_be_called

    assert method_may_be_called(text, "backward") == called
    if called:
        ast.parse(text)


def test_each_module_is_named_after_its_rule_and_the_names_need_no_import():
    """``rules/tm201_missing_zero_grad.py`` defines TM201 missing-zero-grad and nothing
    else: the settings and the output take codes and names from the modules' names
    (``registry.names``), so a run served from the cache imports no rule."""
    from torchmend.registry import codes, is_code_like, names

    for r in RULES:
        assert r.__module__ == f"torchmend.rules.{r.code.lower()}_{r.name.replace('-', '_')}"
        assert not is_code_like(r.name) and not is_code_like(r.pitfall)  # what the fast resolve relies on
    assert names() == {r.code: r.name for r in RULES} and codes() == tuple(r.code for r in RULES)
    assert len({r.__module__ for r in RULES}) == len(RULES)
    code = (
        "import sys\n"
        "from torchmend.config import CliOptions, resolve\n"
        "from torchmend.output import diagnostics\n"
        "from torchmend.engine import FileResult, Finding\n"
        "from torchmend.rule import Severity\n"
        "s = resolve(CliOptions(select=['TM2', 'tm101'], ignore=['TM202']))\n"
        "f = Finding(code='TM201', message='m', line=1, col=1, severity=Severity.BUG)\n"
        "d = diagnostics([FileResult(path='x.py', findings=[f])])\n"
        "print(sorted(s.for_file('x.py').select), d[0].name, [m for m in sys.modules if m.startswith('torchmend.rules.')])\n"
    )
    import subprocess
    import sys

    from tests.corpus_cases import ROOT

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split("\n")[0] == "['TM101', 'TM201'] missing-zero-grad []"


@pytest.mark.parametrize("sels", [["ALL"], ["TM2"], ["tm5", "TM101"], [" TM "], ["TM2", ""], ["TM9"], ["tm10"],
                                  ["zero_grad"], ["TM2", "missing-zero-grad"], ["ALL", "device"]])
def test_selectors_resolve_alike_through_the_codes_and_through_the_rules(sels):
    """Codes and code prefixes are resolved from the codes alone; the answer (or the
    error) is the one of the rules' own fields."""
    def slow(sels):
        out = set()
        for sel in sels:
            s = sel.strip()
            if not s:
                continue
            hit = {r.code for r in RULES if s.upper() == "ALL" or r.code.startswith(s.upper()) or r.name == s
                   or r.pitfall == s.replace("-", "_")}
            if not hit:
                return "error"
            out |= hit
        return out

    try:
        got = resolve(sels)
    except ValueError:
        got = "error"
    assert got == slow(sels)
