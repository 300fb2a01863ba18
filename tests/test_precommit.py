"""The pre-commit hooks (.pre-commit-hooks.yaml), run for real: ``pre-commit try-repo``
installs this checkout into its own environment (pip, from the package index) and runs
each hook on a temporary git repository holding a buggy training script."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.corpus_cases import ROOT

BUG = os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py")
FIXED = os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.expected.py")


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(PRE_COMMIT_HOME=str(home), GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return env


def run(cmd, cwd, env):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_try_repo_check_and_fix_hooks(tmp_path):
    pytest.importorskip("pre_commit")
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("try-repo clones the checkout: not a git checkout")
    env = _env(tmp_path / "pre-commit-home")
    proj = tmp_path / "proj"
    proj.mkdir()
    assert run(["git", "init", "-q"], proj, env).returncode == 0
    shutil.copy(BUG, proj / "train.py")
    (proj / "clean.py").write_text("x = 1\n")
    assert run(["git", "add", "."], proj, env).returncode == 0
    pc = [sys.executable, "-m", "pre_commit", "try-repo", ROOT]

    r = run(pc + ["torchmend", "--all-files"], proj, env)
    out = r.stdout + r.stderr
    if r.returncode != 0 and "train.py:17:5: TM201" not in out and ("pip" in out or "virtualenv" in out):
        if "Could not find a version" in out or "No matching distribution" in out or "Network is unreachable" in out:
            pytest.skip("pre-commit could not create the hook's environment offline:\n" + out[-2000:])
    assert r.returncode == 1, out
    assert "train.py:17:5: TM201 [bug]" in out and "Failed" in out
    assert open(proj / "train.py").read() == open(BUG).read()  # the check hook writes nothing

    r = run(pc + ["torchmend-fix", "--all-files"], proj, env)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "files were modified by this hook" in out, out  # pre-commit's rule
    assert open(proj / "train.py").read() == open(FIXED).read()
    assert open(proj / "clean.py").read() == "x = 1\n"
    run(["git", "add", "."], proj, env)
    r = run(pc + ["torchmend", "--all-files"], proj, env)
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr
