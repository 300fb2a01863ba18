"""The device pitfall on a real CUDA device (``--real-device``); skipped on a machine
where torch sees none (CI). The simulated GPU (the default) stands in for CUDA
everywhere else: these tests check that what it shows is what CUDA shows.

* each device fixture of the harness's table fails (or runs clean) on real CUDA as it
  does under the simulation; the messages differ, the device mismatch is the same;
* ``torchmend verify --real-device`` proves the real TM101 fix on CUDA;
* the simulation still works on a machine that has a GPU (it must not hand the script
  the real one).
"""

import os
import re

import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from torchmend.cli.main import app  # noqa: E402
from torchmend.verify.harness import evidence_for, run_script  # noqa: E402
from tests.test_verify_harness import HERE, RUNS, SAME  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# Real CUDA words a mismatch per operator (tests/test_verify_harness.py lists what an
# H100 printed); the device rules' evidence covers them.
DEVICE = evidence_for("device")
DEVICE_RUNS = [r for r in RUNS if r[1] == "device"]


@pytest.mark.parametrize("name,mode,expected", DEVICE_RUNS, ids=[r[0] for r in DEVICE_RUNS])
def test_fixture_on_real_cuda(name, mode, expected):
    out = run_script(os.path.join(HERE, name), mode, timeout=120, real_device=True)
    assert not out.timed_out, out.stderr[-2000:]
    if expected is None:
        assert out.ok, out.summary() + "\n" + out.stderr[-3000:]
        assert out.error_text == "" and out.steps > 0
    else:
        assert expected == SAME
        assert not out.ok and out.returncode == 1
        assert out.shows_any(DEVICE) and "cuda" in out.error_text, out.summary() + "\n" + out.stderr[-3000:]
        assert out.location.startswith(name + ":"), out.location


def test_bug_fails_on_the_line_the_simulation_names():
    real = run_script(os.path.join(HERE, "device_bug.py"), "device", real_device=True)
    simulated = run_script(os.path.join(HERE, "device_bug.py"), "device")
    assert simulated.error_text == "RuntimeError: " + SAME
    assert real.location == simulated.location == "device_bug.py:17"
    assert real.steps == simulated.steps == 0


def test_verify_real_device_proves_the_fix():
    r = CliRunner().invoke(app, ["verify", "--real-device", "--max-steps", "3", os.path.join(HERE, "device_bug.py")])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert re.search(r"device_bug\.py:17:\d+: TM101 verified", r.stdout), r.stdout
    assert re.search(r"before: RuntimeError: .*same device.* at device_bug\.py:17 \(TM101\)", r.stdout), r.stdout
    assert "after: 3 steps, stopped, clean" in r.stdout
    assert "1/1 fixes verified" in r.stderr
