"""Running the engine over many files: discovery, chunked parallel work, sorted results.

Workers receive small chunks of paths (never the whole file list) plus the options, and
send back results without syntax trees.  Any ``concurrent.futures.Executor`` will do:
the default is a process pool over all cores; ``--executor dask://HOST:PORT`` uses a
dask.distributed cluster (optional extra).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Optional

from .discovery import discover
from .engine import STAGE_AST, STAGE_PARSED, STAGE_PREFILTER, FileResult, Options, process_file
from .project import ImportIndex, Project


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)  # sorted by path
    discovery_errors: list[tuple[str, str]] = field(default_factory=list)
    elapsed: float = 0.0
    cached: int = 0  # results taken from the cache (files not read again)

    def stats(self) -> dict:
        """Counts for the summary line: how far each file went."""
        st = Counter(r.stage for r in self.results)
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


def process_chunk(paths: list[str], opts: Options) -> list[FileResult]:
    """Process files in a worker: without the import index (see project.py)."""
    project = Project(roots=opts.roots)
    return [process_file(p, opts, project) for p in paths]


def _chunks(files: list[str], jobs: int) -> list[list[str]]:
    size = max(1, min(64, len(files) // max(1, jobs * 8)))
    return [files[i : i + size] for i in range(0, len(files), size)]


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


def run(
    paths: list[str],
    opts: Options,
    *,
    exclude: tuple[str, ...] = (),
    jobs: Optional[int] = None,
    executor: Optional[Executor] = None,
    files: Optional[list[str]] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    cache=None,
    only: Optional[set[str]] = None,
) -> RunResult:
    """Run the engine over ``paths`` (or exactly ``files``).

    ``cache``: a :class:`codemods.cache.Cache`; files it vouches for are not read again,
    new cacheable results are stored (the caller saves it).  ``only``: real paths to keep
    of the discovered files (``--changed-since``).  Work is sent in chunks of paths and
    results are taken as they complete; the output is sorted by path whatever the order
    of completion, so it does not depend on ``jobs`` or the executor.
    """
    t0 = time.perf_counter()
    seen_ns = time.time_ns()
    out = RunResult()
    if files is None:
        disc = discover(paths, exclude)
        files, out.discovery_errors = disc.files, disc.errors
    tree = None
    if cache is not None:
        from .cache import tree_fingerprint

        tree = tree_fingerprint(files)  # of the whole tree, before --changed-since narrows it
    all_files = files
    if only is not None:
        files = [p for p in files if os.path.realpath(p) in only]
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = []
    todo = files
    if cache is not None:
        todo = []
        for p in files:
            r = cache.get(p, tree)
            # apply (write=True) re-processes every file that needs a change: the cache
            # only vouches for files with nothing to write, and only after hashing them
            if r is None or (opts.write and r.changed):
                todo.append(p)
            else:
                results.append(r)
        out.cached = len(results)
        if progress and results:
            progress(len(results), len(files))

    def take(batch: list[FileResult]) -> None:
        results.extend(batch)
        if cache is not None:
            for r in batch:
                cache.put(r, seen_ns, tree)
        if progress:
            progress(len(results), len(files))

    if executor is None and (jobs == 1 or len(todo) < 4):
        for p in todo:
            take(process_chunk([p], opts))
    elif todo:
        own = executor is None
        if own:
            from concurrent.futures import ProcessPoolExecutor

            executor = ProcessPoolExecutor(max_workers=jobs)
        try:
            futures = [executor.submit(process_chunk, c, opts) for c in _chunks(todo, jobs)]
            for fut in as_completed(futures):
                take(fut.result())
        finally:
            if own:
                executor.shutdown()
    # files a rule could not finish without the import index: again, here, with the
    # index built once for the whole tree (it reads every discovered file's imports)
    again = [r.path for r in results if r.needs_project]
    if again:
        index = ImportIndex(all_files)
        project = Project(roots=opts.roots, index=index)
        redo = {p: process_file(p, opts, project) for p in again}
        results = [redo.get(r.path, r) if r.needs_project else r for r in results]
        if cache is not None:
            for p in again:
                cache.put(redo[p], seen_ns, tree)
    order = {p: i for i, p in enumerate(files)}
    results.sort(key=lambda r: order.get(r.path, len(order)))
    out.results = results
    out.elapsed = time.perf_counter() - t0
    return out
