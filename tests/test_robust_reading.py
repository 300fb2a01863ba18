"""Robustness, reading: only regular files are read, never more than the size limit, and
what cannot be read says why (issue 12, items 2 and 6)."""

import codecs
import os
import socket
import subprocess
import sys

import pytest

from torchmend.engine import Options, process_file
from torchmend.sourcefile import MAX_BYTES, SourceError, read_source, syntax_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TM = [sys.executable, "-m", "torchmend"]
BUG = open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py"), "rb").read()


def _error(path, **kw):
    r = process_file(str(path), Options(**kw))
    assert r.error is not None and "\n" not in r.error, r
    return r.error


def test_symlink_to_dev_zero_given_as_a_path_is_refused_before_reading(tmp_path):
    link = tmp_path / "z.py"
    os.symlink("/dev/zero", link)
    assert _error(link) == "a character device, not a regular file: skipped"
    # the command line, with memory capped at 1 GB: one line, exit 2, no unbounded read
    code = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); sys.argv = ['torchmend', 'check', 'z.py', '--no-cache', '-j', '1']; runpy.run_module('torchmend', run_name='__main__')"
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines()[0] == "z.py: error: symbolic link to /dev/zero, outside the given paths and the current directory: skipped"


def test_fifo_in_a_tree_and_given_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "f.py")
    (tmp_path / "ok.py").write_bytes(BUG)
    for args in (["."], ["f.py", "ok.py"]):
        p = subprocess.run(TM + ["check", *args, "--no-cache", "-j", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2
        assert "f.py: error: a FIFO (named pipe), not a regular file: skipped" in p.stderr.splitlines()
        assert "ok.py:17:5: TM201" in p.stdout + p.stderr


def test_fifo_beside_a_module_whose_importers_are_looked_up_does_not_hang(tmp_path):
    """TM301 asks who imports a package module: the tree's import scan reads every
    file, and gives up on a FIFO as the reading of the file itself does."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds, num_workers=4)\n"
        "for x in loader:\n    pass\n")
    os.mkfifo(tmp_path / "pkg" / "zz.py")
    p = subprocess.run(TM + ["check", ".", "--no-cache", "-j", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "pkg/zz.py: error: a FIFO (named pipe), not a regular file: skipped" in p.stderr.splitlines()
    assert "pkg/train.py:4:10: TM301" in p.stdout


def test_socket_and_device_are_refused(tmp_path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(tmp_path / "s.py"))
        assert _error(tmp_path / "s.py") == "a socket, not a regular file: skipped"
    finally:
        s.close()
    os.symlink("/dev/null", tmp_path / "n.py")
    assert _error(tmp_path / "n.py") == "a character device, not a regular file: skipped"


def test_size_limit_is_checked_before_reading(tmp_path):
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(5 * 1024**3)  # sparse: 5 GB that would take a while to read
    with pytest.raises(SourceError, match=r"file too large \(5368\.7 MB > 4 MB limit\), skipped"):
        read_source(str(big))
    exact = tmp_path / "exact.py"
    exact.write_bytes(b"#" * MAX_BYTES)
    assert len(read_source(str(exact)).raw) == MAX_BYTES
    exact.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(SourceError, match="file too large"):
        read_source(str(exact))


def test_a_directory_in_place_of_a_file_is_named(tmp_path):
    d = tmp_path / "gone.py"
    d.mkdir()  # discovery listed a file; it is a directory by the time it is read
    assert _error(d) == "a directory, not a regular file: skipped"
    assert _error(tmp_path / "missing.py").startswith("no such file")


@pytest.mark.parametrize("offset", [0, 100, 8191, 8192, 9000, 100_000])
def test_a_nul_byte_anywhere_is_a_binary_file(tmp_path, offset):
    p = tmp_path / "b.py"
    p.write_bytes(b"#" * offset + b"\0" + b"\nimport torch\n")
    assert _error(p) == f"binary file (NUL byte at offset {offset}), skipped"


@pytest.mark.parametrize("enc", ["utf-16", "utf-16-le", "utf-32", "cp037"])
def test_non_ascii_compatible_cookie_is_an_error_not_a_silent_skip(tmp_path, enc):
    p = tmp_path / "c.py"
    p.write_bytes(f"# coding: {enc}\n".encode() + BUG)
    err = _error(p)
    assert err.startswith("encoding declaration") and "not ASCII-compatible" in err


def test_utf16_file_with_a_bom_says_so(tmp_path):
    p = tmp_path / "u.py"
    p.write_bytes(codecs.BOM_UTF16_LE + "import torch\n".encode("utf-16-le"))
    assert _error(p).startswith("UTF-16 or UTF-32 encoded file (byte order mark)")


def test_latin1_cookie_still_works(tmp_path):
    p = tmp_path / "l.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BUG)
    r = process_file(str(p), Options())
    assert r.error is None and r.changed


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nx = (1,\ny = 2\n",
        "import torch\ndef f(:\n    pass\n",
        "import torch\nfor x in loader:\n  a = 1\n    b = 2\n",
        "import torch\nx = 1 +\n",
        "import torch\nprint('unterminated\n",
    ],
)
def test_syntax_errors_are_reported_where_python_reports_them(tmp_path, src):
    p = tmp_path / "s.py"
    p.write_text(src + "loss.backward()\nopt.step()\n")
    try:
        compile(p.read_text(), "s.py", "exec")
    except SyntaxError as e:
        want = f"syntax error at {e.lineno}:{e.offset}: {e.msg}"
    assert _error(p) == want
    assert syntax_error(p.read_text()) == want
