"""``[tool.torchmend]`` in the nearest ``pyproject.toml``: select, ignore, exclude,
unsafe-fixes.  Command-line options take precedence."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

KEYS = {"select", "ignore", "exclude", "unsafe-fixes"}


class ConfigError(Exception):
    pass


@dataclass
class Config:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    unsafe_fixes: bool = False
    path: Optional[str] = None


def find_pyproject(start: str) -> Optional[str]:
    d = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        p = os.path.join(d, "pyproject.toml")
        if os.path.isfile(p):
            return p
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def load_config(start: str = ".") -> Config:
    path = find_pyproject(start)
    if path is None:
        return Config()
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: cannot read configuration: {e}") from None
    section = data.get("tool", {}).get("torchmend", {})
    unknown = set(section) - KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.torchmend]: {', '.join(sorted(unknown))}")

    def strings(key: str) -> list[str]:
        v = section.get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{path}: [tool.torchmend] {key} must be a list of strings")
        return v

    unsafe = section.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError(f"{path}: [tool.torchmend] unsafe-fixes must be true or false")
    return Config(strings("select"), strings("ignore"), strings("exclude"), unsafe, path)
