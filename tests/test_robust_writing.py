"""Robustness, writing: a write never goes through a symbolic link, never replaces a file
other than the one read, keeps mode, owner and group, and does not break hard links
silently (issue 12, item 5)."""

import os
import stat
import subprocess
import sys

import pytest

from torchmend.engine import Options, process_file
from torchmend.sourcefile import SourceError, atomic_write, read_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TM = [sys.executable, "-m", "torchmend"]
BUG = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py"), "rb").read()
FIXED = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.expected.py"), "rb").read()


def tm(*args, cwd):
    return subprocess.run(TM + list(args) + ["--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_apply_on_a_link_out_of_the_tree_leaves_the_outside_file_alone(tmp_path):
    outside = tmp_path / "outside"
    proj = tmp_path / "proj"
    outside.mkdir()
    proj.mkdir()
    (outside / "victim.py").write_bytes(BUG)
    os.symlink("../outside/victim.py", proj / "link.py")
    p = tm("apply", "link.py", cwd=proj)
    assert p.returncode == 2
    assert p.stderr.splitlines()[0] == f"link.py: error: symbolic link to {outside / 'victim.py'}, outside the given paths and the current directory: skipped"
    assert (outside / "victim.py").read_bytes() == BUG
    assert os.path.islink(proj / "link.py")


def test_a_link_inside_the_tree_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real.py").write_bytes(BUG)
    os.symlink("real.py", tmp_path / "link.py")
    p = tm("apply", "link.py", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "real.py").read_bytes() == FIXED
    assert os.readlink(tmp_path / "link.py") == "real.py"


def test_a_file_swapped_for_a_symlink_after_reading_is_not_written_through(tmp_path):
    target = tmp_path / "t.py"
    target.write_bytes(BUG)
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(BUG)  # same bytes: the content check alone would not notice
    src = read_source(str(target))
    os.unlink(target)
    os.symlink(elsewhere, target)
    with pytest.raises(SourceError, match="replaced by a symbolic link since it was read, not written"):
        src.write(FIXED)
    assert elsewhere.read_bytes() == BUG and os.path.islink(target)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".torchmend-")]


def test_a_file_replaced_by_another_after_reading_is_not_overwritten(tmp_path):
    target = tmp_path / "t.py"
    target.write_bytes(BUG)
    src = read_source(str(target))
    os.rename(target, tmp_path / "moved.py")
    target.write_bytes(BUG)  # same name, same bytes, another inode
    with pytest.raises(SourceError, match="replaced by another file since it was read"):
        src.write(FIXED)
    assert target.read_bytes() == BUG


def test_atomic_write_refuses_a_link_it_was_not_told_about(tmp_path):
    (tmp_path / "real.py").write_bytes(BUG)
    os.symlink("real.py", tmp_path / "l.py")
    with pytest.raises(SourceError, match="symbolic link: not written through"):
        atomic_write(str(tmp_path / "l.py"), FIXED)
    assert (tmp_path / "real.py").read_bytes() == BUG


def test_hard_links_are_reported_not_broken(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(BUG)
    os.link(a, b)
    p = tm("apply", "a.py", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines()[0].startswith("a.py: error: has 2 hard links: an atomic rewrite would detach it from the other names, not written")
    assert a.read_bytes() == b.read_bytes() == BUG and os.stat(a).st_ino == os.stat(b).st_ino


def test_permission_bits_kept(tmp_path):
    p = tmp_path / "t.py"
    p.write_bytes(BUG)
    os.chmod(p, 0o751)
    r = process_file(str(p), Options(write=True))
    assert r.written and stat.S_IMODE(os.stat(p).st_mode) == 0o751


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give files away")
def test_owner_and_group_kept_when_root_rewrites(tmp_path):
    p = tmp_path / "t.py"
    p.write_bytes(BUG)
    os.chown(p, 12345, 23456)
    r = process_file(str(p), Options(write=True))
    assert r.written and p.read_bytes() == FIXED
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (12345, 23456)


def test_read_only_file_refused(tmp_path):
    p = tmp_path / "t.py"
    p.write_bytes(BUG)
    os.chmod(p, 0o444)
    r = process_file(str(p), Options(write=True))
    assert r.error == "read-only file, not written" and p.read_bytes() == BUG


def test_a_write_that_fails_midway_leaves_the_file_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "t.py"
    p.write_bytes(BUG)
    src = read_source(str(p))
    import errno

    from torchmend import sourcefile

    real_write = os.write

    def full(fd, data):
        if fd > 2 and len(data) > 10:
            real_write(fd, bytes(data[:10]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(sourcefile.os, "write", full)
    with pytest.raises(SourceError, match=r"cannot write: no space left on the device \(ENOSPC\), file unchanged"):
        src.write(FIXED)
    monkeypatch.undo()
    assert p.read_bytes() == BUG
    assert os.listdir(tmp_path) == ["t.py"]
