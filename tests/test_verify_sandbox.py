"""``torchmend verify`` on real projects: the sandbox, the script's arguments, the three
outcomes, config resolution.

The runs reuse this test process's warm worker (harness.shared_worker: torch imported
once); only the tests of ``kill`` start a verify process of their own.  Where a test needs
the sandbox that a machine *without* user namespaces gets, it asks for it
(``VerifyOptions(namespaces=False)``); tests of what only namespaces give skip where the
OS refuses them (and say so)."""

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from typer.testing import CliRunner

from torchmend.cli.main import app
from torchmend.verify import harness, sandbox
from torchmend.verify.verify import VerifyOptions, verify_script
from tests.test_verify_cli import test_rules  # noqa: F401  - the fixture
from tests.verify_rules import VERIFY_TEST_RULES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_CODES = frozenset(c.code for c in VERIFY_TEST_RULES)

# a zero_grad bug (the test rule TM992 inserts `opt.zero_grad()`): the original shows
# TM201, the fixed copy runs clean
LOOP = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


def _verify(*args):
    r = CliRunner().invoke(app, ["verify", *args])
    return r.exit_code, r.stdout, r.stderr


def _namespaces() -> sandbox.Isolation:
    return harness.shared_worker().isolation()


def _need_namespaces():
    iso = _namespaces()
    if not iso.namespaces or iso.files != "read-only":
        pytest.skip(f"the OS refuses user namespaces here: {iso.reason}")


def _procs_with(marker: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read().split(b"\0"):  # an argument of its own, not MARK=...
                        out.append(int(d))
            except OSError:
                pass
    return out


def _gone(marker: str, seconds: float = 10) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _procs_with(marker):
            return True
        time.sleep(0.05)
    return False


# -- the copy -------------------------------------------------------------------------


def test_copy_has_no_links_and_names_what_it_left_out(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "pkg").mkdir(parents=True)
    (src / ".git").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "data.txt").write_text("outside")
    (src / "train.py").write_text("x = 1\n")
    (src / "pkg" / "mod.py").write_text("y = 2\n")
    (src / "big.bin").write_bytes(b"0" * 5000)
    (src / ".git" / "HEAD").write_text("ref")
    os.symlink(tmp_path / "outside" / "data.txt", src / "link.txt")
    os.symlink(tmp_path / "outside", src / "linkdir")
    os.symlink(src, src / "pkg" / "loop")  # a cycle
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(src / "sock"))
    try:
        rep = sandbox.copy_tree(str(src), str(dst), limit=100, first=("train.py",))
    finally:
        s.close()
    names = sorted(os.listdir(dst))
    assert names == ["link.txt", "linkdir", "pkg", "train.py"], names
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            assert not os.path.islink(os.path.join(root, n)), os.path.join(root, n)
    assert (dst / "link.txt").read_text() == "outside" and (dst / "linkdir" / "data.txt").read_text() == "outside"
    assert ("big.bin", 5000, "limit") in rep.left_out and ("sock", 0, "not a regular file") in rep.left_out
    note = rep.note(100)
    assert "big.bin" in note and "--copy-limit" in note
    assert rep.missing("./big.bin")[0] == "big.bin"
    (dst / "link.txt").write_text("changed")  # writing the copy leaves the original alone
    assert (tmp_path / "outside" / "data.txt").read_text() == "outside"


def _finetune(tmp_path):
    """The data-loss reproducer: a fine-tuning script that reads the 9 MiB ckpt.pth beside
    it and saves its own ckpt.pth over it every step."""
    proj = tmp_path / "proj"
    proj.mkdir()
    ckpt = proj / "ckpt.pth"
    ckpt.write_bytes(os.urandom(9 * 1024 * 1024))
    (proj / "finetune.py").write_text(
        "import os\n" + LOOP.replace(
            "for step in range(3):",
            "assert os.path.getsize('ckpt.pth') == 9 * 1024 * 1024, 'the checkpoint is not there'\n"
            "for step in range(3):\n    torch.save(model.state_dict(), 'ckpt.pth')",
        ) + "assert os.path.getsize('ckpt.pth') < 1024 * 1024, 'not saved'\n"
    )
    return proj, ckpt, hashlib.sha256(ckpt.read_bytes()).hexdigest()


def test_data_loss_reproducer_leaves_the_checkpoint_byte_identical(test_rules, tmp_path):  # noqa: F811
    proj, ckpt, digest = _finetune(tmp_path)
    code, out, err = _verify(str(proj / "finetune.py"))
    assert code == 0, out + err
    assert "TM992 verified" in out and "before: TM201" in out
    assert hashlib.sha256(ckpt.read_bytes()).hexdigest() == digest
    assert sorted(os.listdir(proj)) == ["ckpt.pth", "finetune.py"]


def test_data_loss_reproducer_without_namespaces(test_rules, tmp_path):  # noqa: F811
    """Where nothing can be made read-only, the copy alone keeps the user's file."""
    proj, ckpt, digest = _finetune(tmp_path)
    rep = verify_script(str(proj / "finetune.py"), select=TEST_CODES, vopts=VerifyOptions(namespaces=False))
    assert rep.outcome == "verified", [f.before.summary() for f in rep.fixes]
    assert rep.isolation.files == "detected" and not rep.outside_writes
    assert hashlib.sha256(ckpt.read_bytes()).hexdigest() == digest


def test_copy_limit_leaves_big_files_out_and_says_so(test_rules, tmp_path):  # noqa: F811
    proj, ckpt, digest = _finetune(tmp_path)
    code, out, err = _verify("--copy-limit", "1", str(proj / "finetune.py"))
    assert code == 2, out + err
    assert "note: left out of the sandbox copy (over --copy-limit 1 MiB): ckpt.pth (9 MiB)" in out
    (line,) = [ln for ln in out.splitlines() if "could not run" in ln]
    assert "No such file or directory: 'ckpt.pth' (ckpt.pth was left out of the sandbox copy: over --copy-limit)" in line


# -- processes ------------------------------------------------------------------------

DAEMON = """
import os, sys
pid = os.fork()
if pid == 0:  # a detached daemon: double fork + setsid
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", os.environ["MARK"]])
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "subreaper"])
def test_detached_daemon_is_gone_when_verify_returns(test_rules, tmp_path, namespaces):  # noqa: F811
    mark = f"torchmend-test-daemon-{uuid.uuid4().hex}"
    p = tmp_path / "train.py"
    p.write_text(DAEMON + LOOP)
    t0 = time.monotonic()
    if namespaces:
        code, out, err = _verify("--env", f"MARK={mark}", str(p))
        assert code == 0, out + err
    else:
        rep = verify_script(str(p), select=TEST_CODES, vopts=VerifyOptions(namespaces=False, env=(("MARK", mark),)))
        assert rep.outcome == "verified"
    assert time.monotonic() - t0 < 60  # not waiting for the daemon's 600 s
    assert _procs_with(mark) == []  # gone at once: every run's processes are killed before it reports


def _verify_process(tmp_path, script, *args):
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return subprocess.Popen([sys.executable, "-m", "torchmend", "verify", *args, str(script)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["SIGKILL", "SIGTERM", "SIGINT"])
def test_killing_verify_kills_every_run_and_removes_its_files(tmp_path, sig):
    """kill -9 of verify (nothing of it runs any more), kill, or Ctrl-C: the scripts,
    their daemons and the sandboxes are gone within seconds."""
    mark = f"torchmend-test-kill-{uuid.uuid4().hex}"
    p = tmp_path / "train.py"
    p.write_text(DAEMON + LOOP.replace("for step in range(3):", "import time\nwhile True:\n    time.sleep(0.05)\nfor step in range(3):"))
    proc = _verify_process(tmp_path, p, "--env", f"MARK={mark}", "--timeout", "300")
    end = time.monotonic() + 120
    while len(_procs_with(mark)) < 2 and time.monotonic() < end and proc.poll() is None:
        time.sleep(0.1)
    assert len(_procs_with(mark)) == 2, proc.communicate(timeout=30)  # both runs started their daemon
    t0 = time.monotonic()
    proc.send_signal(sig)
    if sig != signal.SIGKILL:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and b"interrupted" in err, (out, err)
        assert time.monotonic() - t0 < 6
    else:
        proc.wait(10)
    assert _gone(mark), _procs_with(mark)
    end = time.monotonic() + 10
    while os.listdir(tmp_path / "tmp") and time.monotonic() < end:
        time.sleep(0.05)
    assert os.listdir(tmp_path / "tmp") == []


def test_timeout_ends_the_run_and_its_daemon(test_rules, tmp_path):  # noqa: F811
    mark = f"torchmend-test-timeout-{uuid.uuid4().hex}"
    p = tmp_path / "train.py"
    p.write_text(DAEMON + LOOP.replace("for step in range(3):", "import time\ntime.sleep(600)\nfor step in range(3):"))
    t0 = time.monotonic()
    code, out, err = _verify("--timeout", "3", "--env", f"MARK={mark}", str(p))
    assert code == 2 and "could not run: the original did not finish within --timeout 3s" in out, out + err
    assert time.monotonic() - t0 < 30
    assert _procs_with(mark) == []


# a detached daemon that is slow to die (a large heap to free when killed), named so that
# it can be found even while it exits (/proc/PID/comm stays readable until it is reaped);
# the script goes on once the daemon is ready, then sleeps past the timeout
SLOW_DAEMON = """
import ctypes, os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        heap = b"x" * (768 << 20)
        ctypes.CDLL(None).prctl(15, NAME.encode(), 0, 0, 0)  # PR_SET_NAME
        os.write(w, b"1")
        time.sleep(600)
    os._exit(0)
os.read(r, 1)
print("daemon ready", flush=True)
time.sleep(600)
"""


def _named(name: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() == name:
                        out.append(int(d))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "subreaper"])
def test_a_run_stopped_at_its_timeout_returns_once_its_processes_are_reaped(tmp_path, namespaces):
    """Not merely killed: a daemon that takes a while to exit is not listed any more, not
    even as exiting, when the run returns (a PID namespace's init, reaped only once the
    kernel has ended every process of its namespace, is waited for)."""
    if namespaces:
        _need_namespaces()
    name = "tm" + uuid.uuid4().hex[:13]
    p = tmp_path / "train.py"
    p.write_text(f"NAME = {name!r}\n" + SLOW_DAEMON)
    out = harness.run_script(str(p), timeout=6, namespaces=namespaces)
    assert out.timed_out and "daemon ready" in out.stdout, (out.stdout, out.stderr)
    assert (out.isolation.namespaces if namespaces else not out.isolation.namespaces), out.isolation
    assert _named(name) == []



@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "subreaper"])
def test_a_run_whose_supervisor_is_killed_returns_once_its_processes_are_reaped(tmp_path, namespaces):
    """The supervisor of a run killed from outside (kill -9): the processes it leaves come
    to the worker, which reaps them before it reports the run, not after."""
    if namespaces:
        _need_namespaces()
    import threading

    name = "tm" + uuid.uuid4().hex[:13]
    p = tmp_path / "train.py"
    p.write_text(f"NAME = {name!r}\n" + SLOW_DAEMON)
    worker = harness.shared_worker().proc.pid

    def kill_supervisor():
        end = time.monotonic() + 60
        while not _named(name) and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.5)  # the script has printed
        for tid in os.listdir(f"/proc/{worker}/task"):
            with open(f"/proc/{worker}/task/{tid}/children") as f:
                for pid in f.read().split():
                    os.kill(int(pid), signal.SIGKILL)

    t = threading.Thread(target=kill_supervisor)
    t.start()
    out = harness.run_script(str(p), timeout=60, namespaces=namespaces)
    t.join()
    assert out.seconds < 30 and not out.ok, (out.stdout, out.stderr)
    assert _named(name) == []


def _fake_child(monkeypatch, dies_after: float):
    """A child of this process, as kill_all_children sees it, that is reaped only
    ``dies_after`` seconds after the first try (a PID namespace's init: the kernel ends
    every process of its namespace before it can be reaped); its kills are recorded."""
    from torchmend.verify import sandbox

    state = {"reaped": False, "kills": [], "dies_at": None}
    monkeypatch.setattr(sandbox, "children", lambda: [] if state["reaped"] else [424242])
    monkeypatch.setattr(sandbox.os, "kill", lambda pid, sig: state["kills"].append((pid, sig)))

    def waitpid(pid, flags):
        if state["reaped"]:
            raise ChildProcessError
        if state["dies_at"] is None:
            state["dies_at"] = time.monotonic() + dies_after
        if time.monotonic() >= state["dies_at"]:
            state["reaped"] = True
            return 424242, 0
        return 0, 0

    monkeypatch.setattr(sandbox.os, "waitpid", waitpid)
    return sandbox, state


def test_kill_all_children_waits_until_the_killed_are_reaped(monkeypatch):
    """The supervisor's last step: a child slow to die is waited for (it used to give up
    after 200 tries, about a second, and verify could return with the run's processes
    still listed)."""
    sandbox, state = _fake_child(monkeypatch, 1.5)
    sandbox.kill_all_children()
    assert state["reaped"]
    assert state["kills"] and set(state["kills"]) == {(424242, signal.SIGKILL)}


def test_kill_all_children_gives_up_after_its_budget(monkeypatch):
    sandbox, state = _fake_child(monkeypatch, 3600)
    t0 = time.monotonic()
    sandbox.kill_all_children(seconds=0.3)
    assert 0.3 <= time.monotonic() - t0 < 5 and not state["reaped"]


def test_file_size_limit(test_rules, tmp_path):  # noqa: F811
    p = tmp_path / "train.py"
    p.write_text("open('big.bin', 'wb').write(b'0' * (3 * 1024 * 1024))\n" + LOOP)
    code, out, err = _verify("--file-size-limit", "1", str(p))
    assert code == 2 and "File too large" in out and "--file-size-limit" in out, out + err


# -- environment, network, files --------------------------------------------------------

ENV_CHECK = """
import os
assert "AWS_SECRET_ACCESS_KEY" not in os.environ, "the secret is in os.environ"
assert b"xyz-secret" not in open("/proc/self/environ", "rb").read(), "the secret is in /proc/self/environ"
if os.environ.get("CHECK_ALL_PROCS") == "1":  # a private /proc: no other process's environment either
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                data = open(f"/proc/{d}/environ", "rb").read()
            except OSError:
                continue
            assert b"xyz-secret" not in data, f"the secret is in /proc/{d}/environ"
assert os.environ["EXTRA"] == "added", "--env did not reach the script"
assert os.environ["HOME"].startswith(os.environ["TMPDIR"].rsplit("/", 1)[0]), "HOME is not in the sandbox"
"""


def test_env_secret_is_invisible_to_the_script(test_rules, tmp_path, monkeypatch):  # noqa: F811
    """A secret in verify's environment reaches neither the script's environment nor its
    /proc/self/environ (the warm worker was started with the allow-listed environment),
    nor, in a PID namespace, any other process's environment; --env adds variables."""
    from torchmend.verify.forkserver import Worker

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "xyz-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "xyz-secret")
    p = tmp_path / "train.py"
    p.write_text(ENV_CHECK + LOOP)
    w = Worker()  # started with the secret in this process's environment
    try:
        full = "1" if w.isolation().pids == "namespace" else "0"
        rep = verify_script(str(p), select=TEST_CODES, worker=w,
                            vopts=VerifyOptions(env=(("EXTRA", "added"), ("CHECK_ALL_PROCS", full))))
        assert rep.outcome == "verified", [f.could_not_run or f.before.summary() for f in rep.fixes]
    finally:
        w.close()
    assert not sandbox.allowed("AWS_SECRET_ACCESS_KEY") and not sandbox.allowed("TORCH_AUTH_TOKEN")
    assert sandbox.allowed("PATH") and sandbox.allowed("PYTORCH_CUDA_ALLOC_CONF") and sandbox.allowed("LC_ALL")


NET = """
import os, socket
try:
    socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5).close()
    reached = True
except OSError:
    reached = False
assert reached == (os.environ["EXPECT"] == "1"), f"reached the host's server: {reached}"
"""


def test_no_network_unless_allowed(test_rules, tmp_path):  # noqa: F811
    _need_namespaces()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    p = tmp_path / "train.py"
    p.write_text(NET + LOOP)
    try:
        code, out, err = _verify("--env", f"PORT={port}", "--env", "EXPECT=0", str(p))
        assert code == 0, out + err
        assert "sandbox: no network" in out
        code, out, err = _verify("--allow-network", "--env", f"PORT={port}", "--env", "EXPECT=1", str(p))
        assert code == 0, out + err
    finally:
        srv.close()


def test_writes_outside_the_copy_are_refused(test_rules, tmp_path):  # noqa: F811
    _need_namespaces()
    proj = tmp_path / "proj"
    proj.mkdir()
    target = tmp_path / "elsewhere.txt"
    p = proj / "train.py"
    p.write_text(f"open({str(target)!r}, 'w').write('x')\nopen('../up.txt', 'w').write('x')\n" + LOOP)
    code, out, err = _verify(str(p))
    assert code == 2, out + err
    assert "could not run" in out and "Read-only file system" in out and "refuses writes outside its copy" in out
    assert not target.exists() and sorted(os.listdir(tmp_path)) == ["proj"]


def test_writes_outside_the_copy_are_detected_without_namespaces(test_rules, tmp_path):  # noqa: F811
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("")
    target = proj / "escaped.txt"
    p = proj / "train.py"
    p.write_text(f"open({str(target)!r}, 'w').write('x')\n" + LOOP)
    rep = verify_script(str(p), select=TEST_CODES, vopts=VerifyOptions(namespaces=False))
    assert rep.outcome == "error" and (str(target), "created") in rep.outside_writes
    from torchmend.verify.verify import format_report

    assert any("files outside the sandbox copy changed while the script ran" in ln and "escaped.txt (created)" in ln
               for ln in format_report(rep))


def test_first_line_says_it_executes_the_script(test_rules, tmp_path):  # noqa: F811
    p = tmp_path / "train.py"
    p.write_text(LOOP)
    code, out, err = _verify(str(p))
    assert code == 0, out + err
    first, second = out.splitlines()[:2]
    assert first.startswith("torchmend verify: this EXECUTES the script")
    assert second.strip().startswith("sandbox: ")


# -- the script's arguments and the three outcomes --------------------------------------

ARGS = """
import argparse
ap = argparse.ArgumentParser()
ap.add_argument("--data", required=True)
ap.add_argument("--epochs", type=int, default=1)
ns = ap.parse_args()
assert open(ns.data).read() == "data" and ns.epochs == 2
"""


def test_script_arguments_after_double_dash(test_rules, tmp_path):  # noqa: F811
    (tmp_path / "d.txt").write_text("data")
    p = tmp_path / "train.py"
    p.write_text(ARGS + LOOP)
    code, out, err = _verify(str(p), "--", "--data", "d.txt", "--epochs", "2")
    assert code == 0, out + err
    assert "TM992 verified" in out
    code, out, err = _verify(str(p))
    assert code == 2, out + err
    line = [ln for ln in out.splitlines() if "could not run" in ln]
    assert len(line) == 1 and "the following arguments are required: --data" in line[0]
    assert "give the script's arguments after --" in line[0]


def test_cwd_is_copied_and_run_in(test_rules, tmp_path):  # noqa: F811
    (tmp_path / "scripts").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.txt").write_text("data")
    p = tmp_path / "scripts" / "train.py"
    p.write_text(ARGS + LOOP)
    code, out, err = _verify("--cwd", str(tmp_path), str(p), "--", "--data", "data/d.txt", "--epochs", "2")
    assert code == 0, out + err
    code, out, err = _verify("--cwd", str(tmp_path / "data"), str(p))
    assert code == 2 and "not inside --cwd" in out, out + err


def test_three_exit_codes(test_rules, tmp_path):  # noqa: F811
    """0 verified; 1 a fix that did not help; 2 could not run (another failure than the
    pitfall), each with its reason in one line."""
    ok = tmp_path / "ok.py"
    ok.write_text(LOOP)
    assert _verify(str(ok))[0] == 0
    useless = tmp_path / "useless.py"  # the test rule TM993 inserts `pass`: the device error stays
    useless.write_text(open(os.path.join(ROOT, "tests", "exec_fixtures", "device_useless_fix.py")).read())
    code, out, err = _verify(str(useless))
    assert code == 1 and "TM993 NOT verified" in out, out + err
    missing = tmp_path / "missing.py"
    missing.write_text("import torchmend_no_such_module\n" + LOOP)
    code, out, err = _verify(str(missing))
    assert code == 2, out + err
    (line,) = [ln for ln in out.splitlines() if "could not run" in ln]
    assert "ModuleNotFoundError: No module named 'torchmend_no_such_module' at missing.py:1" in line
    assert "install the module there" in line
    nofile = tmp_path / "nofile.py"
    nofile.write_text("open('dataset.csv').read()\n" + LOOP)
    code, out, err = _verify(str(nofile))
    assert code == 2 and "No such file or directory: 'dataset.csv'" in out and "relative paths resolve there" in out
    assert "1 could not run" in err


# -- configuration: the same resolution as apply -----------------------------------------


def test_tool_torchmend_config_is_honoured(tmp_path):
    """[tool.torchmend] (with the real rules): `ignore` leaves nothing to verify; a
    file whose only fix is unsafe gets the --unsafe-fixes hint, and `unsafe-fixes = true`
    verifies it."""
    import shutil

    zg = tmp_path / "zg"
    zg.mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "exec_fixtures", "zero_grad_missing.py"), zg / "train.py")
    (zg / "pyproject.toml").write_text('[tool.torchmend]\nignore = ["TM201"]\n')
    code, out, err = _verify(str(zg / "train.py"))
    assert code == 0 and "nothing to verify" in out, out + err
    (zg / "pyproject.toml").write_text('[tool.torchmend]\nselect = ["TM2"]\n')
    code, out, err = _verify(str(zg / "train.py"))
    assert code == 0 and "TM201 verified" in out, out + err

    case = tmp_path / "u"
    case.mkdir()
    shutil.copy(os.path.join(ROOT, "corpus", "device", "lstm_h0_zeros.py"), case / "lstm.py")
    code, out, err = _verify(str(case / "lstm.py"))
    assert code == 0, out + err
    assert "classed unsafe" in out and "--unsafe-fixes" in out and "nothing to verify" not in out
    (case / "pyproject.toml").write_text("[tool.torchmend]\nunsafe-fixes = true\n")
    code, out, err = _verify(str(case / "lstm.py"))
    assert code == 0 and "TM102 verified" in out, out + err
    (case / "pyproject.toml").write_text("[tool.torchmend]\nbogus = 1\n")
    code, out, err = _verify(str(case / "lstm.py"))
    assert code == 2 and "unknown key 'bogus' in [tool.torchmend]" in err


def test_bench_prints_the_ratio_last():
    """bench/verify_bench.py runs (one round, one case) and ends with the ratio."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "verify_bench.py"), "--repeat", "1",
                        "--case", "zero_grad/missing_basic.py"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert any(ln.startswith("load average") for ln in lines)
    assert any("python script.py, twice" in ln for ln in lines) and any("torchmend verify" in ln for ln in lines)
    assert lines[-1].startswith("ratio verify / two plain runs: ") and lines[-1].endswith("x")


def test_without_user_namespaces_it_says_so_and_still_protects(tmp_path):
    """A machine that refuses user namespaces (simulated: a user namespace whose limit
    on nested ones is 0): the sandbox line says what is missing, and the copy and the
    subreaper still keep the checkpoint byte-identical and leave no daemon behind."""
    import shutil

    if not shutil.which("unshare") or subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode:
        pytest.skip("no unshare(1) or no user namespaces to simulate their absence in")
    proj, ckpt, digest = _finetune(tmp_path)
    mark = f"torchmend-test-nons-{uuid.uuid4().hex}"
    script = proj / "finetune.py"
    script.write_text(DAEMON + script.read_text())
    inner = (f"echo 0 > /proc/sys/user/max_user_namespaces && exec {sys.executable} -m torchmend verify "
             f"--env MARK={mark} {script}")
    r = subprocess.run(["unshare", "-Ur", "sh", "-c", inner], capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    line = r.stdout.splitlines()[1]
    assert "network NOT isolated" in line and "writes outside the copy NOT refused, only detected afterwards" in line
    assert "no user namespaces here" in line and "TM201 verified" in r.stdout
    assert hashlib.sha256(ckpt.read_bytes()).hexdigest() == digest
    assert _procs_with(mark) == []
