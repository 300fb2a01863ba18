"""Which files a run covers, as git sees them.

The given files are always taken (unless ``force_exclude`` and an exclusion glob matches
them: pre-commit passes explicit paths).  Under a given directory: the ``*.py`` files,
minus the exclusion globs (:class:`Excludes`, gitignore-style, the defaults below unless
replaced) and, unless told not to, what git ignores.  Inside a git repository that is
git's own answer (libgit2 through pygit2: every ``.gitignore``, ``.git/info/exclude``,
``core.excludesFile``, worktrees and submodules whose ``.git`` is a file), with the files
git tracks kept even when a pattern matches them: the same files as
``git ls-files -co --exclude-standard``.  A nested repository or submodule is walked
with its own rules.  Outside a repository the ``.gitignore`` files are read directly.

Symbolic links are never followed out of the given roots.  A directory that cannot be
read is named in a warning.  Output is sorted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", ".direnv", ".tox", ".nox", ".eggs",
    "build", "dist", "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".torchmend_cache", ".ipynb_checkpoints", "__pypackages__", "_build", "buck-out",
)
# never walked, whatever ``exclude`` says: version-control and torchmend's own state
ALWAYS_EXCLUDED = frozenset({".git", ".torchmend_cache"})


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line message)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line message)


class Excludes:
    """Gitignore-style globs, each relative to a directory: ``(root, glob)`` pairs.  A glob
    without ``/`` matches a name at any depth (``build``, ``*_pb2.py``); one with ``/``
    is anchored at its root (``experiments/*``, ``src/gen/**/*.py``); ``!`` negates."""

    def __init__(self, patterns):
        import pathspec

        by_root: dict[str, list[str]] = {}
        for root, glob in patterns:
            by_root.setdefault(os.path.abspath(root), []).append(glob)
        self.patterns = tuple(patterns)
        self._specs = [(root, pathspec.GitIgnoreSpec.from_lines(globs)) for root, globs in by_root.items()]

    def match(self, abs_path: str, is_dir: bool) -> bool:
        for root, spec in self._specs:
            rel = os.path.relpath(abs_path, root)
            if rel == "." :
                continue
            if rel == ".." or rel.startswith(".." + os.sep):
                rel = os.path.basename(abs_path)  # outside the root: only name globs can match
            rel = rel.replace(os.sep, "/") + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False


def _gitignore(dirpath: str):
    p = os.path.join(dirpath, ".gitignore")
    if not os.path.isfile(p):
        return None
    import pathspec

    with open(p, encoding="utf-8", errors="replace") as f:
        return pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _git_name(rel: str) -> str:
    """``rel`` for libgit2 (UTF-8 only): undecodable bytes become ``?``, which name
    globs still match."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\ufffd", "?")


class _Repo:
    """One git repository: what it ignores and what it tracks (pygit2)."""

    def __init__(self, repo):
        self.repo = repo
        self.workdir = os.path.abspath(repo.workdir)
        self._tracked: Optional[set[str]] = None
        self._tracked_dirs: Optional[set[str]] = None

    def _load_tracked(self) -> None:
        files, dirs = set(), set()
        try:
            for e in self.repo.index:
                files.add(e.path)
                d = os.path.dirname(e.path)
                while d and d not in dirs:
                    dirs.add(d)
                    d = os.path.dirname(d)
        except Exception:  # an unreadable index: nothing is known to be tracked
            pass
        self._tracked, self._tracked_dirs = files, dirs

    def ignored(self, abs_path: str, is_dir: bool) -> bool:
        rel = os.path.relpath(abs_path, self.workdir).replace(os.sep, "/")
        try:
            if not self.repo.path_is_ignored(_git_name(rel) + ("/" if is_dir else "")):
                return False
        except Exception:
            return False
        if self._tracked is None:
            self._load_tracked()
        # git lists tracked files even when a pattern matches them (and walks to them)
        return rel not in (self._tracked_dirs if is_dir else self._tracked)


def _open_repo(path: str) -> Optional[_Repo]:
    try:
        import pygit2

        found = pygit2.discover_repository(path)
        if not found:
            return None
        repo = pygit2.Repository(found)
        if repo.is_bare or not repo.workdir:
            return None
        r = _Repo(repo)
        real = os.path.realpath(path)
        if not _inside(real, [os.path.realpath(r.workdir)]):
            return None
        # paths are compared with the workdir: use the spelling of ``path``
        rel = os.path.relpath(real, os.path.realpath(r.workdir))
        ap = os.path.abspath(path)
        r.workdir = ap if rel == "." else os.path.normpath(os.path.join(ap, *[".."] * len(rel.split(os.sep))))
        return r
    except Exception:
        return None


def discover(
    paths: list[str],
    exclude: tuple[str, ...] = (),
    respect_gitignore: bool = True,
    *,
    excludes_for: Optional[Callable[[str], Excludes]] = None,
    gitignore_for: Optional[Callable[[str], bool]] = None,
    force_exclude: bool = False,
) -> Discovery:
    """The files to process.  ``excludes_for(dir)`` gives the exclusion globs for the
    entries of a directory (hierarchical configuration), else the defaults plus
    ``exclude`` (relative to the current directory); ``gitignore_for(dir)`` likewise
    whether git's ignore rules apply there."""
    out = Discovery()
    seen: set[str] = set()
    real_roots = [os.path.realpath(p) for p in paths] + [os.path.realpath(".")]
    if excludes_for is None:
        default = Excludes([(".", g) for g in DEFAULT_EXCLUDES + tuple(exclude)])
        excludes_for = lambda d: default  # noqa: E731
    if gitignore_for is None:
        gitignore_for = lambda d: respect_gitignore  # noqa: E731

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
            if os.path.islink(given) and not os.path.exists(given):
                out.errors.append((given, "broken symbolic link"))
                continue
            path = os.path.normpath(given)
            ab = os.path.abspath(path)
            if force_exclude and excludes_for(os.path.dirname(ab)).match(ab, False):
                continue
            add(path)
            continue
        top = os.path.normpath(given)
        _walk(top, out, add, excludes_for, gitignore_for, force_exclude)
    out.files.sort(key=lambda p: p.replace(os.sep, "/"))
    return out


def _walk(top, out, add, excludes_for, gitignore_for, force_exclude) -> None:
    abs_top = os.path.abspath(top)
    if force_exclude and abs_top != os.path.abspath(".") and excludes_for(os.path.dirname(abs_top)).match(abs_top, True):
        return
    use_git = gitignore_for(abs_top)
    repo = _open_repo(abs_top) if use_git else None
    if use_git and repo is not None and abs_top != repo.workdir and repo.ignored(abs_top, True):
        return  # git lists nothing under an ignored directory
    specs: list[tuple[str, object]] = []  # outside git: (dir, spec) of .gitignore files above
    if use_git and repo is None:
        d = abs_top
        chain = []
        while True:
            chain.append(d)
            if os.path.exists(os.path.join(d, ".git")) or os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
        for d in reversed(chain[1:]):
            s = _gitignore(d)
            if s is not None:
                specs.append((d, s))

    # (path as shown, absolute path, repository, .gitignore specs)
    stack = [(top, abs_top, repo, specs)]
    while stack:
        dirpath, abs_dir, repo, specs = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            msg = f"cannot read directory: {e.strerror or e}, skipped"
            (out.errors if dirpath == top else out.warnings).append((dirpath, msg))
            continue
        use_git = gitignore_for(abs_dir)
        if use_git and repo is None:
            s = _gitignore(dirpath)
            if s is not None:
                specs = specs + [(abs_dir, s)]
        excl = excludes_for(abs_dir)
        real_dir = None
        subdirs = []
        for entry in entries:
            name = entry.name
            if name in ALWAYS_EXCLUDED:
                continue
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir and not name.endswith(".py"):
                continue
            full = os.path.join(abs_dir, name)
            if excl.match(full, is_dir):
                continue
            sub_repo = repo
            if use_git:
                if is_dir and repo is not None and os.path.lexists(os.path.join(full, ".git")):
                    sub_repo = _open_repo(full) or repo  # a submodule or nested repository
                elif repo is not None and repo.ignored(full, is_dir):
                    continue
                elif repo is None and any(
                    spec.match_file(os.path.relpath(full, d).replace(os.sep, "/") + ("/" if is_dir else ""))
                    for d, spec in specs
                ):
                    continue
            path = os.path.normpath(os.path.join(dirpath, name))
            if is_dir:
                subdirs.append((path, full, sub_repo, specs))
            elif is_link:
                add(path)
            else:  # one realpath per directory, not per file (it costs an lstat per component)
                real_dir = real_dir or os.path.realpath(dirpath)
                add(path, os.path.join(real_dir, name))
        stack.extend(reversed(subdirs))


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
