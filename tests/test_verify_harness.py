"""The execution oracle on the project's own fixtures (tests/exec_fixtures/): each mode
reproduces its pitfall on the buggy script and runs the fixed one clean."""


import os

import pytest

from torchmend.verify.harness import SIGNATURES, evidence_for, mode_for, parse, run_script

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_fixtures")
SAME = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"

# (fixture, mode, expected: an error substring / detector code, or None for "runs clean")
RUNS = [
    ("device_bug.py", "device", SAME),
    ("device_fixed.py", "device", None),
    ("device_embed_conv_bug.py", "device", SAME),  # embedding/conv: meta alone would not check
    ("device_embed_conv_fixed.py", "device", None),
    ("device_forward_bug.py", "device", SAME),  # torch.zeros in forward() without device=
    ("device_forward_fixed.py", "device", None),
    ("device_idioms.py", "device", None),
    ("device_accelerator.py", "device", None),
    ("device_dataparallel.py", "device", None),  # DataParallel scatters the CPU batch itself  # torch.accelerator idiom, pin_memory thread  # AMP, pin_memory, clip_grad_norm_, save/load, eval ...
    ("zero_grad_missing.py", "zero_grad", "TM201"),
    ("zero_grad_missing_clipped.py", "zero_grad", "TM201"),  # clipped in place between backward and step
    ("zero_grad_clipped_fixed.py", "zero_grad", None),
    ("zero_grad_per_epoch.py", "zero_grad", "TM202"),
    ("zero_grad_between.py", "zero_grad", "TM202"),
    ("zero_grad_end_of_epoch.py", "zero_grad", "TM202"),  # cleared only after the first leak
    ("zero_grad_fixed.py", "zero_grad", None),
    ("zero_grad_accumulate.py", "zero_grad", None),  # accumulation, closures, manual clearing
    ("zero_grad_gan.py", "zero_grad", None),  # G's backward reaches D's stale grads; D zeroed before its step
    ("zero_grad_gan_missing_d.py", "zero_grad", "TM201"),  # D never zeroed
    ("softmax_probs.py", "softmax", "TM501"),
    ("softmax_logprobs.py", "softmax", "TM502"),
    ("softmax_logits.py", "softmax", None),
    ("softmax_logprobs_fixed.py", "softmax", None),
    ("softmax_target_lookalike.py", "softmax", None),
    ("spawn_unguarded.py", "spawn", "bootstrapping phase"),
    ("spawn_guarded.py", "spawn", None),
    ("load_head_changed.py", "load", "size mismatch"),
    ("load_filtered.py", "load", None),
]


@pytest.mark.parametrize("name,mode,expected", RUNS, ids=[r[0] for r in RUNS])
def test_fixture(name, mode, expected):
    out = run_script(os.path.join(HERE, name), mode, timeout=90)
    assert not out.timed_out, out.stderr[-2000:]
    if expected is None:
        assert out.ok, out.summary() + "\n" + out.stderr[-3000:]
        assert out.detector_codes == [] and out.error_text == ""
        assert out.steps > 0 or mode == "load"
    else:
        assert not out.ok
        assert out.shows(expected), out.summary() + "\n" + out.stderr[-3000:]
        assert out.location.startswith(name + ":"), out.location
        if expected.startswith("TM"):
            assert out.returncode == 3 and out.detector_codes == [expected]
        else:
            assert out.returncode == 1


def test_device_bug_error_points_at_the_forward_call():
    out = run_script(os.path.join(HERE, "device_bug.py"), "device")
    assert out.error_text == "RuntimeError: " + SAME
    assert out.location == "device_bug.py:17"  # loss = criterion(model(inputs), labels)
    assert out.steps == 0


def test_device_scripts_run_plain_on_cpu():
    """Without the simulation the buggy script is consistent (all CPU) and runs."""
    out = run_script(os.path.join(HERE, "device_bug.py"), "plain")
    assert out.ok and out.steps == 6


def test_max_steps_stops_cleanly():
    out = run_script(os.path.join(HERE, "device_fixed.py"), "device", max_steps=2)
    assert out.ok and out.stopped and out.steps == 2
    assert out.summary() == "2 steps, stopped, clean"


def test_max_steps_after_detector_still_reports():
    out = run_script(os.path.join(HERE, "zero_grad_missing.py"), "zero_grad", max_steps=2)
    assert out.stopped and out.detector_codes == ["TM201"] and out.returncode == 3 and not out.ok


def test_modes_combine(tmp_path):
    out = run_script(os.path.join(HERE, "zero_grad_missing.py"), {"device", "zero_grad", "softmax"})
    assert out.detector_codes == ["TM201"]


def test_timeout_kills_the_script(tmp_path):
    p = tmp_path / "slow.py"
    p.write_text("import time\nwhile True:\n    time.sleep(0.1)\n")
    out = run_script(str(p), "plain", timeout=3)
    assert out.timed_out and not out.ok
    assert "timed out" in out.summary()


def test_script_runs_like_python_script(tmp_path):
    """cwd and sys.path[0] are the script's directory; __name__ is __main__; sys.exit works."""
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    (tmp_path / "data.txt").write_text("1")
    (tmp_path / "s.py").write_text(
        "import os, sys\nfrom helper import VALUE\n"
        "assert __name__ == '__main__'\n"
        "assert open('data.txt').read() == '1'\n"
        "assert sys.argv[0].endswith('s.py')\n"
        "print('value', VALUE + int(open('data.txt').read()))\n"
        "sys.exit(0)\n"
    )
    out = run_script(str(tmp_path / "s.py"), "plain")
    assert out.ok, out.stderr
    assert "value 42" in out.stdout


def test_script_exit_status_is_kept(tmp_path):
    p = tmp_path / "s.py"
    p.write_text("import sys\nsys.exit(7)\n")
    out = run_script(str(p), "plain")
    assert not out.ok and out.returncode == 7


def test_parse_protocol():
    err = (
        "noise\nTORCHMEND-DETECTOR: TM502 at a.py:3: log-probs\nTORCHMEND-DETECTOR: TM502 at a.py:9: again\n"
        "TORCHMEND-STOPPED: stopped after 4 steps\nTORCHMEND-STEPS: 4\n"
    )
    o = parse("", err, 3)
    assert o.detector_codes == ["TM502"] and o.steps == 4 and o.stopped and not o.ok
    assert o.location == "a.py:3" and o.shows("TM502") and not o.shows("TM501")
    o = parse("", "Traceback...\nTORCHMEND-ERROR: ValueError: bad at x.py:2\nTORCHMEND-STEPS: 0\n", 1)
    assert o.error_text == "ValueError: bad" and o.location == "x.py:2" and o.shows("bad")
    o = parse("", "Segmentation fault\n", -11)
    assert not o.ok and o.error_text == "killed by SIGSEGV (Segmentation fault)"
    o = parse("", "", -24)
    assert o.error_text == "killed by the CPU time limit"
    o = parse("", "usage: t.py [-h] --data DATA\nt.py: error: the following arguments are required: --data\n", 2)
    assert o.error_text == "t.py: error: the following arguments are required: --data"


def test_every_pitfall_has_a_signature():
    from torchmend.registry import all_rules, pitfalls
    from torchmend.verify.bootstrap import MODES
    from torchmend.verify.harness import PITFALL_MODE, evidence_for, mode_for

    assert set(pitfalls()) == set(SIGNATURES) == set(PITFALL_MODE)
    for r in all_rules():  # what each rule declares is what the harness uses, a mode the bootstrap knows
        assert mode_for(r) == r.verify.mode and mode_for(r) in MODES and evidence_for(r) == r.verify.evidence, r.code
        assert mode_for(r.pitfall) == r.verify.mode and set(r.verify.evidence) <= set(SIGNATURES[r.pitfall]), r.code
    assert mode_for("main_guard") == "spawn" and mode_for("nonsense") == "plain"


# What real CUDA printed for the device fixtures and the corpus's device cases (an H100,
# torch 2.11, `verify --real-device`): each operator words the mismatch its own way.
REAL_CUDA_MISMATCHES = [
    "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
    "tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
    "RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other "
    "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
    "RuntimeError: Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden "
    "tensor at cpu",
    "RuntimeError: expected self and mask to be on the same device, but got mask on cpu and self on cuda:0",
    "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
    "input should be a MKLDNN tensor and weight is a dense tensor",
    "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
]


@pytest.mark.parametrize("message", REAL_CUDA_MISMATCHES)
def test_every_device_rule_accepts_what_real_cuda_prints(message):
    """verify --real-device: a device rule's fix is proved only when the original's failure
    is its evidence; a message it does not know makes the fix "could not run" (TM102 on an
    LSTM's h0 knew only the simulation's message)."""
    from torchmend.registry import all_rules
    from torchmend.verify.harness import RunOutcome

    out = RunOutcome(ok=False, error_text=message, returncode=1)
    rules = [r for r in all_rules() if r.pitfall == "device"]
    assert len(rules) == 4
    for r in rules:
        assert out.shows_any(evidence_for(r)), r.code
    assert not RunOutcome(ok=False, error_text="RuntimeError: mat1 and mat2 shapes cannot be multiplied").shows_any(
        evidence_for("device"))


def test_real_device_skips_the_simulation():
    """--real-device installs no simulation: on a CPU-only machine the script sees no GPU
    and runs on the CPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a real GPU is present")
    out = run_script(os.path.join(HERE, "device_bug.py"), "device", real_device=True)
    assert out.ok and out.steps == 6


@pytest.mark.parametrize("name,mode,expected", [RUNS[0]])
def test_fresh_interpreter_path(name, mode, expected):
    """A fresh interpreter per run (the worker execs the bootstrap after the same sandbox
    set-up) gives the same outcomes as a fork of the warm worker."""
    out = run_script(os.path.join(HERE, name), mode, fresh=True)
    assert out.shows(expected) if expected else out.ok, out.stderr[-2000:]


def test_worker_reads_lines_arriving_together():
    """Two protocol lines in one pipe read must both be seen (no buffered line hidden from
    select(), which would turn a finished run into a false timeout)."""
    import subprocess
    import sys

    from torchmend.verify.forkserver import Worker

    w = object.__new__(Worker)
    w.buf, w._probe, w._ready, w._done = b"", None, False, {}
    w.proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.write('{\"id\": 7, \"done\": 0}\\n{\"ready\": true}\\n')"],
        stdout=subprocess.PIPE,
        bufsize=0,
    )
    w.proc.wait()
    assert w._read(5) == {"id": 7, "done": 0}
    assert w._read(5) == {"ready": True} and w._ready and w._done == {7: 0}
    w.proc.stdout.close()


def test_forkserver_matches_fresh_interpreter():
    forked = run_script(os.path.join(HERE, "zero_grad_per_epoch.py"), "zero_grad")
    fresh = run_script(os.path.join(HERE, "zero_grad_per_epoch.py"), "zero_grad", fresh=True)
    assert (forked.detectors, forked.steps, forked.returncode) == (fresh.detectors, fresh.steps, fresh.returncode)
