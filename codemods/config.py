"""Configuration, found per file as Ruff does, and the one function that turns the
command line plus the configuration files into the settings of each file.

Each file uses its nearest configuration: walking up from the file's directory, the
first ``torchmend.toml`` (keys at the top level) or ``pyproject.toml`` *with* a
``[tool.torchmend]`` table (a ``pyproject.toml`` without one is skipped).  A file with
no configuration above it uses the one found from the current directory, else the
defaults.  ``--config FILE`` uses one file for everything; ``--isolated`` none.
Globs (``exclude``, ``extend-exclude``, ``per-file-ignores``) are gitignore-style and
relative to the directory of the file that defines them (command-line globs: to the
current directory); a glob without ``/`` matches a name at any depth.

Rule selection is layered like Ruff's: the defaults (every rule), then the file's
configuration, then the command line.  A layer that sets ``select`` starts afresh;
``extend-select`` adds and ``ignore`` removes; inside a layer the most specific
selector wins (``TM201`` over ``TM2`` over ``ALL``; ``ignore`` on a tie).  The file's
``per-file-ignores`` come last.

:func:`resolve` is what every command calls (``check``, ``diff``, ``apply``,
``verify``); :meth:`Settings.for_file` gives a file's :class:`FileSettings`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from .discovery import DEFAULT_EXCLUDES, Excludes, Listing

KEYS = (
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores",
    "unsafe-fixes", "respect-gitignore", "force-exclude",
)
CONFIG_NAMES = ("torchmend.toml", "pyproject.toml")  # in this order of precedence in one directory


class ConfigError(Exception):
    """A configuration that cannot be used; one line naming the file."""


@dataclass
class Config:
    """One configuration file, as written (``None``: the key is not set)."""

    path: Optional[str] = None  # None: the defaults
    root: str = "."  # absolute directory the globs are relative to
    select: Optional[list[str]] = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: Optional[list[str]] = None
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    unsafe_fixes: Optional[bool] = None
    respect_gitignore: Optional[bool] = None
    force_exclude: Optional[bool] = None


@dataclass
class CliOptions:
    """What the command line said (``None``: not given)."""

    select: Optional[list[str]] = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: Optional[list[str]] = None
    extend_exclude: list[str] = field(default_factory=list)
    unsafe_fixes: Optional[bool] = None
    respect_gitignore: Optional[bool] = None
    force_exclude: Optional[bool] = None
    config: Optional[str] = None  # --config FILE
    isolated: bool = False  # --isolated: no configuration file


@dataclass(frozen=True)
class FileSettings:
    """The effective settings of one file (hashable: files are grouped by them)."""

    select: frozenset
    unsafe_fixes: bool = False


def split_list(values) -> list[str]:
    """``["TM1,TM2", "TM5"]`` -> ``["TM1", "TM2", "TM5"]`` (comma-separated or repeated)."""
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


# --------------------------------------------------------------------------- reading
def _parse(path: str, data: dict, table: str) -> Config:
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        import difflib  # (a spelling suggestion only; diffs come from gitdiff)

        k = unknown[0]
        close = difflib.get_close_matches(k, KEYS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(KEYS)})"
        raise ConfigError(f"{path}: unknown key '{k}' in {table}{hint}")

    def strings(key: str) -> Optional[list[str]]:
        if key not in data:
            return None
        v = data[key]
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{path}: {table} {key} must be a list of strings")
        return v

    def flag(key: str) -> Optional[bool]:
        v = data.get(key)
        if v is not None and not isinstance(v, bool):
            raise ConfigError(f"{path}: {table} {key} must be true or false")
        return v

    pfi = data.get("per-file-ignores", {})
    if not isinstance(pfi, dict) or not all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) for v in pfi.values()
    ):
        raise ConfigError(f"{path}: {table} per-file-ignores must map globs to lists of rule selectors")
    cfg = Config(
        path=path,
        root=os.path.dirname(os.path.abspath(path)),
        select=strings("select"),
        extend_select=strings("extend-select") or [],
        ignore=strings("ignore") or [],
        exclude=strings("exclude"),
        extend_exclude=strings("extend-exclude") or [],
        per_file_ignores={k: list(v) for k, v in pfi.items()},
        unsafe_fixes=flag("unsafe-fixes"),
        respect_gitignore=flag("respect-gitignore"),
        force_exclude=flag("force-exclude"),
    )
    for key, sels in (("select", cfg.select or []), ("extend-select", cfg.extend_select), ("ignore", cfg.ignore),
                      *((f"per-file-ignores {g!r}", v) for g, v in cfg.per_file_ignores.items())):
        try:
            _check_selectors(sels)
        except ValueError as e:
            raise ConfigError(f"{path}: {table} {key}: {e}") from None
    return cfg


def read_config(path: str) -> Optional[Config]:
    """The configuration in ``path`` (``torchmend.toml`` or ``pyproject.toml``); None for a
    ``pyproject.toml`` without a ``[tool.torchmend]`` table."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read configuration: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "torchmend" not in tool:
            return None
        section = tool["torchmend"]
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: [tool.torchmend] must be a table")
        return _parse(path, section, "[tool.torchmend]")
    return _parse(path, data, os.path.basename(path))


def find_config(start: str, _cache: Optional[dict] = None, listed: Optional[dict] = None) -> Optional[Config]:
    """The nearest configuration at or above ``start`` (a file or directory).
    ``listed``: directory -> the configuration names that are files there, as a walk
    of it saw them (:class:`~torchmend.discovery.Listing`); other directories are
    looked at."""
    cache = {} if _cache is None else _cache
    d = os.path.abspath(start)
    if d in cache:  # a directory already looked up (the keys are directories): no stat
        return cache[d]
    if (listed is None or d not in listed) and not os.path.isdir(d):
        d = os.path.abspath(os.path.dirname(start) or ".")
    walked = []
    found: Optional[Config] = None
    while True:
        if d in cache:
            found = cache[d]
            break
        walked.append(d)
        got = None
        here = listed.get(d) if listed is not None else None
        for name in CONFIG_NAMES:
            # listed by that name: a file; listed in another case only: the file system
            # says whether the name finds it; not listed: no such file
            exact = here is not None and name in here
            if here is not None and not exact and not any(h.lower() == name for h in here):
                continue
            p = os.path.join(d, name)
            if exact or os.path.isfile(p):
                got = read_config(p)
                if got is not None:
                    break
        if got is not None:
            found = got
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for w in walked:
        cache[w] = found
    return found


def load_config(start: str = ".") -> Config:
    """The nearest configuration of ``start``, or the defaults."""
    return find_config(start) or Config(root=os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or "."))


# --------------------------------------------------------------------------- rules
def _all_codes() -> frozenset:
    from .registry import codes

    return frozenset(codes())


def _check_selectors(sels) -> None:
    from .registry import resolve as resolve_selectors

    resolve_selectors(list(sels))  # raises ValueError naming the unknown one


def _specificity(sel: str) -> int:
    """How specific a selector is: ALL < a pitfall (its code prefix) < longer prefixes <
    a full code or a rule name."""
    from .registry import all_rules, codes, is_code_like

    s = sel.strip()
    if s.upper() == "ALL":
        return 0
    if is_code_like(s):  # (no rule's name or pitfall looks like a code)
        return 100 if s.upper() in codes() else len(s)
    for r in all_rules():
        if r.name == s or r.code == s.upper():
            return 100
    if any(r.pitfall == s.replace("-", "_") for r in all_rules()):
        return 3  # a pitfall is one family of codes, like the prefix TM2
    return len(s)


def _layer(enabled: set, select: Optional[list[str]], extend: list[str], ignore: list[str]) -> set:
    from .registry import resolve as resolve_selectors

    scores: dict[str, tuple[int, int]] = {}  # code -> (specificity, 1 select / 0 ignore); ignore wins ties
    for sels, on in ((list(select or []) + list(extend), 1), (list(ignore), 0)):
        for sel in sels:
            spec = _specificity(sel)
            for code in resolve_selectors([sel]):
                prev = scores.get(code)
                if prev is None or spec > prev[0] or (spec == prev[0] and on == 0):
                    scores[code] = (spec, on)
    out = set() if select is not None else set(enabled)
    for code, (_, on) in scores.items():
        (out.add if on else out.discard)(code)
    return out


# --------------------------------------------------------------------------- settings
class Settings:
    """Every file's settings: the command line over its nearest configuration."""

    def __init__(self, cli: CliOptions, cwd: Optional[str] = None):
        self.cli = cli
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._dirs: dict[str, Optional[Config]] = {}
        self._files: dict[str, FileSettings] = {}
        self._by_dir: dict[str, FileSettings] = {}  # a path's dirname, as given -> settings
        self._excludes: dict[int, Excludes] = {}
        self._layered: dict[int, frozenset] = {}
        self._settings: dict[FileSettings, FileSettings] = {}  # one object per distinct value
        # what discovery's walk saw of the configuration names, by directory (each
        # directory's lookup answers from it, without a stat per name)
        self.listing = Listing(frozenset(CONFIG_NAMES))
        self.fixed: Optional[Config] = None  # --config / --isolated: one for every file
        if cli.isolated:
            self.fixed = Config(root=self.cwd)
        elif cli.config:
            if not os.path.isfile(cli.config):
                raise ConfigError(f"{cli.config}: --config: no such file")
            got = read_config(cli.config)
            self.fixed = got or Config(path=cli.config, root=os.path.dirname(os.path.abspath(cli.config)))
        try:
            for key, sels in (("--select", cli.select or []), ("--extend-select", cli.extend_select), ("--ignore", cli.ignore)):
                _check_selectors(sels)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.default = self.fixed or find_config(self.cwd, self._dirs) or Config(root=self.cwd)

    # which configuration --------------------------------------------------------------
    def config_for(self, path: str) -> Config:
        """The configuration that governs ``path`` (a file, or a directory's entries)."""
        if self.fixed is not None:
            return self.fixed
        return find_config(path, self._dirs, self.listing.files) or self.default

    def config_files(self) -> list[str]:
        """The configuration files read so far (for --verbose)."""
        seen = {c.path for c in self._dirs.values() if c is not None and c.path}
        if self.fixed is not None and self.fixed.path:
            seen.add(self.fixed.path)
        return sorted(seen)

    # rules ----------------------------------------------------------------------------
    def for_file(self, path: str) -> FileSettings:
        got = self._files.get(path)
        if got is not None:
            return got
        # a file's configuration is its directory's (looked up without a stat of the file);
        # without per-file ignores every file of a directory has the same settings
        rel_dir = os.path.dirname(path)
        got = self._by_dir.get(rel_dir)
        if got is not None:
            self._files[path] = got
            return got
        d = os.path.abspath(rel_dir)
        cfg = self.fixed or (self._dirs[d] if d in self._dirs else find_config(d, self._dirs, self.listing.files)) or self.default
        cli = self.cli
        base = self._layered.get(id(cfg))
        if base is None:  # once per configuration file, not per file
            codes = _layer(set(_all_codes()), ["ALL"], [], [])
            codes = _layer(codes, cfg.select, cfg.extend_select, cfg.ignore)
            base = self._layered[id(cfg)] = frozenset(_layer(codes, cli.select, cli.extend_select, cli.ignore))
        codes = set(base)
        if cfg.per_file_ignores:
            from .registry import resolve as resolve_selectors

            for glob, sels in cfg.per_file_ignores.items():
                negated = glob.startswith("!")  # as Ruff: the files that do *not* match
                hit = Excludes([(cfg.root, glob[1:] if negated else glob)]).match(os.path.abspath(path), False)
                if hit != negated:
                    codes -= resolve_selectors(sels)
        unsafe = cli.unsafe_fixes if cli.unsafe_fixes is not None else bool(cfg.unsafe_fixes)
        got = FileSettings(frozenset(codes), unsafe)
        got = self._files[path] = self._settings.setdefault(got, got)
        if not cfg.per_file_ignores:
            self._by_dir[rel_dir] = got
        return got

    # files ----------------------------------------------------------------------------
    def excludes_for(self, path: str) -> Excludes:
        """The exclusion globs that apply to the entries of directory ``path`` (or to a
        file given as ``path``): command line ``--exclude`` or the configuration's
        ``exclude`` or the defaults, plus every ``extend-exclude``."""
        cfg = self.config_for(path)
        got = self._excludes.get(id(cfg))
        if got is None:
            cli = self.cli
            if cli.exclude is not None:
                base = [(self.cwd, g) for g in cli.exclude]
            elif cfg.exclude is not None:
                base = [(cfg.root, g) for g in cfg.exclude]
            else:
                base = [(cfg.root, g) for g in DEFAULT_EXCLUDES]
            pats = base + [(cfg.root, g) for g in cfg.extend_exclude] + [(self.cwd, g) for g in cli.extend_exclude]
            got = self._excludes[id(cfg)] = Excludes(pats)
        return got

    def respect_gitignore(self, path: str) -> bool:
        if self.cli.respect_gitignore is not None:
            return self.cli.respect_gitignore
        v = self.config_for(path).respect_gitignore
        return True if v is None else v

    def force_exclude(self) -> bool:
        if self.cli.force_exclude is not None:
            return self.cli.force_exclude
        return bool(self.default.force_exclude)


def resolve(cli: CliOptions, cwd: Optional[str] = None) -> Settings:
    """The one entry point: the settings of a run.  Raises ConfigError (one line)."""
    return Settings(cli, cwd)
