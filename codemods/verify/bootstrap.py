"""Run one script under the verification modes (the harness runs this in a subprocess).

    python -m torchmend.verify.bootstrap --mode device,zero_grad [--max-steps N]
        [--real-device] [--cwd DIR] script.py [--] [script args...]

Installs the modes, then runs the script like ``python script.py`` would: as
``__main__`` (``runpy.run_path``), with the script's directory as ``sys.path[0]``, ``DIR``
(default: the script's directory) as working directory, and ``sys.argv`` = the script and
its arguments.  The sandbox around it is the worker's (forkserver.py), not this module's.

Modes (comma-separated, any combination):
  device     simulated GPU (codemods.verify.simulate); with --real-device, nothing (real CUDA)
  zero_grad  the zero_grad detector (TM201/TM202)
  softmax    the cross-entropy input detector (TM501/TM502)
  spawn      children re-run the script's module first, as under the "spawn" start method
             (Windows/macOS default): the "forkserver" start method with torch preloaded
             where there is one (Linux; Python 3.14's default there), else "spawn"
  load, plain  nothing special

Protocol on stderr (the script's own output is untouched apart from these lines):
  TORCHMEND-DETECTOR: <code> at <file:line>: <message>   a detector fired
  TORCHMEND-ERROR: <Type>: <message, one line> at <file:line>  the script raised (after its traceback)
  TORCHMEND-STOPPED: after N steps                          --max-steps reached: a clean stop
  TORCHMEND-TIME: S                                         seconds the script itself ran
  TORCHMEND-STEPS: N                                        optimizer steps taken (always last)
Exit status: 0 clean (ran to the end or stopped after N steps), 3 a detector fired
(and nothing raised), 1 the script raised, or the script's own ``sys.exit`` status.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

MODES = ("device", "zero_grad", "softmax", "spawn", "load", "plain")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m torchmend.verify.bootstrap")
    ap.add_argument("--mode", default="plain")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--real-device", action="store_true")
    ap.add_argument("--cwd", default=None)
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    modes = {m.strip() for m in ns.mode.split(",") if m.strip()}
    bad = modes - set(MODES)
    if bad:
        ap.error(f"unknown mode(s): {', '.join(sorted(bad))}")

    script = os.path.abspath(ns.script)
    sdir = os.path.dirname(script)
    os.chdir(ns.cwd or sdir)
    sys.argv = [script, *ns.args]
    if sys.path and sys.path[0] in ("", os.getcwd(), sdir, ns.cwd):
        sys.path[0] = sdir
    else:
        sys.path.insert(0, sdir)

    # on a machine without CUDA, the cuda a script names is the CPU in the runs that need
    # values, not devices (simulate.install_cpu)
    import torch

    cpu_cuda = "device" not in modes and not ns.real_device and not torch.cuda.is_available()
    if "spawn" in modes:
        import multiprocessing

        if "forkserver" in multiprocessing.get_all_start_methods():
            # children start by re-running the script's module, exactly as under spawn, but
            # forked from a server that imported torch once (a DataLoader worker then costs
            # a fork, not a fresh `import torch`); Python 3.14's default on Linux
            multiprocessing.set_start_method("forkserver", force=True)
            multiprocessing.set_forkserver_preload(
                ["torch", "torch.utils.data"] + ([f"{__package__}.cpu_children"] if cpu_cuda else []))
        else:
            multiprocessing.set_start_method("spawn", force=True)
        # a DataLoader notices a dead worker (the unguarded script's child raises at once)
        # only when it next checks, every 5 s: check twice a second instead
        try:
            from torch.utils.data import dataloader as _dl

            it = _dl._MultiProcessingDataLoaderIter._try_get_data
            if it.__defaults__ and it.__defaults__[0] > 0.5:
                it.__defaults__ = (0.5,)
        except (ImportError, AttributeError):
            pass

    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    from . import detectors as det

    det.State.user_root = os.path.realpath(sdir)
    if "zero_grad" in modes:
        det.install_zero_grad()
    if "softmax" in modes:
        det.install_softmax()
    if "device" in modes and not ns.real_device:
        from . import simulate

        simulate.install()
    elif cpu_cuda:  # a script written for a GPU computes on the CPU
        from . import simulate

        simulate.install_cpu()
    det.install_steps(ns.max_steps)

    import runpy
    import time

    rc = 0
    t0 = time.perf_counter()
    try:
        runpy.run_path(script, run_name="__main__")
    except det.StopScript as e:
        sys.stderr.write(f"TORCHMEND-STOPPED: {e}\n")
    except SystemExit as e:
        code = e.code
        rc = 0 if code is None else code if isinstance(code, int) else 1
        if not isinstance(code, (int, type(None))):
            sys.stderr.write(f"{code}\n")
    except BaseException as e:  # noqa: BLE001 - report whatever the script raised
        tb = traceback.extract_tb(e.__traceback__)
        traceback.print_exception(type(e), e, e.__traceback__)
        words = " ".join(ln.strip() for ln in str(e).strip().splitlines() if ln.strip())
        first = words if len(words) <= 300 else words[:299] + "…"
        loc = det.user_location(tb)
        sys.stderr.write(f"TORCHMEND-ERROR: {type(e).__name__}: {first} at {loc or '?'}\n")
        rc = 1
    for fin in det.FINALIZERS:
        try:
            fin()
        except Exception as e:  # noqa: BLE001 - a detector bug must not hide the run's outcome
            sys.stderr.write(f"torchmend: detector finalizer failed: {e!r}\n")
    sys.stderr.write(f"TORCHMEND-TIME: {time.perf_counter() - t0:.3f}\n")
    sys.stderr.write(f"TORCHMEND-STEPS: {det.State.steps}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    if rc == 0 and det.State.fired:
        rc = det.EXIT_DETECTOR
    return rc


if __name__ == "__main__":
    sys.exit(main())
