"""``torchmend verify``: run each script before and after its fixes, with torch, sandboxed.

Registered in cli/main.py (with :class:`VerifyCommand`, which hands everything after
``--`` to the scripts).  Options and ``[tool.torchmend]`` resolve through
``cli.main.settings_from_cli`` (config.resolve), exactly as for ``apply``.  Exit codes:
  0  every applied fix is verified: the original shows the pitfall, the fixed copy runs
     clean (also 0 when no fix applies: nothing to verify)
  1  a fix did not help: the original ran without showing the problem, or the fixed copy
     still fails (an error, a detector, a time-out)
  2  could not run: the original fails for another reason than the pitfall (a missing
     module or file, a required argument, a time-out), files outside the sandbox copy
     changed, a script could not be processed, or a usage error
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import List, Optional

import typer
from typer.core import TyperCommand

EXIT_VERIFIED, EXIT_UNVERIFIED, EXIT_ERROR = 0, 1, 2


class VerifyCommand(TyperCommand):
    """``verify [OPTIONS] SCRIPTS... [-- SCRIPT_ARGS...]``: what follows the first ``--``
    goes to the scripts, untouched."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta["torchmend_script_args"] = tuple(args[i + 1:])
            args = args[:i]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        return ["[OPTIONS]", "SCRIPTS...", "[-- SCRIPT_ARGS...]"]


def verify(
    ctx: typer.Context,
    scripts: List[str] = typer.Argument(..., help="Training scripts to run (each is EXECUTED: the original and the fixed copy)."),
    unsafe_fixes: Optional[bool] = typer.Option(None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply and verify fixes classed unsafe."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these rules (codes, prefixes, names, pitfalls)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these rules."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds allowed to each run of a script."),
    max_steps: int = typer.Option(5, "--max-steps", help="Stop each run cleanly after this many optimizer steps (0: no limit)."),
    cwd: Optional[str] = typer.Option(None, "--cwd", metavar="DIR", help="Run in (a copy of) DIR instead of the script's directory; DIR must hold the script."),
    env: Optional[List[str]] = typer.Option(None, "--env", metavar="KEY=VAL", help="Add a variable to the script's environment (repeatable)."),
    allow_network: bool = typer.Option(False, "--allow-network", help="Let the script use the network (default: none, where the OS allows)."),
    copy_limit: int = typer.Option(1024, "--copy-limit", metavar="MIB", help="Copy at most this many MiB of the directory per run; bigger files are left out (and named)."),
    memory_limit: Optional[int] = typer.Option(None, "--memory-limit", metavar="MIB", help="Data size limit per process (default: half of the RAM; 0: none)."),
    file_size_limit: Optional[int] = typer.Option(None, "--file-size-limit", metavar="MIB", help="Largest file a run may write (default: 4096; 0: none)."),
    real_device: bool = typer.Option(False, "--real-device", help="Run on this machine's real CUDA device instead of the simulated GPU."),
) -> None:
    """Verify the fixes by EXECUTING the scripts: this runs your code.

    For each script, the original and the fixed version (safe fixes; --unsafe-fixes for
    all) run, in parallel, each in a private copy of the script's directory (or of
    --cwd), with the script's arguments (everything after `--`).  The sandbox, where the
    OS allows it (Linux user namespaces): no network, every file outside the copy
    read-only, an allow-listed environment (no tokens or keys; HOME in the sandbox), limits
    on CPU time, memory and file size, and every process the script starts killed when
    the run ends.  Where the OS does not, verify says so, and reports the files outside
    the copy that changed.

    Device fixes run on a simulated GPU (cuda mapped to PyTorch's meta device, device
    mixing checked) or, with --real-device, on real CUDA; zero_grad and softmax fixes run
    with detectors; main_guard fixes with the "spawn" start method (without CUDA, the cuda
    such runs name is the CPU: a script written for a GPU computes).  Each run stops after
    --max-steps optimizer steps.  Evidence per fix: what the original showed, and how the
    fixed version ran.

    Exit 0 when every applied fix is verified, 1 when a fix did not help, 2 when a script
    could not run (the original fails for another reason than the pitfall: a missing
    module or file, a required argument), and on errors.
    """
    from torchmend.cli.main import cli_options, settings_from_cli
    from torchmend.verify import harness

    worker = None
    if hasattr(os, "fork") and os.name != "nt":
        worker = harness.shared_worker()  # it imports torch while the options and fixes are worked out
    script_args = ctx.meta.get("torchmend_script_args", ())
    # the same resolution as apply: command line over the nearest configuration, per file
    settings = settings_from_cli(cli_options(select=select, ignore=ignore, unsafe=unsafe_fixes))
    extra_env = []
    for item in env or []:
        key, eq, val = item.partition("=")
        if not eq or not key or "\0" in item:
            sys.stderr.write(f"torchmend: error: --env {item!r}: expected KEY=VALUE\n")
            raise typer.Exit(EXIT_ERROR)
        extra_env.append((key, val))
    if cwd is not None and not os.path.isdir(cwd):
        sys.stderr.write(f"torchmend: error: --cwd {cwd}: not a directory\n")
        raise typer.Exit(EXIT_ERROR)
    if timeout <= 0 or copy_limit <= 0:
        sys.stderr.write("torchmend: error: --timeout and --copy-limit must be positive\n")
        raise typer.Exit(EXIT_ERROR)
    if real_device:
        import subprocess

        r = subprocess.run([sys.executable, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"])
        if r.returncode != 0:
            sys.stderr.write("torchmend: error: --real-device: torch sees no CUDA device here\n")
            raise typer.Exit(EXIT_ERROR)

    from torchmend.config import ConfigError
    from torchmend.verify.verify import VerifyOptions, format_report, verify_script

    try:
        for path in scripts:  # every script's configuration read before anything runs
            settings.for_file(path)
    except ConfigError as e:
        sys.stderr.write(f"torchmend: error: {e}\n")
        raise typer.Exit(EXIT_ERROR)
    n = len(scripts)
    print(f"torchmend verify: this EXECUTES {'the script' if n == 1 else f'{n} scripts'} "
          f"(the original and the fixed copy{' of each' if n > 1 else ''}), each run in a private copy of its directory")
    sys.stdout.flush()
    t0 = time.monotonic()
    old_term = _on_sigterm()
    try:
        if worker is not None:
            iso = worker.isolation()
            if allow_network:
                iso.network = "allowed"
            print(f"  {iso.describe()}")
        else:
            print(f"  sandbox: none on {sys.platform} (environment filtered only; writes outside the copy are detected afterwards)")
        sys.stdout.flush()
        vo = VerifyOptions(
            timeout=timeout, max_steps=max_steps or None, real_device=real_device, args=tuple(script_args), cwd=cwd,
            env=tuple(extra_env), network=allow_network, copy_limit=copy_limit * 1024 * 1024,
            memory_mib=memory_limit, file_mib=file_size_limit,
        )
        rc = EXIT_VERIFIED
        nfix = nver = ncnr = 0
        for path in scripts:
            fs = settings.for_file(path)  # each script's own settings, as apply would use them
            rep = verify_script(path, unsafe_fixes=fs.unsafe_fixes, select=fs.select,
                                roots=tuple(scripts), vopts=vo, worker=worker)
            for line in format_report(rep):
                print(line)
            sys.stdout.flush()
            nfix += len(rep.fixes)
            nver += sum(f.verified for f in rep.fixes)
            outcome = rep.outcome
            if outcome in ("error", "could not run"):
                ncnr += outcome == "could not run"
                rc = EXIT_ERROR
            elif outcome == "not verified" and rc == EXIT_VERIFIED:
                rc = EXIT_UNVERIFIED
    except KeyboardInterrupt:
        sys.stderr.write("torchmend: interrupted: every run was stopped\n")
        raise typer.Exit(130)
    finally:
        _restore_sigterm(old_term)
    cnr = f", {ncnr} could not run" if ncnr else ""
    sys.stderr.write(f"torchmend: {n} script{'s' if n != 1 else ''}, {nver}/{nfix} fixes verified{cnr} "
                     f"({time.monotonic() - t0:.1f}s)\n")
    raise typer.Exit(rc)


def _on_sigterm():
    """`kill` of verify: stop the runs and clean up as for Ctrl-C (a plain SIGTERM would end
    the process without running the cleanup)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return None


def _restore_sigterm(old) -> None:
    if old is not None:
        try:
            signal.signal(signal.SIGTERM, old)
        except (ValueError, OSError):
            pass
