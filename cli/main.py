"""The ``torchmend`` command line (Typer).  Thin: options in, library calls, output out.

Exit codes (also in the README):
  0  nothing to change / nothing found
  1  ``diff``: a change would be made; ``check``: findings; ``apply``: findings left
     for a human after fixing
  2  a file could not be processed (syntax error, bad encoding, ...) or a usage error
"""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Find and fix the five PyTorch training pitfalls; every fix is a reviewable diff.",
    rich_markup_mode=None,
)

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2

PathsArg = typer.Argument(..., help="Files or directories (directories: their *.py files).")
SelectOpt = typer.Option(None, "--select", help="Only these rules: codes (TM201), prefixes (TM2), names or pitfalls; comma-separated or repeated.")
IgnoreOpt = typer.Option(None, "--ignore", help="Skip these rules (same forms as --select).")
UnsafeOpt = typer.Option(None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply fixes classed unsafe.")
ExcludeOpt = typer.Option(None, "--exclude", help="Glob of paths to skip (repeatable).")
JobsOpt = typer.Option(None, "--jobs", "-j", help="Worker processes (default: all cores).")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print only diffs, findings and errors.")
NoCacheOpt = typer.Option(False, "--no-cache", help="Neither read nor write the result cache (.torchmend_cache/).")
CacheDirOpt = typer.Option(None, "--cache-dir", help="Cache directory (default: .torchmend_cache/ in the project root).")
ChangedOpt = typer.Option(None, "--changed-since", metavar="REV", help="Only files changed in git since REV (plus untracked files), e.g. origin/main.")
ExecutorOpt = typer.Option(None, "--executor", metavar="dask://HOST:PORT", help="Run on a dask.distributed cluster (pip install 'torchmend[dask]') instead of local processes.")


def _split(values: Optional[List[str]]) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


def _err(msg: str) -> None:
    sys.stderr.write(msg + "\n")


class _Ctx:
    def __init__(self, paths, select, ignore, unsafe, exclude, jobs, quiet, fix, write,
                 no_cache=False, cache_dir=None, changed_since=None, executor=None):
        from torchmend.config import ConfigError, load_config
        from torchmend.engine import Options
        from torchmend.registry import all_rules, resolve

        try:
            cfg = load_config(paths[0] if paths else ".")
            sel = _split(select) or cfg.select
            codes = resolve(sel) if sel else {r.code for r in all_rules()}
            codes -= resolve(_split(ignore) + cfg.ignore)
        except (ConfigError, ValueError) as e:
            _err(f"torchmend: error: {e}")
            raise typer.Exit(EXIT_ERROR)
        self.opts = Options(
            select=frozenset(codes),
            unsafe_fixes=cfg.unsafe_fixes if unsafe is None else unsafe,
            fix=fix,
            write=write,
            roots=tuple(paths),
        )
        self.exclude = tuple(_split(exclude) + cfg.exclude)
        self.jobs = jobs
        self.quiet = quiet
        self.no_cache, self.cache_dir = no_cache, cache_dir
        self.changed_since, self.executor = changed_since, executor

    def run(self, paths):
        from torchmend.runner import run

        only = executor = cache = None
        try:
            if self.changed_since:
                from torchmend.discovery import GitError, changed_since

                try:
                    only = changed_since(self.changed_since)
                except GitError as e:
                    raise ValueError(str(e)) from None
            if self.executor:
                from torchmend.runner import make_executor

                executor = make_executor(self.executor)
        except ValueError as e:
            _err(f"torchmend: error: {e}")
            raise typer.Exit(EXIT_ERROR)
        if not self.no_cache:
            from torchmend.cache import Cache

            # apply re-hashes every file it trusts the cache for
            cache = Cache(self.opts, self.cache_dir, verify=self.opts.write)
        bar = _progress(self.quiet)
        try:
            rr = run(list(paths), self.opts, exclude=self.exclude, jobs=self.jobs, progress=bar,
                     cache=cache, only=only, executor=executor)
        finally:
            if bar:
                bar.close()
            if executor is not None:
                executor.shutdown(wait=True)
                client = getattr(executor, "_client", None)  # the dask Client we opened
                if client is not None:
                    client.close()
        if cache is not None:
            cache.save()
        return rr


class _progress:
    """A rich progress bar on stderr, only on a terminal and only for long runs."""

    def __new__(cls, quiet: bool):
        if quiet or not sys.stderr.isatty():
            return None
        return super().__new__(cls)

    def __init__(self, quiet: bool):
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None and total >= 200:
            from rich.progress import Progress

            self.bar = Progress(transient=True, console=None)
            self.task = self.bar.add_task("torchmend", total=total)
            self.bar.start()
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _report(rr, show_suggestions: bool) -> None:
    from torchmend.gitdiff import display_path

    for r in rr.results:
        sugg = {(s.finding.line, s.finding.col, s.finding.code): s.diff for s in r.suggestions}
        for f in r.unfixed():
            _err(f.format())
            d = sugg.get((f.line, f.col, f.code))
            if show_suggestions and d:
                sys.stderr.write("  suggested fix:\n")
                sys.stderr.write("".join("    " + ln + "\n" for ln in d.decode("utf-8", "replace").splitlines()))
    for path, msg in rr.errors:
        _err(f"{display_path(path)}: error: {msg}")
    for r in rr.results:
        if r.skipped:
            _err(f"{display_path(r.path)}: skipped: {r.skipped}")


def _summary(rr, verb: Optional[str]) -> str:
    """One line: files scanned / from cache / skipped by the text gate / analysed / parsed
    with LibCST for a fix / changed, fixes and findings per rule, errors, elapsed (verb
    None: check)."""
    st = rr.stats()
    applied = rr.applied()
    per_rule = ", ".join(f"{c} x{n}" for c, n in sorted(applied.items())) or "none"
    left = rr.findings_by_code()
    n_left = sum(left.values())
    left_s = (" (" + ", ".join(f"{c} x{n}" for c, n in sorted(left.items())) + ")") if left else ""
    return (
        f"torchmend: {st['scanned']} files scanned ({st['cached']} from cache, {st['prefiltered']} skipped by the text gate, "
        f"{st['analysed']} analysed, {st['parsed']} parsed for fixes)"
        + (f", {st['changed']} {verb}; fixes: {per_rule}; " if verb else "; ")
        + f"{n_left} finding{'s' if n_left != 1 else ''}{' left for a human' if verb else ''}{left_s}; "
        f"{st['errors']} error{'s' if st['errors'] != 1 else ''} ({rr.elapsed:.2f}s)"
    )


@app.command()
def diff(
    paths: List[str] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    unsafe_fixes: Optional[bool] = UnsafeOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
) -> None:
    """Dry run: print one unified diff of the fixes (stdout); other findings go to stderr.

    The diff is sorted by path and does not depend on --jobs or the executor: redirect it
    to a file, review it, and apply it with `torchmend apply --patch FILE`.
    Exit 0 when nothing would change, 1 when something would, 2 on a file error.
    """
    c = _Ctx(paths, select, ignore, unsafe_fixes, exclude, jobs, quiet, fix=True, write=False,
             no_cache=no_cache, cache_dir=cache_dir, changed_since=changed_since, executor=executor)
    rr = c.run(paths)
    out = sys.stdout.buffer
    out.write(rr.patch())
    out.flush()
    _report(rr, show_suggestions=True)
    if not quiet:
        _err(_summary(rr, "would change"))
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if rr.changed else EXIT_CLEAN)


def _apply_patch(patch: str, quiet: bool) -> None:
    from torchmend.patch import PatchError, apply_patch

    try:
        if patch == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(patch, "rb") as f:
                data = f.read()
    except OSError as e:
        _err(f"torchmend: error: {patch}: cannot read the patch: {e.strerror or e}")
        raise typer.Exit(EXIT_ERROR)
    try:
        done = apply_patch(data, ".")
    except PatchError as e:
        _err(f"torchmend: error: {e}; nothing written")
        raise typer.Exit(EXIT_ERROR)
    if not quiet:
        for fp in done:
            _err(f"patched {fp.path}")
        _err(f"torchmend: {len(done)} file{'s' if len(done) != 1 else ''} patched")
    raise typer.Exit(EXIT_CLEAN)


@app.command()
def apply(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or directories (directories: their *.py files)."),
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    unsafe_fixes: Optional[bool] = UnsafeOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
    patch: Optional[str] = typer.Option(None, "--patch", metavar="FILE", help="Apply this reviewed patch (from `torchmend diff`; '-' for stdin), all or nothing, instead of running the rules."),
) -> None:
    """Write the fixes in place (atomically) and print a summary.

    With --patch: apply a reviewed patch made by `torchmend diff`, paths relative to the
    current directory; nothing is written unless every file applies cleanly and is
    unchanged since the patch was made.
    Exit 0 when nothing is left to do, 1 when findings remain for a human, 2 on a file error.
    """
    if patch is not None:
        if paths:
            _err("torchmend: error: --patch takes no paths (the patch names its files)")
            raise typer.Exit(EXIT_ERROR)
        _apply_patch(patch, quiet)
    if not paths:
        _err("torchmend: error: give files or directories to fix, or --patch FILE")
        raise typer.Exit(EXIT_ERROR)
    c = _Ctx(paths, select, ignore, unsafe_fixes, exclude, jobs, quiet, fix=True, write=True,
             no_cache=no_cache, cache_dir=cache_dir, changed_since=changed_since, executor=executor)
    rr = c.run(paths)
    _report(rr, show_suggestions=True)
    if not quiet:
        for r in rr.changed:
            from torchmend.gitdiff import display_path

            _err(f"fixed {display_path(r.path)} ({', '.join(f'{k} x{v}' for k, v in sorted(r.applied.items()))})")
        _err(_summary(rr, "changed"))
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if rr.unfixed() else EXIT_CLEAN)


@app.command()
def check(
    paths: List[str] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
) -> None:
    """Lint only: print findings.  Exit 1 if any, 2 on a file error."""
    c = _Ctx(paths, select, ignore, False, exclude, jobs, quiet, fix=False, write=False,
             no_cache=no_cache, cache_dir=cache_dir, changed_since=changed_since, executor=executor)
    rr = c.run(paths)
    _report(rr, show_suggestions=False)
    n = len(rr.unfixed())
    if not quiet:
        _err(_summary(rr, None))
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if n else EXIT_CLEAN)


@app.command()
def rules() -> None:
    """List the rules: code, name, pitfall, severity, summary."""
    from torchmend.registry import all_rules

    from rich.console import Console
    from rich.table import Table

    t = Table("code", "name", "pitfall", "severity", "summary")
    for r in all_rules():
        t.add_row(r.code, r.name, r.pitfall, r.severity.value, r.summary)
    Console(width=max(120, Console().width)).print(t)


@app.command()
def explain(code: str = typer.Argument(..., help="A rule code (TM201) or name.")) -> None:
    """Print a rule's documentation."""
    from torchmend.registry import by_code

    try:
        r = by_code(code)
    except KeyError:
        _err(f"torchmend: error: unknown rule {code!r} (see `torchmend rules`)")
        raise typer.Exit(EXIT_ERROR)
    print(f"{r.code} {r.name} ({r.pitfall}, {r.severity.value})\n")
    print(r.doc())


from torchmend.cli.verify import verify as _verify  # noqa: E402

app.command("verify")(_verify)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
