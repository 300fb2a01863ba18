"""Command-line conventions, end to end in subprocesses: streams, formats, colour,
exit codes (internal error, [info] advice, Ctrl-C), standard input, version, help,
completion, diff paths from a subdirectory, statistics / show-fixes / verbose."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.corpus_cases import ROOT
from torchmend.registry import codes

BUG = os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py")
FIXED = os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.expected.py")
INFO = os.path.join(ROOT, "corpus", "main_guard", "tutorial_loop.py")  # TM301 bug + [info] advice


def tm(*args, cwd=None, input=None, env=None):
    e = {**os.environ, "PYTHONPATH": ROOT}
    for k in ("FORCE_COLOR", "NO_COLOR"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchmend", *args], cwd=cwd, env=e, capture_output=True, input=input)


def git(cwd, *args, input=None):
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, env=env, input=input, capture_output=True)


@pytest.fixture
def work(tmp_path):
    shutil.copy(BUG, tmp_path / "train.py")
    return tmp_path


def test_version_help_and_completion():
    from torchmend import __version__

    for flag in ("--version", "-V"):
        r = tm(flag)
        assert r.returncode == 0 and r.stdout.decode() == f"torchmend {__version__}\n"
    h = tm("check", "--help").stdout.decode()
    assert "Usage: torchmend check [OPTIONS] PATHS..." in h
    assert "<list[str]>" not in h and "{paths}" not in h.lower()
    for opt in ("--output-format", "--statistics", "--add-noqa", "--stdin-filename", "--extend-select", "--force-exclude", "--no-respect-gitignore"):
        assert opt in h, opt
    top = tm("--help").stdout.decode()
    assert "--install-completion" in top and "--show-completion" in top
    r = tm(env={"_TORCHMEND_COMPLETE": "complete_bash", "COMP_WORDS": "torchmend ch", "COMP_CWORD": "1"})
    assert r.stdout.decode().split() == ["check"]


def test_check_prints_findings_on_stdout_and_diff_keeps_stdout_for_the_diff(work):
    r = tm("check", "train.py", "--no-cache", cwd=work)
    assert r.returncode == 1
    assert r.stdout.decode().startswith("train.py:17:5: TM201 [bug] ")
    assert r.stderr.decode().startswith("torchmend: 1 file scanned (")  # "1 file", not "1 files"
    d = tm("diff", "train.py", "--no-cache", "--unsafe-fixes", cwd=work)
    assert d.returncode == 1 and d.stdout.startswith(b"diff --git a/train.py b/train.py\n")
    assert b"TM201" not in d.stdout  # findings never mix into the patch


def test_colour_only_on_request_when_piped(work):
    plain = tm("check", "train.py", "--no-cache", cwd=work)
    assert b"\x1b[" not in plain.stdout + plain.stderr
    forced = tm("check", "train.py", "--no-cache", cwd=work, env={"FORCE_COLOR": "1"})
    assert b"\x1b[31;1mTM201\x1b[0m" in forced.stdout
    both = tm("check", "train.py", "--no-cache", cwd=work, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert b"\x1b[" not in both.stdout
    d = tm("diff", "train.py", "--no-cache", cwd=work, env={"FORCE_COLOR": "1"})
    assert b"\x1b[32m+    opt.zero_grad()\x1b[0m" in d.stdout


def test_output_formats_from_the_command_line(work):
    r = tm("check", "train.py", "--no-cache", "--output-format", "json", cwd=work)
    data = json.loads(r.stdout)
    assert r.returncode == 1 and [d["code"] for d in data] == ["TM201"]
    assert data[0]["fix"]["edits"] == [{"content": "    opt.zero_grad()\n", "location": {"row": 15, "column": 1}, "end_location": {"row": 15, "column": 1}}]
    gh = tm("check", "train.py", "--no-cache", "--output-format", "github", cwd=work).stdout.decode()
    assert gh.startswith("::error title=torchmend (TM201),file=train.py,line=17,col=5,endLine=17,endColumn=15::train.py:17:5: TM201 ")
    for fmt in ("json-lines", "sarif", "gitlab", "junit", "full", "concise"):
        r = tm("check", "train.py", "--no-cache", "--output-format", fmt, cwd=work)
        assert r.returncode == 1 and r.stdout, fmt
    assert tm("check", "train.py", "--output-format", "xml", cwd=work).returncode == 2
    st = tm("check", "train.py", "--no-cache", "--statistics", cwd=work)
    assert st.stdout.decode() == "1\tTM201\t[*] missing-zero-grad\n"


def test_apply_show_fixes_exit_non_zero_on_fix_and_info_advice(work):
    shutil.copy(INFO, work / "tutorial.py")
    r = tm("apply", "train.py", "--no-cache", "--show-fixes", cwd=work)
    assert r.returncode == 0, r.stderr.decode()  # everything fixed: nothing left
    assert "Fixed 1 finding:\n- train.py:\n    1 × TM201 (missing-zero-grad)\n" in r.stdout.decode()
    assert open(work / "train.py").read() == open(FIXED).read()
    shutil.copy(BUG, work / "train.py")
    assert tm("apply", "train.py", "--no-cache", "--exit-non-zero-on-fix", cwd=work).returncode == 1
    # the TM301 bug is fixed; the [info] advice that remains is printed but does not fail
    r = tm("apply", "tutorial.py", "--no-cache", cwd=work)
    assert "[info]" in r.stdout.decode() and r.returncode == 0, r.stdout.decode() + r.stderr.decode()


def test_no_python_files_warning_and_verbose(tmp_path):
    (tmp_path / "notes.txt").write_text("hi\n")
    r = tm("check", ".", cwd=tmp_path)
    assert r.returncode == 0 and "warning: no Python files found" in r.stderr.decode()
    shutil.copy(BUG, tmp_path / "t.py")
    (tmp_path / "torchmend.toml").write_text('select = ["TM2"]\n')
    v = tm("check", ".", "-v", "--no-cache", cwd=tmp_path).stderr.decode()
    assert "torchmend: configuration: torchmend.toml" in v and "torchmend: t.py: analysed, 1 finding" in v


def test_stdin_check_diff_apply(work):
    src = open(BUG, "rb").read()
    r = tm("check", "-", "--stdin-filename", "pkg/train.py", cwd=work, input=src)
    assert r.returncode == 1 and r.stdout.decode().startswith("pkg/train.py:17:5: TM201")
    d = tm("diff", "-", "--stdin-filename", "pkg/train.py", cwd=work, input=src)
    assert d.returncode == 1 and d.stdout.startswith(b"diff --git a/pkg/train.py b/pkg/train.py\n")
    a = tm("apply", "-", "--stdin-filename", "train.py", cwd=work, input=src)
    assert a.returncode == 0 and a.stdout == open(FIXED, "rb").read()
    assert open(work / "train.py", "rb").read() == src  # nothing written
    # unparsable input: the input back on stdout (nothing lost), one error line, exit 2
    bad = b"import torch\nfor x in loader:\n    optimizer.step()\n    loss.backward(\n"
    a = tm("apply", "-", cwd=work, input=bad)
    assert a.returncode == 2 and a.stdout == bad and "-: error: syntax error" in a.stderr.decode()
    # the configuration of the named file applies to standard input
    (work / "pkg").mkdir()
    (work / "pkg" / "torchmend.toml").write_text('ignore = ["TM201"]\n')
    r = tm("check", "-", "--stdin-filename", "pkg/train.py", cwd=work, input=src)
    assert r.returncode == 0 and r.stdout == b""
    assert tm("check", "-", "x.py", cwd=work, input=src).returncode == 2


def test_diff_from_a_subdirectory_applies_at_the_root(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "src").mkdir()
    shutil.copy(BUG, tmp_path / "src" / "train.py")
    d = tm("diff", ".", "--no-cache", cwd=tmp_path / "src")
    assert d.stdout.startswith(b"diff --git a/src/train.py b/src/train.py\n")  # as git diff prints it
    assert git(tmp_path, "apply", "--check", "-", input=d.stdout).returncode == 0
    (tmp_path / "m.patch").write_bytes(d.stdout)
    # torchmend apply --patch resolves the names at the repository root, from anywhere in it
    r = tm("apply", "--patch", "../m.patch", cwd=tmp_path / "src")
    assert r.returncode == 0, r.stderr.decode()
    assert open(tmp_path / "src" / "train.py").read() == open(FIXED).read()
    # findings stay relative to the current directory (clickable)
    shutil.copy(BUG, tmp_path / "src" / "train.py")
    assert tm("check", ".", "--no-cache", cwd=tmp_path / "src").stdout.startswith(b"train.py:17:5:")
    # GitHub annotations name the file from the repository root, as GitHub does
    gh = tm("check", ".", "--no-cache", "--output-format", "github", cwd=tmp_path / "src").stdout.decode()
    assert gh.startswith("::error title=torchmend (TM201),file=src/train.py,line=17,") and "::train.py:17:5: TM201" in gh


def test_undecodable_file_name_end_to_end(tmp_path):
    git(tmp_path, "init", "-q")
    name = os.fsencode(str(tmp_path)) + b"/tr\xe9in.py"
    with open(name, "wb") as f:
        f.write(open(BUG, "rb").read())
    r = tm("check", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith(b"tr\\xe9in.py:17:5: TM201"), r.stdout + r.stderr
    d = tm("diff", ".", "--no-cache", cwd=tmp_path)
    assert d.stdout.startswith(b'diff --git "a/tr\\351in.py" "b/tr\\351in.py"\n')
    assert git(tmp_path, "apply", "--check", "-", input=d.stdout).returncode == 0


def test_rules_json():
    r = tm("rules", "--output-format", "json")
    data = json.loads(r.stdout)
    assert r.returncode == 0 and [d["code"] for d in data] == list(codes())
    assert all(set(d) == {"code", "name", "pitfall", "severity", "summary", "explanation"} for d in data)
    assert tm("rules", "--output-format", "yaml").returncode == 2


def test_internal_error_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    """An uncaught exception (torchmend's own bug) is exit 2 with one line, not a
    traceback and exit 1 (which CI would read as findings)."""
    import torchmend.runner
    from torchmend.cli.main import run_cli

    def boom(*a, **k):
        raise RuntimeError("something broke\nsecond line")

    shutil.copy(BUG, tmp_path / "t.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torchmend.runner, "run", boom)
    assert run_cli(["check", "t.py", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("torchmend: internal error: RuntimeError: something broke (a bug in torchmend: please report")
    # usage errors are 2 as well
    assert run_cli(["check", "--no-such-option"]) == 2


def test_ctrl_c_exits_130(tmp_path):
    for i in range(800):
        shutil.copy(BUG, tmp_path / f"t{i}.py")
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.Popen([sys.executable, "-m", "torchmend", "check", ".", "-j", "1", "--no-cache"], cwd=tmp_path,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(5)
    if p.poll() is not None:
        pytest.skip("the run ended before the signal (machine too fast for this tree)")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err.decode()
    assert b"Traceback" not in err


def test_python_m_runs_no_file_of_the_tree_it_checks(tmp_path):
    """``python -m torchmend`` in a tree whose files are named like modules the tool
    imports (``typing.py``; ``grp.py``, which ``shutil`` imports): none of them runs (the
    working directory, which ``-m`` puts first on the module path, is taken off before
    anything is imported), and the check runs as usual."""
    shutil.copy(BUG, tmp_path / "train.py")
    for name in ("typing", "grp", "dataclasses", "enum", "hashlib"):
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / ('ran_' + name))!r}, 'w').close()\n")
    for args in (("check", "--no-cache", "train.py"), ("diff", "--no-cache", "train.py")):
        r = tm(*args, cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert b"TM201" in r.stdout + r.stderr
    assert not sorted(p.name for p in tmp_path.glob("ran_*"))


def test_a_program_that_imports_torchmend_keeps_its_module_path(tmp_path):
    """Only torchmend's own command line loses the working directory: a program run with
    ``-m`` that imports torchmend keeps its module path as Python set it."""
    (tmp_path / "mytool").mkdir()
    (tmp_path / "mytool" / "__init__.py").write_text("import sys\nimport torchmend\nprint(sys.path[0])\n")
    (tmp_path / "mytool" / "__main__.py").write_text("")
    r = subprocess.run([sys.executable, "-m", "mytool"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == os.path.realpath(tmp_path)
