"""Batch runs: the result cache, reviewable patches, --changed-since, executors, gates."""

import os
import subprocess
import time

import pytest
from typer.testing import CliRunner

from torchmend.cli.main import app
from torchmend import engine
from torchmend.cache import Cache
from torchmend.engine import STAGE_AST, STAGE_PARSED, STAGE_PREFILTER, Options, process_text
from torchmend.gitdiff import unified_diff
from torchmend.patch import PatchError, apply_patch, git_blob_hash
from torchmend.rule import Rule
from torchmend.runner import run
from tests.engine_rules import PrintToLog, UnsafeRename


@pytest.fixture
def rules(monkeypatch):
    def use(*classes):
        monkeypatch.setattr(engine, "rules_for", lambda select: [c() for c in classes])

    return use


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A small project; the current directory is its root (diffs name paths from it)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("import os\nprint(1)\nfoo = 2\n")
    (pkg / "b.py").write_text("x = 1\n")
    (pkg / "c.py").write_text("def f():\n    print('c')\n")
    (pkg / "bad.py").write_text("print(\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args):
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout_bytes, r.stderr


def _no_summary(err: str) -> str:
    return "\n".join(ln for ln in err.splitlines() if not ln.startswith("torchmend: "))


def _old(path, seconds=100):
    t = time.time_ns() - seconds * 10**9
    os.utime(path, ns=(t, t))


# --------------------------------------------------------------------------- cache
@pytest.mark.parametrize("cmd", ["diff", "check"])
def test_cached_run_is_byte_identical_to_uncached(tree, rules, cmd):
    rules(PrintToLog, UnsafeRename)
    for p in ("pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/bad.py"):
        _old(p)
    ref = cli(cmd, "pkg", "-j", "1", "--no-cache")
    assert ref[0] == 2  # the syntax error
    assert not os.path.exists(".torchmend_cache")  # --no-cache writes nothing
    cold = cli(cmd, "pkg", "-j", "1")
    warm = cli(cmd, "pkg", "-j", "1")
    assert "0 from cache" in cold[2] and "4 from cache" in warm[2]
    for run_ in (cold, warm):
        assert run_[0] == ref[0]
        assert run_[1] == ref[1]  # the patch, byte for byte
        assert _no_summary(run_[2]) == _no_summary(ref[2])  # findings, suggestions, errors
    if cmd == "diff":
        assert b"+log(1)" in ref[1] and b"+    log('c')" in ref[1]
    assert open(".torchmend_cache/.gitignore").read().splitlines()[-1] == "*"


def test_editing_a_file_invalidates_its_entry(tree, rules):
    rules(PrintToLog)
    _old("pkg/b.py")
    cli("diff", "pkg", "-j", "1")
    with open("pkg/b.py", "w") as f:
        f.write("print(9)\n")
    code, out, err = cli("diff", "pkg", "-j", "1")
    assert b"+log(9)" in out and "3 from cache" in err


def test_same_size_edit_in_the_racy_window_is_detected(tree, rules):
    rules(UnsafeRename)
    st = os.stat("pkg/b.py")  # "x = 1\n", just written: its mtime is in the racy window
    cli("check", "pkg", "-j", "1")
    with open("pkg/b.py", "w") as f:
        f.write("foo=1\n")
    os.utime("pkg/b.py", ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    _, out, err = cli("check", "pkg", "-j", "1")
    assert "pkg/b.py:1:1: TM902" in out.decode()  # check prints findings on stdout


def test_a_racy_entry_hashed_again_later_is_then_trusted(tree, rules, monkeypatch):
    """A file stored while its mtime was in the racy window is hashed on the next run;
    once that read comes 2 s or more after the mtime, its entry says so and the run after
    it trusts the stat data (a tree just cloned is not hashed on every run)."""
    rules(PrintToLog)
    opts = Options(roots=("pkg",))
    st = os.stat("pkg/b.py")
    ap = os.path.abspath("pkg/b.py")
    cache = Cache(opts, ".cachedir")
    assert cache._digest("pkg/b.py", ap, (st, st.st_mtime_ns + 10**9)) is not None  # read 1 s after the write
    first = list(cache.files[ap])
    reads = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: reads.append(a[0]) or real_open(*a, **k))
    later = st.st_mtime_ns + 3 * 10**9
    assert cache._digest("pkg/b.py", ap, (st, later))[0] == first[2]
    assert reads == ["pkg/b.py"] and cache.files[ap] == first[:3] + [later]  # racy: read again, now trusted
    assert cache._digest("pkg/b.py", ap, (st, later + 10**9))[0] == first[2]
    assert reads == ["pkg/b.py"]  # not read again
    cache.save()
    assert Cache(opts, ".cachedir").files[ap] == first[:3] + [later]


def test_apply_never_trusts_a_cache_entry_for_a_changed_file(tree, rules):
    rules(UnsafeRename)
    _old("pkg/b.py")
    st = os.stat("pkg/b.py")
    opts = Options(roots=("pkg",), unsafe_fixes=True)
    cache = Cache(opts, ".cachedir")
    run(["pkg"], opts, jobs=1, cache=cache)
    cache.save()
    # same size, same (old) mtime, new content: stat data alone cannot tell
    with open("pkg/b.py", "w") as f:
        f.write("foo=1\n")
    os.utime("pkg/b.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    stale = run(["pkg"], opts, jobs=1, cache=Cache(opts, ".cachedir"))
    assert not any(r.path.endswith("b.py") and r.changed for r in stale.results)  # diff/check trust stat data
    wopts = Options(roots=("pkg",), unsafe_fixes=True, write=True)
    applied = run(["pkg"], wopts, jobs=1, cache=Cache(opts, ".cachedir", verify=True))
    assert open("pkg/b.py").read() == "bar=1\n"
    assert any(r.path.endswith("b.py") and r.written for r in applied.results)


def test_deleted_files_leave_the_cache(tree, rules):
    rules(PrintToLog)
    opts = Options()
    cache = Cache(opts, ".c")
    run(["pkg"], opts, jobs=1, cache=cache)
    cache.save()
    assert os.path.abspath("pkg/c.py") in Cache(opts, ".c").files
    os.unlink("pkg/c.py")
    with open("pkg/b.py", "w") as f:
        f.write("print(5)\n")
    cache = Cache(opts, ".c")
    run(["pkg"], opts, jobs=1, cache=cache)
    cache.save()
    assert set(Cache(opts, ".c").files) == {os.path.abspath(p) for p in ("pkg/a.py", "pkg/b.py", "pkg/bad.py")}


def test_cache_key_covers_the_configuration(tree, rules):
    rules(UnsafeRename)
    assert cli("diff", "pkg", "-j", "1")[1] == b""  # the rename is unsafe: not applied
    code, out, err = cli("diff", "pkg", "-j", "1", "--unsafe-fixes")
    assert b"+bar = 2" in out and "0 from cache" in err


def test_results_depending_on_other_files_hold_only_while_those_are_unchanged(tree, rules):
    calls = []

    class AsksProject(Rule):
        code, name, pitfall, summary, needles = "TM905", "asks", "test", "asks", ("",)

        def check(self, ctx):
            calls.append(ctx.path)
            ctx.project.is_imported(ctx.path)  # depends on the whole tree (pkg is a package)
            if ctx.path.endswith("a.py"):
                ctx.project.deps.add("side.txt")  # and on one file outside it
            return ()

    rules(AsksProject)
    open("side.txt", "w").write("v1")
    opts = Options(roots=("pkg",))

    def again():
        calls.clear()
        cache = Cache(opts, ".c")
        run(["pkg"], opts, jobs=1, cache=cache, isolate=False)  # in-process: `calls` sees the rule run
        cache.save()
        return sorted(calls)

    assert again() == ["pkg/a.py", "pkg/b.py", "pkg/c.py"]  # bad.py fails to parse
    assert again() == []  # nothing changed: everything from the cache
    os.utime("pkg/b.py", ns=(1, 1))  # a neighbour touched: what it imports may differ
    assert again() == ["pkg/a.py", "pkg/c.py"]  # (b.py itself: same content, from the cache)
    assert again() == []
    with open("pkg/b.py", "a") as f:  # a neighbour changed
        f.write("y = 2\n")
    assert again() == ["pkg/a.py", "pkg/b.py", "pkg/c.py"]
    assert again() == []
    with open("side.txt", "w") as f:  # a single file one result read
        f.write("v2, longer")
    assert again() == ["pkg/a.py"]


# --------------------------------------------------------------------------- patches
def _patch_tree(tree):
    a, c = open("pkg/a.py", "rb").read(), open("pkg/c.py", "rb").read()
    patch = unified_diff(a, a.replace(b"print(1)", b"print(2)"), "pkg/a.py") + unified_diff(
        c, c.replace(b"'c'", b"'C'"), "pkg/c.py"
    )
    return a, c, patch


def test_patch_round_trip_all_files(tree):
    a, c, patch = _patch_tree(tree)
    open("m.patch", "wb").write(patch)
    code, _, err = cli("apply", "--patch", "m.patch")
    assert code == 0, err
    assert open("pkg/a.py", "rb").read() == a.replace(b"print(1)", b"print(2)")
    assert open("pkg/c.py", "rb").read() == c.replace(b"'c'", b"'C'")


@pytest.mark.parametrize("bad", ["../outside.py", "pkg/../../outside.py", "/etc/passwd", "link/a.py", "pkglink.py"])
def test_patch_refuses_paths_escaping_the_root(tree, bad):
    (tree.parent / "outside.py").write_text("print(1)\n")
    os.symlink("pkg", "link")
    os.symlink(str(tree.parent / "outside.py"), "pkglink.py")
    data = unified_diff(b"print(1)\n", b"print(2)\n", "x.py").replace(b"x.py", bad.encode())
    with pytest.raises(PatchError, match="refused"):
        apply_patch(data, ".")
    open("m.patch", "wb").write(data)
    code, _, err = cli("apply", "--patch", "m.patch")
    assert code == 2 and err.count("\n") == 1 and "refused" in err and "nothing written" in err
    assert (tree.parent / "outside.py").read_text() == "print(1)\n"


def test_patch_refuses_a_stale_file_and_writes_nothing(tree):
    a, c, patch = _patch_tree(tree)
    open("pkg/c.py", "wb").write(c + b"# edited after the review\n")  # the second file changed
    open("m.patch", "wb").write(patch)
    code, _, err = cli("apply", "--patch", "m.patch")
    assert code == 2 and "pkg/c.py" in err and "changed since the patch was made" in err
    assert open("pkg/a.py", "rb").read() == a  # all or nothing: the first file is untouched


def test_patch_without_index_line_checks_context(tree):
    a, c, patch = _patch_tree(tree)
    patch = b"\n".join(ln for ln in patch.split(b"\n") if not ln.startswith(b"index "))
    open("pkg/a.py", "wb").write(a.replace(b"import os", b"import sys"))
    with pytest.raises(PatchError, match=r"pkg/a.py: line 1 differs"):
        apply_patch(patch, ".")
    assert open("pkg/c.py", "rb").read() == c


def test_diff_patch_apply_round_trip_through_the_cli(tree, rules):
    rules(PrintToLog)
    code, patch, _ = cli("diff", "pkg", "-j", "1", "--no-cache")
    assert code == 2 and patch  # bad.py is an error; the other files still get a patch
    open("m.patch", "wb").write(patch)
    assert cli("apply", "--patch", "m.patch")[0] == 0
    assert cli("diff", "pkg/a.py", "pkg/c.py", "--no-cache")[1] == b""  # nothing left to fix
    assert cli("apply", "--patch", "m.patch")[0] == 2  # already applied: stale
    assert git_blob_hash(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


# --------------------------------------------------------------------------- runs
def test_patch_does_not_depend_on_jobs(tree, rules):
    rules(PrintToLog)
    for i in range(12):
        (tree / "pkg" / f"m{i:02d}.py").write_text(f"print({i})\n")
    one = run(["pkg"], Options(), jobs=1).patch()
    two = run(["pkg"], Options(), jobs=2).patch()
    assert one == two and one.count(b"diff --git") == 14


def test_dask_local_cluster_gives_the_same_patch(tree, rules):
    distributed = pytest.importorskip("distributed")
    rules(PrintToLog)
    for i in range(8):
        (tree / "pkg" / f"m{i}.py").write_text(f"print({i})\n")
    local = run(["pkg"], Options(), jobs=1)
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as client:
        remote = run(["pkg"], Options(), executor=client.get_executor())
    assert remote.patch() == local.patch() and local.patch().count(b"diff --git") == 10
    assert [r.path for r in remote.results] == [r.path for r in local.results]


def test_cli_executor_dask_address_gives_the_same_patch(tree, rules):
    distributed = pytest.importorskip("distributed")
    rules(PrintToLog)
    ref = cli("diff", "pkg", "-j", "1", "--no-cache")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None, protocol="tcp") as lc:
        host_port = lc.scheduler_address.split("://", 1)[1]
        got = cli("diff", "pkg", "--no-cache", "--executor", f"dask://{host_port}")
    assert got[0] == ref[0] == 2 and got[1] == ref[1] and b"+log(1)" in got[1]


def test_unknown_executor_is_a_usage_error(tree):
    code, _, err = cli("check", "pkg", "--executor", "ftp://x")
    assert code == 2 and "unknown executor" in err


def _git(cwd, *args):
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def test_changed_since_limits_the_run(tree, rules):
    rules(PrintToLog)
    _git(tree, "init", "-q")
    _git(tree, "add", ".")
    _git(tree, "commit", "-qm", "base")
    (tree / "pkg" / "c.py").write_text("print('changed')\n")
    (tree / "pkg" / "new.py").write_text("print('new')\n")
    (tree / "pkg" / "b.py").unlink()
    code, out, err = cli("diff", "pkg", "-j", "1", "--changed-since", "HEAD", "--no-cache")
    files = {ln.split(b" b/")[-1] for ln in out.splitlines() if ln.startswith(b"diff --git")}
    assert files == {b"pkg/c.py", b"pkg/new.py"}  # not a.py (unchanged), not bad.py
    assert code == 1 and "2 files scanned" in err
    code, _, err = cli("diff", "pkg", "--changed-since", "no-such-rev")
    assert code == 2 and "unknown git revision" in err


# --------------------------------------------------------------------------- stages
def test_check_never_parses_with_libcst_and_diff_only_files_with_a_fix(rules):
    rules(PrintToLog)
    r = process_text("a.py", "x = 'print(1)'\n", Options())  # text gate passes, nothing found
    assert r.stage == STAGE_AST and r.parsed and not r.changed
    r = process_text("a.py", "print(1)\n", Options(fix=False))
    assert r.stage == STAGE_AST and r.findings  # check: found on ast alone
    r = process_text("a.py", "print(1)\n", Options())
    assert r.stage == STAGE_PARSED and r.applied["TM901"] == 1
    r = process_text("a.py", "x = 1\n", Options())
    assert r.stage == STAGE_PREFILTER and not r.parsed  # no needle: not even ast


def test_syntax_errors_are_reported_from_ast(rules):
    rules(PrintToLog)
    from torchmend.sourcefile import SourceError

    with pytest.raises(SourceError, match=r"syntax error at 1:6"):
        process_text("a.py", "print(1\n", Options())


def test_summary_counts_stages(tree, rules):
    rules(PrintToLog)
    code, _, err = cli("check", "pkg", "-j", "1", "--no-cache")
    # bad.py's syntax error is the stdlib parser's verdict (it counts as analysed)
    assert "4 files scanned (0 from cache, 1 skipped by the text gate, 3 analysed, 0 parsed for fixes)" in err
    assert "TM901 x2" in err and "1 error" in err
