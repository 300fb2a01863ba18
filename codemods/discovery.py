"""Which files a run covers, as git sees them.

The given files are always taken (unless ``force_exclude`` and an exclusion glob matches
them: pre-commit passes explicit paths).  Under a given directory: the ``*.py`` files and Jupyter notebooks (``*.ipynb``),
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

from .sourcefile import TEMP_PREFIX, TEMP_SUFFIX

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", ".direnv", ".tox", ".nox", ".eggs",
    "build", "dist", "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".torchmend_cache", ".ipynb_checkpoints", "__pypackages__", "_build", "buck-out",
)
# the files a directory contributes: Python sources and Jupyter notebooks
SOURCE_SUFFIXES = (".py", ".ipynb")
# never walked, whatever ``exclude`` says: version-control and torchmend's own state
ALWAYS_EXCLUDED = frozenset({".git", ".torchmend_cache"})


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line message)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line message)
    # the directories whose entries the walk read (as shown), and those of them holding
    # a name torchmend gives its temporary files (the runner looks for leftovers there
    # only, not with a second listing of every directory)
    listed: set[str] = field(default_factory=set)
    with_temp: set[str] = field(default_factory=set)


@dataclass
class Listing:
    """What a walk saw of some file names (a configuration's): ``files[dir]`` holds
    those of ``names`` that are regular files, or links to one, in the directory whose
    absolute path is ``dir``; a directory's entry is made before the walk asks
    ``excludes_for``/``gitignore_for`` about it, so that a configuration lookup there
    answers from the listing instead of a stat per name."""

    names: frozenset
    files: dict = field(default_factory=dict)


class Excludes:
    """Gitignore-style globs, each relative to a directory: ``(root, glob)`` pairs.  A glob
    without ``/`` matches a name at any depth (``build``, ``*_pb2.py``); one with ``/``
    is anchored at its root (``experiments/*``, ``src/gen/**/*.py``); ``!`` negates.

    Name globs (the defaults are all of that kind) are matched against the path's
    components directly; the rest through pathspec's gitignore implementation."""

    def __init__(self, patterns):
        import fnmatch
        import re

        self.patterns = tuple(patterns)
        by_root: dict[str, list[str]] = {}
        for root, glob in patterns:
            by_root.setdefault(os.path.abspath(root), []).append(glob)
        self._specs = []  # (root, names, dir-only names, name regex or None, dir-only regex or None, pathspec or None)
        for root, globs in by_root.items():
            simple = all(
                "/" not in g.rstrip("/") and not g.startswith("!") and "\\" not in g and "**" not in g and "[" not in g
                and g.strip() and not g.startswith("#") for g in globs
            )
            if not simple:
                import pathspec

                self._specs.append((root, None, None, None, None, pathspec.GitIgnoreSpec.from_lines(globs)))
                continue
            names, dir_names, pats, dir_pats = set(), set(), [], []
            for g in globs:
                dir_only = g.endswith("/")
                g = g.rstrip("/")
                if any(c in g for c in "*?"):
                    (dir_pats if dir_only else pats).append(fnmatch.translate(g))
                else:
                    (dir_names if dir_only else names).add(g)
            rx = re.compile("|".join(pats)) if pats else None
            drx = re.compile("|".join(dir_pats)) if dir_pats else None
            self._specs.append((root, names, dir_names, rx, drx, None))
        self._simple = all(spec[5] is None for spec in self._specs)

    def by_name_in(self, abs_dir: str) -> bool:
        """Whether the entries of directory ``abs_dir`` are matched by their names alone
        (:meth:`match_name` then answers as :meth:`match`): every glob is a name glob, the
        directory is at or under each root (each entry's path relative to a root is the
        directory's plus its name) and the directory itself does not match (no part of
        its relative path matches: only the name is left to test)."""
        if not self._simple:
            return False
        for root in (spec[0] for spec in self._specs):
            if abs_dir != root and not abs_dir.startswith(root if root.endswith(os.sep) else root + os.sep):
                return False
        return not self.match(abs_dir, True)

    def match_name(self, name: str, is_dir: bool) -> bool:
        """:meth:`match` for an entry of a directory for which :meth:`by_name_in` holds."""
        return any(_name_glob_hit(spec, name, is_dir) for spec in self._specs)

    def match(self, abs_path: str, is_dir: bool) -> bool:
        for spec_t in self._specs:
            root, spec = spec_t[0], spec_t[5]
            prefix = root if root.endswith(os.sep) else root + os.sep
            if abs_path.startswith(prefix):
                rel = abs_path[len(prefix):]
            elif abs_path == root:
                continue
            else:
                rel = os.path.basename(abs_path)  # outside the root: only name globs can match
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
            if spec is not None:
                if spec.match_file(rel + ("/" if is_dir else "")):
                    return True
                continue
            parts = rel.split("/")
            last = len(parts) - 1
            for i, part in enumerate(parts):
                if _name_glob_hit(spec_t, part, is_dir or i < last):
                    return True
        return False


def _name_glob_hit(spec: tuple, part: str, a_dir: bool) -> bool:
    """One path component ``part`` (a directory's when ``a_dir``) matches a name glob of
    ``spec`` (an ``Excludes`` entry: root, names, dir-only names, their regexes, ...)."""
    _, names, dir_names, rx, drx, _ = spec
    return (
        part in names or (a_dir and part in dir_names) or (rx is not None and rx.match(part) is not None)
        or (a_dir and drx is not None and drx.match(part) is not None)
    )


def _gitignore(dirpath: str, exists: Optional[bool] = None):
    """The ``.gitignore`` of ``dirpath``, or None.  ``exists``: whether the directory's
    listing holds one (a regular file or a link to one); None: look."""
    p = os.path.join(dirpath, ".gitignore")
    if not (os.path.isfile(p) if exists is None else exists):
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
        prefix = self.workdir if self.workdir.endswith(os.sep) else self.workdir + os.sep
        rel = abs_path[len(prefix):] if abs_path.startswith(prefix) else os.path.relpath(abs_path, self.workdir)
        rel = rel.replace(os.sep, "/")
        try:
            if not self.repo.path_is_ignored(_git_name(rel) + ("/" if is_dir else "")):
                return False
        except Exception:
            return False
        if self._tracked is None:
            self._load_tracked()
        # git lists tracked files even when a pattern matches them (and walks to them)
        return rel not in (self._tracked_dirs if is_dir else self._tracked)


def _in_git(path: str) -> bool:
    d = os.path.abspath(path)
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return True
        parent = os.path.dirname(d)
        if parent == d:
            return False
        d = parent


class _Listing:
    """What ``git ls-files -co --exclude-standard`` lists under one directory (the git
    binary: the reference answer itself, and cheaper than asking libgit2 per path)."""

    def __init__(self, top: str, names: list[str]):
        self.workdir = top
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        for n in names:
            if n.endswith("/"):  # an untracked nested repository
                n = n.rstrip("/")
                self.dirs.add(n)
            else:
                self.files.add(n)
            d = n.rpartition("/")[0]
            while d and d not in self.dirs:
                self.dirs.add(d)
                d = d.rpartition("/")[0]

    def ignored(self, abs_path: str, is_dir: bool) -> bool:
        prefix = self.workdir if self.workdir.endswith(os.sep) else self.workdir + os.sep
        if not abs_path.startswith(prefix):
            return False
        rel = abs_path[len(prefix):].replace(os.sep, "/")
        if is_dir:  # listed below it, or a submodule (listed as one entry)
            return rel not in self.dirs and rel not in self.files
        return rel not in self.files


def _git_listing(path: str) -> Optional[_Listing]:
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    top = os.path.abspath(path)
    # repository content must not run code: core.fsmonitor is a command git would start
    # (from a .git/config that came with the files); no optional index lock writes either
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        p = subprocess.run([git, "-c", "core.fsmonitor=false", "-C", top, "ls-files", "-co", "--exclude-standard", "-z"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=300, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return _Listing(top, [os.fsdecode(n) for n in p.stdout.split(b"\0") if n])


def _open_repo(path: str):
    """An object whose ``ignored(abs_path, is_dir)`` answers as git does for the
    repository holding ``path``: the git binary's listing, else libgit2; None outside
    a repository."""
    if not _in_git(path):  # spares starting git or importing pygit2 outside a repository
        return None
    listing = _git_listing(path)
    if listing is not None:
        return listing
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
    listing: Optional[Listing] = None,
) -> Discovery:
    """The files to process.  ``excludes_for(dir)`` gives the exclusion globs for the
    entries of a directory (hierarchical configuration), else the defaults plus
    ``exclude`` (relative to the current directory); ``gitignore_for(dir)`` likewise
    whether git's ignore rules apply there.  ``listing``: filled with what each walked
    directory holds of its names (see :class:`Listing`)."""
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
            # a broken link or a link loop goes on to the reader, which names the cause
            path = os.path.normpath(given)
            ab = os.path.abspath(path)
            if force_exclude and excludes_for(os.path.dirname(ab)).match(ab, False):
                continue
            add(path)
            continue
        top = os.path.normpath(given)
        _walk(top, out, add, excludes_for, gitignore_for, force_exclude, listing)
    out.files.sort(key=lambda p: p.replace(os.sep, "/"))
    return out


def _walk(top, out, add, excludes_for, gitignore_for, force_exclude, listing=None) -> None:
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

    # (path as shown, absolute path, real path or None, repository, .gitignore specs);
    # a directory entered through no link has its parent's real path plus its name (one
    # realpath for the top, not one per directory: it costs an lstat per component)
    sep = os.sep
    # the names looked for in each listing: the configuration's and each directory's
    # .gitignore, in any case (a case-insensitive file system finds ``PyProject.toml`` by
    # that name: such an entry is kept, and whoever reads the listing looks it up)
    listed_lower = {n.lower() for n in (listing.names if listing is not None else ())}
    watched = listed_lower | {".gitignore"}
    stack = [(top, abs_top, None, repo, specs)]
    while stack:
        dirpath, abs_dir, real_dir, repo, specs = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            msg = f"cannot read directory: {e.strerror or e}, skipped"
            (out.errors if dirpath == top else out.warnings).append((dirpath, msg))
            continue
        out.listed.add(dirpath)
        present = set()
        for entry in entries:
            if entry.name.lower() in watched:
                try:
                    if entry.is_file():
                        present.add(entry.name)
                except OSError:
                    pass
        if listing is not None:
            listing.files[abs_dir] = frozenset(n for n in present if n.lower() in listed_lower)
        use_git = gitignore_for(abs_dir)
        if use_git and repo is None:
            # a .gitignore by that very name: read; another case of it: looked up (the
            # file system says whether that name finds it); none: none
            gi = True if ".gitignore" in present else None if any(n.lower() == ".gitignore" for n in present) else False
            s = _gitignore(dirpath, gi)
            if s is not None:
                specs = specs + [(abs_dir, s)]
        excl = excludes_for(abs_dir)
        by_name = excl.by_name_in(abs_dir)
        # the entries' paths by concatenation (both prefixes are normalised already)
        abs_pre = abs_dir if abs_dir.endswith(sep) else abs_dir + sep
        shown_pre = "" if dirpath == "." else dirpath if dirpath.endswith(sep) else dirpath + sep
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
            if not is_dir and not name.endswith(SOURCE_SUFFIXES):
                if name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX):
                    out.with_temp.add(dirpath)
                continue
            full = abs_pre + name
            if excl.match_name(name, is_dir) if by_name else excl.match(full, is_dir):
                continue
            sub_repo = repo
            if use_git:
                if repo is not None and repo.ignored(full, is_dir):
                    continue
                if is_dir and repo is not None and os.path.lexists(os.path.join(full, ".git")):
                    sub_repo = _open_repo(full) or repo  # a submodule or nested repository: its own rules
                elif repo is None and any(
                    spec.match_file(os.path.relpath(full, d).replace(os.sep, "/") + ("/" if is_dir else ""))
                    for d, spec in specs
                ):
                    continue
            path = shown_pre + name
            if real_dir is None and not is_link:
                real_dir = os.path.realpath(dirpath)
            if is_dir:
                subdirs.append((path, full, (real_dir if real_dir.endswith(sep) else real_dir + sep) + name, sub_repo, specs))
            elif is_link:
                add(path)
            else:
                add(path, (real_dir if real_dir.endswith(sep) else real_dir + sep) + name)
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
