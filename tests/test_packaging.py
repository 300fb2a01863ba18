"""Packaging: the library (codemods/) and the command line (cli/) install as one
``torchmend`` import namespace, every package folder is in the distribution, and no
code imports the source folders by their own names (which would load a second copy)."""

import glob
import os
import re
import sys

from tests.corpus_cases import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _setuptools():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def test_every_package_folder_is_listed():
    st = _setuptools()
    mapping = st["package-dir"]
    assert mapping == {"torchmend": "codemods", "torchmend.cli": "cli"}
    expected = set()
    for top, pkg in (("codemods", "torchmend"), ("cli", "torchmend.cli")):
        for init in glob.glob(os.path.join(ROOT, top, "**", "__init__.py"), recursive=True):
            rel = os.path.relpath(os.path.dirname(init), os.path.join(ROOT, top))
            expected.add(pkg if rel == "." else pkg + "." + rel.replace(os.sep, "."))
    assert set(st["packages"]) == expected


def test_nothing_imports_the_source_folders_by_name():
    bad = re.compile(r"^\s*(from|import)\s+(codemods|cli)(\.|\s|$)", re.M)
    offenders = []
    for top in ("codemods", "cli", "tests", "bench"):
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.py"), recursive=True):
            with open(path, encoding="utf-8") as f:
                if bad.search(f.read()):
                    offenders.append(os.path.relpath(path, ROOT))
    assert offenders == []


def test_imported_under_the_namespace():
    import torchmend
    import torchmend.cli.main

    assert os.path.dirname(torchmend.__file__) == os.path.join(ROOT, "codemods")
    assert "codemods" not in sys.modules and "cli" not in sys.modules
