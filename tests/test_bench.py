"""The benchmark's generator (bench/): deterministic, and every pitfall template is
reported by its rules (the generated tree measures real work)."""

import ast
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import generate  # noqa: E402
from torchmend import registry  # noqa: E402


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


@pytest.mark.parametrize("pitfall", sorted(p for p in generate.TRAIN_PITFALLS if p != "clean"))
def test_each_pitfall_template_is_found_by_its_rules(pitfall):
    from torchmend.engine import Options, process_text

    src = generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS[pitfall]
    found = {registry.by_code(f.code).pitfall for f in process_text("train.py", src, Options(fix=False)).findings}
    assert pitfall in found, (pitfall, found)


def test_clean_script_has_no_finding():
    from torchmend.engine import Options, process_text

    src = generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS["clean"]
    assert process_text("train.py", src, Options(fix=False)).findings == []


def test_soundness_script_compares_and_reports(tmp_path):
    import subprocess

    generate.generate(str(tmp_path / "mono"), 40, seed=4)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, os.path.join(root, "bench", "soundness.py"), "--tree", str(tmp_path / "mono"), "--files", "30", "--seed", "2", "--mode", "diff", "--jobs", "2"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "differing files 0" in out.stdout and out.stdout.startswith("diff: 30 files (seed 2)")
    assert "findings 0 shipped" not in out.stdout and "files with changes 0;" not in out.stdout  # not vacuous


# --------------------------------------------------------------------------- real-code tooling
import hashlib  # noqa: E402
import subprocess  # noqa: E402
import zipfile  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import realcode  # noqa: E402
import triage  # noqa: E402

TRAIN = generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS["zero_grad"]


def _git(*args, cwd=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _mirror(tmp_path):
    """A one-commit repository mirrored as MIRROR/owner+name/repo (bare); its commit."""
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "train.py").write_text(TRAIN)
    (work / "pkg" / "__init__.py").write_text("VERSION = 1\n")
    (work / "README.txt").write_text("not python\n")
    os.symlink("pkg/train.py", work / "link.py")
    _git("init", "-q", str(work))
    _git("add", "-A", cwd=work)
    _git("commit", "-qm", "one", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    (work / "pkg" / "later.py").write_text("x = 1\n")  # after the pinned commit
    _git("add", "-A", cwd=work)
    _git("commit", "-qm", "two", cwd=work)
    _git("clone", "-q", "--bare", str(work), str(tmp_path / "mirror" / "owner+tiny" / "repo"))
    return commit


def _wheel(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    p = wheels / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("tinypkg/__init__.py", "a = 1\nb = 2\n")
        z.writestr("tinypkg/data.json", "{}")
        z.writestr("tinypkg-1.0.dist-info/METADATA", "Name: tinypkg\n")
    return realcode.Wheel("tinypkg", "1.0", p.name, hashlib.sha256(p.read_bytes()).hexdigest())


def test_realcode_builds_from_a_local_mirror_writes_the_manifest_and_reuses_it(tmp_path):
    commit = _mirror(tmp_path)
    wheel = _wheel(tmp_path)
    srcs = [wheel, realcode.Repo("owner/tiny", commit)]
    dest = tmp_path / "tree"
    log = []
    entries = realcode.build(str(dest), str(tmp_path / "mirror"), str(tmp_path / "wheels"), srcs=srcs, log=log.append)
    by = {e.source: e for e in entries}
    assert (by["tinypkg"].files, by["tinypkg"].lines, by["tinypkg"].version) == (1, 2, "1.0")
    # the pinned commit, not the mirror's HEAD; .py blobs only, no symbolic link
    assert (by["owner/tiny"].files, by["owner/tiny"].version, by["owner/tiny"].missing) == (2, commit, 0)
    assert by["owner/tiny"].lines == TRAIN.count("\n") + 1
    assert sorted(os.listdir(dest / "owner+tiny")) == ["pkg"] and sorted(os.listdir(dest / "owner+tiny" / "pkg")) == ["__init__.py", "train.py"]
    assert (dest / "owner+tiny" / "pkg" / "train.py").read_text() == TRAIN
    assert sorted(os.listdir(dest / "tinypkg-1.0" / "tinypkg")) == ["__init__.py"]
    # the manifest on disk says the same, and the sources' stable names come from it
    assert [e.row() for e in realcode.read_manifest(str(dest))] == [e.row() for e in entries]
    assert realcode.source_of_dir("owner+tiny", str(dest)) == "owner/tiny"
    assert "owner/tiny" in realcode.format_manifest(entries) and "total" in realcode.format_manifest(entries)
    # idempotent: a second build reuses both sources without rewriting them
    before = os.stat(dest / "owner+tiny" / "pkg" / "train.py").st_mtime_ns
    log.clear()
    again = realcode.build(str(dest), str(tmp_path / "mirror"), str(tmp_path / "wheels"), srcs=srcs, log=log.append)
    assert [e.row() for e in again] == [e.row() for e in entries]
    assert log == ["reused  tinypkg-1.0", "reused  owner+tiny"]
    assert os.stat(dest / "owner+tiny" / "pkg" / "train.py").st_mtime_ns == before
    # a changed pin rebuilds; a wheel whose bytes differ from the pin is refused
    bad = realcode.Wheel("tinypkg", "1.0", wheel.filename, "0" * 64)
    with pytest.raises(realcode.BuildError, match="sha256"):
        realcode.build(str(dest), None, str(tmp_path / "wheels"), srcs=[bad], log=log.append)


def test_realcode_reports_blobs_the_mirror_lacks(tmp_path):
    commit = _mirror(tmp_path)
    bare = tmp_path / "mirror" / "owner+tiny" / "repo"
    blob = _git("--git-dir", str(bare), "rev-parse", f"{commit}:pkg/__init__.py")
    # unpack, then drop one loose object: the tree still lists it
    _git("--git-dir", str(bare), "repack", "-a", "-d")
    packs = list((bare / "objects" / "pack").glob("*.pack"))
    for pk in packs:
        moved = tmp_path / pk.name
        os.replace(pk, moved)
        os.remove(str(pk)[:-5] + ".idx")
        with open(moved, "rb") as f:
            subprocess.run(["git", "--git-dir", str(bare), "unpack-objects", "-q"], stdin=f, check=True)
    os.remove(bare / "objects" / blob[:2] / blob[2:])
    e = realcode.build(str(tmp_path / "tree"), str(tmp_path / "mirror"), srcs=[realcode.Repo("owner/tiny", commit)], log=lambda s: None)[0]
    assert (e.files, e.missing) == (1, 1)


def _triage_tree(tmp_path, shift=0):
    tree = tmp_path / "tree"
    (tree / "owner+repo" / "scripts").mkdir(parents=True, exist_ok=True)
    (tree / "owner+repo" / "scripts" / "train.py").write_text("# pad\n" * shift + TRAIN)
    (tree / "owner+repo" / "clean.py").write_text("x = 1\n")
    return tree


def _triage(tmp_path, tree, *extra):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        rc = triage.main(["--tree", str(tree), "--jobs", "1", "--verdicts", str(tmp_path / "v.tsv"),
                          "--rows", str(tmp_path / "rows.jsonl"), "--unjudged", str(tmp_path / "unjudged.md"), *extra])
    return rc, buf.getvalue()


def test_triage_rows_ids_and_verdicts_survive_a_line_shift(tmp_path):
    tree = _triage_tree(tmp_path)
    rc, out = _triage(tmp_path, tree, "--check")
    rows, _ = triage.load_rows(str(tmp_path / "rows.jsonl"))
    kinds = sorted((r.code, r.kind) for r in rows)
    assert kinds == [("TM201", "finding"), ("TM201", "safe-rewrite")]
    f = next(r for r in rows if r.kind == "finding")
    assert f.source == "owner/repo" and f.path == "scripts/train.py"
    assert f.text == TRAIN.splitlines()[f.line - 1] and f.text.strip()
    assert f.id == f"owner/repo:scripts/train.py:TM201:finding:{f.line}:{triage.line_hash(f.text)}"
    rw = next(r for r in rows if r.kind == "safe-rewrite")
    assert "+" in rw.hunk and "zero_grad()" in rw.hunk and rw.hunk.startswith("@@")
    assert rc == 1 and "2 unjudged" in out and "FAILED" in out
    assert f.id in (tmp_path / "unjudged.md").read_text()
    # judge both; --check passes
    (tmp_path / "v.tsv").write_text("id\tverdict\twhy\n" + "".join(f"{r.id}\tTP\treal bug\n" for r in rows))
    rc, out = _triage(tmp_path, tree, "--check")
    assert rc == 0 and "TM201  finding             1    1    0        0      100%" in out
    assert "every safe rewrite right: 1 TP, 0 FP, 0 unjudged of 1: precision 100%: met" in out
    # three lines added upstream: new ids, same verdicts (matched by the line's text)
    tree = _triage_tree(tmp_path, shift=3)
    rc, out = _triage(tmp_path, tree, "--check")
    moved, _ = triage.load_rows(str(tmp_path / "rows.jsonl"))
    assert [r.line for r in moved] == [r.line + 3 for r in rows] and {r.id for r in moved}.isdisjoint({r.id for r in rows})
    assert rc == 0 and "2 verdict(s) applied after a line shift" in out
    # a wrong safe rewrite fails --check even when every row is judged
    (tmp_path / "v.tsv").write_text("".join(f"{r.id}\t{'FP' if r.kind == 'safe-rewrite' else 'TP'}\tx\n" for r in rows))
    rc, out = _triage(tmp_path, tree, "--check")
    assert rc == 1 and "1 wrong safe rewrite(s)" in out and "every safe rewrite right: 0 TP, 1 FP" in out


def test_triage_verdict_file_errors_and_duplicate_ids(tmp_path):
    (tmp_path / "v.tsv").write_text("a:b.py:TM201:finding:3:abcd1234\tMAYBE\twhy\n")
    with pytest.raises(triage.VerdictError, match="v.tsv:1"):
        triage.read_verdicts(str(tmp_path / "v.tsv"))
    row = dict(source="s", path="p.py", code="TM102", kind="finding", line=5, col=1, hash="h", severity="bug", safety="unsafe", message="m", text="t", context="")
    rows = triage.uniquify([triage.Row(id="s:p.py:TM102:finding:5:h", **row), triage.Row(id="s:p.py:TM102:finding:5:h", **{**row, "col": 9})])
    assert [r.id for r in rows] == ["s:p.py:TM102:finding:5:h", "s:p.py:TM102:finding:5:h#2"]
    assert triage.parse_id(rows[1].id) == (("s", "p.py", "TM102", "finding", "h"), 5)
    assert triage.parse_id("pytorch/examples:dcgan/main.py:TM301:safe-rewrite:107:e3ff621e") == (("pytorch/examples", "dcgan/main.py", "TM301", "safe-rewrite", "e3ff621e"), 107)


def test_run_py_prints_the_ratio_lines_last_on_a_tiny_real_tree(tmp_path):
    tree = _triage_tree(tmp_path)
    (tree / "owner+repo" / "modeling_tiny.py").write_text(generate.HEADER_TORCH + generate.NET * 3)
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "run.py"), "--real", str(tree), "--jobs", "1", "--libcst-sample", "2", "--big-lines", "60"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert "tree: 3 files" in out.stdout and "torchmend diff --no-cache (cold)" in out.stdout
    assert "one large file:" in out.stdout and "(valid: ast.parse)" in out.stdout
    assert "check cold: torchmend: 3 files scanned" in out.stdout
    import shutil

    if shutil.which("ruff") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "ruff")):
        assert "NOT FOUND" in lines[0]
        pytest.skip("ruff is not installed: no ratio lines")
    import re

    assert re.fullmatch(r"ratio torchmend check cold / ruff: \d+\.\d\dx  \(real code, 3 files\)", lines[-2]), lines[-2]
    assert re.fullmatch(r"ratio torchmend diff cold / ruff: \d+\.\d\dx  \(real code, 3 files\)", lines[-1]), lines[-1]


def test_big_file_is_valid_python_of_whole_files(tmp_path):
    import run as benchrun

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "modeling_a.py").write_text("from __future__ import annotations\nx = 1\n")  # must not come after code
    (tmp_path / "a" / "modeling_b.py").write_text("class B:\n    pass")  # no trailing newline
    (tmp_path / "a" / "modeling_c.py").write_text("def c(:\n")  # does not parse
    (tmp_path / "a" / "modeling_d.py").write_text("y = 2\n")
    src, used = benchrun.big_file_source(str(tmp_path), 100)
    assert used == 2 and src == "class B:\n    pass\ny = 2\n"
    ast.parse(src)
    # under a byte limit (torchmend skips files over 4 MiB) the files with the shortest lines go first
    src, used = benchrun.big_file_source(str(tmp_path), 100, max_bytes=len("y = 2\n"))
    assert (src, used) == ("y = 2\n", 1)


def test_soundness_differences_name_what_differs():
    import soundness

    f = ("TM102", 3, 9, "m", False, "UNSAFE")
    shipped = {"a.py": ([f], b"", [], None), "b.py": ([], b"", [], None), "c.py": ([], b"", [], "syntax error at 1:1: x"), "d.py": ([], b"", [], None)}
    off = {"a.py": ([], b"", [], None), "b.py": ([f], b"--- a\n", [], None), "c.py": ([], b"", [], None), "d.py": ([], b"", [], "syntax error at 2:1: y")}
    d = soundness.differences(shipped, off)
    assert sorted(d) == ["a.py", "b.py", "c.py"]  # d.py: only the pre-filter kept it from the parser
    assert "finding only as shipped: TM102 3:9" in d["a.py"][0]
    assert "finding only with shortcuts off" in d["b.py"][0] and "diff differs" in d["b.py"][1]
    assert "error: shipped 'syntax error" in d["c.py"][0]


def test_triage_per_source_makes_each_top_directory_its_own_project(tmp_path):
    tree = tmp_path / "tree"
    (tree / "a+one").mkdir(parents=True)
    (tree / "b+two").mkdir()
    (tree / "a+one" / "main.py").write_text(generate.HEADER_TORCH + generate.NET + generate.TRAIN_PITFALLS["main_guard"])
    (tree / "b+two" / "cli.py").write_text("from tool import main\n")  # another project's import of a `main`
    rc, out = _triage(tmp_path, tree, "--per-source")
    rows, _ = triage.load_rows(str(tmp_path / "rows.jsonl"))
    mine = {(r.source, r.path, r.code, r.kind) for r in rows}
    assert ("a/one", "main.py", "TM301", "finding") in mine
    assert ("a/one", "main.py", "TM301", "safe-rewrite") in mine  # b/two is not part of a/one's project


def test_instructions_picks_every_kth_gated_file_and_lays_out_a_version(tmp_path, monkeypatch):
    """bench/instructions.py: the workload is every K-th file a gate lets through (or of
    all files), by path; a version is laid out as the installed package (its ``cli``
    inside ``torchmend``); without valgrind it measures nothing and says so."""
    import instructions

    tree = tmp_path / "t"
    tree.mkdir()
    for i in range(6):
        body = "import torch\nloss.backward()\nopt.step()\n" if i % 2 == 0 else "x = 1\n"
        (tree / f"m{i}.py").write_text(body)
    assert instructions.gated_files(str(tree), 1, False) == ["m0.py", "m2.py", "m4.py"]
    assert instructions.gated_files(str(tree), 2, False) == ["m0.py", "m4.py"]
    assert instructions.gated_files(str(tree), 3, True) == ["m0.py", "m3.py"]
    pkg = instructions.package_for("WORKTREE", str(tmp_path / "v"))
    assert os.path.isfile(os.path.join(pkg, "torchmend", "engine.py"))
    assert os.path.isfile(os.path.join(pkg, "torchmend", "cli", "main.py"))
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main(["--tree", str(tree)]) == 2


def test_ab_runs_two_versions_and_ruff_alternately_and_prints_the_ratios_last(tmp_path):
    """bench/ab.py: each round runs both versions' ``check`` (and Ruff when installed) one
    after the other; the ratio lines (medians of the rounds' pairs) come last."""
    import re

    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "m.py").write_text("import torch\nfor x, y in loader:\n    loss.backward()\n    opt.step()\n")
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "ab.py"), "--tree", str(tree), "--rev", "WORKTREE", "--rev", "WORKTREE",
         "--rounds", "2"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert len([ln for ln in lines if ln.startswith("  round ")]) == 2
    ratios = [ln for ln in lines if ln.startswith("ratio ")]
    assert ratios and lines[-len(ratios):] == ratios
    assert re.fullmatch(r"ratio WORKTREE#2 / WORKTREE#1: wall \d+\.\d{3}x, CPU \d+\.\d{3}x \(medians of the rounds' pairs\)", ratios[0])
