"""Loading the corpus (see corpus/README.md)."""

from __future__ import annotations

import os
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "corpus")


@dataclass
class Case:
    pitfall: str
    name: str
    kind: str
    codes: list[str]
    run: str = "plain"
    before: str = ""
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.pitfall}/{self.name}"

    def path(self, suffix: str = ".py") -> str:
        return os.path.join(CORPUS, self.pitfall, self.name + suffix)

    def read(self, suffix: str = ".py") -> bytes | None:
        p = self.path(suffix)
        if not os.path.exists(p):
            return None
        with open(p, "rb") as f:
            return f.read()

    def expected(self) -> bytes:
        return self.read(".expected.py") or self.read()

    def expected_unsafe(self) -> bytes:
        return self.read(".unsafe.py") or self.expected()


def load_cases() -> list[Case]:
    out = []
    if not os.path.isdir(CORPUS):
        return out
    for pitfall in sorted(os.listdir(CORPUS)):
        toml = os.path.join(CORPUS, pitfall, "cases.toml")
        if not os.path.isfile(toml):
            continue
        with open(toml, "rb") as f:
            data = tomllib.load(f)
        for name, t in sorted(data.items()):
            known = {"kind", "codes", "run", "before", "note"}
            out.append(
                Case(
                    pitfall,
                    name,
                    t["kind"],
                    sorted(t.get("codes", [])),
                    t.get("run", "plain"),
                    t.get("before", ""),
                    t.get("note", ""),
                    {k: v for k, v in t.items() if k not in known},
                )
            )
    return out
