"""Discovery as git sees it: inside a repository the reference answer is
``git ls-files -co --exclude-standard`` (the git binary), for every source of ignore
rules; worktrees and submodules (``.git`` files); unreadable directories and
undecodable file names."""

import os
import shutil
import subprocess

import pytest

from torchmend.discovery import discover

GIT = shutil.which("git")
PATH = os.environ.get("PATH", "")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs the git binary (the reference)")


@pytest.fixture(params=["git", "libgit2"], autouse=True)
def backend(request, monkeypatch):
    """Discovery asks the git binary when there is one, else libgit2: both must give
    git's answer (PATH without git forces libgit2)."""
    if request.param == "libgit2":
        monkeypatch.setenv("PATH", "/nonexistent")
    return request.param


def git(cwd, *args):
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": PATH}
    r = subprocess.run([GIT, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always", *args],
                       cwd=cwd, env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def touch(base, *rels):
    for rel in rels:
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def reference(cwd, *paths) -> list[str]:
    """What git lists, *.py only, as paths relative to ``cwd``."""
    out = git(cwd, "ls-files", "-co", "--exclude-standard", "-z", "--", *paths).decode("utf-8", "surrogateescape")
    return sorted(os.path.normpath(n) for n in out.split("\0") if n.endswith(".py"))


def ours(monkeypatch, cwd, *paths) -> list[str]:
    from torchmend import discovery

    monkeypatch.chdir(cwd)
    kind = type(discovery._open_repo(".")).__name__
    assert kind == ("_Listing" if shutil.which("git") else "_Repo")
    d = discover(list(paths) or ["."], exclude=(), respect_gitignore=True)
    assert d.errors == []
    return sorted(d.files)


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    touch(r, "a.py", "pkg/b.py", "pkg/deep/c.py", "logs/run.py", "pkg/gen_x.py", "local_only.py",
          "global_ignored.py", "tracked_but_ignored/t.py", "pkg/sub_ignored/s.py", "pkg/keep_me.py", "notes.txt")
    (r / ".gitignore").write_text("logs/\ngen_*.py\ntracked_but_ignored/\n")
    (r / "pkg" / ".gitignore").write_text("sub_ignored/\n*_me.py\n!keep_me.py\n")
    (r / ".git" / "info" / "exclude").write_text("local_only.py\n")
    excludes = r.parent / "global-excludes"
    excludes.write_text("global_ignored.py\n")
    git(r, "config", "core.excludesFile", str(excludes))
    git(r, "add", ".gitignore", "a.py", "pkg/.gitignore")
    git(r, "add", "-f", "tracked_but_ignored/t.py")
    git(r, "commit", "-qm", "init")
    return r


def test_every_ignore_source_matches_git_ls_files(repo, monkeypatch):
    want = reference(repo)
    assert "local_only.py" not in want and "global_ignored.py" not in want  # info/exclude, core.excludesFile
    assert os.path.join("tracked_but_ignored", "t.py") in want  # tracked files are listed though ignored
    assert os.path.join("pkg", "keep_me.py") in want  # negation in a nested .gitignore
    assert ours(monkeypatch, repo) == want
    # from a subdirectory, and for a subdirectory given explicitly: still git's answer
    assert ours(monkeypatch, repo / "pkg") == reference(repo / "pkg")
    assert ours(monkeypatch, repo, "pkg") == reference(repo, "pkg")


def test_no_respect_gitignore_takes_everything_but_the_excludes(repo, monkeypatch):
    monkeypatch.chdir(repo)
    d = discover(["."], respect_gitignore=False)
    assert "local_only.py" in d.files and os.path.join("logs", "run.py") in d.files


def test_worktree_with_a_git_file(repo, tmp_path, monkeypatch):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    assert (wt / ".git").is_file()
    touch(wt, "logs/x.py", "local_only.py", "new.py")
    want = reference(wt)
    assert want == sorted(["a.py", "new.py", os.path.join("tracked_but_ignored", "t.py")])  # info/exclude is shared
    assert ours(monkeypatch, wt) == want


def test_submodule_is_walked_with_its_own_rules(repo, tmp_path, monkeypatch):
    sub_src = tmp_path / "subsrc"
    sub_src.mkdir()
    git(sub_src, "init", "-q")
    touch(sub_src, "m.py", "ignored_in_sub.py")
    (sub_src / ".gitignore").write_text("ignored_in_sub.py\n")
    git(sub_src, "add", ".")
    git(sub_src, "commit", "-qm", "sub")
    git(repo, "submodule", "add", "-q", str(sub_src), "third_party/sub")
    assert (repo / "third_party" / "sub" / ".git").is_file()
    touch(repo, "third_party/sub/ignored_in_sub.py", "third_party/sub/new.py")
    got = ours(monkeypatch, repo)
    inside = [p for p in got if p.startswith(os.path.join("third_party", "sub") + os.sep)]
    # the superproject's files: git's answer; inside the submodule: the submodule's answer
    assert [p for p in got if p not in inside] == [p for p in reference(repo) if not p.startswith("third_party")]
    assert inside == [os.path.join("third_party", "sub", p) for p in reference(repo / "third_party" / "sub")]
    assert os.path.join("third_party", "sub", "ignored_in_sub.py") not in got


def test_unreadable_directory_is_named_in_a_warning(tmp_path, monkeypatch):
    touch(tmp_path, "ok.py", "locked/x.py")
    real = os.scandir

    def scandir(path="."):
        if os.path.basename(os.path.normpath(path)) == "locked":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "scandir", scandir)  # root reads everything: simulate the EACCES
    d = discover(["."])
    assert d.files == ["ok.py"]
    assert d.warnings == [("locked", "cannot read directory: Permission denied, skipped")]


def test_undecodable_file_names(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9.py"
    with open(raw, "wb") as f:
        f.write(b"x = 1\n")
    (tmp_path / ".gitignore").write_text("ignored*.py\n")
    with open(os.fsencode(str(tmp_path)) + b"/ignored\xff.py", "wb") as f:
        f.write(b"x = 1\n")
    monkeypatch.chdir(tmp_path)
    d = discover(["."])
    assert d.files == [os.fsdecode(b"caf\xe9.py")] and d.errors == []
    from torchmend.gitdiff import display_path, unified_diff

    assert display_path(d.files[0]) == "caf\\xe9.py"
    name = d.files[0]
    (tmp_path / name).write_bytes(b"a\n")
    git(tmp_path, "add", name)
    git(tmp_path, "commit", "-qm", "x")
    (tmp_path / name).write_bytes(b"b\n")
    patch = unified_diff(b"a\n", b"b\n", name)
    assert patch.startswith(b'diff --git "a/caf\\351.py" "b/caf\\351.py"\n')
    # byte for byte what git prints for the same change
    assert patch == git(tmp_path, "diff", "--no-ext-diff", "--no-color")


def test_repository_config_cannot_run_code(tmp_path, monkeypatch):
    """A .git/config shipped with the files (an unpacked archive) must not make discovery
    run a command: core.fsmonitor is one git would start."""
    git(tmp_path, "init", "-q")
    touch(tmp_path, "a.py")
    marker = tmp_path / "pwned"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(tmp_path, "config", "core.fsmonitor", str(hook))
    assert ours(monkeypatch, tmp_path) == ["a.py"]
    assert not marker.exists()
