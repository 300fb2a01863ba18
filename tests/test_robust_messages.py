"""Robustness, messages: every failure is one line naming the file and the real cause;
"internal error" only for torchmend's own bugs, exit 2, with a pointer to report it
(issue 12, item 6)."""

import os
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from torchmend import engine
from torchmend.cli.main import app
from torchmend.rule import Rule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TM = [sys.executable, "-m", "torchmend"]
BUG = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py"), "rb").read()


def tm(*args, cwd, env=None, **kw):
    return subprocess.run(TM + list(args), cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, **kw)


def _only_error_line(stderr: str) -> str:
    errs = [ln for ln in stderr.splitlines() if ": error: " in ln]
    assert len(errs) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return errs[0]


def test_symlink_loop_and_dangling_link(tmp_path):
    os.symlink("b.py", tmp_path / "a.py")
    os.symlink("a.py", tmp_path / "b.py")
    os.symlink("nowhere.py", tmp_path / "d.py")
    for name, want in [
        ("a.py", "a.py: error: symbolic link loop (the link points back to itself)"),
        ("d.py", "d.py: error: broken symbolic link (to 'nowhere.py', which does not exist)"),
    ]:
        p = tm("check", name, "--no-cache", cwd=tmp_path)
        assert p.returncode == 2 and _only_error_line(p.stderr) == want


@pytest.mark.skipif(shutil.which("setpriv") is None and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    (d / "t.py").write_bytes(BUG)
    pre = []
    if os.geteuid() == 0:
        os.chown(d, 65534, 65534)
        os.chown(d / "t.py", 65534, 65534)
        pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    os.chmod(d, 0o555)
    try:
        p = subprocess.run(pre + TM + ["apply", "t.py", "--no-cache"], cwd=d, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(d, 0o755)
    assert p.returncode == 2, p.stderr
    assert _only_error_line(p.stderr) == "t.py: error: cannot write: its directory is not writable (permission denied, EACCES), file unchanged"
    assert (d / "t.py").read_bytes() == BUG


def test_full_disk(tmp_path):
    """A real full file system where one can be mounted (a private tmpfs of 16 KiB in a
    user namespace); the message is the same as the ENOSPC unit test in test_robust_writing."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    d = tmp_path / "full"
    d.mkdir()
    script = (
        f"mount -t tmpfs -o size=16k tmpfs {d} && cp {os.path.join(ROOT, 'corpus', 'zero_grad', 'missing_basic.py')} {d}/t.py"
        f" && (dd if=/dev/zero of={d}/fill bs=1k count=64 2>/dev/null; true)"
        f" && cd {d} && {sys.executable} -m torchmend apply t.py --no-cache; echo rc=$?; cmp -s t.py {os.path.join(ROOT, 'corpus', 'zero_grad', 'missing_basic.py')} && echo same; ls -a"
    )
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    if "rc=" not in p.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()[:80]}")
    assert "rc=2" in p.stdout and "same" in p.stdout, (p.stdout, p.stderr)
    assert _only_error_line(p.stderr) == "t.py: error: cannot write: no space left on the device (ENOSPC), file unchanged"
    assert ".torchmend-" not in p.stdout  # no temporary file left


def test_non_utf8_file_name_round_trips(tmp_path):
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_bytes(BUG)
    p = subprocess.run(TM + ["diff", ".", "--no-cache"], cwd=tmp_path, capture_output=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith(b'diff --git "a/caf\\351.py" "b/caf\\351.py"\n')
    (tmp_path / "m.patch").write_bytes(p.stdout)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert subprocess.run(["git", "apply", "--check", "m.patch"], cwd=tmp_path).returncode == 0
    q = tm("apply", "--patch", "m.patch", cwd=tmp_path)
    assert q.returncode == 0, q.stderr
    assert q.stderr.splitlines()[0] == 'patched "caf\\351.py"'
    assert (tmp_path / name).read_bytes() != BUG


class Buggy(Rule):
    code, name, pitfall, summary, needles = "TM915", "buggy", "test", "bug", ("torch",)

    def check(self, ctx):
        return {}["missing key"]


def test_a_rule_bug_is_an_internal_error_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(engine, "rules_for", lambda select: [Buggy()])
    (tmp_path / "t.py").write_bytes(BUG)
    r = CliRunner().invoke(app, ["check", "t.py", "--no-cache"])
    assert r.exit_code == 2
    errs = [ln for ln in r.stderr.splitlines() if ": error: " in ln]
    assert errs == ["t.py: error: internal error: KeyError: 'missing key' (a bug in torchmend: please report it, with the output of TORCHMEND_DEBUG=1)"]


_BOOM = """
import sys, torchmend.runner as r
def boom(*a, **k):
    raise ZeroDivisionError("boom")
r.run = boom
sys.argv = ["torchmend", "check", "t.py", "--no-cache"]
from torchmend.cli.main import main
main()
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_exception_in_the_command_is_exit_2_and_one_line(tmp_path, debug):
    (tmp_path / "t.py").write_bytes(BUG)
    p = subprocess.run([sys.executable, "-c", _BOOM], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TORCHMEND_DEBUG": "1" if debug else ""})
    assert p.returncode == 2
    last = p.stderr.strip().splitlines()[-1]
    assert last == "torchmend: internal error: ZeroDivisionError: boom (a bug in torchmend: please report it, with the output of TORCHMEND_DEBUG=1)"
    assert ("Traceback" in p.stderr) == debug
    if not debug:
        assert p.stderr.strip() == last


def test_usage_errors_keep_exit_2(tmp_path):
    p = tm("check", "--no-such-option", cwd=tmp_path)
    assert p.returncode == 2 and "No such option" in p.stderr and "internal error" not in p.stderr
    p = tm("check", "missing.py", "--no-cache", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.splitlines()[0] == "missing.py: error: no such file or directory"
