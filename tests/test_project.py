"""The project index (codemods/project.py): module paths resolved as Python resolves
them, not bare names across the tree; the textual import scan agrees with ``ast``."""

from __future__ import annotations

import ast
import os

import pytest
from hypothesis import given, settings, strategies as st

from torchmend import project
from torchmend.project import ImportIndex, NeedsProject, Project


def _tree(tmp_path, files: dict[str, str]) -> list[str]:
    out = []
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        out.append(str(p))
    return out


def test_a_main_py_is_not_imported_by_an_import_of_a_name_main(tmp_path):
    files = _tree(tmp_path, {
        "examples/dcgan/main.py": "import torch\n",
        "examples/mnist/main.py": "import torch\n",
        "lightning/__init__.py": "",
        "lightning/utilities/__init__.py": "",
        "lightning/utilities/upgrade_checkpoint.py": "def main():\n    pass\n",
        "lightning/cli.py": "from lightning.utilities.upgrade_checkpoint import main\n",
        "examples/mnist/test_main.py": "from main import train\n",
    })
    p = Project(index=ImportIndex(files))
    dcgan, mnist = files[0], files[1]
    assert not p.is_imported(dcgan)  # `from X import main` names an attribute of X, elsewhere
    assert p.is_imported(mnist)  # its neighbour imports `main`
    assert p.is_imported(mnist, "train") and not p.is_imported(mnist, "other")
    up = files[4]
    assert p.is_imported(up) and p.is_imported(up, "main")


def test_neighbour_importers_of_a_function(tmp_path):
    files = _tree(tmp_path, {
        "train.py": "def fit(m):\n    pass\n",
        "main.py": "import train\n",
        "run.py": "from train import fit as go\n",
        "other.py": "from train import evaluate\n",
        "star.py": "from train import *\n",
        "sub/main.py": "from train import fit\n",  # another directory: its own train
        "pkg/__init__.py": "",
        "pkg/train.py": "def fit(m):\n    pass\n",
        "pkg/cli.py": "from pkg.train import fit\n",
        "pkg/rel.py": "from .train import fit\n",
        "tools/fit_lib.py": "def fit(m):\n    pass\n",
        "up.py": "from pkg.train import fit\nfrom tools.fit_lib import fit as f2\n",
        "sub/deeper/x.py": "from tools.fit_lib import fit\n",  # not the directory above tools/
    })
    p = Project(roots=(str(tmp_path),))  # (a worker: the neighbours are read in place, no index needed)
    real = os.path.realpath

    def found(path, name):
        return [(os.path.relpath(f, real(str(tmp_path))), m) for f, m in p.neighbour_importers(path, name)]

    assert found(files[0], "fit") == [("main.py", "train"), ("run.py", "train"), ("star.py", "train")]
    assert found(files[0], "evaluate") == [("main.py", "train"), ("other.py", "train"), ("star.py", "train")]
    # a package's module, by its dotted name from its own directory and the one above
    assert found(files[7], "fit") == [("pkg/cli.py", "pkg.train"), ("pkg/rel.py", "pkg.train"), ("up.py", "pkg.train")]
    # a script of a directory without __init__.py, from the directory above (a namespace package)
    assert found(files[10], "fit") == [("up.py", "tools.fit_lib")]
    assert real(files[2]) in p.deps and real(files[11]) in p.deps
    p = Project(roots=(str(tmp_path / "tools"),))  # the directory above the roots is not read
    assert found(files[10], "fit") == [] and not any(f.endswith("up.py") for f in p.deps)
    p = Project(roots=(files[10],))  # a file given: its directory is the root
    assert found(files[10], "fit") == []
    assert Project(standalone=True).neighbour_importers(files[0], "fit") == []


def test_package_modules_need_the_index_in_workers(tmp_path):
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n", "pkg/b.py": "from .a import x\n",
                             "script.py": "import os\n"})
    worker = Project()
    try:
        worker.is_imported(files[1])
        raise AssertionError("expected NeedsProject")
    except NeedsProject:
        pass
    assert not worker.is_imported(files[3])  # a script: its neighbours are read in place
    full = Project(index=ImportIndex(files))
    assert full.is_imported(files[1], "x")  # the relative import resolves to pkg.a
    assert project.package_of(files[2]) == "pkg"
    assert Project(standalone=True).is_imported(files[1]) is False


def test_the_index_reads_regular_files_and_skips_a_fifo(tmp_path):
    """The scan reads each file whole (one bigger than a read's first guess too, and
    one through a link) and gives up on what is no regular file instead of waiting."""
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n",
                             "pkg/b.py": "# padding\n" * 20_000 + "from pkg.a import x\n"})
    os.symlink(tmp_path / "pkg" / "b.py", tmp_path / "pkg" / "c.py")
    os.mkfifo(tmp_path / "pkg" / "d.py")
    index = ImportIndex(files + [str(tmp_path / "pkg" / "c.py"), str(tmp_path / "pkg" / "d.py")])
    assert index._text(files[2]) == open(files[2], "rb").read()
    assert index._text(str(tmp_path / "pkg" / "d.py")) is None
    assert sorted(os.path.basename(f) for f in index.importers("pkg.a")) == ["b.py"]  # (the link: its real path)
    assert Project(index=index).is_imported(files[1], "x")


def test_module_file_resolution(tmp_path):
    files = _tree(tmp_path, {"proj/train.py": "from models import Net\n", "proj/models.py": "class Net: pass\n",
                             "pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/x.py": "", "pkg/y.py": ""})
    p = Project()
    assert p.module_file("models", files[0]) == files[1]
    assert p.module_file("pkg.y", files[4]) == files[5]
    assert p.module_file("missing", files[0]) is None


def test_a_package_of_the_project_imported_from_a_script_below(tmp_path):
    """``examples/train.py`` imports ``breizhcrops.models`` of the repository's root (the
    project's own package, installed): found in a directory above the script, inside the
    run's roots; a plain module there is not (a script below cannot import it), nor a
    package outside the roots."""
    files = _tree(tmp_path, {"repo/examples/train.py": "", "repo/crops/__init__.py": "",
                             "repo/crops/models/__init__.py": "", "repo/crops/models/lstm.py": "",
                             "repo/utils.py": "", "repo/examples/deep/er/run.py": "", "other/__init__.py": ""})
    p = Project(roots=(str(tmp_path / "repo"),))
    assert p.module_file("crops.models.lstm", files[0]) == files[3]
    assert p.module_file("crops.models", files[0]) == files[2]
    assert p.module_file("utils", files[0]) is None
    assert p.module_file("crops", files[5]) == files[1]  # (three directories up)
    assert p.imports_holding(files[0], "from crops.models import lstm\n", "class")  is False
    (tmp_path / "repo/crops/models/lstm.py").write_text("class LSTM: pass\n")
    assert Project(roots=(str(tmp_path / "repo"),)).imports_holding(files[0], "from crops.models import lstm\n", "class")
    # outside the run's roots: not read
    assert Project(roots=(str(tmp_path / "repo" / "examples"),)).module_file("crops.models", files[0]) is None
    # a package beside the project (``other/``, two directories up): found only while no
    # directory on the way is a project's root
    assert Project(roots=(str(tmp_path),)).module_file("other", files[0]) == files[6]
    (tmp_path / "repo" / "setup.py").write_text("")
    assert Project(roots=(str(tmp_path),)).module_file("other", files[0]) is None
    assert Project(roots=(str(tmp_path),)).module_file("crops", files[0]) == files[1]


def test_a_script_importing_its_own_namespace_package_by_name(tmp_path):
    """``going_modular/train.py`` (no ``__init__.py``: a namespace package, run as ``python
    -m going_modular.train``) imports ``going_modular.data_setup``: its sibling, found in
    the directory above; a namespace package of another name is not looked for there."""
    files = _tree(tmp_path, {"going_modular/train.py": "", "going_modular/data_setup.py": "",
                             "other/engine.py": ""})
    p = Project(roots=(str(tmp_path),))
    assert p.module_file("going_modular.data_setup", files[0]) == files[1]
    assert p.module_file("other.engine", files[0]) is None
    assert p.imports_holding(files[0], "from going_modular import data_setup\n", "") is True
    assert Project(roots=(str(tmp_path),)).imports_holding(files[0], "from other import engine\n", "") is False


LINES = [
    "import os", "import a.b as c, d", "from . import x", "from pkg.mod import (A, B,", "    C)", "",
    "x = 1  # import not_this", "from x import *", "s = 'import quoted'", "def f():", "import q.r",
    "from ..up import z as w", "from m import (n)", "if c:\n    import nested",
    # a statement after a ":" or ";" on its line, continued with backslashes, a bracketed
    # list with comments
    "try: import t1\nexcept ImportError: pass", "x = 2; import t2", "from pkg import \\\n    t3",
    "import t4, \\\n    t5", "from m import (  # note: c\n    t6,  # one\n)", "if c: from q import t7",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=10))
def test_import_scan_agrees_with_ast(lines):
    text = "\n".join(lines) + "\n"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    want = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            want.extend((None, [a.name]) for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            want.append(("." * n.level + (n.module or ""), [a.name for a in n.names]))
    got = list(project._import_statements(text))
    assert sorted(map(repr, got)) == sorted(map(repr, want))


def test_a_package_module_imported_by_its_bare_name_from_a_neighbour(tmp_path):
    # ``python pkg/run.py`` puts pkg/ on sys.path: ``import main`` there is pkg/main.py
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/main.py": "x = 1\n", "pkg/run.py": "import main\n",
                             "other/run.py": "import main\n"})
    assert Project(index=ImportIndex(files)).is_imported(files[1])
    files2 = _tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/main.py": "x = 1\n", "other/run.py": "import main\n"})
    assert not Project(index=ImportIndex(files2)).is_imported(files2[1])  # a bare name elsewhere: not this file


def test_namespace_directories_resolve_dotted_names_on_request(tmp_path):
    files = _tree(tmp_path, {"tools/train.py": "x = 1\n", "tests/test_train.py": "from tools.train import x\n",
                             "other/train.py": "y = 2\n", "lib/cli.py": "from lib2.tools.train import x\n"})
    full = Project(index=ImportIndex(files))
    assert not full.is_imported(files[0])  # by default: only its neighbours
    assert full.is_imported(files[0], namespace=True)  # tools/ on the path of a file at the root
    assert not full.is_imported(files[2], namespace=True)  # nothing imports other.train
    try:
        Project().is_imported(files[0], namespace=True)
        raise AssertionError("expected NeedsProject")
    except NeedsProject:
        pass


STEM_LINES = LINES + [
    "main()", "if __name__ == '__main__':\n    main()", "from main import run", "from pkg import (\n    main,\n)",
    "import pkg.main", "from .main import x", "domain = 1", "from x.main_utils import y", "main_loop = 2",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(STEM_LINES), max_size=10))
def test_import_prefilter_keeps_every_file_the_scan_records(lines):
    """The index reads a file's import statements only when the module's stem may stand
    in one (``_named_in_an_import``): every file where the scan records an import of a
    module of that stem passes it."""
    text = "\n".join(lines) + "\n"
    data = text.encode()
    for stem in ("main", "x", "mod", "pkg", "up", "a", "c", "m", "nested", "not_this", "quoted", "b",
                 "t1", "t2", "t3", "t5", "t6", "t7", "q"):
        recorded = False
        for mod, names in project._import_statements(text):
            parts = (mod or "").lstrip(".").split(".")
            if stem in parts or stem in names or any(stem in n.split(".") for n in names):
                recorded = True
        if recorded:
            assert project._named_in_an_import(data, stem.encode()), (stem, text)


_STEMS = ("main", "x", "mod", "pkg", "up", "a", "c", "m", "nested", "b", "t1", "q")


def _own(idx: dict, stem: str) -> dict:
    """The records of an index scan that a query can reach: modules whose last name is
    ``stem`` (``importers`` looks for a module in the scan of its last name)."""
    return {k: v for k, v in idx.items() if k.rsplit(".", 1)[-1] == stem}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(STEM_LINES), max_size=6), min_size=1, max_size=4))
def test_the_table_of_all_imports_answers_as_the_scan_of_one_stem(files):
    """From its second stem on, the index answers from a table of every file's import
    statements (read once) instead of reading the tree again: for every stem, the same
    importers as the first scan (which reads only the files that may name the stem)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, lines in enumerate(files):
            p = os.path.join(d, f"f{i}.py")
            with open(p, "w") as f:
                f.write("\n".join(lines) + "\n")
            paths.append(p)
        link = os.path.join(d, "link.py")  # a second path to the first file: one importer
        os.symlink(paths[0], link)
        paths.append(link)
        table = ImportIndex(paths)
        table.importers("not_a_stem")  # the first scan: the next ones use the table
        for stem in _STEMS:
            first, got = ImportIndex(paths)._scan(stem), table._scan(stem)
            assert table._table is not None and _own(got, stem) == _own(first, stem), (stem, files)
        assert table._all is not None  # from the third stem on: the records of every stem, made once


def test_a_notebook_imports_through_the_table_as_through_the_scan(tmp_path):
    import json

    nb = {"cells": [{"cell_type": "markdown", "source": "import main"},
                    {"cell_type": "code", "source": ["from pkg import (\n", "    main,\n", ")\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/main.py": "", "use.ipynb": json.dumps(nb),
                             "other.py": "import os\n"})
    first = ImportIndex(files)
    assert sorted(os.path.basename(f) for f in first.importers("pkg.main")) == ["use.ipynb"]
    table = ImportIndex(files)
    table.importers("os")
    assert table.importers("pkg.main") == first.importers("pkg.main") and table._table is not None


def test_an_import_of_the_dotted_name_counts_as_importing_the_module(tmp_path):
    """``import pkg.c`` (also among other names, or with ``as``) imports ``pkg.c``: the
    scan's first test of a statement looks for the module's last name inside each
    imported name, not only for names equal to it."""
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/c.py": "", "pkg/d.py": "",
                             "one.py": "import pkg.c\n", "two.py": "import os, pkg.d as dd\n"})
    index = ImportIndex(files)
    assert sorted(os.path.basename(f) for f in index.importers("pkg.c")) == ["one.py"]
    assert sorted(os.path.basename(f) for f in index.importers("pkg.d")) == ["two.py"]
    assert Project(index=index).is_imported(files[1]) and Project(index=index).is_imported(files[2])


@pytest.mark.parametrize("importer", [
    "try: import pkg.c\nexcept ImportError: pass\n",
    "x = 1; import pkg.c\n",
    "if True: import pkg.c as cc\n",
    "from pkg import \\\n    c\n",
    "from pkg import a, \\\r\n    c\r\n",
    "import os, \\\n    pkg.c\n",
    "from pkg import (  # the modules: all of them\n    a,  # first\n    c,\n)\n",
])
def test_import_statements_after_a_colon_or_semicolon_or_continued_are_read(tmp_path, importer):
    """The scan reads an import where a statement may begin inside a line (``try:``,
    ``;``), continued with backslashes, and in a bracketed list with comments: a file
    written so imports the module (a missed importer would let a rule fix a module as
    if nothing imported it)."""
    files = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "", "pkg/c.py": "", "user.py": importer})
    index = ImportIndex(files)
    assert [os.path.basename(f) for f in index.importers("pkg.c")] == ["user.py"]
    assert Project(index=index).is_imported(files[2])


# ---------------------------------------------------------------------- names a star import brings
# (sgrvinod/a-PyTorch-Tutorial-to-Text-Classification eval.py: ``from utils import *``, where
# utils.py has ``import torch``; the script's torch.utils.data.DataLoader is torch's)
STAR_SCRIPT = "from utils import *\nloader = torch.utils.data.DataLoader(data, num_workers=4)\nfor b in loader:\n    pass\n"


def _loader_qualnames(tmp_path, utils: str, extra: dict | None = None) -> set:
    from torchmend.semantic import SemanticModel

    files = _tree(tmp_path, {"utils.py": utils, "eval.py": STAR_SCRIPT, **(extra or {})})
    sem = SemanticModel(STAR_SCRIPT, files[1], Project(roots=(str(tmp_path),)))
    call = sem.find(ast.Call, containing=("DataLoader",))[0]
    return sem.qualnames(call.func)


@pytest.mark.parametrize("utils, expected", [
    ("import torch\n", {"torch.utils.data.DataLoader"}),
    ("import torch as torch\nimport numpy as np\n", {"torch.utils.data.DataLoader"}),
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", set()),  # also None: unknown
    ("torch = object()\n", set()),  # the module's own value: unknown
    ("__all__ = ['helper']\nimport torch\n", set()),  # not exported
    ("__all__ = ['torch', 'helper']\nimport torch\n", {"torch.utils.data.DataLoader"}),
    ("__all__ = names()\nimport torch\n", set()),  # exports unknown
    ("from torch import *\n", {"torch.torch.utils.data.DataLoader"}),  # (a torch star: its name, as for this file)
    ("from common import *\n", {"torch.utils.data.DataLoader"}),  # through another star import
    ("", set()),  # not there: unknown, as before
])
def test_a_name_from_a_star_import_of_a_project_module(tmp_path, utils, expected):
    assert _loader_qualnames(tmp_path, utils, {"common.py": "import torch\n"}) == expected


def test_a_star_import_resolution_is_a_dependency_of_the_result(tmp_path):
    """What the importer's result depends on: the module it read (the cache keeps the
    result only while that file is unchanged)."""
    from torchmend.semantic import SemanticModel

    files = _tree(tmp_path, {"utils.py": "import torch\n", "eval.py": STAR_SCRIPT})
    p = Project(roots=(str(tmp_path),))
    sem = SemanticModel(STAR_SCRIPT, files[1], p)
    call = sem.find(ast.Call, containing=("DataLoader",))[0]
    assert sem.qualnames(call.func) and files[0] in p.deps


def test_tm301_through_a_star_import(tmp_path):
    from torchmend.engine import Options, process_file

    files = _tree(tmp_path, {"utils.py": "import torch\n", "eval.py": STAR_SCRIPT})
    r = process_file(files[1], Options(fix=False), Project(roots=(str(tmp_path),), index=ImportIndex(files)))
    assert [f.code for f in r.findings] == ["TM301"], [f.message for f in r.findings]
    (tmp_path / "utils.py").write_text("import numpy as np\n")  # (torch is not the module's)
    r = process_file(files[1], Options(fix=False), Project(roots=(str(tmp_path),), index=ImportIndex(files)))
    assert r.findings == [] and r.error is None


def test_neighbour_importers_make_the_result_depend_on_the_tree(tmp_path):
    """(review) A file added later may import the module: a result that read the
    importers holds only while the tree is unchanged (``used``, keyed on the tree)."""
    files = _tree(tmp_path, {"train.py": "def fit(m):\n    pass\n", "main.py": "import train\n"})
    p = Project(roots=(str(tmp_path),))
    p.start_file()
    assert not p.used
    p.neighbour_importers(files[0], "fit")
    assert p.used


def test_a_notebook_is_imported_by_nothing(tmp_path):
    """``import gnn`` in other.py reads a ``gnn.py`` (none here), never ``gnn.ipynb``: the
    notebook is no module another file uses (its TM501 fix is not held back)."""
    import json

    nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    files = _tree(tmp_path, {"gnn.ipynb": json.dumps(nb), "other.py": "import gnn\nfrom gnn import Net\n",
                             "gnn2.py": "", "other2.py": "import gnn2\n"})
    p = Project(roots=(str(tmp_path),))
    assert not p.is_imported(files[0]) and not p.is_imported(files[0], "Net")
    assert p.neighbour_importers(files[0], "Net") == []
    assert p.is_imported(files[2])  # (a module of the same shape is)


def test_a_script_in_a_project_root_reads_no_package_above(tmp_path):
    """(review) ``projA/`` is a project's root (``.git``, ``pyproject.toml``): ``python
    projA/train.py`` puts only ``projA/`` on the path, so a ``data/`` package beside
    ``projA/`` is not what ``import data`` reads."""
    files = _tree(tmp_path, {"projA/train.py": "", "projA/pyproject.toml": "", "data/__init__.py": ""})
    assert Project(roots=(str(tmp_path),)).module_file("data", files[0]) is None
    os.remove(files[1])
    assert Project(roots=(str(tmp_path),)).module_file("data", files[0]) == files[2]
