"""Which files a run covers: the given files, and the ``*.py`` files under the given
directories, minus default excludes, ``--exclude`` globs and ``.gitignore`` patterns.
Symbolic links are never followed out of the given roots.  Output is sorted."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", ".tox", ".nox", ".eggs", "build", "dist",
    "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".torchmend_cache", ".ipynb_checkpoints",
)


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line message)


def _excluded(rel: str, name: str, excludes: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(rel, g.rstrip("/") + "/*") for g in excludes)


def _gitignore(dirpath: str):
    p = os.path.join(dirpath, ".gitignore")
    if not os.path.isfile(p):
        return None
    import pathspec

    with open(p, encoding="utf-8", errors="replace") as f:
        return pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def discover(paths: list[str], exclude: tuple[str, ...] = (), respect_gitignore: bool = True) -> Discovery:
    out = Discovery()
    seen: set[str] = set()
    real_roots = [os.path.realpath(p) for p in paths] + [os.path.realpath(".")]
    excludes = tuple(exclude)

    def add(path: str, real: str | None = None) -> None:
        if real is not None:  # a regular file of a walked directory: real path known
            if real not in seen:
                seen.add(real)
                out.files.append(path)
            return
        real = os.path.realpath(path)
        if os.path.islink(path) and not _inside(real, real_roots):
            out.errors.append((path, "symbolic link to a file outside the given paths, skipped"))
            return
        if real not in seen:
            seen.add(real)
            out.files.append(path)

    for given in paths:
        if not os.path.lexists(given):
            out.errors.append((given, "no such file or directory"))
            continue
        if not os.path.isdir(given):
            # a broken link or a link loop goes on to the reader, which names the cause
            rel = os.path.normpath(given)
            if not _excluded(rel, os.path.basename(rel), excludes):
                add(os.path.normpath(given))
            continue
        top = os.path.normpath(given)
        specs: list[tuple[str, object]] = []  # (dir, spec) of .gitignore files above the current dir
        if respect_gitignore:
            # .gitignore files between the repo root (or /) and the given directory count too
            d = os.path.abspath(top)
            chain = []
            while True:
                chain.append(d)
                if os.path.isdir(os.path.join(d, ".git")) or os.path.dirname(d) == d:
                    break
                d = os.path.dirname(d)
            for d in reversed(chain[1:]):
                s = _gitignore(d)
                if s is not None:
                    specs.append((d, s))
        for dirpath, dirnames, filenames in os.walk(top):
            abs_dir = os.path.abspath(dirpath)
            if respect_gitignore:
                specs = [(d, s) for d, s in specs if abs_dir == d or abs_dir.startswith(d.rstrip(os.sep) + os.sep)]
                s = _gitignore(dirpath)
                if s is not None:
                    specs.append((abs_dir, s))

            def ignored(name: str, is_dir: bool) -> bool:
                rel = os.path.normpath(os.path.join(dirpath, name))
                if name in DEFAULT_EXCLUDES or _excluded(rel, name, excludes):
                    return True
                full = os.path.join(abs_dir, name)
                for d, spec in specs:
                    r = os.path.relpath(full, d).replace(os.sep, "/") + ("/" if is_dir else "")
                    if spec.match_file(r):
                        return True
                return False

            dirnames[:] = sorted(d for d in dirnames if not ignored(d, True) and not os.path.islink(os.path.join(dirpath, d)))
            real_dir = None
            for name in sorted(filenames):
                if name.endswith(".py") and not ignored(name, False):
                    path = os.path.normpath(os.path.join(dirpath, name))
                    if os.path.islink(path):
                        add(path)
                    else:  # one realpath per directory, not per file (it costs an lstat per component)
                        real_dir = real_dir or os.path.realpath(dirpath)
                        add(path, os.path.join(real_dir, name))
    out.files.sort(key=lambda p: p.replace(os.sep, "/"))
    return out


class GitError(Exception):
    pass


def changed_since(rev: str, cwd: str = ".") -> set[str]:
    """Real paths of the files changed in git since ``rev`` (committed, staged or not,
    ``git diff --name-only REV``) plus untracked files not ignored: what a pull request
    touches.  Raises GitError with git's one-line message."""
    import subprocess

    def git(*args: str) -> str:
        try:
            p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
        except OSError as e:
            raise GitError(f"cannot run git: {e.strerror or e}") from None
        if p.returncode != 0:
            msg = (p.stderr.strip().splitlines() or [f"git {args[0]} failed"])[0]
            raise GitError(msg)
        return p.stdout

    top = git("rev-parse", "--show-toplevel").strip()
    try:
        git("rev-parse", "--verify", "--quiet", rev + "^{commit}")
    except GitError:
        raise GitError(f"--changed-since: unknown git revision {rev!r}") from None
    names = git("-C", top, "diff", "--name-only", "-z", "--no-renames", rev, "--").split("\0")
    names += git("-C", top, "ls-files", "--others", "--exclude-standard", "-z").split("\0")
    return {os.path.realpath(os.path.join(top, n)) for n in names if n}
