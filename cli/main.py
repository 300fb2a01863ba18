"""The ``torchmend`` command line (Typer).  Thin: options in, library calls, output out.

Settings come from ``torchmend.config.resolve`` (command line over each file's nearest
configuration), output from ``torchmend.output``.  Exit codes (also in the README):
  0  nothing to change / nothing found (``[info]`` advice never changes the exit code)
  1  ``diff``: a change would be made; ``check``: findings; ``apply``: findings left
     for a human after fixing (or, with ``--exit-non-zero-on-fix``, anything fixed)
  2  a file could not be processed, a usage or configuration error, or an internal error
     (one line; TORCHMEND_DEBUG=1 for the traceback)
130  interrupted (Ctrl-C)
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import List, Optional

import typer

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    help="Find and fix the five PyTorch training pitfalls; every fix is a reviewable diff.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "junit")

PathsArg = typer.Argument(..., metavar="PATHS...", help="Files or directories (directories: their *.py files and *.ipynb notebooks); '-' reads standard input.", show_default=False)
SelectOpt = typer.Option(None, "--select", metavar="RULES", help="Only these rules: codes (TM201), prefixes (TM2), names, pitfalls or ALL; comma-separated or repeated. Replaces the configuration's select.")
ExtendSelectOpt = typer.Option(None, "--extend-select", metavar="RULES", help="Rules to enable on top of the selection.")
IgnoreOpt = typer.Option(None, "--ignore", metavar="RULES", help="Rules to skip (same forms as --select).")
UnsafeOpt = typer.Option(None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply fixes classed unsafe.", show_default=False)
ExcludeOpt = typer.Option(None, "--exclude", metavar="GLOB", help="Paths to skip, gitignore-style globs (repeatable); replaces the default excludes (.venv, build, ...).")
ExtendExcludeOpt = typer.Option(None, "--extend-exclude", metavar="GLOB", help="Paths to skip on top of the excludes.")
ForceExcludeOpt = typer.Option(None, "--force-exclude/--no-force-exclude", help="Apply the excludes to paths given on the command line too (for pre-commit).", show_default=False)
GitignoreOpt = typer.Option(None, "--respect-gitignore/--no-respect-gitignore", help="Skip what git ignores (default: yes).", show_default=False)
ConfigOpt = typer.Option(None, "--config", metavar="FILE", help="Use this torchmend.toml or pyproject.toml for every file (no per-directory lookup).")
IsolatedOpt = typer.Option(False, "--isolated", help="Ignore every configuration file.")
JobsOpt = typer.Option(None, "--jobs", "-j", metavar="N", help="Worker processes (default: all cores).")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print only diffs, findings and errors.")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Also print the configuration files used and each file's outcome.")
NoCacheOpt = typer.Option(False, "--no-cache", help="Neither read nor write the result cache (.torchmend_cache/).")
CacheDirOpt = typer.Option(None, "--cache-dir", metavar="DIR", help="Cache directory (default: .torchmend_cache/ in the project root).")
ChangedOpt = typer.Option(None, "--changed-since", metavar="REV", help="Only files changed in git since REV (plus untracked files), e.g. origin/main.")
ExecutorOpt = typer.Option(None, "--executor", metavar="dask://HOST:PORT", help="Run on a dask.distributed cluster (pip install 'torchmend[dask]') instead of local processes.")
FormatOpt = typer.Option("concise", "--output-format", metavar="FORMAT", help=f"How findings are printed: {', '.join(FORMATS)}.")
StdinNameOpt = typer.Option(None, "--stdin-filename", metavar="PATH", help="The name of the file read from standard input ('-'): for messages, the diff and its configuration.")
ShowFixesOpt = typer.Option(False, "--show-fixes", help="List the fixes applied per file and rule (check: show each finding's fix as a diff).")


def _err(msg: str) -> None:
    sys.stderr.write(msg + "\n")


def _version(value: bool) -> None:
    if value:
        from torchmend import __version__

        print(f"torchmend {__version__}")
        raise typer.Exit(EXIT_CLEAN)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Find and fix the five PyTorch training pitfalls; every fix is a reviewable diff."""


# --------------------------------------------------------------------------- settings
def cli_options(select=None, extend_select=None, ignore=None, unsafe=None, exclude=None, extend_exclude=None,
                 force_exclude=None, respect_gitignore=None, config=None, isolated=False):
    from torchmend.config import CliOptions, split_list

    return CliOptions(
        select=split_list(select) if select else None,
        extend_select=split_list(extend_select),
        ignore=split_list(ignore),
        exclude=split_list(exclude) if exclude else None,
        extend_exclude=split_list(extend_exclude),
        unsafe_fixes=unsafe,
        respect_gitignore=respect_gitignore,
        force_exclude=force_exclude,
        config=config,
        isolated=isolated,
    )


def settings_from_cli(cli):
    """``config.resolve`` with its errors as one line and exit 2 (every command)."""
    from torchmend.config import ConfigError, resolve

    try:
        return resolve(cli)
    except ConfigError as e:
        _err(f"torchmend: error: {e}")
        raise typer.Exit(EXIT_ERROR)


class _Ctx:
    """One run of check / diff / apply: settings, discovery, the engine, output style."""

    def __init__(self, cli, *, fix, write, jobs, quiet, verbose=False, no_cache=False, cache_dir=None,
                 changed_since=None, executor=None, output_format="concise", fix_edits=False, digest=False):
        from torchmend.engine import Options
        from torchmend.output import Style, use_color

        if output_format not in FORMATS:
            _err(f"torchmend: error: unknown --output-format {output_format!r} (one of {', '.join(FORMATS)})")
            raise typer.Exit(EXIT_ERROR)
        self.settings = settings_from_cli(cli)
        # (files are hashed for the cache, and for ``digest``: --add-noqa's check that a
        # file is still what was analysed; a run without cache needs no hash otherwise)
        self.base = Options(fix=fix, write=write, fix_edits=fix_edits, digest=digest or not no_cache)
        self._opts: dict = {}
        self._by_path: dict = {}  # path -> its Options
        self.jobs, self.quiet, self.verbose = jobs, quiet, verbose
        self.no_cache, self.cache_dir = no_cache, cache_dir
        self.changed_since, self.executor = changed_since, executor
        self.format = output_format
        self.out_style = Style(use_color(sys.stdout))
        self.err_style = Style(use_color(sys.stderr))
        self.roots: tuple = ()

    def options_for(self, path: str):
        got = self._by_path.get(path)  # (asked once when the configurations are read, again by the run)
        if got is None:
            fs = self.settings.for_file(path)
            got = self._opts.get(fs)
            if got is None:
                got = self._opts[fs] = replace(self.base, select=fs.select, unsafe_fixes=fs.unsafe_fixes, roots=self.roots)
            self._by_path[path] = got
        return got

    def discover(self, paths):
        from torchmend.discovery import discover

        s = self.settings
        return discover(list(paths), excludes_for=s.excludes_for, gitignore_for=s.respect_gitignore,
                        force_exclude=s.force_exclude(), listing=s.listing)

    def run(self, paths):
        from torchmend.errors import Interrupted
        from torchmend.runner import run

        self.roots = tuple(paths)
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
        disc = self.discover(paths)
        from torchmend.config import ConfigError

        try:
            for p in disc.files:  # read every configuration before the work starts
                self.options_for(p)
        except ConfigError as e:
            _err(f"torchmend: error: {e}")
            raise typer.Exit(EXIT_ERROR)
        if not self.no_cache:
            # apply re-hashes every file it trusts the cache for
            from torchmend.cache import Cache

            # one cache for every file's settings: results are keyed by content and settings
            cache = Cache(self.base, self.cache_dir, verify=self.base.write)
            if cache.warning:
                _err(f"torchmend: {cache.warning}")
        _recover_patch()
        bar = _progress(self.quiet)
        try:
            rr = run(list(paths), self.base, jobs=self.jobs, progress=bar, cache=cache, only=only,
                     executor=executor, discovery=disc, options_for=self.options_for)
        except (KeyboardInterrupt, Interrupted):
            if bar:
                bar.close()
                bar = None
            _err("torchmend: interrupted: workers stopped, no file left partly written"
                 + (" (files fixed before the interrupt keep their fixes)" if self.base.write else ""))
            raise typer.Exit(EXIT_INTERRUPTED)
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
        rr.discovery_errors = disc.errors
        self.discovery = disc
        return rr

    # output -----------------------------------------------------------------------
    def notes(self, rr) -> None:
        """Errors, warnings and skips on stderr (whatever the output format)."""
        from torchmend.gitdiff import display_path

        st = self.err_style
        for path, msg in rr.errors:
            _err(f"{st(display_path(path), 'bold')}: {st('error', 'red', 'bold')}: {msg}")
        disc = getattr(self, "discovery", None)
        for path, msg in disc.warnings if disc is not None else ():
            _err(f"{st(display_path(path), 'bold')}: {st('warning', 'yellow', 'bold')}: {msg}")
        for r in rr.results:
            for w in r.warnings:
                where = f"cell {w[2]}:{w[0]}" if len(w) > 2 else f"{w[0]}"
                _err(f"{st(display_path(r.path), 'bold')}:{where}: {st('warning', 'yellow', 'bold')}: {w[1]}")
        for r in rr.results:
            if r.skipped:
                _err(f"{display_path(r.path)}: skipped: {r.skipped}")
        if not rr.results and not rr.errors and not self.quiet:
            _err(f"{st('warning', 'yellow', 'bold')}: no Python files found under the given paths")
        if self.verbose:
            for cfg in self.settings.config_files():
                _err(f"torchmend: configuration: {display_path(cfg)}")
            if len(self._opts) > 1:
                _err(f"torchmend: {len(self._opts)} sets of per-file settings")
            for r in rr.results:
                what = r.error and "error" or r.skipped and "skipped" or {"prefilter": "ruled out by the text gate", "ast": "analysed", "parsed": "analysed, parsed with LibCST for fixes"}.get(r.stage, "from cache")
                extra = f", {len(r.findings)} finding{'s' if len(r.findings) != 1 else ''}" if r.findings else ""
                _err(f"torchmend: {display_path(r.path)}: {what}{extra}")

    def findings(self, rr, stream, show_diffs: bool, statistics: bool = False) -> None:
        from torchmend import output

        style = self.out_style if stream is sys.stdout else self.err_style
        diags = output.diagnostics(rr.results)
        if statistics:
            text = output.statistics(diags, style, as_json=self.format in ("json", "json-lines"))
        else:
            text = output.render(self.format, diags, style, show_diffs=show_diffs, sources=getattr(rr, "sources", None),
                                 files=[r.path for r in rr.results])
        stream.write(text)
        stream.flush()


def _blocking(rr) -> list:
    """Findings that decide the exit code: all but ``[info]`` advice."""
    return [f for f in rr.unfixed() if f.severity.value != "info"]


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


def _summary(rr, verb: Optional[str]) -> str:
    """One line: files scanned / from cache / skipped by the text gate / analysed / parsed
    with LibCST for a fix / changed, fixes and findings per rule, errors, elapsed (verb
    None: check)."""
    from torchmend.output import plural

    st = rr.stats()
    applied = rr.applied()
    per_rule = ", ".join(f"{c} x{n}" for c, n in sorted(applied.items())) or "none"
    left = rr.findings_by_code()
    n_left = sum(left.values())
    left_s = (" (" + ", ".join(f"{c} x{n}" for c, n in sorted(left.items())) + ")") if left else ""
    return (
        f"torchmend: {plural(st['scanned'], 'file')} scanned ({st['cached']} from cache, {st['prefiltered']} skipped by the text gate, "
        f"{st['analysed']} analysed, {st['parsed']} parsed for fixes)"
        + (f", {st['changed']} {verb}; fixes: {per_rule}; " if verb else "; ")
        + f"{plural(n_left, 'finding')}{' left for a human' if verb else ''}{left_s}; "
        f"{plural(st['errors'], 'error')} ({rr.elapsed:.2f}s)"
    )


# --------------------------------------------------------------------------- stdin
def _read_stdin(c: _Ctx, name: Optional[str], mode: str):
    """Process standard input as the file ``name``.  Returns (RunResult, original bytes,
    new bytes or None, error or None); nothing is written."""
    from torchmend.discovery import discover
    from torchmend.engine import FileResult, fix_text, process_source
    from torchmend.project import ImportIndex, Project
    from torchmend.runner import RunResult
    from torchmend.sourcefile import Skipped, SourceError, decode_source
    from torchmend import suppression

    raw = sys.stdin.buffer.read()
    path = name or "-"
    rr = RunResult()
    rr.sources = {}
    if name and c.settings.force_exclude() and c.settings.excludes_for(os.path.dirname(os.path.abspath(name))).match(os.path.abspath(name), False):
        return rr, raw, None, None
    c.roots = (os.path.dirname(name) or ".",) if name else (".",)
    opts = replace(c.options_for(path), write=False)
    # the file's neighbours and package, as for the file on disk (the index reads on demand)
    project = Project(roots=c.roots, index=ImportIndex(discover(list(c.roots)).files))
    try:
        src = decode_source(path, raw)
        rr.sources[path] = src.text
        from torchmend.notebook import is_notebook

        if mode == "apply" and is_notebook(path):
            res = process_source(src, replace(opts, fix=True), project)
            new = res.new_raw or raw
            res = res.stripped()
        elif mode == "apply":
            findings, new_text, applied, _ctx = fix_text(path, src.text, opts, project)
            from torchmend.gitdiff import unified_diff

            res = FileResult(path=path, findings=[f.stripped() for f in findings], applied=applied, parsed=_ctx is not None,
                             stage="parsed" if _ctx is not None else "")
            res.warnings = suppression.comment_warnings(src.text)
            new = src.encode(new_text)
            res.diff = unified_diff(raw, new, path)
        else:
            res = process_source(src, opts, project).stripped()
            new = None
    except Skipped as e:
        rr.results = [FileResult(path=path, skipped=str(e))]
        return rr, raw, None, None
    except SourceError as e:
        rr.results = [FileResult(path=path, error=str(e))]
        return rr, raw, None, str(e)
    except RecursionError:
        rr.results = [FileResult(path=path, error="internal error: recursion limit (deeply nested code)")]
        return rr, raw, None, "recursion"
    rr.results = [res]
    return rr, raw, new, None


def _is_stdin(paths) -> bool:
    if paths and "-" in paths:
        if len(paths) > 1:
            _err("torchmend: error: '-' (standard input) cannot be combined with other paths")
            raise typer.Exit(EXIT_ERROR)
        return True
    return False


# --------------------------------------------------------------------------- commands
@app.command()
def diff(
    paths: List[str] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    extend_select: Optional[List[str]] = ExtendSelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    unsafe_fixes: Optional[bool] = UnsafeOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    extend_exclude: Optional[List[str]] = ExtendExcludeOpt,
    force_exclude: Optional[bool] = ForceExcludeOpt,
    respect_gitignore: Optional[bool] = GitignoreOpt,
    config: Optional[str] = ConfigOpt,
    isolated: bool = IsolatedOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    verbose: bool = VerboseOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
    output_format: str = FormatOpt,
    show_fixes: bool = ShowFixesOpt,
    stdin_filename: Optional[str] = StdinNameOpt,
) -> None:
    """Dry run: print one unified diff of the fixes (stdout); other findings go to stderr.

    The diff is sorted by path, names files relative to the repository root (as git
    does) and does not depend on --jobs or the executor: redirect it to a file, review
    it, and apply it with `git apply` or `torchmend apply --patch FILE`.
    Exit 0 when nothing would change, 1 when something would, 2 on a file error.
    """
    from torchmend.output import color_diff, show_fixes as fixes_text

    cli = cli_options(select, extend_select, ignore, unsafe_fixes, exclude, extend_exclude, force_exclude, respect_gitignore, config, isolated)
    c = _Ctx(cli, fix=True, write=False, jobs=jobs, quiet=quiet, verbose=verbose, no_cache=no_cache, cache_dir=cache_dir,
             changed_since=changed_since, executor=executor, output_format=output_format)
    if _is_stdin(paths):
        rr, _raw, _new, _e = _read_stdin(c, stdin_filename, "diff")
    else:
        rr = c.run(paths)
    out = sys.stdout.buffer
    out.write(color_diff(rr.patch(), c.out_style))
    out.flush()
    c.findings(rr, sys.stderr, show_diffs=True)
    c.notes(rr)
    if show_fixes:
        sys.stderr.write(fixes_text(rr.results, c.err_style))
    if not quiet:
        _err(_summary(rr, "would change"))
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if rr.changed else EXIT_CLEAN)


def _apply_patch(patch: str, quiet: bool, cache_dir: Optional[str] = None) -> None:
    from torchmend.gitdiff import repo_root
    from torchmend.patch import PatchError, apply_patch

    _recover_patch()
    try:
        if patch == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(patch, "rb") as f:
                data = f.read()
    except OSError as e:
        _err(f"torchmend: error: {patch}: cannot read the patch: {e.strerror or e}")
        raise typer.Exit(EXIT_ERROR)
    # the diff names files relative to the repository root (as git does)
    root = repo_root(".") or "."
    try:
        done = apply_patch(data, root, protect=(os.path.realpath(cache_dir),) if cache_dir else ())
    except PatchError as e:
        _err(f"torchmend: error: {e}; nothing written")
        raise typer.Exit(EXIT_ERROR)
    if not quiet:
        from torchmend.patch import _shown

        for fp in done:
            _err(f"patched {_shown(fp.path)}")
        _err(f"torchmend: {len(done)} file{'s' if len(done) != 1 else ''} patched")
    raise typer.Exit(EXIT_CLEAN)


@app.command()
def apply(
    paths: Optional[List[str]] = typer.Argument(None, metavar="[PATHS]...", help="Files or directories (directories: their *.py files and *.ipynb notebooks); '-' reads standard input and prints the fixed source.", show_default=False),
    select: Optional[List[str]] = SelectOpt,
    extend_select: Optional[List[str]] = ExtendSelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    unsafe_fixes: Optional[bool] = UnsafeOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    extend_exclude: Optional[List[str]] = ExtendExcludeOpt,
    force_exclude: Optional[bool] = ForceExcludeOpt,
    respect_gitignore: Optional[bool] = GitignoreOpt,
    config: Optional[str] = ConfigOpt,
    isolated: bool = IsolatedOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    verbose: bool = VerboseOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
    output_format: str = FormatOpt,
    show_fixes: bool = ShowFixesOpt,
    exit_non_zero_on_fix: bool = typer.Option(False, "--exit-non-zero-on-fix", help="Exit 1 when anything was fixed, even if no finding is left."),
    stdin_filename: Optional[str] = StdinNameOpt,
    patch: Optional[str] = typer.Option(None, "--patch", metavar="FILE", help="Apply this reviewed patch (from `torchmend diff`; '-' for stdin), all or nothing, instead of running the rules."),
) -> None:
    """Write the fixes in place (atomically); print the findings left and a summary.

    With '-': read standard input, print the fixed source on stdout (findings on stderr).
    With --patch: apply a reviewed patch made by `torchmend diff`, paths relative to the
    repository root (the current directory outside a repository); nothing is written
    unless every file applies cleanly and is unchanged since the patch was made.
    Exit 0 when nothing is left to do, 1 when findings remain for a human, 2 on a file error.
    """
    from torchmend.gitdiff import display_path
    from torchmend.output import show_fixes as fixes_text

    if patch is not None:
        if paths:
            _err("torchmend: error: --patch takes no paths (the patch names its files)")
            raise typer.Exit(EXIT_ERROR)
        _apply_patch(patch, quiet, cache_dir)
    if not paths:
        _err("torchmend: error: give files or directories to fix, or --patch FILE")
        raise typer.Exit(EXIT_ERROR)
    cli = cli_options(select, extend_select, ignore, unsafe_fixes, exclude, extend_exclude, force_exclude, respect_gitignore, config, isolated)
    stdin = _is_stdin(paths)
    c = _Ctx(cli, fix=True, write=not stdin, jobs=jobs, quiet=quiet, verbose=verbose, no_cache=no_cache, cache_dir=cache_dir,
             changed_since=changed_since, executor=executor, output_format=output_format)
    if stdin:
        rr, raw, new, _e = _read_stdin(c, stdin_filename, "apply")
        sys.stdout.buffer.write(raw if new is None else new)
        sys.stdout.flush()
        stream = sys.stderr
    else:
        rr = c.run(paths)
        stream = sys.stdout
    c.findings(rr, stream, show_diffs=True)
    c.notes(rr)
    if show_fixes:
        stream.write(fixes_text(rr.results, c.out_style if stream is sys.stdout else c.err_style))
    if not quiet:
        if not stdin:
            for r in rr.changed:
                _err(f"fixed {display_path(r.path)} ({', '.join(f'{k} x{v}' for k, v in sorted(r.applied.items()))})")
        _err(_summary(rr, "changed" if not stdin else "fixed"))
    fixed = any(r.applied for r in rr.results)
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if _blocking(rr) or (exit_non_zero_on_fix and fixed) else EXIT_CLEAN)


@app.command()
def check(
    paths: List[str] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    extend_select: Optional[List[str]] = ExtendSelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    exclude: Optional[List[str]] = ExcludeOpt,
    extend_exclude: Optional[List[str]] = ExtendExcludeOpt,
    force_exclude: Optional[bool] = ForceExcludeOpt,
    respect_gitignore: Optional[bool] = GitignoreOpt,
    config: Optional[str] = ConfigOpt,
    isolated: bool = IsolatedOpt,
    jobs: Optional[int] = JobsOpt,
    quiet: bool = QuietOpt,
    verbose: bool = VerboseOpt,
    no_cache: bool = NoCacheOpt,
    cache_dir: Optional[str] = CacheDirOpt,
    changed_since: Optional[str] = ChangedOpt,
    executor: Optional[str] = ExecutorOpt,
    output_format: str = FormatOpt,
    statistics: bool = typer.Option(False, "--statistics", help="Print one line per rule with its number of findings instead of the findings."),
    show_fixes: bool = ShowFixesOpt,
    add_noqa: bool = typer.Option(False, "--add-noqa", help="Append `# noqa: CODE` to the statement of each finding (adopting torchmend on an existing codebase); writes the files."),
    stdin_filename: Optional[str] = StdinNameOpt,
) -> None:
    """Lint only: print the findings on stdout.  Exit 1 if any (other than [info]
    advice), 2 on a file error."""
    cli = cli_options(select, extend_select, ignore, None, exclude, extend_exclude, force_exclude, respect_gitignore, config, isolated)
    machine = output_format in ("json", "json-lines", "sarif")
    c = _Ctx(cli, fix=False, write=False, jobs=jobs, quiet=quiet, verbose=verbose, no_cache=no_cache, cache_dir=cache_dir,
             changed_since=changed_since, executor=executor, output_format=output_format,
             fix_edits=(machine or show_fixes) and not add_noqa, digest=add_noqa)
    if _is_stdin(paths):
        if add_noqa:
            _err("torchmend: error: --add-noqa writes files; it does not read standard input")
            raise typer.Exit(EXIT_ERROR)
        rr, _raw, _new, _e = _read_stdin(c, stdin_filename, "check")
    else:
        rr = c.run(paths)
    if add_noqa:
        _add_noqa(c, rr)
    c.findings(rr, sys.stdout, show_diffs=show_fixes, statistics=statistics)
    c.notes(rr)
    if not quiet:
        _err(_summary(rr, None))
    raise typer.Exit(EXIT_ERROR if rr.errors else EXIT_FOUND if _blocking(rr) else EXIT_CLEAN)


def _add_noqa(c: _Ctx, rr) -> None:
    """Write ``# noqa: CODE`` for every finding, each file atomically and only if it is
    still what was analysed; the findings are then suppressed (and not printed)."""
    from torchmend import suppression
    from torchmend.engine import content_digest
    from torchmend.gitdiff import display_path
    from torchmend.output import plural
    from torchmend.sourcefile import SourceError, atomic_write, read_source

    total = files = 0
    for r in rr.results:
        if not r.findings:
            continue
        try:
            src = read_source(r.path)
            if r.digest and content_digest(src.raw) != r.digest:
                raise SourceError("file changed since it was read, not written")
            from torchmend.notebook import Notebook, is_notebook

            if is_notebook(r.path):  # the comments go into the cells
                nb = Notebook(src.raw, r.path)
                vf = [replace(f, line=nb.virtual_line(f.cell, f.line)) for f in r.findings if f.cell]
                new_text, n = suppression.add_noqa(nb.text, vf)
                data = nb.render(nb.changed_cells(new_text)) if n else src.raw
            else:
                new_text, n = suppression.add_noqa(src.text, r.findings)
                data = src.encode(new_text) if n else src.raw
            if n:
                atomic_write(r.path, data, expect=src.raw)
                total += n
                files += 1
        except SourceError as e:
            rr.discovery_errors.append((r.path, str(e)))
            continue
        r.findings = []
        r.suggestions = []
        if not c.quiet and n:
            _err(f"added {plural(n, 'noqa directive')} to {display_path(r.path)}")
    if not c.quiet:
        _err(f"torchmend: added {plural(total, 'noqa directive')} to {plural(files, 'file')}")


@app.command()
def rules(
    output_format: str = typer.Option("table", "--output-format", metavar="FORMAT", help="table or json."),
) -> None:
    """List the rules: code, name, pitfall, severity, summary."""
    from torchmend.registry import all_rules

    if output_format == "json":
        import json

        print(json.dumps([
            {"code": r.code, "name": r.name, "pitfall": r.pitfall, "severity": r.severity.value,
             "summary": r.summary, "explanation": r.doc()}
            for r in all_rules()
        ], indent=2))
        return
    if output_format != "table":
        _err(f"torchmend: error: unknown --output-format {output_format!r} (table or json)")
        raise typer.Exit(EXIT_ERROR)
    from rich.console import Console
    from rich.table import Table

    t = Table("code", "name", "pitfall", "severity", "summary")
    for r in all_rules():
        t.add_row(r.code, r.name, r.pitfall, r.severity.value, r.summary)
    Console(width=max(120, Console().width)).print(t)


@app.command()
def explain(code: str = typer.Argument(..., metavar="RULE", help="A rule code (TM201) or name.")) -> None:
    """Print a rule's documentation."""
    from torchmend.registry import by_code

    try:
        r = by_code(code)
    except KeyError:
        _err(f"torchmend: error: unknown rule {code!r} (see `torchmend rules`)")
        raise typer.Exit(EXIT_ERROR)
    print(f"{r.code} {r.name} ({r.pitfall}, {r.severity.value})\n")
    print(r.doc())


@app.command()
def server() -> None:
    """Run the Language Server for editors (LSP over stdio): diagnostics on open, change
    and save, code actions (each fix, "fix all safe", a suppression comment); notebooks
    through the LSP notebook document sync."""
    from torchmend.server import serve  # pygls is imported only here

    serve()


from torchmend.cli.verify import VerifyCommand, verify as _verify  # noqa: E402

app.command("verify", cls=VerifyCommand)(_verify)


# --------------------------------------------------------------------------- entry point
def _command():
    """The click command of ``app``, with arguments shown as ``PATHS...`` in the usage
    line and help (Typer writes ``{paths}... <list[str]>``)."""
    from typer.core import TyperArgument

    class _Readable(TyperArgument):
        def _usage_display_name(self) -> str:
            name = self.metavar or self.name.upper() + ("..." if self.nargs != 1 else "")
            return name if self.required or name.startswith("[") else f"[{name}]"

        def get_usage_pieces(self, ctx) -> list:  # the usage line (Typer < 0.29 writes {PATHS...})
            return [self._usage_display_name()]

        def display_type_rich(self, ctx):
            return ""

    cmd = typer.main.get_command(app)
    for sub in getattr(cmd, "commands", {}).values():
        for p in sub.params:
            if type(p) is TyperArgument:
                p.__class__ = _Readable
    return cmd


def run_cli(argv: Optional[List[str]] = None) -> int:
    """Run the command line and return its exit code: every way out of it goes through
    here (usage errors 2, Ctrl-C 130, an uncaught exception 2 with one line)."""
    from torchmend.errors import Interrupted

    # Typer's click (vendored by recent Typer, the click package before): its classes
    # through Typer's public names, whichever it is
    Exit, Abort = typer.Exit, typer.Abort
    ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        try:
            rv = _command().main(args=argv, prog_name="torchmend", standalone_mode=False)
        except (KeyboardInterrupt, Interrupted):
            raise Exit(EXIT_INTERRUPTED) from None
        except Abort as e:
            if isinstance(e.__context__, KeyboardInterrupt):
                raise Exit(EXIT_INTERRUPTED) from None
            raise
        return rv if isinstance(rv, int) else EXIT_CLEAN
    except Exit as e:
        if e.exit_code == EXIT_INTERRUPTED:
            _err("torchmend: interrupted")
        return e.exit_code
    except ClickException as e:
        e.show()
        return EXIT_ERROR
    except Abort:
        _err("torchmend: aborted")
        return EXIT_ERROR
    except (KeyboardInterrupt, Interrupted):  # a second Ctrl-C while cleaning up
        _err("torchmend: interrupted")
        return EXIT_INTERRUPTED
    except Exception as e:
        from torchmend.config import ConfigError

        if not isinstance(e, ConfigError):
            return _internal_error(e)
        _err(f"torchmend: error: {e}")  # a configuration file met late (nested in the tree)
        return EXIT_ERROR


def _internal_error(e: BaseException) -> int:
    """torchmend's own bug: one line, exit 2 (not 1, which reads as "findings"); the
    traceback with TORCHMEND_DEBUG=1."""
    from torchmend.errors import debug, internal

    if debug():
        import traceback

        traceback.print_exception(type(e), e, e.__traceback__)
    _err(f"torchmend: {internal(e)}")
    return EXIT_ERROR


def main() -> None:  # console-script entry point
    """Exit codes as documented; Ctrl-C is 130 (SIGINT raises ``Interrupted``, which click
    does not turn into "Aborted!", exit 1; an ignored SIGINT stays ignored)."""
    import signal

    from torchmend.errors import Interrupted

    def interrupted(signum, frame):
        raise Interrupted()

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    from torchmend.runner import _quiet_collector

    # the command's process is ours alone, as a worker's is: what the imports made is
    # left out of every collection, and young objects are collected rarely (the
    # cache's JSON and the results are many small containers, almost none in a cycle)
    _quiet_collector()
    sys.exit(run_cli())


@app.command()
def clean(cache_dir: Optional[str] = CacheDirOpt, quiet: bool = QuietOpt) -> None:
    """Remove the result cache: .torchmend_cache/ in the project root, here and below (or --cache-dir)."""
    from torchmend.cache import CleanError, clean as clean_caches

    try:
        removed = clean_caches(".", cache_dir)
    except (CleanError, OSError) as e:
        _err(f"torchmend: error: {e}")
        raise typer.Exit(EXIT_ERROR)
    if not quiet:
        for d in removed:
            _err(f"removed {d}")
        _err(f"torchmend: {len(removed)} cache director{'y' if len(removed) == 1 else 'ies'} removed")


def _recover_patch() -> None:
    """Finish the clean-up of an `apply --patch` that was killed mid-way (see patch.py)."""
    from torchmend.patch import PatchError, recover

    try:
        msg = recover(".")
    except PatchError as e:
        _err(f"torchmend: error: {e}")
        raise typer.Exit(EXIT_ERROR)
    if msg:
        _err(f"torchmend: {msg}")


if __name__ == "__main__":
    main()
