"""Jupyter notebooks: discovery, check/diff/apply, magics, layout kept, TM301 advice."""

import copy
import json
import os
import subprocess
import sys

import nbformat
import pytest

from torchmend.discovery import discover
from torchmend.engine import Options, process_file
from torchmend.notebook import Notebook, mask, script
from torchmend.sourcefile import SourceError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SETUP = [
    "import torch\n",
    "from torch import nn\n",
    "from torch.utils.data import DataLoader, TensorDataset\n",
    "\n",
    "X, Y = torch.randn(32, 4), torch.randn(32, 1)\n",
    "loader = DataLoader(TensorDataset(X, Y), batch_size=8)\n",
    "model = nn.Linear(4, 1)\n",
    "criterion = nn.MSELoss()\n",
    "opt = torch.optim.SGD(model.parameters(), lr=0.05)",
]
LOOP = [
    "for inputs, targets in loader:\n",
    "    loss = criterion(model(inputs), targets)\n",
    "    loss.backward()\n",
    "    opt.step()",
]


def code(lines, n=None, outputs=None, **extra):
    cell = {"cell_type": "code", "execution_count": n, "metadata": {}, "outputs": outputs or [], "source": lines}
    cell.update(extra)
    return cell


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def notebook(cells, indent=1, trailing_newline=True, **meta):
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                                       "language_info": {"name": "python"}, **meta},
          "nbformat": 4, "nbformat_minor": 4}
    text = json.dumps(nb, indent=indent, ensure_ascii=False)
    return (text + ("\n" if trailing_newline else "")).encode()


PNG = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgoAAAANSUhEUg==", "text/plain": ["<Figure>"]},
       "metadata": {"needs_background": "light"}}
STREAM = {"output_type": "stream", "name": "stdout", "text": ["loss 0.5\n", "loss 0.4\n"]}


def train_nb(**kw):
    return notebook([
        md("# Training\n\nA *tiny* regression."),
        code(["%matplotlib inline\n", "!pip install -q torch\n"] + SETUP, 1),
        {"cell_type": "raw", "metadata": {"format": "text/plain"}, "source": "raw text ü"},
        code(LOOP, 2, outputs=[STREAM, PNG]),
    ], **kw)


def tm(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "torchmend", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, env={**os.environ, "NO_COLOR": "1"})


def without_sources(nb, cells):
    nb = copy.deepcopy(nb)
    for i in cells:
        nb["cells"][i]["source"] = ""
    return nb


# ---------------------------------------------------------------------- the virtual module
def test_virtual_module_maps_back_to_cells():
    nb = Notebook(train_nb())
    assert [c.index for c in nb.cells] == [1, 3]
    lines = nb.text.splitlines()
    v = next(i for i, ln in enumerate(lines, 1) if ln.startswith("    opt.step()"))
    assert nb.locate(v) == (4, 4)  # cell 4 (markdown and raw cells count, as an editor shows them), line 4
    assert nb.virtual_line(4, 4) == v
    assert "pip install" not in nb.text and "%matplotlib" not in nb.text  # masked: the parser never sees them
    compile(nb.text, "nb", "exec")


@pytest.mark.parametrize("src", [
    "%matplotlib inline\nimport torch\n",
    "!pip install torch \\\n    torchvision\nx = 1\n",
    "files = !ls\nres = %sx echo hi\nx?\n??torch.nn\ntorch.nn.Linear??\n",
    "for i in range(3):\n    !echo {i}\n    %time f(i)\n",
    's = """\n%not a magic\n!nor this\n"""\nx = (1\n% 2)\n',
    "a != b\nb %= 3\n",
])
def test_magics_are_masked_and_restored_byte_for_byte(src):
    masked, magics = mask(src, "TAG", 0)
    compile(masked, "cell", "exec")
    nb = Notebook(notebook([code(src)]))
    assert nb.split(nb.text) == {0: src}
    if "not a magic" in src or "!=" in src:
        assert not magics  # inside a string or brackets, or Python operators: left alone


def test_cell_magic_cell_is_kept_whole():
    nb = Notebook(notebook([code("%%bash\nfor x in a b; do echo $x; done\n"), code("x = 1")]))
    assert [c.index for c in nb.cells] == [1]
    assert "bash" not in nb.text


def test_schema_slips_that_jupyter_opens_are_read_and_fixed(tmp_path):
    """A markdown cell with ``execution_count``/``outputs``, a cell ``id`` in an nbformat
    4.4 file, an unknown top-level key: ``nbformat.validate`` refuses them, Jupyter opens
    them; the cells are read and the fix touches only the edited source."""
    md_cell = {**md("# Train"), "execution_count": None, "outputs": []}
    src = ["import torch\n", "import torch.nn.functional as F\n", "x = torch.randn(3, 4)\n",
           "y = torch.tensor([0, 1, 2])\n", "loss = F.cross_entropy(F.softmax(x, dim=1), y)\n"]
    data = notebook([md_cell, code(src, id="a1b2")])
    data = data.replace(b'"nbformat": 4,', b'"nbformat": 4, "widgets_state": {},')
    path = tmp_path / "odd.ipynb"
    path.write_bytes(data)
    p = tm("apply", "--no-cache", str(path), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    want = data.replace(b'"loss = F.cross_entropy(F.softmax(x, dim=1), y)\\n"', b'"loss = F.cross_entropy(x, y)\\n"')
    assert want != data and path.read_bytes() == want
    # (review) metadata that is no object: read as no language said (was an internal error)
    for meta in (b'"language_info": "python"', b'"kernelspec": "python3"'):
        odd = notebook([code(src)]).replace(b'"language_info": {\n   "name": "python"\n  }', meta)
        assert meta in odd
        nb = Notebook(odd)
        assert "F.softmax" in nb.text
    # the cells themselves unreadable: still one line naming the cause
    for bad in ({"cell_type": "code", "source": 3}, ["not a cell"], {"source": "x = 1"}):
        path.write_bytes(notebook([md_cell, bad]))
        with pytest.raises(SourceError) as e:
            Notebook(path.read_bytes())
        assert str(e.value).startswith("not valid nbformat") and "\n" not in str(e.value)


def test_invalid_notebooks_are_one_line_errors(tmp_path):
    cases = {
        "syntax.ipynb": b'{"cells": [,]}',
        "nocells.ipynb": json.dumps({"metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode(),
        "v3.ipynb": json.dumps({"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": []}).encode(),
        "list.ipynb": b"[1, 2]",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SourceError) as e:
            Notebook(data)
        assert str(e.value).startswith("not valid nbformat") and "\n" not in str(e.value)
    p = tm("check", "--no-cache", ".", cwd=tmp_path)
    assert p.returncode == 2
    errs = [ln for ln in p.stderr.splitlines() if ": error: " in ln]
    assert sorted(ln.split(":")[0] for ln in errs) == sorted(cases)
    assert "syntax.ipynb: error: not valid nbformat: invalid JSON at line 1 column 12" in p.stderr


def test_a_syntax_error_names_its_cell_line_and_column(tmp_path):
    """A cell that does not parse (an exercise notebook's ``criterion = # TODO``) is one
    error line naming the cell (numbered as an editor shows them) and the line and
    column in it, not the lines of the joined code cells: the column is the text's own
    even where the notebook file's line of that number holds other characters."""
    data = notebook([md("# Ex\n\nü ü ü"), code(SETUP, 1), md("## TODO"),
                     code(["x = 1\n", "criterion = # TODO define the loss\n"], 2)])
    (tmp_path / "ex.ipynb").write_bytes(data)
    r = process_file(str(tmp_path / "ex.ipynb"), Options(fix=False))
    assert r.error == "syntax error in cell 4 at 2:13: invalid syntax (the other cells were checked; nothing written)", r.error
    p = tm("check", "--no-cache", "ex.ipynb", cwd=tmp_path)
    assert p.returncode == 2 and "ex.ipynb: error: syntax error in cell 4 at 2:13: invalid syntax" in p.stderr


# an exercise notebook: a cell left for the student to complete does not compile
EXERCISE = [md("# Ex"), code(SETUP, 1), code(["# TODO: the class probabilities\n", "ps = \n", "print(ps)\n"], 2),
            code(LOOP, 3)]


def test_the_other_cells_of_a_notebook_with_a_cell_that_does_not_compile_are_checked(tmp_path):
    """A kernel runs the other cells of a notebook one of whose cells fails to compile:
    they are checked with the failing line left out, the error names that cell, exit 2,
    and nothing is written or offered as a fix."""
    data = notebook(EXERCISE)
    (tmp_path / "ex.ipynb").write_bytes(data)
    r = process_file(str(tmp_path / "ex.ipynb"), Options(fix=True, write=True))
    assert r.error == "syntax error in cell 3 at 2:6: invalid syntax (the other cells were checked; nothing written)"
    [f] = r.findings
    assert (f.code, f.cell, f.line, f.fix, f.applied) == ("TM201", 4, 4, None, False)
    assert (tmp_path / "ex.ipynb").read_bytes() == data and not r.written
    p = tm("apply", "--no-cache", "ex.ipynb", cwd=tmp_path)
    assert p.returncode == 2 and p.stdout.startswith("ex.ipynb:cell 4:4:5: TM201 [bug] ") and "(fix available)" not in p.stdout
    assert "ex.ipynb: error: syntax error in cell 3 at 2:6: invalid syntax (the other cells" in p.stderr
    assert (tmp_path / "ex.ipynb").read_bytes() == data
    # the same notebook with the cell completed: the fix is made
    done = notebook(EXERCISE[:2] + [code(["ps = 1\n"], 2)] + EXERCISE[3:])
    (tmp_path / "done.ipynb").write_bytes(done)
    r = process_file(str(tmp_path / "done.ipynb"), Options(fix=True))
    assert r.error is None and [f.applied for f in r.findings] == [True]


@pytest.mark.parametrize("broken", [
    ["model = model.to(device\n", "print(1)\n"],  # a line a rule reads (``.to(``): the other cells mean little without it
    ["x = (\n", "  y = 1\n", "  z = 2\n", "  w = 3\n", "  v = 4\n", "  u = 5\n", "  t = 6\n"],  # more lines than it blanks
])
def test_a_cell_that_cannot_be_left_out_safely_leaves_the_error_alone(tmp_path, broken):
    (tmp_path / "ex.ipynb").write_bytes(notebook(EXERCISE[:2] + [code(broken, 2)] + EXERCISE[3:]))
    r = process_file(str(tmp_path / "ex.ipynb"), Options(fix=False))
    assert r.error.startswith("syntax error in cell 3 at 1:") and "other cells" not in r.error and r.findings == []


def test_a_cell_is_mended_by_up_to_five_blank_lines():
    five = notebook(EXERCISE[:2] + [code(["x = (\n", "  a\n", "  b\n", "  c\n", "  d\n"], 2)] + EXERCISE[3:])
    text, errors, removed, cells = Notebook(five).mended()
    assert cells == [3] and removed == "x = (\n  a\n  b\n  c\n  d\n" and errors[0].startswith("syntax error in cell 3 at 1:")
    six = notebook(EXERCISE[:2] + [code(["x = (\n", "  a\n", "  b\n", "  c\n", "  d\n", "  e\n"], 2)] + EXERCISE[3:])
    assert Notebook(six).mended() is None


def test_a_message_names_lines_of_cells(tmp_path):
    """A line a message names (``(line N)``) is a line of a cell, as the finding's own
    position is; code quoted in backticks is left as it is."""
    data = notebook([code(["import torch.nn.functional as F\n", "line = 3\n"], 1),
                     code(["for x, y in loader:\n", "    out = F.softmax(model(x), dim=1)\n",
                           "    loss = F.cross_entropy(out, y)\n"], 2)])
    (tmp_path / "m.ipynb").write_bytes(data)
    [f] = process_file(str(tmp_path / "m.ipynb"), Options(fix=False)).findings
    assert (f.code, f.cell, f.line) == ("TM501", 2, 3)
    assert "(line 2 of cell 2)" in f.message and "line 6" not in f.message, f.message
    from torchmend.engine import _cell_lines

    nb = Notebook(data)  # virtual lines: 1 marker, 2-3 cell 1, 4 marker, 5-7 cell 2
    assert _cell_lines(nb, "used at line(s) 3, 7; `line 5` quoted; line 5") == \
        "used at line(s) 2 of cell 1, 3 of cell 2; `line 5` quoted; line 1 of cell 2"


def test_a_string_left_open_is_reported_in_its_own_cell(tmp_path):
    """A kernel compiles each cell alone: the cell that leaves a triple-quoted string open
    is the one with the error (huggingface/notebooks' video_classification), not the next
    cell, where the joined code cells would first fail."""
    data = notebook([code(["!pip install torch\n"], 1), code(SETUP, 2),
                     code(["def f(x):\n", '    """Half a docstring.""\n', "    return x\n"], 3),
                     code(["def g(x):\n", '    """A docstring."""\n', "    return x\n"], 4)])
    (tmp_path / "open.ipynb").write_bytes(data)
    r = process_file(str(tmp_path / "open.ipynb"), Options(fix=False))
    assert r.error.startswith("syntax error in cell 3 at 2:5: unterminated triple-quoted string literal"), r.error
    assert "(detected at line 3)" in r.error


def test_syntax_error_column_is_that_of_the_decoded_text(tmp_path):
    """A file in a legacy encoding: the column counts the characters of the decoded
    text (the compiler, given the file's name, would re-read the line as UTF-8)."""
    src = "# -*- coding: latin-1 -*-\nfrom torch.utils.data import DataLoader\nfor b in DataLoader(ds, num_workers=2):\n    s = 'ééééé' +\n"
    (tmp_path / "legacy.py").write_bytes(src.encode("latin-1"))
    r = process_file(str(tmp_path / "legacy.py"), Options(fix=False))
    try:
        compile(src, "<text>", "exec")
    except SyntaxError as e:
        want = f"syntax error at {e.lineno}:{e.offset}: invalid syntax"
    assert r.error == want, (r.error, want)


def test_automagic_one_line_cells_are_magics(tmp_path):
    """IPython runs a one-line cell ``pip install torch`` as ``%pip`` (automagic; only for
    one-line cells): not a syntax error, and the other cells are analysed.  Two lines are
    not transformed by IPython either: a syntax error there too; a line that is Python
    (``ls = 3``) stays Python."""
    loop = code(SETUP + ["\n", "for b in DataLoader(TensorDataset(torch.zeros(4)), num_workers=2):\n", "    pass\n"], 3)
    ok = notebook([code(["pip install -q torch torchvision"], 1), code(["ls = 3\n"], 2),
                   code(["conda install -y faiss-cpu\n"], 4), code(["cd /content\n"], 5), loop])
    (tmp_path / "ok.ipynb").write_bytes(ok)
    r = process_file(str(tmp_path / "ok.ipynb"), Options(fix=False))
    assert r.error is None, r.error
    # pip and conda; not ``ls = 3`` nor ``cd /content``, which parse as Python (a division)
    assert Notebook(ok).text.count("pass  # torchmend-cell-") == 2
    two = notebook([code(["pip install torch\n", "loader = DataLoader(ds, num_workers=2)\n"], 1)])
    (tmp_path / "two.ipynb").write_bytes(two)
    assert process_file(str(tmp_path / "two.ipynb"), Options(fix=False)).error.startswith("syntax error in cell 1 at 1:")


def test_empty_notebook_and_missing_cell_ids(tmp_path):
    # a zero-byte notebook (a placeholder: editors open it as a new one) has no code: no
    # error, nothing written (33 of them in one triage round each made the run exit 2)
    for data in (b"", b"\n  \n"):
        (tmp_path / "empty.ipynb").write_bytes(data)
        r = process_file(str(tmp_path / "empty.ipynb"), Options(write=True, unsafe_fixes=True))
        assert r.error is None and not r.findings and not r.changed and (tmp_path / "empty.ipynb").read_bytes() == data
    nb = json.loads(notebook([code(SETUP, 1)]))
    nb["nbformat_minor"] = 5  # ids required from 4.5: nbformat warns about their absence
    (tmp_path / "noids.ipynb").write_text(json.dumps(nb))
    p = tm("check", "--no-cache", "noids.ipynb", cwd=tmp_path)
    assert p.returncode in (0, 1) and "Warning" not in p.stderr and ": error:" not in p.stderr, p.stderr


def test_non_python_notebook_is_left_alone(tmp_path):
    (tmp_path / "r.ipynb").write_bytes(notebook([code(LOOP)], language_info={"name": "R"}))
    r = process_file(str(tmp_path / "r.ipynb"), Options())
    assert r.skipped and "R notebook" in r.skipped and not r.findings
    # (PacktPublishing/Modern-Computer-Vision-with-PyTorch: an empty language name beside a
    # python3 kernelspec is a Python notebook)
    (tmp_path / "p.ipynb").write_bytes(notebook([code(SETUP), code(LOOP)], language_info={"name": ""}))
    r = process_file(str(tmp_path / "p.ipynb"), Options(fix=False))
    assert r.skipped is None and [f.code for f in r.findings] == ["TM201"], r.skipped


# ---------------------------------------------------------------------- commands
def test_directories_discover_notebooks_with_the_same_excludes(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(train_nb())
    (tmp_path / "b.py").write_text("x = 1\n")
    for d in (".ipynb_checkpoints", "build"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "a-checkpoint.ipynb").write_bytes(train_nb())
    got = discover([str(tmp_path)]).files
    assert [os.path.relpath(p, tmp_path) for p in got] == ["a.ipynb", "b.py"]


def test_check_names_the_cell(tmp_path):
    (tmp_path / "train.ipynb").write_bytes(train_nb())
    p = tm("check", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith("train.ipynb:cell 4:4:5: TM201 [bug] ")
    j = tm("check", "--no-cache", "--output-format", "json", "train.ipynb", cwd=tmp_path)
    [d] = json.loads(j.stdout)
    assert (d["cell"], d["location"], d["code"]) == (4, {"column": 5, "row": 4}, "TM201")
    assert d["fix"]["edits"] == [{"cell": 4, "content": "    opt.zero_grad()\n", "location": {"column": 1, "row": 2},
                                  "end_location": {"column": 1, "row": 2}}]
    s = json.loads(tm("check", "--no-cache", "--output-format", "sarif", "train.ipynb", cwd=tmp_path).stdout)
    [res] = s["runs"][0]["results"]
    assert res["properties"] == {"cell": 4} and res["message"]["text"].startswith("cell 4: ")
    full = tm("check", "--no-cache", "--output-format", "full", "train.ipynb", cwd=tmp_path).stdout
    assert "4 |     opt.step()" in full


def test_diff_is_one_readable_diff_per_cell(tmp_path):
    (tmp_path / "train.ipynb").write_bytes(train_nb())
    p = tm("diff", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stdout == (
        "--- train.ipynb:cell 4\n"
        "+++ train.ipynb:cell 4\n"
        "@@ -1,4 +1,5 @@\n"
        " for inputs, targets in loader:\n"
        "+    opt.zero_grad()\n"
        "     loss = criterion(model(inputs), targets)\n"
        "     loss.backward()\n"
        "     opt.step()\n"
    )


@pytest.mark.parametrize("indent,trailing", [(1, True), (2, False), (4, True)])
def test_apply_changes_only_the_edited_cells_source(tmp_path, indent, trailing):
    raw = train_nb(indent=indent, trailing_newline=trailing)
    path = tmp_path / "train.ipynb"
    path.write_bytes(raw)
    p = tm("apply", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    new = path.read_bytes()
    before, after = nbformat.reads(raw.decode(), nbformat.NO_CONVERT), nbformat.reads(new.decode(), nbformat.NO_CONVERT)
    assert without_sources(before, [3]) == without_sources(after, [3])  # outputs, metadata, other cells
    assert after.cells[3].source == "for inputs, targets in loader:\n    opt.zero_grad()\n" + "".join(LOOP[1:])
    assert after.cells[1].source == before.cells[1].source  # magics untouched
    # the bytes: only the lines of that source list changed (one line inserted); layout kept
    old_lines, new_lines = raw.decode().splitlines(keepends=True), new.decode().splitlines(keepends=True)
    added = [ln for ln in new_lines if ln not in old_lines]
    assert added == [" " * (indent * 4) + '"    opt.zero_grad()\\n",\n']
    assert len(new_lines) == len(old_lines) + 1 and new.endswith(b"}\n") == trailing
    assert list(json.loads(new)) == list(json.loads(raw))  # key order
    st = os.stat(path)
    again = tm("apply", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert again.returncode == 0 and path.read_bytes() == new
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns  # not rewritten


def test_string_sources_and_magics_in_an_edited_cell(tmp_path):
    loop = "for inputs, targets in loader:\n    %time loss = criterion(model(inputs), targets)\n    !echo step\n" \
           "    loss = criterion(model(inputs), targets)\n    loss.backward()\n    opt.step()\n"
    raw = notebook([code("".join(SETUP)), code(loop)], indent=2)
    path = tmp_path / "n.ipynb"
    path.write_bytes(raw)
    r = process_file(str(path), Options(write=True))
    assert r.error is None and r.written, r.error
    after = nbformat.reads(path.read_text(), nbformat.NO_CONVERT)
    assert after.cells[1].source == loop.replace("loader:\n", "loader:\n    opt.zero_grad()\n")
    assert isinstance(json.loads(path.read_text())["cells"][1]["source"], str)  # still one string


def test_suppression_comments_work_in_cells(tmp_path):
    loop = LOOP[:-1] + ["    opt.step()  # noqa: TM201"]
    (tmp_path / "n.ipynb").write_bytes(notebook([code(SETUP), code(loop)]))
    r = process_file(str(tmp_path / "n.ipynb"), Options())
    assert r.findings == [] and r.error is None
    (tmp_path / "m.ipynb").write_bytes(notebook([code(SETUP), code(LOOP)]))
    p = tm("check", "--no-cache", "--add-noqa", "m.ipynb", cwd=tmp_path)
    assert "added 1 noqa directive to m.ipynb" in p.stderr, p.stderr
    nb = nbformat.read(str(tmp_path / "m.ipynb"), nbformat.NO_CONVERT)
    assert nb.cells[1].source.splitlines()[3] == "    opt.step()  # noqa: TM201"
    assert tm("check", "--no-cache", "m.ipynb", cwd=tmp_path).returncode == 0


def test_stdin_notebook(tmp_path):
    raw = train_nb().decode()
    p = tm("check", "-", "--stdin-filename", "nb.ipynb", cwd=tmp_path, stdin=raw)
    assert p.returncode == 1 and p.stdout.startswith("nb.ipynb:cell 4:4:5: TM201")
    a = tm("apply", "-", "--stdin-filename", "nb.ipynb", cwd=tmp_path, stdin=raw)
    assert "opt.zero_grad()" in nbformat.reads(a.stdout, nbformat.NO_CONVERT).cells[3].source


def test_tm301_in_a_notebook_gives_the_notebook_advice(tmp_path):
    cells = [
        code(["import torch\n", "from torch.utils.data import DataLoader, Dataset\n"]),
        code(["class MyDataset(Dataset):\n", "    def __len__(self):\n", "        return 8\n", "\n",
              "    def __getitem__(self, i):\n", "        return torch.tensor([float(i)])"]),
        code(["loader = DataLoader(MyDataset(), batch_size=4, num_workers=2)\n", "for batch in loader:\n", "    print(batch.shape)"]),
    ]
    (tmp_path / "w.ipynb").write_bytes(notebook(cells))
    p = tm("check", "--no-cache", "w.ipynb", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout.startswith("w.ipynb:cell 3:1:10: TM301 [bug] DataLoader `loader` with num_workers=2: its workers need "
                               "`MyDataset`, defined in this notebook")
    assert "(fix available)" not in p.stdout and "Can't get attribute 'MyDataset' on <module '__main__'>" in p.stdout
    assert tm("diff", "--no-cache", "w.ipynb", cwd=tmp_path).stdout == ""  # no guard is offered


def test_cell_diffs_are_refused_as_a_patch(tmp_path):
    (tmp_path / "train.ipynb").write_bytes(train_nb())
    patch = tm("diff", "--no-cache", "train.ipynb", cwd=tmp_path).stdout
    (tmp_path / "p.patch").write_text(patch)
    p = tm("apply", "--patch", "p.patch", cwd=tmp_path)
    assert p.returncode == 2 and "run `torchmend apply train.ipynb`; nothing written" in p.stderr
    assert (tmp_path / "train.ipynb").read_bytes() == train_nb()


def test_verify_script_runs_the_code_cells_in_order():
    raw = notebook([code("%matplotlib inline\nx = 1"), md("text"), code("%%bash\necho hi"), code("print(x + 1)")])
    s = script(raw)
    assert s == ("# %% cell 1\npass  # IPython: %matplotlib inline\nx = 1\n# %% cell 3\n"
                 "# (cell magic, not run: %%bash)\n# %% cell 4\nprint(x + 1)\n")
    assert subprocess.run([sys.executable, "-c", s], capture_output=True, text=True).stdout == "2\n"


def test_verify_runs_a_notebook_before_and_after(tmp_path):
    (tmp_path / "train.ipynb").write_bytes(notebook([code(["%matplotlib inline\n", "!echo hi\n"] + SETUP), md("x"), code(LOOP)]))
    p = tm("verify", "train.ipynb", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "train.ipynb:cell 3:4:5: TM201 verified" in p.stdout
    assert "before: TM201 at train.ipynb:cell 3:" in p.stdout


# ---------------------------------------------------------------------- a cell pasted with its indentation
# (rasbt/machine-learning-book ch13_part1.ipynb: a cell that starts " def compute_z(...)";
# IPython takes the first line's indentation off every line that has it, and runs it)
INDENTED_LOOP = ["    for inputs, targets in loader:\n", "        loss = criterion(model(inputs), targets)\n",
                 "\n", "        loss.backward()\n", "        opt.step()"]


def test_an_indented_cell_is_read_as_ipython_runs_it(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_bytes(notebook([code(SETUP, 1), code(INDENTED_LOOP, 2)]))
    r = process_file(str(path), Options(fix=False))
    assert r.error is None, r.error
    [f] = r.findings
    assert (f.code, f.cell, f.line, f.col) == ("TM201", 2, 5, 9)  # the column as the cell has it
    p = tm("apply", "--no-cache", "n.ipynb", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    after = nbformat.reads(path.read_text(), nbformat.NO_CONVERT)
    assert after.cells[1].source == ("    for inputs, targets in loader:\n        opt.zero_grad()\n"
                                     + "".join(INDENTED_LOOP[1:]))  # the indentation put back, the blank line kept
    assert process_file(str(path), Options(fix=False)).findings == []


def test_an_indented_cell_a_fix_does_not_touch_is_written_back_as_it_was(tmp_path):
    odd = ["  x = '''\n", "text at column 0\n", "'''\n", "  \n", "  y = 1"]  # IPython keeps the string's line as it is
    path = tmp_path / "n.ipynb"
    raw = notebook([code(odd, 1), code(SETUP, 2), code(LOOP, 3)])
    path.write_bytes(raw)
    r = process_file(str(path), Options(write=True))
    assert r.error is None and r.written, r.error
    after = nbformat.reads(path.read_text(), nbformat.NO_CONVERT)
    assert after.cells[0].source == "".join(odd) and "opt.zero_grad()" in after.cells[2].source


def test_a_fix_in_an_indented_cell_with_an_unindented_string_line_is_refused(tmp_path):
    cell = ["    for inputs, targets in loader:\n", "        doc = '''\n", "at column 0\n", "'''\n",
            "        loss = criterion(model(inputs), targets)\n", "        loss.backward()\n", "        opt.step()"]
    path = tmp_path / "n.ipynb"
    raw = notebook([code(SETUP, 1), code(cell, 2)])
    path.write_bytes(raw)
    r = process_file(str(path), Options(write=True))
    assert r.error is not None and "cell 2" in r.error and "nothing written" in r.error, r.error
    assert path.read_bytes() == raw


def test_a_fix_in_a_notebook_whose_cells_have_no_ids(tmp_path):
    """nbformat 4.5 requires cell ids; a notebook written without them is read, and a fix
    in it is written (the check of the rewritten notebook compared it with the ids
    nbformat's validation had added)."""
    nb = json.loads(notebook([code("".join(SETUP)), code("".join(LOOP))]))
    nb["nbformat_minor"] = 5
    path = tmp_path / "noids.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    r = process_file(str(path), Options(write=True))
    assert r.error is None and r.written, r.error
    after = json.loads(path.read_text())
    assert "opt.zero_grad()" in after["cells"][1]["source"] and all("id" not in c for c in after["cells"])


# (joosthub/PyTorchNLPBook chapter 7: a cell holding only ``y.to(x.device)``, its output the
# moved tensor: the kernel shows the value, nothing is dropped)
@pytest.mark.parametrize("cell, reported", [
    ("y.to(x.device)", False),
    ("y.to(x.device)  # shown", False),
    ("y.to(x.device);", True),  # the display suppressed: dropped
    ("y.to(x.device)\nprint(y)", True),  # not the cell's last statement
])
def test_a_cells_last_expression_is_displayed_not_dropped(tmp_path, cell, reported):
    cells = [code(["import torch\n"]), code(["x = torch.ones(5, 5).to('cuda')\n", "y = torch.zeros(5)\n", "y"]),
             code(cell)]
    (tmp_path / "n.ipynb").write_bytes(notebook(cells))
    r = process_file(str(tmp_path / "n.ipynb"), Options(fix=False))
    assert r.error is None, r.error
    assert [f.code for f in r.findings] == (["TM101"] if reported else []), [f.message for f in r.findings]
