"""``torchmend verify`` end to end.

The real rules are written concurrently, so these tests run the engine with test-only
rules (tests/verify_rules.py); one test uses the real registry and skips only while the
real rule finds nothing on the fixture."""


import os
import re

import pytest
from typer.testing import CliRunner

from torchmend.cli.main import app
from torchmend import engine
from tests.verify_rules import VERIFY_TEST_RULES

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_fixtures")


@pytest.fixture
def test_rules(monkeypatch):
    codes = {c.code for c in VERIFY_TEST_RULES}
    # honour a selection of test codes (verify selects subsets); the CLI's own selection
    # names the real codes, which means "all test rules" here
    monkeypatch.setattr(
        engine, "rules_for", lambda select: [c() for c in VERIFY_TEST_RULES if not (set(select) & codes) or c.code in select]
    )


def _verify(*args):
    r = CliRunner().invoke(app, ["verify", *args])
    return r.exit_code, r.stdout, r.stderr


def test_help_says_it_executes_code():
    code, out, _ = _verify("--help")
    assert code == 0 and "EXECUTING" in out and "--real-device" in out and "--max-steps" in out


def test_device_fix_verified(test_rules):
    code, out, err = _verify(os.path.join(HERE, "device_bug.py"), "--max-steps", "3")
    assert code == 0, out + err
    assert re.search(r"device_bug\.py:15:5: TM991 verified", out), out
    assert (
        "before: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu! at device_bug.py:17 (TM991)" in out
    ), out
    assert "after: 3 steps, stopped, clean" in out
    assert "1/1 fixes verified" in err


def test_zero_grad_fix_verified(test_rules):
    code, out, err = _verify(os.path.join(HERE, "zero_grad_missing.py"))
    assert code == 0, out + err
    assert "TM992 verified" in out
    assert "before: TM201 at zero_grad_missing.py:15" in out
    assert "after: 5 steps, stopped, clean" in out


def test_useless_fix_not_verified(test_rules):
    code, out, err = _verify(os.path.join(HERE, "device_useless_fix.py"))
    assert code == 1, out + err
    assert "TM993 NOT verified" in out
    assert re.search(r"after: RuntimeError: Expected all tensors to be on the same device.* at device_useless_fix\.py:\d+", out)
    assert "0/2 fixes verified" in err  # one "fix" per loop


def test_nothing_to_verify(test_rules, tmp_path):
    p = tmp_path / "ok.py"
    p.write_text("print('hi')\n")
    code, out, _ = _verify(str(p))
    assert code == 0 and "nothing to verify" in out


def test_problem_not_shown_is_not_verified(test_rules, tmp_path):
    """The rule "fixes" something the original does not show: not verified."""
    p = tmp_path / "cpu_only.py"
    src = open(os.path.join(HERE, "device_fixed.py")).read().replace("        inputs, labels = inputs.to(device), labels.to(device)\n", "")
    src = src.replace("model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)", "model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))")
    p.write_text(src)
    code, out, _ = _verify(str(p))
    assert code == 1 and "NOT verified" in out and "did not show" in out, out


def test_original_untouched_and_sibling_files_copied(test_rules, tmp_path):
    """Runs happen in temporary copies of the directory: relative files work, nothing is
    written next to the original."""
    src = open(os.path.join(HERE, "device_bug.py")).read()
    src = src.replace("torch.manual_seed(0)", "torch.manual_seed(int(open('seed.txt').read()))\nopen('written.txt', 'w').write('x')")
    (tmp_path / "seed.txt").write_text("3")
    p = tmp_path / "train.py"
    p.write_text(src)
    code, out, err = _verify(str(p))
    assert code == 0, out + err
    assert p.read_text() == src
    assert sorted(os.listdir(tmp_path)) == ["seed.txt", "train.py"]


def test_syntax_error_is_exit_2(test_rules, tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("loss.backward(\n")
    code, out, _ = _verify(str(p))
    assert code == 2 and "error" in out


def test_real_rules_device(tmp_path):
    """With the real registry."""
    path = os.path.join(HERE, "device_bug.py")
    code, out, err = _verify(path)
    assert code == 0, out + err
    assert "Expected all tensors to be on the same device" in out


def test_real_rules_zero_grad(tmp_path):
    path = os.path.join(HERE, "zero_grad_missing.py")
    code, out, err = _verify(path)
    assert code == 0, out + err
    assert "before: TM201" in out


def test_real_rules_all_pitfalls_in_one_script():
    """Four pitfalls in one loop: each is shown by the original (the hidden ones with the
    other fixes applied, in their own mode: the softmax detector needs real values, not the
    simulated GPU) and the fixed script runs clean, on the simulated GPU and on the CPU."""
    path = os.path.join(HERE, "all_pitfalls_mixed.py")
    code, out, err = _verify(path)
    assert code == 0, out + err
    for c in ("TM301", "TM101", "TM501", "TM201"):
        assert f"{c} verified" in out, out
    # locations of the partly fixed runs are mapped back to the original's lines
    assert "cuda:0 and cpu! at all_pitfalls_mixed.py:16 (TM101)" in out
    assert "TM501 at all_pitfalls_mixed.py:17" in out


def test_real_device_without_cuda_is_exit_2(test_rules):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a real GPU is present")
    code, _, err = _verify("--real-device", os.path.join(HERE, "device_bug.py"))
    assert code == 2 and "no CUDA device" in err


def test_hidden_pitfall_is_run_with_the_other_fixes(test_rules):
    """The device error hides the zero_grad bug in the original; verify reruns with the
    device fix alone applied and shows TM201 there."""
    code, out, err = _verify(os.path.join(HERE, "device_and_zero_grad_bug.py"))
    assert code == 0, out + err
    assert re.search(r"TM991 verified.*\n    before: RuntimeError: Expected all tensors", out), out
    assert re.search(r"TM992 verified.*\n    before \(other fixes applied\): TM201 at device_and_zero_grad_bug\.py:14", out), out
    assert "2/2 fixes verified" in err


# a training script written for a GPU (``.cuda()`` with no test of the machine), a
# step-helper that never clears (meta-pytorch/torchforge apps/sft/main.py before PR #71:
# zero_grad() only before the loop)
GPU_RECIPE = """\
import torch
from torch import nn

torch.manual_seed(0)


class Recipe:
    def __init__(self):
        self.model = nn.Linear(4, 1).cuda()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def forward_backward(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        return loss

    def train_step(self, x, y):
        self.forward_backward(x, y)
        self.optimizer.step()

    def train(self):
        self.optimizer.zero_grad()
        for step in range(3):
            x = torch.randn(16, 4, device="cuda")
            self.train_step(x, torch.zeros(16, 1).to("cuda"))


Recipe().train()
"""


def _verify_gpu_script(tmp_path, text: str):
    """``verify`` of a script written for a GPU, on a machine without CUDA (else skipped)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a machine with CUDA runs the script on it")
    p = tmp_path / "train.py"
    p.write_text(text)
    code, out, err = _verify(str(p))
    assert code == 0, out + err
    return out, err


def test_real_rules_zero_grad_in_a_script_written_for_a_gpu(tmp_path):
    """On a machine without CUDA the zero_grad runs compute on the CPU (cuda named by the
    script is the CPU); the zero_grad() before the loop shows as the detector's TM202."""
    out, err = _verify_gpu_script(tmp_path, GPU_RECIPE)
    assert "TM201" in out and "before: TM202" in out and "1/1 fixes verified" in out + err


GPU_UNGUARDED = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, num_workers=2)
for x, y in loader:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""


def test_real_rules_main_guard_in_a_script_written_for_a_gpu(tmp_path):
    """The processes the spawn run starts (the script run again) take cuda for the CPU too:
    they reach the bootstrapping error, not 'Torch not compiled with CUDA'."""
    out, _ = _verify_gpu_script(tmp_path, GPU_UNGUARDED)
    assert "TM301 verified" in out and "bootstrapping phase" in out
