"""Running the engine over many files: discovery, isolated parallel work, sorted results.

Every file is analysed in a worker process, never in the process that holds the batch
(``--jobs 1`` included): a crash of LibCST's native parser (a segfault on thousands of
nested brackets), a blown recursion limit or a file that takes longer than the time
budget becomes that file's one-line error (``path: error: parser crashed (signal 11,
SIGSEGV) ...``), the worker is replaced and the batch goes on.

* Workers receive small chunks of paths (never the whole file list) plus the options and
  send back the results, without syntax trees: a file the text gate ruled out (most of a
  tree) waits to go with the next result or the end of the chunk, any other is sent at
  once.  Before each file a worker writes its index in the chunk to memory it shares
  with the parent, so the parent always knows which file a worker was on when it died
  or ran out of time (the others it had not sent results for are given out again).
* Ctrl-C: workers ignore SIGINT; the parent kills them (SIGKILL, so within a second, and
  a write is an atomic rename, so no file is half written), removes the temporary files
  they may have left and raises KeyboardInterrupt (the command line exits 130).
* When the parent dies (``kill -9``) its workers die with it (Linux: the parent-death
  signal, ``prctl(PR_SET_PDEATHSIG)``; elsewhere: they check their parent before each
  file and stop when the pipe to it closes), before writing anything more.
* Temporary files of a killed run (``.torchmend-<host>-<pid>-<random>.tmp``, whose
  process is gone) are removed from the directories of the files the next run processes.

Any ``concurrent.futures.Executor`` will do instead of the local workers:
``--executor dask://HOST:PORT`` uses a dask.distributed cluster (optional extra); a chunk
that fails there is retried file by file and a file that fails alone gets its error.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from .discovery import Discovery, discover
from .engine import STAGE_AST, STAGE_PARSED, STAGE_PREFILTER, FileResult, Options, content_digest, process_file
from .project import ImportIndex, Project

if TYPE_CHECKING:  # (imported where an executor is used: not on every start-up)
    from concurrent.futures import Executor

FILE_TIMEOUT = 120.0  # seconds one file may take in a worker (parse, rules, fixes)
WORKER_STACK = 256 * 1024 * 1024  # the analysis thread's stack: deep (not pathological) nesting parses
WORKER_RECURSION_LIMIT = 12_000
# the worker's garbage collector: a file's syntax trees and semantic model are alive
# until the file is done, so the collector's automatic passes (every 700 allocations)
# only rescan live objects; in the worker it runs on a high threshold and in full
# between files, once this many objects were allocated since the last pass
WORKER_GC_YOUNG = 100_000
WORKER_GC_BETWEEN_FILES = 20_000


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)  # sorted by path
    discovery_errors: list[tuple[str, str]] = field(default_factory=list)
    elapsed: float = 0.0
    cached: int = 0  # results taken from the cache (files not read again)
    cached_paths: set = field(default_factory=set)

    def stats(self) -> dict:
        """Counts for the summary line: how far each file went in this run (results from
        the cache are counted as such, not as the stages they went through once)."""
        st = Counter(r.stage for r in self.results if r.path not in self.cached_paths)
        return {
            "scanned": len(self.results),
            "cached": self.cached,
            "prefiltered": st[STAGE_PREFILTER],  # no rule's text gate matched: not parsed
            "analysed": st[STAGE_AST] + st[STAGE_PARSED],  # parsed (as far as needed) with ast
            "parsed": st[STAGE_PARSED],  # files LibCST was run on to build a fix
            "changed": len(self.changed),
            "errors": len(self.errors),
        }

    def findings_by_code(self) -> Counter:
        """Findings left for a human, per rule."""
        return Counter(f.code for f in self.unfixed())

    @property
    def errors(self) -> list[tuple[str, str]]:
        return self.discovery_errors + [(r.path, r.error) for r in self.results if r.error]

    @property
    def changed(self) -> list[FileResult]:
        return [r for r in self.results if r.changed]

    def applied(self) -> Counter:
        c: Counter = Counter()
        for r in self.results:
            c.update(r.applied)
        return c

    def unfixed(self):
        return [f for r in self.results for f in r.unfixed()]

    def patch(self) -> bytes:
        return b"".join(r.diff for r in self.results)


# --------------------------------------------------------------------------- one file
def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def allowed_roots(paths: list[str]) -> tuple[str, ...]:
    """Where a symbolic link may point for its target to be read and rewritten: the given
    directories, the directories of the given files, and the current directory (real
    paths).  A link to anything else is skipped, as Black skips a link that points outside
    its root: the file it points to is not part of what was asked."""
    out = {os.path.realpath(".")}
    for p in paths:
        out.add(os.path.realpath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))))
    return tuple(sorted(out))


def process_one(path: str, opts: Options, project: Optional[Project] = None, allowed: Optional[tuple[str, ...]] = None) -> FileResult:
    """``engine.process_file`` behind the batch's own checks (a link out of ``allowed``)."""
    if allowed is not None and os.path.islink(path):
        real = os.path.realpath(path)
        if not _inside(real, allowed):
            return FileResult(path=path, error=f"symbolic link to {real}, outside the given paths and the current directory: skipped")
    return process_file(path, opts, project)


def process_chunk(paths: list[str], opts: Options, allowed: Optional[tuple[str, ...]] = None) -> list[FileResult]:
    """Process files in a worker: without the import index (see project.py)."""
    project = Project(roots=opts.roots)
    return [process_one(p, opts, project, allowed) for p in paths]


def _chunks(files: list[str], jobs: int) -> list[list[str]]:
    """Consecutive chunks of ``files``, shrinking as the rest does (guided scheduling):
    up to 64 files while much is left (few round trips), single files at the end, so
    that no worker is still on a long chunk of heavy files while the others idle."""
    out = []
    i, n = 0, len(files)
    per = max(1, jobs) * 4
    while i < n:
        size = max(1, min(64, (n - i) // per))
        out.append(files[i : i + size])
        i += size
    return out


# --------------------------------------------------------------------------- workers
def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # no prctl: the per-file check and the pipe still stop us
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _worker_main(conn, opts: Options, allowed, parent_pid: int, project=None, started=None) -> None:
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent(parent_pid)
    from .errors import debug

    if not debug():  # a crash is reported by the parent, in one line (a forked pytest has it on)
        import faulthandler

        faulthandler.disable()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), WORKER_RECURSION_LIMIT))
    try:
        threading.stack_size(WORKER_STACK)
    except (ValueError, RuntimeError):
        pass
    t = threading.Thread(target=_serve, args=(conn, opts, allowed, parent_pid, project, started), name="torchmend-worker")
    t.start()
    t.join()
    os._exit(0)


def _quiet_collector() -> None:
    """The worker's collector policy (see WORKER_GC_YOUNG): what the worker inherited
    from its parent (modules, rules, options, and for the files processed again with
    the import index, the results so far) is frozen out of every pass, without a pass
    over it first (the parent's few cycles stay, as they would in the parent), and
    young objects are collected rarely.  The worker process is ours alone: library
    callers of the engine keep their own collector settings."""
    import gc

    gc.freeze()
    _, g1, g2 = gc.get_threshold()
    gc.set_threshold(WORKER_GC_YOUNG, max(g1, 1000), max(g2, 1000))


def _collect_between_files() -> None:
    """A full pass between files once enough was allocated, then what survived it is
    frozen out of every later pass as the worker's start froze what it inherited: the
    modules imported since (LibCST, on the first file with a fix, is some 30,000 objects
    that each pass had read again: 7 ms a pass, a sixth of a run of ``diff`` on the
    generated tree) and the caches kept across files.  Only the objects of the files
    still to come are read by later passes."""
    import gc

    if gc.get_count()[0] > WORKER_GC_BETWEEN_FILES:
        gc.collect()
        gc.freeze()


def _ruled_out(r: FileResult) -> bool:
    """A result that only says the text gate ruled the file out (no finding, error or
    question for the parent): it is sent as a tuple (``_compact``)."""
    return r.stage == STAGE_PREFILTER and not r.findings and r.error is None and r.skipped is None and not r.warnings


def _compact(r: FileResult):
    """A gate-rejected result as the tuple ``_expand`` rebuilds it from (what is read
    back is equal to ``r`` field by field, else ``r`` itself): about half the bytes to
    pickle (no field names, no defaults) and no dataclass state to restore in the parent."""
    t = (r.path, r.digest, r.size, r.mtime_ns, r.cacheable)
    return t if _expand(t) == r else r


def _expand(t) -> FileResult:
    if isinstance(t, FileResult):
        return t
    path, digest, size, mtime_ns, cacheable = t
    return FileResult(path=path, stage=STAGE_PREFILTER, digest=digest, size=size, mtime_ns=mtime_ns, cacheable=cacheable)


def _serve(conn, opts: Options, allowed, parent_pid: int, project=None, started=None) -> None:
    project = project if project is not None else Project(roots=opts.roots)
    _quiet_collector()
    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            os._exit(1)
        if chunk is None:
            return
        here = project
        if isinstance(chunk, tuple):  # files given again with the importers they asked for
            chunk, answers = chunk
            here = Project(roots=opts.roots, index=ImportIndex.partial(answers))
        pending: list = []  # results (or their tuples) not sent yet
        for i, path in enumerate(chunk):
            if os.getppid() != parent_pid:
                os._exit(1)
            if started is not None:
                started.value = i  # (what the parent reads when this process dies or overruns)
            r = process_one(path, opts, here, allowed)
            pending.append(_compact(r) if _ruled_out(r) else r)
            # sent with the chunk's last file (one message, one wake-up of the parent per
            # chunk), or at once when the parent must read the importers it asked for;
            # should this process die, the files done and not sent are given out again
            if r.needs_project or i == len(chunk) - 1:
                try:
                    conn.send(pending)
                except (OSError, EOFError):
                    os._exit(1)
                pending = []
            _collect_between_files()


class _Worker:
    def __init__(self, mp, opts: Options, allowed, project=None):
        self.conn, child = mp.Pipe()
        # the index in its chunk of the file the worker is on (shared memory it writes)
        self.started = mp.RawValue("i", 0)
        self.proc = mp.Process(target=_worker_main, args=(child, opts, allowed, os.getpid(), project, self.started),
                               daemon=True)
        self.proc.start()
        child.close()
        self.chunk: Optional[list[str]] = None
        self.i = 0  # results received for the chunk
        self.on = 0  # the index last seen in ``started``
        self.t = time.monotonic()  # when the worker was last seen to start a file or send

    def at(self) -> int:
        """The index of the file the worker is on (never before the results received)."""
        return max(self.i, min(self.started.value, len(self.chunk) - 1)) if self.chunk else self.i

    @property
    def current(self) -> Optional[str]:
        if self.chunk is None or self.i >= len(self.chunk):
            return None
        return self.chunk[self.at()]

    def rest(self) -> list[str]:
        """The files of the chunk to give out again once the worker is gone: those it had
        done but not yet sent, and those after the one it was on."""
        if self.chunk is None:
            return []
        k = self.at()
        return self.chunk[self.i : k] + self.chunk[k + 1 :]

    def over(self, now: float, budget: float) -> bool:
        """The file the worker is on has taken more than ``budget`` seconds (a file
        started since the last look starts the clock again)."""
        k = self.started.value
        if k != self.on:
            self.on, self.t = k, now
        return now - self.t > budget

    def assign(self, chunk) -> None:
        """Send ``chunk``: paths, or ``(paths, answers)`` (:meth:`ImportIndex.partial`)."""
        self.chunk, self.i, self.t = (chunk[0] if isinstance(chunk, tuple) else chunk), 0, time.monotonic()
        self.started.value = self.on = 0  # (the worker is waiting: it writes again before each file)
        self.conn.send(chunk)

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def cleanup(self) -> None:
        """Remove temporary files this (dead, reaped) worker may have left beside the
        file it was on."""
        from .sourcefile import remove_stale_temp_files

        if self.current is not None:
            remove_stale_temp_files(os.path.dirname(os.path.realpath(self.current)))


def _mp_context():
    import multiprocessing as mp

    # fork: workers start at once with the parent's state (rules, options); elsewhere spawn
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() and sys.platform != "darwin" else "spawn")


def _crash_result(path: str, msg: str, opts: Options, deterministic: bool) -> FileResult:
    """The error result for a file whose worker died or ran out of time; a crash that
    depends on the content only (a signal from the parser) may be cached like a syntax
    error, keyed on the bytes as they are now."""
    r = FileResult(path=path, error=msg)
    if deterministic:
        from .sourcefile import SourceError, Skipped, read_source

        try:
            src = read_source(path, opts.max_bytes)
        except (SourceError, Skipped):
            return r
        r.digest, r.size, r.mtime_ns, r.cacheable = content_digest(src.raw), src.st.st_size, src.st.st_mtime_ns, True
    return r


def run_isolated(
    todo: list[str],
    opts: Options,
    jobs: int,
    take: Callable[[list[FileResult]], None],
    allowed: Optional[tuple[str, ...]] = None,
    timeout: Optional[float] = FILE_TIMEOUT,
    project=None,
    again: Optional[Callable[[FileResult], Optional[dict]]] = None,
) -> None:
    """Process ``todo`` in ``jobs`` worker processes, each result passed to ``take`` as it
    comes; a file whose worker dies or overruns ``timeout`` gets an error result.
    ``project``: the Project the workers use (default: a fresh one per worker for
    ``opts.roots``); forked workers inherit it as it is, e.g. with an index built here.
    ``again(result)``, for a result that needs the import index: the importers of the
    modules it asked for (``ImportIndex.answers``); the file is then given out once more
    with them, in the same run, and that result is the one taken (None: the result is
    taken as it is)."""
    import selectors
    import signal

    from .errors import crashed

    if not todo:
        return
    from .registry import all_rules

    all_rules()  # imported here once: the forked workers share the modules (settings need only the codes)
    mp = _mp_context()
    queue = deque(_chunks(todo, jobs))
    workers = [_Worker(mp, opts, allowed, project) for _ in range(min(jobs, len(queue)))]
    # one selector for the whole run, watching the pipe and the exit of each busy worker
    # (``multiprocessing.connection.wait`` builds and fills a new one per call: once per
    # result, a good part of the parent's time on a tree of small files)
    sel = selectors.DefaultSelector()
    watched: set = set()

    def unwatch(w: _Worker) -> None:
        if w in watched:
            watched.discard(w)
            sel.unregister(w.conn)
            sel.unregister(w.proc.sentinel)

    def _again(r: FileResult) -> bool:
        answers = again(r)
        if answers is None:
            return False
        queue.appendleft(([r.path], answers))
        return True

    def replace(w: _Worker, result: FileResult) -> None:
        """``w`` is dead (reaped): report its file, give back the rest of its chunk."""
        w.cleanup()
        take([result])
        rest = w.rest()
        if rest:
            queue.appendleft(rest)
        workers.remove(w)
        if queue:
            workers.append(_Worker(mp, opts, allowed, project))

    try:
        while True:
            for w in workers:
                if w.chunk is None and queue:
                    w.assign(queue.popleft())
            busy = [w for w in workers if w.chunk is not None]
            if not busy:
                break
            for w in list(watched):
                if w.chunk is None:
                    unwatch(w)
            for w in busy:
                if w not in watched:
                    watched.add(w)
                    sel.register(w.conn, selectors.EVENT_READ)
                    sel.register(w.proc.sentinel, selectors.EVENT_READ)
            ready = {key.fileobj for key, _ in sel.select(0.25)}
            now = time.monotonic()
            for w in busy:
                dead = False
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        # one result per wake-up (the selector says when there is another:
                        # ``poll`` would build a selector of its own each time); all that
                        # came before the worker's exit, when it has exited
                        first = w.conn in ready
                        while w.chunk is not None and (first or (w.proc.sentinel in ready and w.conn.poll())):
                            first = False
                            batch = [_expand(x) for x in w.conn.recv()]
                            w.i += len(batch)
                            w.t = now
                            if w.i >= len(w.chunk):
                                w.chunk = None
                            if again is not None:
                                batch = [r for r in batch if not r.needs_project or not _again(r)]
                            take(batch)
                    except (EOFError, OSError):
                        dead = True
                    dead = dead or (w.proc.sentinel in ready and not w.proc.is_alive())
                if dead:
                    unwatch(w)
                    w.proc.join(timeout=1)  # its own exit status, not our kill's
                    w.kill()
                    path = w.current
                    if path is None:  # died between chunks: nothing lost
                        workers.remove(w)
                        if queue:
                            workers.append(_Worker(mp, opts, allowed, project))
                        continue
                    code = w.proc.exitcode
                    det = code is not None and code < 0 and -code in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE)
                    replace(w, _crash_result(path, crashed(code), opts, det))
                elif w.chunk is not None and timeout is not None and w.over(now, timeout):
                    path = w.current
                    unwatch(w)
                    w.kill()
                    replace(w, FileResult(path=path, error=f"analysis stopped: over the {timeout:g} s time budget for one file, skipped"))
    finally:
        for w in list(watched):
            unwatch(w)
        sel.close()
        for w in workers:
            if w.chunk is None and w.proc.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
        for w in workers:
            if w.chunk is not None:  # interrupted (Ctrl-C) or an error in the parent
                w.kill()
                w.cleanup()
            else:
                w.proc.join(timeout=2)
                if w.proc.is_alive():
                    w.kill()
                w.conn.close()


# --------------------------------------------------------------------------- executors
def make_executor(spec: str) -> Executor:
    """An executor from a command-line spec: ``dask://HOST:PORT`` (or ``tcp://...``) is
    a dask.distributed scheduler (``pip install torchmend[dask]``).  The workers must see
    the files at the same paths (shared file system or the same checkout)."""
    if spec.startswith(("dask://", "tcp://", "tls://")):
        try:
            from distributed import Client
        except ImportError:
            raise ValueError("--executor dask://... needs dask.distributed: pip install 'torchmend[dask]'") from None
        address = "tcp://" + spec[len("dask://"):] if spec.startswith("dask://") else spec
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise ValueError(f"cannot reach the dask scheduler at {address}: {e}".splitlines()[0]) from None
        return client.get_executor()
    raise ValueError(f"unknown executor {spec!r} (expected dask://HOST:PORT)")


def _run_on_executor(executor: Executor, todo: list[str], opts: Options, jobs: int, take, allowed) -> None:
    from concurrent.futures import as_completed

    futures = {executor.submit(process_chunk, c, opts, allowed): c for c in _chunks(todo, jobs)}
    try:
        for fut in as_completed(futures):
            try:
                take(fut.result())
                continue
            except Exception:  # the chunk failed on the cluster (a worker died): file by file
                pass
            for p in futures[fut]:
                try:
                    take(executor.submit(process_chunk, [p], opts, allowed).result())
                except Exception as e:
                    msg = f"{type(e).__name__}: {e}".splitlines()[0]
                    take([FileResult(path=p, error=f"the executor failed on this file ({msg}), skipped")])
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise


# --------------------------------------------------------------------------- run
def run(
    paths: list[str],
    opts: Options,
    *,
    exclude: tuple[str, ...] = (),
    jobs: Optional[int] = None,
    executor: Optional[Executor] = None,
    files: Optional[list[str]] = None,
    discovery: Optional[Discovery] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    cache=None,
    only: Optional[set[str]] = None,
    options_for: Optional[Callable[[str], Options]] = None,
    isolate: bool = True,
    timeout: Optional[float] = FILE_TIMEOUT,
) -> RunResult:
    """Run the engine over ``paths`` (or exactly ``files``, or the files of ``discovery``,
    the caller's own :func:`discover` of ``paths``).

    ``cache``: a :class:`codemods.cache.Cache`; files it vouches for are not read again,
    new cacheable results are stored (the caller saves it).  ``only``: real paths to keep
    of the discovered files (``--changed-since``).  Work is sent in chunks of paths and
    results are taken as they complete; the output is sorted by path whatever the order
    of completion, so it does not depend on ``jobs`` or the executor.  ``isolate=False``
    runs in this process (library use and tests that watch a rule from the outside; a
    crash of the parser then takes the caller down).  ``timeout``: seconds per file.
    KeyboardInterrupt propagates after the workers are stopped.  ``options_for(path)``:
    each file's own Options (per-file settings); files are grouped by them and each
    group runs with its Options (default: ``opts`` for all).  Files a rule could not
    finish without the import index are given out again as soon as the parent has read
    the importers they asked for (worker processes, see ``run_isolated``), or processed
    once more at the end, with one index for the whole tree (in-process and executor
    runs, and a file that asked too often; project.py).
    """
    t0 = time.perf_counter()
    seen_ns = time.time_ns()
    out = RunResult()
    disc = discovery
    if files is None and disc is None:
        disc = discover(paths, exclude)
    if files is None:
        files, out.discovery_errors = disc.files, disc.errors
    tree = None
    if cache is not None:
        from .cache import stat_files, tree_fingerprint

        stats = stat_files(files)
        tree = tree_fingerprint(files, stats)  # of the whole tree, before --changed-since narrows it
    all_files = files
    if only is not None:
        files = [p for p in files if os.path.realpath(p) in only]
    jobs = jobs or os.cpu_count() or 1
    allowed = allowed_roots(list(paths)) if paths else None
    results: list[FileResult] = []
    todo = files
    if cache is not None:
        todo = []
        dep_stats: dict = {}  # the files results read, each stat taken once (nothing is written before the lookups end)
        for p in files:
            r = cache.get(p, tree, None if options_for is None else options_for(p), stats.get(p), dep_stats)
            # apply (write=True) re-processes every file that needs a change: the cache
            # only vouches for files with nothing to write, and only after hashing them
            if r is None or (opts.write and r.changed):
                todo.append(p)
            else:
                results.append(r)
                out.cached_paths.add(p)
        out.cached = len(results)
        if progress and results:
            progress(len(results), len(files))
    _remove_stale_temp_files(todo, disc)

    def cache_put(r: FileResult) -> None:
        cache.put(r, seen_ns, tree, None if options_for is None else options_for(r.path))

    index: Optional[ImportIndex] = None  # of the whole tree, for the files that need it

    def take(batch: list[FileResult]) -> None:
        nonlocal index
        results.extend(batch)
        for r in batch:
            if cache is not None:
                cache_put(r)
            if r.needs_project:
                # read the importers it asked for now, while the workers go on: the
                # processes that take it again inherit them (forked), read once
                if index is None:
                    index = ImportIndex(all_files)
                for m in r.needs_modules:
                    index.importers(m)
        if progress:
            progress(len(results), len(files))

    asked: dict[str, set] = {}  # path -> the modules its rules asked about so far

    def answer(r: FileResult) -> Optional[dict]:
        """The importers a worker's file asked for, to give it out again with them (see
        run_isolated); after many asks it waits for the second pass instead."""
        nonlocal index
        mods = asked.setdefault(r.path, set())
        mods.update(r.needs_modules)
        if not r.needs_modules or len(mods) > MAX_ASKS:
            return None
        if index is None:
            index = ImportIndex(all_files)
        return index.answers(mods)

    def groups(paths: list[str]):
        by: dict = {}  # Options -> (Options, files)
        for p in paths:
            o = opts if options_for is None else options_for(p)
            by.setdefault(o, (o, []))[1].append(p)
        return by.values()

    def process(paths: list[str], project: Optional[Project], sink) -> None:
        for o, group in groups(paths):
            if executor is not None and project is None:
                _run_on_executor(executor, group, o, jobs, sink, allowed)
            elif isolate:
                run_isolated(group, o, jobs, sink, allowed, timeout, project=project,
                             again=answer if project is None else None)
            else:
                pr = project or Project(roots=o.roots)
                for p in group:
                    sink([process_one(p, o, pr, allowed)])

    process(todo, None, take)
    # files a rule could not finish without the import index: again, with the index of
    # the whole tree (it reads the imports of the files that mention a module's name)
    again = [r.path for r in results if r.needs_project]
    if again:
        redo: dict[str, FileResult] = {}

        def take_again(batch: list[FileResult]) -> None:
            for r in batch:
                redo[r.path] = r
                if cache is not None:
                    cache_put(r)

        process(again, Project(roots=opts.roots, index=index or ImportIndex(all_files)), take_again)
        results[:] = [redo.get(r.path, r) if r.needs_project else r for r in results]
    order = {p: i for i, p in enumerate(files)}
    results.sort(key=lambda r: order.get(r.path, len(order)))
    out.results = results
    out.elapsed = time.perf_counter() - t0
    return out


# the modules one file may ask the importers of while the run goes on; past that it is
# processed again after the others, with the whole index
MAX_ASKS = 16


def _remove_stale_temp_files(paths: list[str], disc: Optional[Discovery] = None) -> None:
    """Temporary files a killed run left beside the files about to be processed (in the
    directories whose listing ``disc`` saw, only where it saw such a name)."""
    from .sourcefile import remove_stale_temp_files

    for d in {os.path.dirname(p) for p in paths}:
        shown = d or "."
        if disc is not None and shown in disc.listed and shown not in disc.with_temp:
            continue
        remove_stale_temp_files(d)
