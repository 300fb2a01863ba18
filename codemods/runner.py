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
from .engine import FileResult, Options, process_file
from .rule import ProjectInfo


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)  # sorted by path
    discovery_errors: list[tuple[str, str]] = field(default_factory=list)
    elapsed: float = 0.0

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
    project = ProjectInfo(roots=opts.roots)
    return [process_file(p, opts, project) for p in paths]


def _chunks(files: list[str], jobs: int) -> list[list[str]]:
    size = max(1, min(64, len(files) // max(1, jobs * 8)))
    return [files[i : i + size] for i in range(0, len(files), size)]


def run(
    paths: list[str],
    opts: Options,
    *,
    exclude: tuple[str, ...] = (),
    jobs: Optional[int] = None,
    executor: Optional[Executor] = None,
    files: Optional[list[str]] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> RunResult:
    t0 = time.perf_counter()
    out = RunResult()
    if files is None:
        disc = discover(paths, exclude)
        files, out.discovery_errors = disc.files, disc.errors
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = []
    if executor is None and (jobs == 1 or len(files) < 4):
        for i, p in enumerate(files):
            results.extend(process_chunk([p], opts))
            if progress:
                progress(i + 1, len(files))
    else:
        own = executor is None
        if own:
            from concurrent.futures import ProcessPoolExecutor

            executor = ProcessPoolExecutor(max_workers=jobs)
        try:
            futures = {executor.submit(process_chunk, c, opts): len(c) for c in _chunks(files, jobs)}
            done = 0
            for fut in as_completed(futures):
                results.extend(fut.result())
                done += futures[fut]
                if progress:
                    progress(done, len(files))
        finally:
            if own:
                executor.shutdown()
    order = {p: i for i, p in enumerate(files)}
    results.sort(key=lambda r: order.get(r.path, len(order)))
    out.results = results
    out.elapsed = time.perf_counter() - t0
    return out
