"""Robustness, `apply --patch`: repository metadata and tool state are never written,
mode changes are refused, git-quoted names are accepted, and the patch is all or
nothing even under SIGKILL (issue 12, items 1 and 8)."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from torchmend.cli.main import app
from torchmend.gitdiff import diff_path, unified_diff
from torchmend.patch import JOURNAL, PatchError, apply_patch, recover

TM = [sys.executable, "-m", "torchmend"]


def cli(*args):
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout_bytes, r.stderr


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    return tmp_path


def _edit(path, old=b"x = 1\n", new=b"x = 2\n", name=None):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(old)
    return unified_diff(old, new, name or path)


@pytest.mark.parametrize(
    "path, why",
    [
        (".git/config", "repository metadata"),
        (".git/hooks/pre-commit", "repository metadata"),
        (".GIT/config", "repository metadata"),
        ("sub/.git/config", "repository metadata"),
        (".git./config", "repository metadata"),
        (".gitmodules", "repository metadata"),
        (".hg/hgrc", "repository metadata"),
        (".torchmend_cache/cache.json", "tool state"),
        ("src/.hypothesis/examples/x", "tool state"),
        ("pkg/__pycache__/m.py", "tool state"),
        (".venv/lib/site.py", "tool state"),
    ],
)
def test_repository_metadata_and_tool_state_are_refused(repo, path, why):
    if path.startswith(".GIT") or path.startswith(".git."):
        os.makedirs(path.split("/")[0], exist_ok=True)
    patch = _edit(path)
    good = _edit("ok.py")  # a good file first: nothing of the patch may be written
    open("m.patch", "wb").write(good + patch)
    code, _, err = cli("apply", "--patch", "m.patch")
    assert code == 2 and err.count("\n") == 1, err
    named = diff_path(path)  # sub/.git/config: `sub` holds a .git, the diff names it from there
    assert err.startswith(f"torchmend: error: {named}: {why}") and err.rstrip().endswith("refused; nothing written")
    assert open(path, "rb").read() == b"x = 1\n" and open("ok.py", "rb").read() == b"x = 1\n"


def test_a_cache_dir_elsewhere_is_protected_too(repo):
    patch = _edit("mycache/data.py")
    open("m.patch", "wb").write(patch)
    code, _, err = cli("apply", "--patch", "m.patch", "--cache-dir", "mycache")
    assert code == 2 and "inside the cache directory, refused" in err


@pytest.mark.parametrize("with_hunk", [False, True])
def test_mode_changes_are_refused_explicitly(repo, with_hunk):
    d = _edit("t.py")
    head, sep, rest = d.partition(b"\nindex ")
    d = head + b"\nold mode 100644\nnew mode 100755" + (sep + rest if with_hunk else b"\n")
    open("m.patch", "wb").write(d)
    assert subprocess.run(["git", "apply", "--check", "m.patch"], capture_output=True).returncode == 0  # git would do it
    code, _, err = cli("apply", "--patch", "m.patch")
    assert code == 2
    assert err == "torchmend: error: t.py: the patch changes the file mode (old mode 100644); only content edits are applied, refused; nothing written\n"
    assert not os.stat("t.py").st_mode & 0o111 and open("t.py", "rb").read() == b"x = 1\n"


@pytest.mark.parametrize("name", ["é.py", "a\tb.py", "a\nb.py", 'q"x.py', "back\\slash.py", "sp ace.py", os.fsdecode(b"caf\xe9.py"), "日本/語.py"])
def test_git_quoted_names_torchmend_emits_are_accepted(repo, name):
    patch = _edit(name)
    open("m.patch", "wb").write(patch)
    assert subprocess.run(["git", "apply", "--check", "m.patch"]).returncode == 0
    assert len(apply_patch(patch, ".")) == 1
    assert open(name, "rb").read() == b"x = 2\n"


def test_a_malformed_quoted_name_is_one_line(repo):
    patch = _edit("a.py").replace(b"a/a.py", b'"a/a\\q.py"').replace(b"b/a.py", b'"b/a\\q.py"')
    with pytest.raises(PatchError, match=r"bad escape in quoted path"):
        apply_patch(patch, ".")


def test_a_hard_linked_file_is_refused(repo):
    patch = _edit("a.py")
    os.link("a.py", "b.py")
    with pytest.raises(PatchError, match="a.py: has 2 hard links"):
        apply_patch(patch, ".")


def test_a_journal_that_is_not_ours_is_reported_not_followed(repo):
    open(JOURNAL, "w").write('{"format": "torchmend-patch-journal", "version": 1, "state": "committing", "files": [{"path": "../x", "tmp": "a", "backup": "b", "old": "", "new": ""}]}')
    code, _, err = cli("check", ".", "--no-cache")
    assert code == 2 and err.splitlines()[0] == f"torchmend: error: {JOURNAL}: not a journal written by torchmend (or damaged); remove it by hand"


# --------------------------------------------------------------------------- kill test
N_FILES = 12


def _tree():
    olds, patch = {}, b""
    for i in range(N_FILES):
        p = f"d{i % 3}/m{i:02d}.py"
        old = b"".join(b"line %d\n" % j for j in range(40))
        olds[p] = old
        patch += _edit(p, old, old.replace(b"line 7\n", b"line seven\n").replace(b"line 30\n", b"line thirty\n"))
    open("m.patch", "wb").write(patch)
    return olds, {p: o.replace(b"line 7\n", b"line seven\n").replace(b"line 30\n", b"line thirty\n") for p, o in olds.items()}


_CHILD = r"""
import os, signal, sys
from torchmend import patch
data = open("m.patch", "rb").read()
k, n = int(sys.argv[1]), [0]
def wrap(f):
    def g(*a, **kw):
        n[0] += 1
        if n[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return f(*a, **kw)
    return g
for name in ("open", "write", "fsync", "link", "rename", "replace", "unlink", "fchmod"):
    setattr(os, name, wrap(getattr(os, name)))
patch.apply_patch(data, ".")
print("calls", n[0])
"""


def _state(olds, news):
    got = {p: open(p, "rb").read() for p in olds}
    leftovers = [os.path.join(d, n) for d in ("d0", "d1", "d2", ".") for n in os.listdir(d) if n.startswith(".torchmend")]
    return ("old" if got == olds else "new" if got == news else "MIXED"), leftovers


def test_apply_patch_is_all_or_nothing_under_sigkill_at_random_points(repo):
    olds, news = _tree()
    ran = subprocess.run([sys.executable, "-c", _CHILD, "0"], capture_output=True, text=True, check=True)
    total = int(ran.stdout.split()[-1])  # file-system calls of one whole apply
    assert _state(olds, news) == ("new", [])
    rng = random.Random(12)
    points = sorted(set([1, 2, total // 2, total - 1, total] + rng.sample(range(1, total + 1), min(22, total))))
    seen = {}
    for k in points:
        for p, o in olds.items():
            open(p, "wb").write(o)
        r = subprocess.run([sys.executable, "-c", _CHILD, str(k)], capture_output=True, text=True)
        assert r.returncode == -signal.SIGKILL, (k, r.stderr)
        before, _ = _state(olds, news)
        msg = recover(".")  # what the next torchmend run does first
        after, leftovers = _state(olds, news)
        assert after in ("old", "new") and leftovers == [] and not os.path.exists(JOURNAL), (k, before, after, leftovers, msg)
        seen.setdefault((before, after), []).append(k)
        if after == "old":  # the roll-back is complete: the patch applies again
            assert len(apply_patch(open("m.patch", "rb").read(), ".")) == N_FILES
            assert _state(olds, news) == ("new", [])
    assert ("MIXED", "old") in seen, seen  # some kills did land mid-commit, and were undone
    print(f"{len(points)} SIGKILL points of {total}: {dict((k, len(v)) for k, v in seen.items())}")


def test_apply_patch_survives_external_sigkill_at_random_times(repo):
    olds, news = _tree()
    rng = random.Random(7)
    child = "import sys; from torchmend.patch import apply_patch; apply_patch(open('m.patch', 'rb').read(), '.')"
    for i in range(5):
        for p, o in olds.items():
            open(p, "wb").write(o)
        p = subprocess.Popen([sys.executable, "-c", child])
        time.sleep(rng.uniform(0.05, 0.6))
        p.kill()
        p.wait()
        if i == 4:  # any next torchmend run recovers first
            r = subprocess.run(TM + ["check", "d0", "--no-cache", "-q"], capture_output=True, text=True)
            assert r.returncode in (0, 1), r.stderr
        else:
            recover(".")
        state, leftovers = _state(olds, news)
        assert state in ("old", "new") and leftovers == [] and not os.path.exists(JOURNAL)
