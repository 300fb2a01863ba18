"""Hierarchical configuration (torchmend.config): nearest file per file, Ruff's layering
of select / extend-select / ignore, per-file-ignores, excludes relative to the file that
defines them, misspelt keys, and the command line end to end."""

import os
import subprocess
import sys

import pytest

from tests.corpus_cases import ROOT
from torchmend.config import CliOptions, ConfigError, load_config, read_config, resolve
from torchmend.registry import codes

ALL = set(codes())  # every rule the registry finds (no list kept by hand)


def write(base, rel, text):
    p = base / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def tm(*args, cwd, input=None):
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "torchmend", *args], cwd=cwd, env=env, capture_output=True, input=input)


def test_nearest_config_wins_and_pyproject_without_table_is_skipped(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2"]\n')
    write(tmp_path, "a/pyproject.toml", '[project]\nname = "a"\n')  # no [tool.torchmend]: skipped
    write(tmp_path, "b/torchmend.toml", 'select = ["TM5"]\n')
    write(tmp_path, "b/pyproject.toml", '[tool.torchmend]\nselect = ["TM1"]\n')  # torchmend.toml first
    s = resolve(CliOptions(), cwd=str(tmp_path))
    assert s.for_file(str(tmp_path / "a" / "x.py")).select == {"TM201", "TM202"}
    assert s.for_file(str(tmp_path / "b" / "deep" / "y.py")).select == {"TM501", "TM502"}
    assert s.config_for(str(tmp_path / "b" / "y.py")).path == str(tmp_path / "b" / "torchmend.toml")
    assert read_config(str(tmp_path / "a" / "pyproject.toml")) is None


def test_ruff_layering_of_select_extend_select_ignore(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2", "TM5"]\nignore = ["TM502"]\nextend-select = ["TM101"]\n')
    s = lambda **kw: resolve(CliOptions(**kw), cwd=str(tmp_path)).for_file(str(tmp_path / "x.py")).select  # noqa: E731
    assert s() == {"TM101", "TM201", "TM202", "TM501"}
    # --select starts afresh: the configuration's ignore is dropped with its select
    assert s(select=["TM502"]) == {"TM502"}
    # --ignore / --extend-select work on top of the configuration
    assert s(ignore=["TM2"]) == {"TM101", "TM501"}
    assert s(extend_select=["TM301"]) == {"TM101", "TM201", "TM202", "TM301", "TM501"}
    # the more specific selector wins inside a layer; ignore wins a tie
    assert s(select=["TM2"], ignore=["ALL"]) == {"TM201", "TM202"}
    assert s(select=["TM201"], ignore=["TM2"]) == {"TM201"}
    assert s(select=["TM2"], ignore=["TM2"]) == set()
    assert s(select=["zero_grad"], ignore=["missing-zero-grad"]) == {"TM202"}


def test_per_file_ignores_relative_to_the_defining_file(tmp_path):
    write(tmp_path, "proj/pyproject.toml",
          '[tool.torchmend]\n[tool.torchmend.per-file-ignores]\n"tests/*" = ["TM2"]\n"conftest.py" = ["ALL"]\n"!src/keep.py" = ["TM501"]\n')
    s = resolve(CliOptions(), cwd=str(tmp_path))
    p = lambda rel: s.for_file(str(tmp_path / "proj" / rel)).select  # noqa: E731
    assert p("tests/test_a.py") == ALL - {"TM201", "TM202", "TM501"}
    assert p("src/tests/test_a.py") == ALL - {"TM501"}  # "tests/*" is anchored at proj/
    assert p("deep/conftest.py") == set()  # a name glob matches at any depth
    assert p("src/keep.py") == ALL  # negated: every file but src/keep.py
    assert p("src/other.py") == ALL - {"TM501"}


def test_unknown_key_gets_a_suggestion_and_bad_values_one_line(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.torchmend]\nselct = ['TM2']\n")
    with pytest.raises(ConfigError) as e:
        resolve(CliOptions(), cwd=str(tmp_path))
    assert "unknown key 'selct'" in str(e.value) and "did you mean 'select'?" in str(e.value)
    write(tmp_path, "pyproject.toml", "[tool.torchmend]\nextend-exclud = ['x']\n")
    with pytest.raises(ConfigError, match="did you mean 'extend-exclude'"):
        resolve(CliOptions(), cwd=str(tmp_path))
    write(tmp_path, "pyproject.toml", "[tool.torchmend]\nselect = ['TM9']\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.torchmend\] select: unknown rule selector 'TM9'"):
        resolve(CliOptions(), cwd=str(tmp_path))
    write(tmp_path, "pyproject.toml", "[tool.torchmend\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        resolve(CliOptions(), cwd=str(tmp_path))
    write(tmp_path, "pyproject.toml", "[tool.torchmend]\nunsafe-fixes = 'yes'\n")
    with pytest.raises(ConfigError, match="unsafe-fixes must be true or false"):
        resolve(CliOptions(), cwd=str(tmp_path))
    r = tm("check", ".", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and "unsafe-fixes" in r.stderr.decode()


def test_load_config_nearest(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2"]\nunsafe-fixes = true\nexclude = ["exp/*"]\n')
    (tmp_path / "pkg").mkdir()
    cfg = load_config(str(tmp_path / "pkg"))
    assert cfg.select == ["TM2"] and cfg.unsafe_fixes and cfg.exclude == ["exp/*"] and cfg.root == str(tmp_path)


def test_config_and_isolated(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2"]\n')
    write(tmp_path, "other.toml", 'select = ["TM5"]\n')
    x = str(tmp_path / "sub" / "x.py")
    assert resolve(CliOptions(config=str(tmp_path / "other.toml")), cwd=str(tmp_path)).for_file(x).select == {"TM501", "TM502"}
    assert resolve(CliOptions(isolated=True), cwd=str(tmp_path)).for_file(x).select == ALL
    with pytest.raises(ConfigError, match="no such file"):
        resolve(CliOptions(config=str(tmp_path / "nope.toml")))


BUG = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py")).read()
SOFTMAX = open(os.path.join(ROOT, "corpus", "softmax", "seq_softmax_last.py")).read()


def test_cli_per_directory_settings_and_excludes(tmp_path):
    """Each file runs with its own settings (the runner groups files by them), excludes
    are relative to the file that defines them, extend-exclude keeps the defaults."""
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nextend-exclude = ["gen/"]\n')
    write(tmp_path, "a/train.py", BUG)
    write(tmp_path, "a/model.py", SOFTMAX)
    write(tmp_path, "b/torchmend.toml", 'ignore = ["TM2"]\nexclude = ["skip_*.py"]\n')
    write(tmp_path, "b/train.py", BUG)
    write(tmp_path, "b/model.py", SOFTMAX)
    write(tmp_path, "b/skip_me.py", SOFTMAX)
    write(tmp_path, "b/.venv/lib.py", SOFTMAX)  # b/ replaced the default excludes: .venv is walked there
    write(tmp_path, "gen/train.py", BUG)
    write(tmp_path, "a/gen/train.py", BUG)  # "gen/" has no leading slash: any depth
    write(tmp_path, ".venv/x.py", BUG)  # the defaults still apply at the top
    r = tm("check", ".", "--no-cache", "-j", "2", cwd=tmp_path)
    out = r.stdout.decode()
    files = sorted({ln.split(":")[0] for ln in out.splitlines()})
    assert files == ["a/model.py", "a/train.py", "b/.venv/lib.py", "b/model.py"], out
    assert "b/train.py" not in out  # TM2 ignored under b/
    assert r.returncode == 1
    # --force-exclude applies the excludes to explicit paths (pre-commit passes them)
    assert tm("check", "b/skip_me.py", "--no-cache", cwd=tmp_path).returncode == 1
    r = tm("check", "b/skip_me.py", "gen/train.py", "--force-exclude", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == b"" and b"no Python files found" in r.stderr


def test_cli_unsafe_fixes_per_directory_and_cache_per_settings(tmp_path):
    unsafe_case = open(os.path.join(ROOT, "corpus", "device", "lstm_h0_zeros.py")).read()
    write(tmp_path, "a/m.py", unsafe_case)
    write(tmp_path, "b/m.py", unsafe_case)
    write(tmp_path, "b/torchmend.toml", "unsafe-fixes = true\n")
    for _ in range(2):  # cold, then from the cache: the same answer
        r = tm("diff", ".", cwd=tmp_path)
        assert b"diff --git a/b/m.py" in r.stdout and b"a/a/m.py" not in r.stdout
    # the configuration changes: the cache must not answer for the old settings
    (tmp_path / "b" / "torchmend.toml").write_text("unsafe-fixes = false\n")
    r = tm("diff", ".", cwd=tmp_path)
    assert r.stdout == b"" and r.returncode == 0


def test_cli_respect_gitignore_flag_and_config_key(tmp_path):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    write(tmp_path, ".gitignore", "generated/\n")
    write(tmp_path, "generated/train.py", BUG)
    assert tm("check", ".", "--no-cache", cwd=tmp_path).returncode == 0  # ignored by git
    r = tm("check", ".", "--no-cache", "--no-respect-gitignore", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith(b"generated/train.py:17:5: TM201")
    write(tmp_path, "torchmend.toml", "respect-gitignore = false\n")
    assert tm("check", ".", "--no-cache", cwd=tmp_path).returncode == 1
    assert tm("check", ".", "--no-cache", "--respect-gitignore", cwd=tmp_path).returncode == 0


def test_a_broken_nested_configuration_is_one_line_exit_2(tmp_path):
    write(tmp_path, "a/train.py", BUG)
    write(tmp_path, "a/deep/torchmend.toml", "selct = ['TM2']\n")
    write(tmp_path, "a/deep/x.py", BUG)
    r = tm("check", ".", "--no-cache", cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "unknown key 'selct'" in err and "internal error" not in err, err


def test_one_settings_answers_each_file_as_a_fresh_one_does(tmp_path, monkeypatch):
    """Settings remembers a directory's answer for its other files (when no per-file
    ignores apply there): relative and absolute spellings, nested configurations and
    per-file ignores get what a fresh Settings gives each file alone."""
    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2", "TM5"]\n')
    write(tmp_path, "a/torchmend.toml", 'select = ["TM1"]\n')
    write(tmp_path, "b/pyproject.toml", '[tool.torchmend]\n[tool.torchmend.per-file-ignores]\n"x.py" = ["TM2"]\n')
    monkeypatch.chdir(tmp_path)
    rels = ["t.py", "u.py", "a/t.py", "a/u.py", "a/deep/t.py", "b/x.py", "b/y.py", "b/c/x.py", "./a/t.py", "a/../t.py"]
    paths = rels + [str(tmp_path / r) for r in rels] + rels[::-1]
    shared = resolve(CliOptions(ignore=["TM502"]))
    got = [shared.for_file(p) for p in paths]
    assert got == [resolve(CliOptions(ignore=["TM502"])).for_file(p) for p in paths]
    assert got[0].select == {"TM201", "TM202", "TM501"} and got[2].select == {c for c in ALL if c.startswith("TM1")}
    assert got[5].select == ALL - {"TM201", "TM202", "TM502"} and got[6].select == ALL - {"TM502"}


def test_configurations_found_from_the_walk_are_those_found_by_looking(tmp_path, monkeypatch):
    """A walk of the tree tells each directory's configuration lookup which
    configuration files stand there (no stat per name): every file gets the settings
    and excludes a Settings that looks for itself gives it.  A directory named like a
    configuration file, a link to one, a pyproject.toml without the table and an
    excluded directory's configuration are told apart as the lookup tells them."""
    from torchmend.discovery import discover

    write(tmp_path, "pyproject.toml", '[tool.torchmend]\nselect = ["TM2", "TM5"]\nextend-exclude = ["skip"]\n')
    write(tmp_path, "a/torchmend.toml", 'select = ["TM1"]\n')
    write(tmp_path, "a/pyproject.toml", '[tool.torchmend]\nselect = ["TM3"]\n')  # torchmend.toml wins in one directory
    write(tmp_path, "b/pyproject.toml", "[project]\nname = 'b'\n")  # no table: the one above governs
    (tmp_path / "c" / "torchmend.toml").mkdir(parents=True)  # a directory, not a configuration
    write(tmp_path, "c/pyproject.toml", '[tool.torchmend]\nselect = ["TM4"]\n')
    write(tmp_path, "elsewhere/cfg.toml", 'select = ["TM301"]\nexclude = ["d2"]\n')
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "elsewhere" / "cfg.toml", tmp_path / "d" / "torchmend.toml")
    write(tmp_path, "skip/torchmend.toml", "selct = 1\n")  # never read: excluded
    for rel in ["t.py", "a/t.py", "a/deep/t.py", "b/t.py", "c/t.py", "d/t.py", "d/d2/t.py", "d/e/t.py", "skip/t.py"]:
        write(tmp_path, rel, "x = 1\n")
    monkeypatch.chdir(tmp_path)
    walked = resolve(CliOptions())
    files = discover(["."], excludes_for=walked.excludes_for, gitignore_for=walked.respect_gitignore,
                     listing=walked.listing).files
    assert files == ["a/deep/t.py", "a/t.py", "b/t.py", "c/t.py", "d/e/t.py", "d/t.py", "t.py"]
    assert walked.listing.files[str(tmp_path / "a")] == {"torchmend.toml", "pyproject.toml"}
    assert walked.listing.files[str(tmp_path / "c")] == {"pyproject.toml"}
    looked = resolve(CliOptions())
    for p in files:
        assert walked.for_file(p) == looked.for_file(p), p
        d = os.path.dirname(os.path.abspath(p))
        assert walked.excludes_for(d).patterns == looked.excludes_for(d).patterns, p
    assert walked.for_file("d/t.py").select == {"TM301"} and walked.for_file("c/t.py").select == {"TM401"}
    # the walk's lookups asked the file system nothing about the configuration names
    # or the walked directories (the given path is asked about, and the .gitignore
    # files above it)
    calls = []
    isfile, isdir = os.path.isfile, os.path.isdir
    monkeypatch.setattr(os.path, "isfile", lambda p: calls.append(p) or isfile(p))
    monkeypatch.setattr(os.path, "isdir", lambda p: calls.append(p) or isdir(p))
    again = resolve(CliOptions())
    calls.clear()
    discover(["."], excludes_for=again.excludes_for, gitignore_for=again.respect_gitignore, listing=again.listing)
    for p in files:
        again.for_file(p)
    from torchmend.config import CONFIG_NAMES

    walked_dirs = set(again.listing.files)
    assert str(tmp_path) in walked_dirs and len(walked_dirs) == 9  # (not d/d2 and skip: excluded)
    assert [c for c in calls if os.path.basename(c) in CONFIG_NAMES or os.path.abspath(c) in walked_dirs] == ["."]


def test_a_configuration_name_in_another_case_is_looked_up(tmp_path, monkeypatch):
    """The walk lists ``PyProject.toml`` too: whether ``pyproject.toml`` finds it is the
    file system's answer (a case-insensitive one does), as without the listing."""
    from torchmend.discovery import discover

    write(tmp_path, "sub/PyProject.toml", '[tool.torchmend]\nselect = ["TM2"]\n')
    write(tmp_path, "sub/t.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    walked = resolve(CliOptions())
    discover(["."], excludes_for=walked.excludes_for, gitignore_for=walked.respect_gitignore, listing=walked.listing)
    assert walked.listing.files[str(tmp_path / "sub")] == {"PyProject.toml"}
    insensitive = os.path.isfile(str(tmp_path / "sub" / "pyproject.toml"))
    assert walked.for_file("sub/t.py") == resolve(CliOptions()).for_file("sub/t.py")
    assert (walked.for_file("sub/t.py").select == {"TM201", "TM202"}) is insensitive
