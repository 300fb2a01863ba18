"""The command line end to end, in subprocesses, on copies of the corpus."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import unidiff

from tests.corpus_cases import CORPUS, ROOT


def tm(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "torchmend", *args], cwd=cwd, env=env, capture_output=True)


@pytest.fixture
def corpus_copy(tmp_path):
    dst = tmp_path / "work"
    shutil.copytree(CORPUS, dst / "corpus")
    return dst


def git(cwd, *args, input=None):
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, env=env, input=input, capture_output=True)


def test_diff_is_accepted_by_git_apply_patch_and_unidiff(corpus_copy):
    r = tm("diff", "corpus/", cwd=corpus_copy)
    assert r.returncode == 1, r.stderr.decode()
    patch = r.stdout
    assert patch.startswith(b"diff --git a/corpus/")
    assert git(corpus_copy, "init", "-q").returncode == 0
    chk = git(corpus_copy, "apply", "--check", "-", input=patch)
    assert chk.returncode == 0, chk.stderr.decode()
    p = subprocess.run(["patch", "-p1", "--dry-run", "-s"], cwd=corpus_copy, input=patch, capture_output=True)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    ps = unidiff.PatchSet(patch.decode())
    plus = sum(1 for ln in patch.decode().splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in patch.decode().splitlines() if ln.startswith("-") and not ln.startswith("---"))
    assert (ps.added, ps.removed) == (plus, minus)
    # the same patch whatever --jobs is
    assert tm("diff", "corpus/", "--jobs", "1", cwd=corpus_copy).stdout == patch


def test_apply_then_nothing_left_to_do(corpus_copy):
    before = tm("diff", "corpus/", cwd=corpus_copy).stdout
    r = tm("apply", "corpus/", cwd=corpus_copy)
    assert r.returncode in (0, 1), r.stderr.decode()
    assert b"changed" in r.stderr
    # what apply wrote is exactly what diff showed
    git(corpus_copy, "init", "-q")
    again = tm("diff", "corpus/", cwd=corpus_copy)
    assert again.returncode == 0, again.stdout.decode()
    assert again.stdout == b""
    assert before


def test_syntax_error_and_crlf_files(tmp_path):
    from tests.corpus_cases import load_cases

    (tmp_path / "bad.py").write_bytes(b"import torch\nfor x, y in loader:\n    optimizer.step()\n    loss.backward(\n")
    case = next(c for c in load_cases() if c.kind == "bug" and c.read(".expected.py") is not None)
    (tmp_path / "crlf.py").write_bytes(case.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    r = tm("diff", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2  # an error beats "would change"
    lines = [ln for ln in r.stderr.decode().splitlines() if "bad.py" in ln]
    assert len(lines) == 1 and re.match(r"bad\.py: error: syntax error", lines[0]), r.stderr.decode()
    assert (tmp_path / "bad.py").read_bytes().startswith(b"import torch")
    # the CRLF file is fixed, and every added line keeps CRLF
    added = [ln for ln in r.stdout.split(b"\n") if ln.startswith(b"+") and not ln.startswith(b"+++")]
    assert added, r.stdout.decode()
    assert all(ln.endswith(b"\r") for ln in added), added
    # apply writes CRLF too, and leaves the broken file alone
    a = tm("apply", ".", "--no-cache", cwd=tmp_path)
    assert a.returncode == 2
    out = (tmp_path / "crlf.py").read_bytes()
    assert out == case.expected().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def test_check_exit_codes_and_select(tmp_path):
    (tmp_path / "clean.py").write_bytes(b"x = 1\n")
    assert tm("check", ".", cwd=tmp_path).returncode == 0
    assert tm("check", ".", "--select", "NOPE", cwd=tmp_path).returncode == 2
    assert tm("check", "missing.py", cwd=tmp_path).returncode == 2


def test_rules_and_explain():
    r = tm("rules")
    assert r.returncode == 0
    for code in ("TM101", "TM102", "TM201", "TM202", "TM301", "TM401", "TM501", "TM502"):
        assert code.encode() in r.stdout
    e = tm("explain", "TM201")
    assert e.returncode == 0 and b"TM201" in e.stdout
    assert tm("explain", "TM999").returncode == 2


def test_readme_commands_are_what_ci_runs():
    readme = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    install, test = blocks[0].strip(), blocks[1].strip()
    assert "torchmend diff corpus/" in install and "pip install" in install
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert install.split(" > ")[0] in ci
    assert test in ci
