import os

from torchmend.config import ConfigError, load_config
from torchmend.discovery import discover


def test_discovery_excludes_gitignore_and_links(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored/\n*_gen.py\n")
    for p in ["a.py", "sub/b.py", "ignored/c.py", "x_gen.py", ".venv/lib/d.py", "build/e.py", "notes.txt", "sub/__pycache__/f.py"]:
        f = tmp_path / p
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x = 1\n")
    outside = tmp_path.parent / "outside_target.py"
    outside.write_text("y = 1\n")
    os.symlink(outside, tmp_path / "link_out.py")
    os.symlink(tmp_path / "a.py", tmp_path / "sub" / "link_in.py")
    monkeypatch.chdir(tmp_path)
    d = discover(["."], exclude=("sub/skip*",))
    assert d.files == ["a.py", os.path.join("sub", "b.py")]
    assert [p for p, _ in d.errors] == ["link_out.py"]
    # explicit files are taken even when a directory walk would skip them
    assert discover(["x_gen.py"]).files == ["x_gen.py"]
    assert discover(["nope.py"]).errors[0][1] == "no such file or directory"
    assert discover(["."], exclude=("sub",)).files == ["a.py"]


def test_config_from_nearest_pyproject(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.torchmend]\nselect = ["TM2"]\nunsafe-fixes = true\nexclude = ["exp/*"]\n')
    (tmp_path / "pkg").mkdir()
    cfg = load_config(str(tmp_path / "pkg"))
    assert cfg.select == ["TM2"] and cfg.unsafe_fixes and cfg.exclude == ["exp/*"]
    (tmp_path / "pyproject.toml").write_text("[tool.torchmend]\nselec = 1\n")
    try:
        load_config(str(tmp_path))
    except ConfigError as e:
        assert "unknown key" in str(e)
    else:
        raise AssertionError("typo in config must be an error")
