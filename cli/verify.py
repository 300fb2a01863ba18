"""``torchmend verify``: run each script before and after its fixes, with torch.

Registered in cli/main.py.  Exit codes:
  0  every applied fix is verified: the original shows the pitfall, the fixed copy runs
     clean (also 0 when no fix applies: nothing to verify)
  1  at least one applied fix is not verified (the original did not show the problem, or
     the fixed copy failed, a detector fired, or a run timed out)
  2  a script could not be processed, or a usage error (e.g. --real-device without CUDA)
"""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

EXIT_VERIFIED, EXIT_UNVERIFIED, EXIT_ERROR = 0, 1, 2


def verify(
    scripts: List[str] = typer.Argument(..., help="Training scripts to run (each is EXECUTED, twice)."),
    unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply and verify fixes classed unsafe."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules (codes, prefixes, names, pitfalls)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these rules."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds allowed to each run of a script."),
    max_steps: int = typer.Option(5, "--max-steps", help="Stop each run cleanly after this many optimizer steps (0: no limit)."),
    real_device: bool = typer.Option(False, "--real-device", help="Run on this machine's real CUDA device instead of the simulated GPU."),
) -> None:
    """Verify the fixes by EXECUTING the scripts: this runs your code (twice per script).

    For each script, the original and the fixed version (safe fixes; --unsafe-fixes for all)
    run in subprocesses, each in a temporary copy of the script's directory (files over
    8 MiB are symlinked, not copied).  Device fixes run on a simulated GPU (cuda mapped to
    PyTorch's meta device, device mixing checked) or, with --real-device, on real CUDA;
    zero_grad and softmax fixes run with detectors; main_guard fixes with the "spawn"
    start method.  Each run stops after --max-steps optimizer steps.  Evidence per fix:
    what the original showed, and how the fixed version ran.

    Exit 0 when every applied fix is verified, 1 when one is not, 2 on an error.
    """
    from torchmend.cli.main import cli_options, settings_from_cli
    from torchmend.verify.verify import format_report, verify_script

    settings = settings_from_cli(cli_options(select=select, ignore=ignore))  # command line over configuration
    if real_device:
        import subprocess

        r = subprocess.run([sys.executable, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"])
        if r.returncode != 0:
            sys.stderr.write("torchmend: error: --real-device: torch sees no CUDA device here\n")
            raise typer.Exit(EXIT_ERROR)
    rc = EXIT_VERIFIED
    nfix = nver = 0
    for path in scripts:
        rep = verify_script(
            path,
            unsafe_fixes=unsafe_fixes,
            timeout=timeout,
            max_steps=max_steps or None,
            real_device=real_device,
            select=settings.for_file(path).select,
            roots=tuple(scripts),
        )
        for line in format_report(rep):
            print(line)
        sys.stdout.flush()
        nfix += len(rep.fixes)
        nver += sum(f.verified for f in rep.fixes)
        if rep.error:
            rc = EXIT_ERROR
        elif not rep.verified and rc == EXIT_VERIFIED:
            rc = EXIT_UNVERIFIED
    sys.stderr.write(f"torchmend: {len(scripts)} script{'s' if len(scripts) != 1 else ''}, {nver}/{nfix} fixes verified\n")
    raise typer.Exit(rc)
