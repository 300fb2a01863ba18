"""The cheap gates (``Rule.needles``/``requires_all`` and ``Rule.ast_check``) and the
focus (codemods/focus.py: unreachable definitions elided before LibCST) are sound: on
every corpus case and on a generated monorepo sample, running with them gives exactly
what running every rule on every whole file gives (needles ignored, every ast_check
forced to True, nothing elided): the same findings in ``check`` mode, the same diff of the
safe fixes and the same suggested diff of every unsafe fix in ``diff`` mode.  A wrong
False would be a missed finding."""

from __future__ import annotations

import ast
import os
import sys

import pytest

from torchmend import engine, registry, runner
from torchmend.astfacts import facts
from torchmend.engine import Options
from torchmend.rule import Rule
from tests.corpus_cases import load_cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import generate  # noqa: E402

MODES = {
    "check": Options(fix=False),
    "diff": Options(fix=True),
    "unsafe": Options(fix=True, unsafe_fixes=True),
}


def _summary(res: runner.RunResult):
    out = {}
    for r in res.results:
        out[r.path] = (
            [(f.code, f.line, f.col, f.message, f.applied, f.safety) for f in r.findings],
            r.diff,
            [(s.finding.code, s.finding.line, s.diff) for s in r.suggestions],
        )
    return out


def _errors(res: runner.RunResult):
    return {r.path: r.error for r in res.results if r.error}


def _ungated(monkeypatch):
    monkeypatch.setattr(engine, "FOCUS", False)
    monkeypatch.setattr(Rule, "may_match", classmethod(lambda cls, text: True))
    monkeypatch.setattr(engine, "_overrides_ast_check", lambda rule: False)
    for rule in registry.all_rules():
        assert "may_match" not in vars(rule), rule  # the patch above covers every rule


def _compare(paths, monkeypatch, modes=tuple(MODES)):
    gated = {m: runner.run(paths, MODES[m], jobs=1) for m in modes}
    with monkeypatch.context() as mp:
        _ungated(mp)
        ungated = {m: runner.run(paths, MODES[m], jobs=1) for m in modes}
    for m in modes:
        g, u = gated[m], ungated[m]
        assert [r.path for r in g.results] == [r.path for r in u.results]
        # without the pre-filter, unparsable files reach LibCST and are reported; the
        # gates may skip them (they would find nothing there anyway)
        ge, ue = _errors(g), _errors(u)
        assert all(e.startswith("syntax error") for p, e in ue.items() if p not in ge), ue
        assert all(ue.get(p) == e for p, e in ge.items())
        gs, us = _summary(g), _summary(u)
        diff = {p: (gs[p], us[p]) for p in gs if gs[p] != us[p]}
        assert not diff, (m, diff)
    return gated, ungated


def test_gates_are_sound_on_the_corpus(monkeypatch):
    cases = load_cases()
    assert cases
    paths = [c.path() for c in cases]
    # check mode: the findings (the focus applies); diff mode: every finding, the safe
    # fixes' diff and each unsafe fix's suggested diff
    gated, _ = _compare(paths, monkeypatch, modes=("check", "diff"))
    # the gates matter: some look-alikes stop before LibCST, every bug case goes through
    stages = {r.path: r.stage for r in gated["diff"].results}
    for c in cases:
        if c.kind == "bug":
            assert stages[c.path()] == engine.STAGE_PARSED, c.id


def test_gates_are_sound_on_a_generated_tree(tmp_path, monkeypatch):
    # diff mode: every finding, the safe fixes' diff and the unsafe fixes' suggested diffs
    generate.generate(str(tmp_path / "mono"), 60, seed=7)
    gated, ungated = _compare([str(tmp_path / "mono")], monkeypatch, modes=("check", "diff"))
    g, u = gated["diff"].stats(), ungated["diff"].stats()
    assert g["parsed"] < u["parsed"]  # the gates rule files out...
    assert sum(len(r.findings) for r in gated["diff"].results) > 0  # ...and findings remain


def test_focus_is_sound_on_corpus_bugs_padded_with_helpers(tmp_path, monkeypatch):
    # every corpus case (bugs and look-alikes) with plain helper functions and classes
    # inserted after its imports and at its end (what the focus elides): the same
    # findings, diffs and suggested diffs, focus on and off (the fixes are made on the
    # focused text and the bodies put back), and the focus does elide in most of them
    import random

    from torchmend.focus import focus

    gen = generate.Gen(random.Random(5))
    paths, elided, bugs = [], 0, 0
    for c in load_cases():
        bugs += c.kind == "bug"
        with open(c.path(), encoding="utf-8") as f:
            lines = f.read().splitlines(keepends=True)
        at = max((i + 1 for i, ln in enumerate(lines) if ln.startswith(("import ", "from "))), default=0)
        filler = "\n".join(gen.filler(40)) + "\n\n"
        text = "".join(lines[:at]) + "\n" + filler + "".join(lines[at:]) + "\n\n" + filler
        dest = tmp_path / c.pitfall / os.path.basename(c.path())
        dest.parent.mkdir(exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        paths.append(str(dest))
        elided += focus(text, ast.parse(text)) is not None
    assert elided > len(paths) // 2, (elided, len(paths))
    for mode in MODES:  # check: findings; diff/unsafe: also the fixes made on focused text
        focused = _summary(runner.run(paths, MODES[mode], jobs=1))
        with monkeypatch.context() as mp:
            mp.setattr(engine, "FOCUS", False)
            whole = _summary(runner.run(paths, MODES[mode], jobs=1))
        assert focused == whole, mode
        assert sum(len(v[0]) for v in focused.values()) >= bugs
        if mode != "check":
            assert sum(1 for v in focused.values() if v[1]) > bugs // 2  # fixes were made


def _f(src: str):
    return facts(ast.parse(src))


def test_main_guard_fact_matches_libcst_spelling():
    assert _f('if __name__ == "__main__":\n    pass\n').main_guard
    assert _f("if '__main__' == __name__:\n    pass\n").main_guard
    # implicit concatenation is not a guard for main_guard.is_main_guard: the gate says no guard
    assert not _f('if __name__ == "__ma" "in__":\n    pass\n').main_guard
    assert not _f('if __name__ != "__main__":\n    pass\n').main_guard
    assert not _f('def f():\n    if __name__ == "__main__":\n        pass\n').main_guard


def test_loop_facts():
    f = _f("for x in d:\n    loss.backward()\n    opt.step()\n")
    assert f.loop_backward_step and not f.nested_backward_step
    f = _f("while True:\n    for x in d:\n        loss.backward()\n        if k:\n            opt.step()\n")
    assert f.loop_backward_step and f.nested_backward_step
    # backward and step in different loops, or outside any loop body
    f = _f("for x in d:\n    loss.backward()\nfor x in d:\n    opt.step()\nfor s in opt.step():\n    loss.backward()\n")
    assert not f.loop_backward_step


def test_names_include_import_aliases():
    f = _f("from torch.utils.data import DataLoader as DL\nimport torch.nn.functional as F\n")
    assert {"DataLoader", "DL", "torch", "nn", "functional", "F"} <= f.names


@pytest.mark.parametrize(
    "code, src, fires",
    [
        ("TM101", "t = torch.zeros(3)\nt.to(device)\n", True),
        ("TM101", "for x in loader:\n    pass\n", False),
        # the loop's first statement moves the batch: _LoopFlow skips the loop
        ("TM101", "loader = DataLoader(ds)\nfor x, y in loader:\n    x, y = x.to(d), y.to(d)\n    out = model(x)\n", False),
        ("TM101", "loader = DataLoader(ds)\nfor i, b in enumerate(loader):\n    b = b.cuda()\n    out = model(b)\n", False),
        ("TM101", "loader = DataLoader(ds)\nfor x, y in loader:\n    out = model(x)\n    x = x.to(d)\n", True),
        ("TM101", "loader = DataLoader(ds)\nfor i, b in enumerate(loader):\n    i = i.to(d)\n    out = model(b)\n", True),
        # every stepped optimizer is zeroed in the loop: may_clear
        ("TM201", "for x in d:\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n", False),
        ("TM201", "for x in d:\n    loss.backward()\n    opt.step()\n", True),
        ("TM201", "for x in d:\n    g.zero_grad()\n    loss.backward()\n    g.step()\n    dis.step()\n", True),
        ("TM201", "for x in d:\n    opt.zero_grad()\n    loss.backward()\n    scaler.step(opt)\n", False),
        ("TM202", "for e in r:\n    for x in d:\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n", False),
        ("TM202", "for e in r:\n    opt.zero_grad()\n    for x in d:\n        loss.backward()\n        opt.step()\n", True),
        ("TM202", "for x in d:\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n", True),
        ("TM202", "for x in d:\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n", False),
        ("TM102", "class N(nn.Module):\n    def forward(self, x):\n        return x\n", False),
        ("TM102", "class N(nn.Module):\n    def forward(self, x):\n        return x + torch.ones(2)\n", True),
        ("TM301", "loader = DataLoader(ds, num_workers=2)\nif __name__ == '__main__':\n    pass\n", False),
        ("TM301", "loader = DataLoader(ds, 4, True, None, None, 2)\nfor b in loader:\n    pass\n", True),
        # built at import time but iterated only inside functions nobody calls there
        ("TM301", "loader = DataLoader(ds, num_workers=2)\nlog = logging.getLogger()\ndef f():\n    for b in loader:\n        pass\n", False),
        ("TM301", "def make():\n    return DataLoader(ds, num_workers=4)\n", False),
        ("TM301", "def main():\n    for b in DataLoader(ds, num_workers=4):\n        pass\nmain()\n", True),
        ("TM301", "loader = DataLoader(ds, num_workers=2)\nfirst = next(iter(loader))\n", True),
        ("TM301", "trainer.fit(model, num_workers=4)\n", True),
        ("TM301", "trainer.fit(model, {'num_workers': 4})\n", True),
        ("TM301", "model.fit(s, dataloader_kwargs={'num_workers': 8})\n", True),
        ("TM401", "m.load_state_dict(torch.load(p))\n", False),
        ("TM401", "m.fc = nn.Linear(2, 3)\nm.load_state_dict(torch.load(p))\n", True),
        ("TM501", "loss = F.cross_entropy(out, y)\n", False),
        # a softmax inside a forward, a cross-entropy elsewhere: no shape the rule knows
        ("TM501", "class A(nn.Module):\n    def forward(self, s):\n        a = F.softmax(s, -1)\n        return self.proj(a)\n"
         "def loss(logits, t):\n    return F.cross_entropy(logits, t)\n", False),
        ("TM501", "p = F.softmax(out, 1)\nloss = criterion(p, y)\ncriterion = nn.CrossEntropyLoss()\n", True),
        ("TM501", "loss = F.cross_entropy(x.softmax(1).view(-1, 3), y)\n", True),
        ("TM501", "from torch.nn.functional import softmax as sm, cross_entropy as ce\nl = ce(sm(x, 1), y)\n", True),
        ("TM501", "sm = nn.Softmax(1)\ndef f(c):\n    return c(sm(x), y)\nce = F.cross_entropy\n", True),
        ("TM501", "net = nn.Sequential(nn.Linear(2, 2), nn.Softmax(1))\nl = nn.CrossEntropyLoss()(net(x), y)\n", True),
        ("TM501", "class N(nn.Module):\n    def forward(self, x):\n        x = F.log_softmax(x, 1)\n        return x\n"
         "l = F.cross_entropy(N()(x), y)\n", True),
        ("TM501", "from models import Net\nloss = F.cross_entropy(Net()(x), y)\n", True),
    ],
)
def test_gate_examples(code, src, fires):
    rule = next(r for r in registry.all_rules() if r.code == code)
    assert rule.ast_check(ast.parse(src)) is fires


def test_every_rule_has_a_gate():
    for rule in registry.all_rules():
        assert engine._overrides_ast_check(rule()), rule.code
