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


PACKAGE_FILES = [
    p for top in ("codemods", "cli") for p in glob.glob(os.path.join(ROOT, top, "**", "*.py"), recursive=True)
]


def test_every_package_file_is_python_3_10_syntax():
    """requires-python >= 3.10: nothing newer in the syntax (the other interpreters run
    the suite in .ci/pythons; this catches it on any one)."""
    import ast

    for path in PACKAGE_FILES + glob.glob(os.path.join(ROOT, "tests", "*.py")):
        with open(path, encoding="utf-8") as f:
            ast.parse(f.read(), filename=path, feature_version=(3, 10))


def test_tomllib_always_has_the_tomli_fallback():
    """``tomllib`` is 3.11+: every import of it sits in a try whose handler imports tomli."""
    import ast

    offenders = []
    for path in PACKAGE_FILES + glob.glob(os.path.join(ROOT, "tests", "*.py")) + glob.glob(os.path.join(ROOT, "bench", "*.py")):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        guarded = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                isinstance(n, ast.Import) and any(a.name == "tomli" for a in n.names)
                for h in node.handlers for n in ast.walk(h)
            ):
                guarded |= {id(n) for s in node.body for n in ast.walk(s)}
            elif isinstance(node, ast.If):  # ``if sys.version_info >= (3, 11): import tomllib / else: tomli``
                if any(isinstance(n, ast.Import) and any(a.name == "tomli" for a in n.names) for s in node.orelse for n in ast.walk(s)):
                    guarded |= {id(n) for s in node.body for n in ast.walk(s)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "tomllib" for a in node.names) and id(node) not in guarded:
                offenders.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "tomllib":
                offenders.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    assert offenders == []


def test_project_metadata():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["requires-python"] == ">=3.10"
    deps = project["dependencies"]
    assert "libcst>=1.1,<2" in deps
    assert any(d.replace(" ", "").startswith("tomli") and "python_version<'3.11'" in d.replace(" ", "") for d in deps)
    assert {"jsonschema>=4", "pre-commit>=3"} <= set(project["optional-dependencies"]["test"])
    assert os.path.isfile(os.path.join(ROOT, "codemods", "py.typed"))


def test_python_api():
    import torchmend

    with open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.py")) as f:
        src = f.read()
    with open(os.path.join(ROOT, "corpus", "zero_grad", "missing_basic.expected.py")) as f:
        fixed = f.read()
    found = torchmend.check_text(src, path="train.py")
    assert [(f.code, f.line, f.col, f.path) for f in found] == [("TM201", 17, 5, "train.py")]
    assert isinstance(found[0], torchmend.Finding) and found[0].fix is None and found[0].safety.value == "safe"
    assert torchmend.check_text(src, select=["TM1"]) == []
    assert torchmend.fix_text(src) == fixed
    assert torchmend.fix_text(fixed) == fixed
    assert torchmend.fix_text(src, select=["TM5"]) == src
    assert torchmend.fix_text("# @generated\n" + src) == "# @generated\n" + src
    import pytest

    with pytest.raises(torchmend.SourceError, match="syntax error"):
        torchmend.check_text("import torch\nfor x in loader:\n    loss.backward(\n    opt.step()\n")
    with pytest.raises(ValueError):
        torchmend.check_text(src, select=["NOPE"])
    assert set(torchmend.__all__) == {"Finding", "SourceError", "__version__", "check_text", "fix_text"}
