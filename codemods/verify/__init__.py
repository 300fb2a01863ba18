"""Execution verification: run a script before and after its fixes, with torch.

* :mod:`.simulate`   a simulated GPU (cuda -> meta device, with device-mixing checks)
* :mod:`.detectors`  run-time detectors (zero_grad TM201/TM202, softmax TM501/TM502), step limit
* :mod:`.bootstrap`  what the subprocess runs: installs the modes, runs the script as __main__
* :mod:`.harness`    ``run_script(...) -> RunOutcome``, pitfall -> mode and expected signature
* :mod:`.verify`     before/after verification of the engine's fixes (``torchmend verify``)
"""
