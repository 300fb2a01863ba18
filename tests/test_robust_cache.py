"""Robustness, the cache: plain validated JSON that cannot run code, one entry per file
content and settings, bounded, pruned, `torchmend clean` (issue 12 item 1, issue 14
"Cache")."""

import json
import os
import pickle
import time
from collections import Counter

import pytest
from typer.testing import CliRunner

from torchmend import cache as cache_mod
from torchmend import engine
from torchmend.cache import CACHE_DIRNAME, Cache, clean, result_from_dict, result_to_dict
from torchmend.cli.main import app
from torchmend.engine import FileResult, Options, Suggestion
from torchmend.rule import Finding, Safety, Severity
from torchmend.runner import run
from tests.engine_rules import PrintToLog, UnsafeRename

MARK = "/tmp/torchmend-cache-pwned-marker"


class _Exploit:
    def __reduce__(self):
        return (os.system, (f"touch {MARK}",))


@pytest.fixture
def rules(monkeypatch):
    monkeypatch.setattr(engine, "rules_for", lambda select: [PrintToLog(), UnsafeRename()])


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for i in range(4):
        (pkg / f"m{i}.py").write_text(f"print({i})\nfoo = {i}\n")
    (pkg / "same.py").write_text("x = 1\n")
    t = time.time_ns() - 100 * 10**9
    for p in pkg.iterdir():
        os.utime(p, ns=(t, t))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args):
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout_bytes, r.stderr


def _body(err):
    return [ln for ln in err.splitlines() if not ln.startswith("torchmend: ")]


def _cache_file():
    return os.path.join(CACHE_DIRNAME, "cache.json")


# --------------------------------------------------------------------------- no code execution
@pytest.mark.parametrize("where", ["cache.json", "0123456789abcdef01234567.pickle"])
def test_a_pickle_in_the_cache_directory_never_runs(tree, rules, where):
    if os.path.exists(MARK):
        os.unlink(MARK)
    ref = cli("diff", "pkg", "-j", "1", "--no-cache")
    os.makedirs(CACHE_DIRNAME)
    with open(os.path.join(CACHE_DIRNAME, where), "wb") as f:
        f.write(pickle.dumps(_Exploit()))
    got = cli("diff", "pkg", "-j", "1")
    assert not os.path.exists(MARK)
    assert got[0] == ref[0] and got[1] == ref[1] and _body(got[2]) == _body(ref[2])
    warnings = [ln for ln in got[2].splitlines() if "warning" in ln]
    if where == "cache.json":
        assert warnings == ["torchmend: warning: ignoring the cache .torchmend_cache/cache.json (not valid JSON ('utf-8' codec can't decode byte 0x80 in position 0: invalid start byte)): it will be rebuilt"]
    else:
        assert warnings == [] and not os.path.exists(os.path.join(CACHE_DIRNAME, where))  # old format: removed unread
    again = cli("diff", "pkg", "-j", "1")
    assert "5 from cache" in again[2] and "warning" not in again[2] and again[1] == ref[1]


def _valid_cache(tree):
    cli("diff", "pkg", "-j", "1")
    with open(_cache_file()) as f:
        return json.load(f)


BAD = {
    "truncated": lambda d, raw: raw[: len(raw) // 2],
    "not an object": lambda d, raw: b"[1, 2, 3]",
    "deep nesting": lambda d, raw: b"[" * 100_000 + b"]" * 100_000,
    "huge int": lambda d, raw: b'{"format": "torchmend-cache", "version": ' + b"9" * 5000 + b"}",
    "wrong field type": lambda d, raw: json.dumps({**d, "files": {k: ["big", 1, "x", 2] for k in d["files"]}}).encode(),
    "extra field": lambda d, raw: json.dumps({**d, "code": "import os"}).encode(),
    # every result corrupted: a full one's diff, an empty one's (short form) stage
    "bad result": lambda d, raw: json.dumps({**d, "results": {k: {**e, "r": {**e["r"], "diff": 5} if isinstance(e["r"], dict) else [5, *e["r"][1:]]} for k, e in d["results"].items()}}).encode(),
    "bad severity": lambda d, raw: json.dumps({**d, "results": {k: {**e, "r": {**e["r"], "findings": [{**f, "severity": "fatal"} for f in e["r"]["findings"]]} if isinstance(e["r"], dict) else e["r"]} for k, e in d["results"].items()}}).encode(),
    "lone surrogate": lambda d, raw: raw.replace(b'"diff":"', b'"diff":"\\ud800', 1),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_an_invalid_cache_is_ignored_with_one_warning_and_rebuilt(tree, rules, kind):
    d = _valid_cache(tree)
    ref = cli("diff", "pkg", "-j", "1", "--no-cache")
    with open(_cache_file(), "rb") as f:
        raw = f.read()
    with open(_cache_file(), "wb") as f:
        f.write(BAD[kind](d, raw))
    got = cli("diff", "pkg", "-j", "1")
    warnings = [ln for ln in got[2].splitlines() if "warning" in ln]
    if kind == "bad severity" and not any(isinstance(r["r"], dict) and r["r"]["findings"] for r in d["results"].values()):
        pytest.skip("no finding to corrupt")
    assert len(warnings) == 1 and warnings[0].startswith("torchmend: warning: ignoring the cache .torchmend_cache/cache.json ("), got[2]
    assert "Traceback" not in got[2]
    assert got[0] == ref[0] and got[1] == ref[1] and _body(got[2]) == _body(ref[2])
    again = cli("diff", "pkg", "-j", "1")
    assert "5 from cache" in again[2] and "warning" not in again[2]


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "directory", "fifo"])
def test_a_cache_file_that_is_not_a_regular_file(tree, rules, kind):
    os.makedirs(CACHE_DIRNAME)
    f = _cache_file()
    {"symlink to /dev/zero": lambda: os.symlink("/dev/zero", f), "directory": lambda: os.mkdir(f), "fifo": lambda: os.mkfifo(f)}[kind]()
    got = cli("check", "pkg", "-j", "1")
    assert got[0] == 1  # findings, as without a cache
    assert len([ln for ln in got[2].splitlines() if "warning" in ln]) == 1


def test_a_cache_directory_that_is_a_symlink_is_not_used(tree, rules, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.symlink(elsewhere, CACHE_DIRNAME)
    got = cli("check", "pkg", "-j", "1")
    assert got[0] == 1  # findings, as without a cache
    assert [ln for ln in got[2].splitlines() if "warning" in ln] == [
        "torchmend: warning: .torchmend_cache is a symbolic link: the cache is not used (remove the link, or pass --cache-dir)"
    ]
    assert os.listdir(elsewhere) == []


def test_another_version_is_replaced_silently(tree, rules):
    d = _valid_cache(tree)
    with open(_cache_file(), "w") as f:
        json.dump({**d, "version": 2, "files": "anything"}, f)
    got = cli("check", "pkg", "-j", "1")
    assert "warning" not in got[2] and "0 from cache" in got[2]
    assert "5 from cache" in cli("check", "pkg", "-j", "1")[2]


# --------------------------------------------------------------------------- keying
def test_one_entry_per_content_and_settings_not_per_path_list_or_directory(tree, rules):
    lists = [["pkg"], ["pkg/m0.py", "pkg/m1.py"], ["pkg/m1.py", "pkg/m0.py", "pkg/same.py"], ["."]]
    for paths in lists:
        cli("check", "-j", "1", *paths)
    os.chdir("pkg")
    code, _, err = cli("check", "-j", "1", ".", "--cache-dir", "../" + CACHE_DIRNAME)
    assert "5 from cache" in err  # another current directory: same entries
    os.chdir("..")
    assert os.listdir(CACHE_DIRNAME) == [".gitignore", "cache.json"] or sorted(os.listdir(CACHE_DIRNAME)) == [".gitignore", "cache.json"]
    c = Cache(Options(fix=False))
    assert len(c.files) == 5
    mine = [e for e in c.results.values()]
    assert len(mine) == 5  # one result per file content (check settings), however often it ran
    cli("check", "-j", "1", "pkg", "--unsafe-fixes")  # check ignores it: same settings
    cli("diff", "-j", "1", "pkg")  # other settings: 5 more
    assert len(Cache(Options(fix=False)).results) == 10


def test_same_content_elsewhere_is_a_cache_hit(tree, rules):
    cli("check", "-j", "1", "pkg")
    os.makedirs("other")
    for i in range(4):
        with open(f"other/m{i}.py", "w") as f:
            f.write(f"print({i})\nfoo = {i}\n")
    code, out, err = cli("check", "-j", "1", "other")
    assert "4 from cache" in err and "0 parsed" in err
    assert b"other/m0.py:1:1: TM901" in out  # findings (on stdout) name the file they are used for


def test_an_empty_cache_reads_no_file_and_is_filled_from_the_results(tree, rules, monkeypatch):
    """A first run (no cache yet, or one of another version) does not read and hash the
    files to look them up: nothing could match.  The results fill it as before: the
    next run takes every file from it."""
    c = Cache(Options(fix=False))
    opened = []
    real_open = os.open
    with monkeypatch.context() as m:
        m.setattr(cache_mod.os, "open", lambda p, *a, **k: opened.append(p) or real_open(p, *a, **k))
        assert not c.results and c.get("pkg/m0.py") is None and opened == [] and c.files == {}
    cli("check", "-j", "1", "pkg")
    warm = cli("check", "-j", "1", "pkg")[2]
    assert "(5 from cache, 0 skipped by the text gate, 0 analysed" in warm


def test_a_diff_from_another_directory_is_recomputed_not_misnamed(tree, rules):
    cli("diff", "-j", "1", "pkg")
    os.chdir("pkg")
    code, out, err = cli("diff", "-j", "1", ".", "--cache-dir", "../" + CACHE_DIRNAME)
    assert b"a/m0.py" in out and b"pkg/m0.py" not in out
    assert "1 from cache" in err  # only same.py (no diff) is path-independent


def test_warm_summary_counts_what_happened(tree, rules):
    cold = cli("check", "-j", "1", "pkg")[2]
    warm = cli("check", "-j", "1", "pkg")[2]
    assert "(0 from cache, 1 skipped by the text gate, 4 analysed, 0 parsed for fixes)" in cold
    assert "(5 from cache, 0 skipped by the text gate, 0 analysed, 0 parsed for fixes)" in warm


# --------------------------------------------------------------------------- bounds
def test_results_of_vanished_content_are_pruned_and_the_total_is_bounded(tree, rules, monkeypatch):
    opts = Options(fix=False)
    c = Cache(opts)
    run(["pkg"], opts, jobs=1, cache=c, isolate=False)
    c.save()
    for i in range(4):  # new contents: the old results are no longer any file's
        with open(f"pkg/m{i}.py", "w") as f:
            f.write(f"print({i}, 'v2')\n")
    c = Cache(opts)
    run(["pkg"], opts, jobs=1, cache=c, isolate=False)
    c.save()
    assert len(Cache(opts).results) == 9  # recently used: kept for KEEP_DAYS
    c = Cache(opts)
    c._now += (cache_mod.KEEP_DAYS + 1) * 86400
    c.dirty = True
    c.save()
    assert len(Cache(opts).results) == 5
    monkeypatch.setattr(cache_mod, "MAX_RESULTS", 3)
    c = Cache(opts)
    c.dirty = True
    c.save()
    assert len(Cache(opts).results) == 3


def test_entries_of_deleted_files_leave(tree, rules):
    opts = Options(fix=False)
    c = Cache(opts)
    run(["pkg"], opts, jobs=1, cache=c, isolate=False)
    c.save()
    os.unlink("pkg/m3.py")
    c = Cache(opts)
    c.dirty = True
    c.save()
    assert os.path.abspath("pkg/m3.py") not in Cache(opts).files and len(Cache(opts).files) == 4


# --------------------------------------------------------------------------- clean
def test_clean_removes_caches_here_below_and_in_the_root(tree, rules, tmp_path_factory):
    cli("check", "-j", "1", "pkg")
    os.makedirs("pkg/sub")
    with open("pkg/sub/s.py", "w") as f:
        f.write("print('s')\n")
    os.chdir("pkg/sub")
    cli("check", "-j", "1", ".", "--cache-dir", CACHE_DIRNAME)  # one more, below
    os.chdir("../..")
    elsewhere = tmp_path_factory.mktemp("keep")
    (elsewhere / "precious").write_text("x")
    os.symlink(elsewhere, "pkg/" + CACHE_DIRNAME)  # named like a cache: the link goes, not its target
    code, _, err = cli("clean")
    assert code == 0, err
    assert not os.path.exists(CACHE_DIRNAME) and not os.path.lexists("pkg/" + CACHE_DIRNAME)
    assert not os.path.exists("pkg/sub/" + CACHE_DIRNAME)
    assert (elsewhere / "precious").read_text() == "x"
    assert "3 cache directories removed" in err


def test_clean_refuses_a_directory_torchmend_did_not_make(tree, tmp_path_factory):
    mine = tmp_path_factory.mktemp("mine")
    (mine / "thesis.tex").write_text("x")
    code, _, err = cli("clean", "--cache-dir", str(mine))
    assert code == 2 and "not a torchmend cache" in err and (mine / "thesis.tex").exists()


# --------------------------------------------------------------------------- serialisation
def test_result_round_trip_through_json():
    f = Finding("TM201", "msg é", 3, 5, Severity.BUG, path="a.py", applied=True, safety=Safety.SAFE)
    g = Finding("TM501", "other", 7, 1, Severity.WARNING, path="a.py", safety=Safety.UNSAFE)
    r = FileResult(
        path="a.py", findings=[f, g], applied=Counter({"TM201": 1}), diff=b"diff \xff\xfe bytes\n",
        suggestions=[Suggestion(g, b"--- s\n")], error=None, skipped=None, parsed=True, stage="parsed",
        tree_dependent=True, deps=(("/x/m.py", 10, 20),),
    )
    back = result_from_dict(json.loads(json.dumps(result_to_dict(r))), "b.py")
    assert back.diff == r.diff and back.applied == r.applied and back.stage == "parsed" and back.deps == r.deps
    assert [(x.code, x.message, x.line, x.col, x.severity, x.applied, x.safety, x.path) for x in back.findings] == [
        (x.code, x.message, x.line, x.col, x.severity, x.applied, x.safety, "b.py") for x in r.findings
    ]
    assert back.suggestions[0].diff == b"--- s\n" and back.suggestions[0].finding.code == "TM501"


@pytest.mark.parametrize("stage,parsed,dependent", [("prefilter", False, False), ("ast", True, True)])
def test_an_empty_result_is_stored_short_and_comes_back_the_same(stage, parsed, dependent):
    r = FileResult(path="a.py", parsed=parsed, stage=stage, tree_dependent=dependent)
    stored = json.loads(json.dumps(result_to_dict(r)))
    assert stored == [stage, parsed, dependent]
    back = result_from_dict(stored, "b.py")
    assert (back.path, back.stage, back.parsed, back.tree_dependent, back.cacheable) == ("b.py", stage, parsed, dependent, True)
    assert not (back.findings or back.diff or back.suggestions or back.deps or back.warnings or back.applied)
    assert back.error is None and back.skipped is None
    # with anything in it, the full form
    assert isinstance(result_to_dict(FileResult(path="a.py", stage=stage, warnings=[(1, "w")])), dict)
    for bad in ([stage, parsed], [stage, 1, dependent], [1, parsed, dependent], [stage, parsed, dependent, 0]):
        with pytest.raises(cache_mod.InvalidCache):
            result_from_dict(bad, "b.py")


def test_tool_fingerprint_covers_subpackages(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "rules" / "device").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "rules" / "device" / "rule.py").write_text("y = 1\n")
    one = cache_mod._source_fingerprint(str(pkg))
    (pkg / "rules" / "device" / "rule.py").write_text("y = 2\n")
    assert cache_mod._source_fingerprint(str(pkg)) != one
    assert cache_mod.tool_fingerprint() == cache_mod.tool_fingerprint()


def test_a_result_that_read_a_changed_file_is_recomputed_with_the_runs_stat_memo(tmp_path, monkeypatch):
    """Results that read the same file (the importers TM301 asked about) ask for its stat
    once per run (``dep_stats``); a change of that file still invalidates every one of
    them in the next run, and a memo never outlives the run that filled it."""
    monkeypatch.chdir(tmp_path)
    dep = tmp_path / "shared.py"
    dep.write_text("import a\n")
    opts = Options(fix=False)
    c = Cache(opts, directory=str(tmp_path / "cache"))
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(f"# {name}\n")
        r = engine.process_text(name, f"# {name}\n", opts)
        raw = (tmp_path / name).read_bytes()
        st = os.stat(name)
        r.digest, r.size, r.mtime_ns, r.cacheable = engine.content_digest(raw), st.st_size, st.st_mtime_ns, True
        r.deps = ((str(dep), *engine._stat(str(dep))),)
        c.put(r, time.time_ns())
    c.save()
    calls = []
    real_stat = cache_mod._stat
    monkeypatch.setattr(cache_mod, "_stat", lambda p: calls.append(p) or real_stat(p))
    c = Cache(opts, directory=str(tmp_path / "cache"))
    memo: dict = {}
    assert all(c.get(n, dep_stats=memo) is not None for n in ("a.py", "b.py"))
    assert calls == [str(dep)]  # asked once for both results
    dep.write_text("import a  # changed, and longer\n")
    assert c.get("a.py", dep_stats=memo) is not None  # (the run's snapshot: nothing is written while it looks up)
    memo = {}
    assert c.get("a.py", dep_stats=memo) is None and c.get("b.py", dep_stats=memo) is None
    assert c.get("b.py") is None  # without a memo: asked each time


def _put_with_deps(c, tmp_path, name, deps, opts):
    (tmp_path / name).write_text(f"# {name}\n")
    r = engine.process_text(name, f"# {name}\n", opts)
    raw = (tmp_path / name).read_bytes()
    st = os.stat(name)
    r.digest, r.size, r.mtime_ns, r.cacheable = engine.content_digest(raw), st.st_size, st.st_mtime_ns, True
    r.deps = tuple((str(d), *engine._stat(str(d))) for d in deps)
    c.put(r, time.time_ns())


def test_the_files_results_read_are_stored_once_and_named_by_index(tmp_path, monkeypatch):
    """Neighbours read each other: every result of a directory names the same files.  The
    cache keeps each ``[path, size, mtime]`` once; a result holds indices; what comes
    back is the same dependencies; a result dropped by the pruning takes its files out
    of the table, and the indices of the others follow."""
    monkeypatch.chdir(tmp_path)
    opts = Options(fix=False)
    shared = [tmp_path / f"n{i}.py" for i in range(3)]
    for d in shared:
        d.write_text("x = 1\n")
    only_c = tmp_path / "only_c.py"
    only_c.write_text("y = 1\n")
    c = Cache(opts, directory=str(tmp_path / "cache"))
    for name in ("a.py", "b.py"):
        _put_with_deps(c, tmp_path, name, shared, opts)
    _put_with_deps(c, tmp_path, "c.py", [only_c, shared[2]], opts)
    c.save()
    data = json.loads((tmp_path / "cache" / "cache.json").read_text())
    assert sorted(p for p, _, _ in data["deps"]) == sorted(str(d) for d in [*shared, only_c])
    stored = [e["r"]["deps"] for e in data["results"].values()]
    assert all(type(i) is int for ds in stored for i in ds) and sum(map(len, stored)) == 8
    c = Cache(opts, directory=str(tmp_path / "cache"))
    got = c.get("c.py")
    assert got is not None and got.deps == ((str(only_c), *engine._stat(str(only_c))), (str(shared[2]), *engine._stat(str(shared[2]))))
    assert c.get("a.py").deps == tuple((str(d), *engine._stat(str(d))) for d in shared)
    # c.py goes (its file deleted, its result dropped as the pruning drops it): only_c.py leaves the table
    os.unlink("c.py")
    c.results = {k: e for k, e in c.results.items() if len(e["r"]["deps"]) == 3}
    c.dirty = True
    c.save()
    data = json.loads((tmp_path / "cache" / "cache.json").read_text())
    assert sorted(p for p, _, _ in data["deps"]) == sorted(str(d) for d in shared)
    c = Cache(opts, directory=str(tmp_path / "cache"))
    assert c.get("a.py").deps == tuple((str(d), *engine._stat(str(d))) for d in shared)
    shared[1].write_text("x = 2  # changed\n")
    assert Cache(opts, directory=str(tmp_path / "cache")).get("b.py") is None


@pytest.mark.parametrize("bad", [lambda d: {**d, "deps": d["deps"][:-1]}, lambda d: {**d, "deps": [[1, 2, 3]] * len(d["deps"])},
                                 lambda d: {k: v for k, v in d.items() if k != "deps"}])
def test_a_dependency_table_that_does_not_match_is_an_invalid_cache(tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    opts = Options(fix=False)
    (tmp_path / "n.py").write_text("x = 1\n")
    c = Cache(opts, directory=str(tmp_path / "cache"))
    _put_with_deps(c, tmp_path, "a.py", [tmp_path / "n.py"], opts)
    c.save()
    f = tmp_path / "cache" / "cache.json"
    f.write_text(json.dumps(bad(json.loads(f.read_text()))))
    c = Cache(opts, directory=str(tmp_path / "cache"))
    assert c.warning is not None and "ignoring the cache" in c.warning and c.get("a.py") is None


def test_a_run_without_cache_hashes_no_file(tmp_path, monkeypatch):
    """Files are hashed for the cache (and for ``check --add-noqa``'s check that a file
    is still what was analysed): ``--no-cache`` alone reads no digest, and the cache's key
    does not depend on that option."""
    src = tmp_path / "a.py"
    src.write_bytes(b"import torch\nx = 1\n")
    hashed = []
    real = engine.content_digest
    monkeypatch.setattr(engine, "content_digest", lambda raw: hashed.append(raw) or real(raw))
    assert engine.process_file(str(src), Options(digest=False)).digest == ""
    assert hashed == []
    assert engine.process_file(str(src), Options()).digest == real(src.read_bytes())
    assert cache_mod.settings_key(Options(digest=False)) == cache_mod.settings_key(Options())
    monkeypatch.chdir(tmp_path)
    made = []
    monkeypatch.setattr(engine, "Options", lambda **kw: made.append(kw) or Options(**kw))
    CliRunner().invoke(app, ["check", "--no-cache", "a.py"])
    CliRunner().invoke(app, ["check", "a.py"])
    CliRunner().invoke(app, ["check", "--no-cache", "--add-noqa", "a.py"])
    assert [kw.get("digest") for kw in made] == [False, True, True]
