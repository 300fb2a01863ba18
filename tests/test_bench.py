"""The benchmark's generator (bench/): deterministic, and the rules' ast gates let every
pitfall template through (a gate that said no there would hide a real finding)."""

import ast
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import generate  # noqa: E402
from torchmend import registry  # noqa: E402


def _gate(code, tree):
    return next(r for r in registry.all_rules() if r.code == code).ast_check(tree)


def _tree(dirpath):
    out = {}
    for d, _, names in os.walk(dirpath):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, dirpath)] = open(p, "rb").read()
    return out


def test_generator_is_seeded_and_mostly_parsable(tmp_path):
    c1 = generate.generate(str(tmp_path / "a"), 120, seed=3)
    generate.generate(str(tmp_path / "b"), 120, seed=3)
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert a == b and len(a) == 120
    bad = 0
    for data in a.values():
        try:
            ast.parse(data)
        except SyntaxError:
            bad += 1
    assert bad == c1.get("broken", 0)
    assert 250 < c1["lines"] / 120 < 500


GATE_OF = {"device": ["TM101"], "zero_grad": ["TM201", "TM202"], "main_guard": ["TM301"], "filtered_load": ["TM401"], "softmax": ["TM501", "TM502"]}


@pytest.mark.parametrize("pitfall", sorted(GATE_OF))
def test_gates_let_each_pitfall_template_through(pitfall):
    tree = ast.parse(generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS[pitfall])
    for code in GATE_OF[pitfall]:
        assert _gate(code, tree), (pitfall, code)


def test_clean_script_has_no_finding():
    from torchmend.engine import Options, process_text

    src = generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS["clean"]
    assert process_text("train.py", src, Options(fix=False)).findings == []


def test_soundness_script_compares_and_reports(tmp_path):
    import subprocess

    generate.generate(str(tmp_path / "mono"), 30, seed=4)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, os.path.join(root, "bench", "soundness.py"), str(tmp_path / "mono"), "--mode", "diff", "--jobs", "2"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": root}, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "differing files 0" in out.stdout and out.stdout.startswith("diff: 30 files")
    assert "findings 0 shipped" not in out.stdout and "files with changes 0;" not in out.stdout  # not vacuous
