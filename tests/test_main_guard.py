"""TM301: DataLoader workers iterated at import time without a __main__ guard."""

import os
import textwrap

import pytest

from torchmend import runner
from torchmend.engine import Options, process_file, process_text
from torchmend.project import Project
from torchmend.rule import Severity
from tests.patching import apply_patch
from tests.siblings import unparsable_module

HEAD = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(8, 2))
"""


def run(src, path="train.py", **kw):
    src = textwrap.dedent(src)
    r = process_text(path, src, Options(select=frozenset({"TM301"}), **kw))
    assert r.error is None, r.error
    out = apply_patch(src.encode(), r.diff).decode() if r.changed else src
    return r, out


def bugs(r):
    return [f for f in r.findings if f.severity is Severity.BUG]


def infos(r):
    return [f for f in r.findings if f.severity is Severity.INFO]


def fixed(src, **kw):
    r, out = run(src, **kw)
    assert len(bugs(r)) == 1 and bugs(r)[0].applied, r.findings
    again, out2 = run(out)
    assert not again.findings and out2 == out  # idempotent: a guarded module is silent
    return out


def silent(src, **kw):
    r, out = run(src, **kw)
    assert r.findings == [] and out == textwrap.dedent(src)


def reported(src, why, **kw):
    r, out = run(src, **kw)
    b = bugs(r)
    assert len(b) == 1 and b[0].fix is None, r.findings
    assert why in b[0].message
    assert out == textwrap.dedent(src)
    return b[0]


# ---------------------------------------------------------------------- variants fixed
def test_top_level_loop_is_indented_under_guard():
    out = fixed(HEAD + """\
loader = DataLoader(ds, batch_size=4, num_workers=2)

# train
for epoch in range(2):
    for (x,) in loader:  # one batch
        print(x.shape)

    print("epoch", epoch)
print("done")
""")
    # the guard holds the script's executable code from its first statement after the
    # imports (the dataset and the loader are built in the main process only)
    assert out == HEAD.replace("ds = ", 'if __name__ == "__main__":\n    ds = ') + """\
    loader = DataLoader(ds, batch_size=4, num_workers=2)

    # train
    for epoch in range(2):
        for (x,) in loader:  # one batch
            print(x.shape)

        print("epoch", epoch)
    print("done")
"""


@pytest.mark.parametrize(
    "use",
    [
        "batch = next(iter(loader))",
        "it = iter(loader)",
        "for i, b in enumerate(loader):\n    pass",
        "sizes = [len(b) for b in loader]",
        "for a, b in zip(range(2), loader):\n    pass",
        "batches = list(loader)",
        "with torch.no_grad():\n    for b in loader:\n        pass",
    ],
)
def test_iteration_forms(use):
    out = fixed(HEAD + "loader = DataLoader(ds, num_workers=1)\n" + use + "\n")
    assert '\nif __name__ == "__main__":\n    ds = ' in out and "\n    " + use.splitlines()[0] in out


@pytest.mark.parametrize(
    "imp, ctor",
    [
        ("import torch.utils.data as tud", "tud.DataLoader"),
        ("from torch.utils.data import DataLoader as DL", "DL"),
        ("import torch.utils.data", "torch.utils.data.DataLoader"),
        ("from torch.utils.data.dataloader import DataLoader", "DataLoader"),
    ],
)
def test_dataloader_resolved_by_qualified_name(imp, ctor):
    fixed(f"import torch\n{imp}\nloader = {ctor}(torch.arange(4), num_workers=2)\nfor b in loader:\n    print(b)\n")


def test_user_class_named_dataloader_is_not_torch():
    silent("class DataLoader:\n    def __init__(self, *a, **k): pass\n    def __iter__(self): return iter(())\n"
           "for b in DataLoader([], num_workers=2):\n    pass\n")


def test_function_called_at_module_level_and_defs_stay_top_level():
    out = fixed(HEAD + """\
loader = DataLoader(ds, num_workers=2)


def train(epoch):
    for (x,) in loader:
        pass


for epoch in range(2):
    train(epoch)
LABELS = ("a", "b")


def show():
    print(LABELS)


show()
""")
    assert out.endswith("""\
def train(epoch):
    for (x,) in loader:
        pass


LABELS = ("a", "b")


def show():
    print(LABELS)


if __name__ == "__main__":
    ds = TensorDataset(torch.randn(8, 2))
    loader = DataLoader(ds, num_workers=2)

    for epoch in range(2):
        train(epoch)

    show()
""")


def test_transitive_calls_and_loader_built_inside_function():
    out = fixed(HEAD + """\
def epoch_pass():
    loader = DataLoader(ds, num_workers=2)
    return sum(1 for _ in loader)


def fit():
    return epoch_pass()


print(fit())
""")
    assert out.endswith('if __name__ == "__main__":\n    ds = TensorDataset(torch.randn(8, 2))\n\n    print(fit())\n')


@pytest.mark.parametrize("arg", ['tqdm(loader, desc="train")', "enumerate(tqdm(loader))"])
def test_a_loader_handed_to_a_function_in_an_iterating_wrapper(arg):
    out = fixed(HEAD + f"""\
from tqdm import tqdm
loader = DataLoader(ds, num_workers=2)


def train_epoch(batches):
    for batch in batches:
        pass


for epoch in range(2):
    train_epoch({arg})
""")
    assert out.endswith(f'\n    for epoch in range(2):\n        train_epoch({arg})\n')
    # (not from above an import: ``from tqdm import tqdm`` follows ``ds = ...``)
    assert '\nif __name__ == "__main__":\n    loader = DataLoader(' in out


def test_the_tail_starts_at_the_first_statement_after_the_imports():
    """Under spawn each worker runs what the guard leaves out: the model built (and moved
    to the GPU), the datasets read, ``wandb.init()``; so the guard starts at the first
    executable statement after the imports, the definitions staying above it."""
    out = fixed(HEAD + """\
loader = DataLoader(ds, num_workers=2)
model = torch.nn.Linear(2, 2)
first = next(iter(loader))
total = 0
for (x,) in loader:
    total += 1
""")
    assert 'TensorDataset\n\nif __name__ == "__main__":\n    ds = ' in out
    assert "    model = torch.nn.Linear(2, 2)\n" in out and "    total = 0\n" in out


def test_the_tail_starts_at_the_first_trigger_when_earlier_code_cannot_move():
    """Code before the first iteration that cannot move (a name the workers read, a
    definition needs, or an import after it): the guard starts at the iteration."""
    src = HEAD + "SCALE = float(2)\n\n\ndef collate(b):\n    return [x * SCALE for x in b]\n\n\n" \
                 "loader = DataLoader(ds, num_workers=2, collate_fn=collate)\nfor b in loader:\n    pass\n"
    out = fixed(src)
    assert "SCALE = float(2)" in out.split("if __name__")[0] and out.endswith(
        'if __name__ == "__main__":\n    loader = DataLoader(ds, num_workers=2, collate_fn=collate)\n'
        '    for b in loader:\n        pass\n'), out
    out = fixed(HEAD + "import os\nos.environ['X'] = '1'\nimport json\nloader = DataLoader(ds, num_workers=2)\n"
                       "for b in loader:\n    pass\n")
    assert "os.environ['X'] = '1'\nimport json\n" in out and "    loader = DataLoader(" in out, out


def test_single_quote_style_followed():
    out = fixed("import torch\nfrom torch.utils.data import DataLoader\n"
                "loader = DataLoader(torch.arange(4), num_workers=2)\nprint('go')\nfor b in loader:\n    print('b')\n")
    assert "if __name__ == '__main__':\n    loader = DataLoader(" in out


# ---------------------------------------------------------------------- num_workers values
@pytest.mark.parametrize(
    "workers, pre",
    [
        ("num_workers=int(args.workers)", "import argparse\nargs = argparse.Namespace(workers=2)\n"),
        ("num_workers=NUM_WORKERS", "import os\nNUM_WORKERS = os.cpu_count()\n"),
        ("num_workers=N", "N = 3\n"),
        ("**kw", "kw = {'batch_size': 2, 'num_workers': 2}\n"),
        ("**kw", "kw = dict(batch_size=2, num_workers=n_workers)\n"),
        # positional: batch_size, shuffle, sampler, batch_sampler, num_workers (the text pre-filter
        # needs the word num_workers somewhere in the file)
        ("2, False, None, None, 2", "# num_workers given positionally\n"),
    ],
)
def test_worker_counts_that_fire(workers, pre):
    fixed(HEAD + pre + f"loader = DataLoader(ds, {workers})\nfor b in loader:\n    pass\n")


@pytest.mark.parametrize(
    "workers, pre",
    [
        ("num_workers=0", ""),
        ("batch_size=2", ""),
        ("num_workers=N", "N = 0\n"),
        ("num_workers=0 if os.name == 'nt' else 4", "import os\n"),
        ("num_workers=0 if sys.platform == 'win32' else 2", "import sys\n"),
        ("num_workers=NW", "import platform\nNW = 0 if platform.system() == 'Windows' else 4\n"),
        ("num_workers=get_workers()", "import platform\n\ndef get_workers():\n    return 0 if platform.system() == 'Darwin' else 4\n"),
        ("num_workers=W", "import multiprocessing as mp\nW = 0 if mp.get_start_method() != 'fork' else 2\n"),
        ("**kw", "kw = {'batch_size': 2, 'num_workers': 0}\n"),
        ("**kw", "kw = {'batch_size': 2}\n"),
        ("**kw", "kw = load_config()\n"),  # unknown dict: assume nothing
    ],
)
def test_worker_counts_that_do_not_fire(workers, pre):
    silent(HEAD + pre + f"loader = DataLoader(ds, {workers})\nfor b in loader:\n    pass\n")


# ---------------------------------------------------------------------- look-alikes
@pytest.mark.parametrize(
    "src",
    [
        HEAD + "def main():\n    for b in DataLoader(ds, num_workers=2):\n        pass\n\n\nif __name__ == '__main__':\n    main()\n",
        HEAD + "loader = DataLoader(ds, num_workers=2)\nif __name__ == \"__main__\":\n    for b in loader:\n        pass\n",
        HEAD + "loader = DataLoader(ds, num_workers=2)\nif '__main__' == __name__:\n    next(iter(loader))\n",
        # built only
        HEAD + "loader = DataLoader(ds, num_workers=2)\nprint(len(loader))\n",
        # iterated only in a function nobody calls at import
        HEAD + "loader = DataLoader(ds, num_workers=2)\n\ndef train():\n    for b in loader:\n        pass\n",
        # iterated in a method (unknown caller)
        HEAD + "loader = DataLoader(ds, num_workers=2)\n\nclass T:\n    def run(self):\n        for b in loader:\n            pass\n",
        # a function that iterates is referenced but not called
        HEAD + "loader = DataLoader(ds, num_workers=2)\n\ndef train():\n    for b in loader:\n        pass\n\nhooks = [train]\n",
    ],
)
def test_lookalikes_are_silent(src):
    silent(src)


# ---------------------------------------------------------------------- report only
@pytest.mark.parametrize("where", ["beside", "elsewhere"])
def test_a_notebook_that_imports_the_script_makes_it_report_only(tmp_path, where):
    """A notebook's code cells import like a script's lines: a notebook beside the script
    (``import data``) or anywhere in the tree (``from tools import data``) keeps TM301
    from rewriting it; the same tree with the import in a markdown cell gets the fix."""
    import json

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "data.py").write_text(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n")
    line = "import data\n" if where == "beside" else "from tools import data\n"
    nb_dir = tmp_path / "tools" if where == "beside" else tmp_path

    def notebook(kind):
        cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# notes\n"]},
                 {"cell_type": kind, "metadata": {}, "source": ["x = 1\n", line], "outputs": [], "execution_count": None}]
        if kind != "code":
            for c in cells:
                c.pop("outputs", None), c.pop("execution_count", None)
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    opts = Options(select=frozenset({"TM301"}))
    (nb_dir / "explore.ipynb").write_text(notebook("code"))
    (r,) = [x for x in runner.run([str(tmp_path)], opts, jobs=1).results if x.path.endswith("data.py")]
    assert r.error is None and not r.changed and "imports this module" in r.findings[0].message
    (nb_dir / "explore.ipynb").write_text(notebook("markdown"))
    (r,) = [x for x in runner.run([str(tmp_path)], opts, jobs=1).results if x.path.endswith("data.py")]
    assert r.changed


def test_imported_elsewhere_is_report_only(tmp_path):
    (tmp_path / "data.py").write_text(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n")
    (tmp_path / "train.py").write_text("from data import ds\nprint(ds)\n")
    opts = Options(select=frozenset({"TM301"}))
    # before fixing, a script is also looked up as a namespace module (tools.train): a worker
    # process has no tree index, the runner redoes the file in the parent with one
    assert process_file(str(tmp_path / "data.py"), opts).needs_project
    (r,) = [x for x in runner.run([str(tmp_path)], opts, jobs=1).results if x.path.endswith("data.py")]
    assert r.error is None and not r.changed
    assert len(r.findings) == 1 and r.findings[0].safety is None and "imports this module" in r.findings[0].message
    # the same file alone in its directory is fixed
    other = tmp_path / "alone"
    other.mkdir()
    (other / "data.py").write_text((tmp_path / "data.py").read_text())
    (r2,) = runner.run([str(other)], opts, jobs=1).results
    assert r2.changed


def test_in_memory_text_has_no_importers():
    from torchmend.project import Project

    assert Project(standalone=True).is_imported("no/such/dir/train.py") is False
    assert Project().is_imported("no/such/dir/train.py") is False


@pytest.mark.parametrize(
    "tail, why",
    [
        ("for b in loader:\n    pass\nglobal ds\nds = None\n", "`global`"),
        ("for b in loader:\n    exec('x = 1')\n", "`exec()`"),
        ("for b in loader:\n    pass\nfrom math import *\n", "star import"),
        ("for b in loader:\n    pass\nscale = torch.ones(1)\n\ndef f(x=scale):\n    return x\n", "`f` needs `scale`"),
        ("for b in loader:\n    pass\nbase = object\n\nclass C(base):\n    pass\n", "`C` needs `base`"),
        ("for b in loader:\n    pass\nshow = print\n\ndef show():\n    pass\n", "`show` is bound both"),
    ],
)
def test_tail_tricks_are_report_only(tail, why):
    reported(HEAD + "loader = DataLoader(ds, num_workers=2)\n" + tail, why)


def test_dataset_reading_a_moved_global_is_report_only():
    reported("""\
import torch
from torch.utils.data import DataLoader, Dataset


class D(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i * SCALE


loader = DataLoader(D(), num_workers=2)
for b in loader:
    print(b)
SCALE = torch.tensor(2)
""", "`D` runs in the workers and reads `SCALE`")


def test_collate_fn_reading_a_moved_global_is_report_only():
    reported(HEAD + """\
def collate(batch):
    return [b * factor for b in batch]


loader = DataLoader(ds, num_workers=2, collate_fn=collate)
first = next(iter(loader))
factor = torch.tensor(3)
""", "`collate` runs in the workers")


def test_library_call_receiving_workers_is_report_only():
    b = reported("import lightning as L\ntrainer = L.Trainer()\ntrainer.fit(model, num_workers=4)\n", "library call")
    assert "`trainer.fit` receives num_workers=4" in b.message
    reported("import darts\nmodel.fit(series, dataloader_kwargs={'num_workers': 8})\n", "library call")
    silent("import darts\nmodel.fit(series, dataloader_kwargs={'num_workers': 0})\n")
    silent("import darts\nloader = make_loader(num_workers=4)\n")  # a builder: nothing iterated yet


def test_a_sibling_module_that_does_not_parse_is_not_followed(tmp_path):
    # (Python 2 code in the sibling's loader function: a part a lazy parse reaches only when it is read)
    (tmp_path / "dataset.py").write_text(unparsable_module(
        "from torch.utils.data import DataLoader\n",
        "def get(num_workers=0):\n    print 'x'\n    return DataLoader(ds, num_workers=num_workers), None\n"))
    src = "import dataset\n\ntrain_loader, _ = dataset.get(num_workers=1)\nfor b in train_loader:\n    pass\n"
    (tmp_path / "train.py").write_text(src)
    r = process_text(str(tmp_path / "train.py"), src, Options())
    assert r.error is None and not r.findings


def test_an_object_made_with_workers_and_run_at_import_time_is_report_only():
    # fastNLP: the trainer gets the workers, its train() runs the loaders at import time
    b = reported("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=2)\n"
                 "trainer.train(load_best_model=False)\n", "library call")
    assert "`Trainer` receives num_workers=2 at import time and `trainer.train()` (line 3) runs it" in b.message
    assert b.line == 2
    reported("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=2)\ntry:\n"
             "    trainer.fit()\nexcept KeyboardInterrupt:\n    pass\n", "library call")
    # not run at import time, not run, rebound, no workers: silent
    silent("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=2)\n\n"
           "if __name__ == '__main__':\n    trainer.train()\n")
    silent("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=2)\nprint(trainer.summary())\n")
    silent("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=2)\ntrainer = other()\n"
           "trainer.train()\n")
    silent("from fastNLP import Trainer\ntrainer = Trainer(data, model, num_workers=0)\ntrainer.train()\n")


def test_notebook_context_reports_only_datasets_defined_in_the_notebook():
    # a kernel has __name__ == "__main__": no guard fix; a library Dataset is fine
    silent(HEAD + "for b in DataLoader(ds, num_workers=2):\n    pass\n", notebook=True)
    src = HEAD + "class MyDataset(torch.utils.data.Dataset):\n    pass\n\nfor b in DataLoader(MyDataset(), num_workers=2):\n    pass\n"
    b = reported(src, "defined in this notebook", notebook=True)
    assert "Can't get attribute 'MyDataset' on <module '__main__'>" in b.message
    assert "move it to a .py module" in b.message and "num_workers=0" in b.message
    fixed(src)  # the same code as a script still gets the guard
    reported(HEAD + "def coll(b):\n    return b\n\nfor b in DataLoader(ds, collate_fn=coll, num_workers=2):\n    pass\n",
             "`coll`, defined in this notebook", notebook=True)
    reported(HEAD + "for b in DataLoader(ds, collate_fn=lambda b: b, num_workers=2):\n    pass\n", "lambda", notebook=True)
    # the result of a notebook function is not the function: a TensorDataset
    silent(HEAD + "def make():\n    return ds\n\nfor b in DataLoader(make(), num_workers=2):\n    pass\n", notebook=True)
    silent(HEAD + "class D(torch.utils.data.Dataset):\n    pass\n\nloader = DataLoader(D(), num_workers=2)\n", notebook=True)
    silent(HEAD + "class D(torch.utils.data.Dataset):\n    pass\n\nfor b in DataLoader(D(), num_workers=0):\n    pass\n", notebook=True)


def test_notebook_runs_its_main_guard():
    """(kazukim10's Kaggle notebooks) ``def main(): ... DataLoader(TestDataset(...),
    num_workers=4)`` run by ``if __name__ == '__main__': main()``: in a kernel the guard
    is true, so the loader is iterated and its workers need the notebook's class; in a
    script the same code is right."""
    src = HEAD + ("class TestDataset(torch.utils.data.Dataset):\n    pass\n\n\ndef main():\n"
                  "    test_loader = DataLoader(TestDataset(), num_workers=4)\n    for b in test_loader:\n        pass\n\n\n"
                  "if __name__ == '__main__':\n    main()\n")
    reported(src, "its workers need `TestDataset`, defined in this notebook", notebook=True)
    silent(src)
    silent(src.replace("    main()\n", "    pass\n"), notebook=True)  # (main() never runs)
    # (review) only the guard's body runs in a kernel, not its ``else``; forked workers
    # inherit the class (nothing is pickled)
    silent(src.replace("    main()\n", "    pass\nelse:\n    main()\n"), notebook=True)
    silent(src.replace("num_workers=4)", "num_workers=4, multiprocessing_context='fork')"), notebook=True)
    silent(src.replace("num_workers=4)", "num_workers=4, multiprocessing_context='fork')").replace(
        "\n\nif __name__ == '__main__':\n    main()\n", "\nmain()\n"), notebook=True)


@pytest.mark.parametrize("cfg, found", [
    ("CFG = {'batch_size': 8, 'num_workers': 0}\n", False),
    ("CFG = {'batch_size': 8, 'num_workers': 4}\n", True),
    ("CFG = {'batch_size': 8, 'num_workers': 0}\nCFG['num_workers'] = 4\n", True),  # (a later store)
    ("CFG = load_config()\n", True),  # (not known: may start workers)
    # (review) changed in other ways: may start workers
    ("CFG = {'batch_size': 8, 'num_workers': 0}\nCFG['num_workers'] += 4\n", True),
    ("CFG = {'batch_size': 8, 'num_workers': 0}\nCFG.update(vars(args))\n", True),
    ("CFG = {'batch_size': 8, 'num_workers': 0}\ncfg2 = CFG\ncfg2['num_workers'] = 4\n", True),
    ("CFG = {'batch_size': 8, 'num_workers': 0}\nconfigure(CFG)\n", True),
    # (review) reads that leave it as it is
    ("CFG = {'batch_size': 8, 'num_workers': 0}\nprint(CFG)\nlr = CFG.get('lr', 0.1)\nname = f'run-{CFG}'\n", False),
])
def test_a_worker_count_read_from_a_config_dict(cfg, found):
    """(Bahaa-Medhat's BraTS notebook) ``num_workers=CFG['num_workers']`` with ``CFG =
    {..., 'num_workers': 0}``: no worker starts (5 false positives)."""
    src = HEAD + cfg + "loader = DataLoader(ds, batch_size=CFG['batch_size'], num_workers=CFG['num_workers'])\n" \
        "for b in loader:\n    pass\n"
    r, _ = run(src)
    assert [f.code for f in bugs(r)] == (["TM301"] if found else []), r.findings


def test_notebook_names_a_local_function_as_local():
    """A function defined inside the one that builds the loaders (rasbt/deeplearning-models'
    ``get_smile`` target_transform) cannot be pickled from any module: named as local,
    with Python's qualified name, not as the enclosing function defined in the notebook."""
    make = ("def make(n):\n    def get_smile(attr):\n        return attr[31]\n\n"
            "    data = torchvision.datasets.CelebA(root='.', target_transform=get_smile)\n"
            "    return DataLoader(data, num_workers=n)\n\n")
    b = reported(HEAD + "import torchvision\n" + make + "for b in make(4):\n    pass\n", "defined inside `make`", notebook=True)
    assert "Can't pickle local object 'make.<locals>.get_smile'" in b.message and "top level of a .py module" in b.message
    assert "defined in this notebook" not in b.message
    method = ("class Data:\n    def setup(self):\n        def get_smile(attr):\n            return attr[31]\n\n"
              "        self.ds = torchvision.datasets.CelebA(root='.', target_transform=get_smile)\n\n"
              "    def loader(self):\n        return DataLoader(self.ds, num_workers=2)\n\n")
    src = HEAD + "import torchvision\n" + method + "d = Data()\nd.setup()\nfor b in d.loader():\n    pass\n"
    r, _ = run(src, notebook=True)
    got = [f.message for f in bugs(r)]
    assert all("'Data.setup.<locals>.get_smile'" in m for m in got), got


# ---------------------------------------------------------------------- info advice
def test_persistent_workers_advice_only_for_literal_counts_in_epoch_loops():
    r, _ = run(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor e in range(3):\n    for b in loader:\n        pass\n")
    (info,) = infos(r)
    assert "persistent_workers=True" in info.message and info.fix is None and info.code == "TM301"
    assert "pin_memory" not in info.message
    # once: no loop around the iteration
    r, _ = run(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n")
    assert infos(r) == []
    # non-literal count: never
    r, _ = run(HEAD + "import os\nloader = DataLoader(ds, num_workers=os.cpu_count())\nfor e in range(3):\n    for b in loader:\n        pass\n")
    assert infos(r) == []
    # already persistent
    r, _ = run(HEAD + "loader = DataLoader(ds, num_workers=2, persistent_workers=True)\nfor e in range(3):\n    for b in loader:\n        pass\n")
    assert infos(r) == []
    # pin_memory only when batches go to CUDA
    r, _ = run(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor e in range(3):\n    for (x,) in loader:\n        x = x.cuda()\n")
    assert "pin_memory=True" in infos(r)[0].message
    moved = ("device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
             "loader = DataLoader(ds, num_workers=2)\nfor e in range(3):\n    for (x,) in loader:\n        x = x.to(device)\n")
    r, _ = run(HEAD + moved)
    assert "pin_memory=True" in infos(r)[0].message
    # a CUDA device that is only made and printed copies nothing (zergtant/pytorch-handbook's
    # CIFAR-10 tutorial notebook: the training runs on the CPU)
    for only in (moved.replace("x = x.to(device)", "pass") + "print(device)\n",
                 moved.replace("x = x.to(device)", "x = x.to(torch.float16)")):
        r, _ = run(HEAD + only)
        (info,) = infos(r)
        assert "persistent_workers=True" in info.message and "pin_memory" not in info.message


# (haitongli/knowledge-distillation-pytorch: ``kwargs = {'num_workers': 1, 'pin_memory': True}``;
# sgrvinod/a-PyTorch-Tutorial-to-Super-Resolution eval.py: a loader made afresh per test set)
def test_persistent_workers_advice_reads_kwargs_and_rebuilt_loaders():
    loop = "for e in range(3):\n    for (x,) in loader:\n        x = x.cuda()\n"
    r, _ = run(HEAD + "kwargs = {'num_workers': 2, 'pin_memory': True}\nloader = DataLoader(ds, **kwargs)\n" + loop)
    (info,) = infos(r)
    assert "persistent_workers=True" in info.message and "pin_memory" not in info.message
    r, _ = run(HEAD + "kwargs = {'num_workers': 2, 'persistent_workers': True}\nloader = DataLoader(ds, **kwargs)\n" + loop)
    assert infos(r) == []
    rebuilt = "for name in ['a', 'b']:\n    loader = DataLoader(ds, num_workers=2)\n    for (x,) in loader:\n        x = x.cuda()\n"
    r, _ = run(HEAD + rebuilt)
    assert infos(r) == [], [f.message for f in infos(r)]
    # (phlippe/uvadlc_notebooks: a function builds its loader and iterates it once, and is
    # called in a loop)
    per_call = ("def features(ds):\n    loader = DataLoader(ds, num_workers=2)\n    return [x for (x,) in loader]\n\n\n"
                "for k in [2, 4]:\n    features(ds)\n")
    r, _ = run(HEAD + per_call)
    assert infos(r) == [], [f.message for f in infos(r)]
    # built once in the function, iterated in an epoch loop there: the advice stands
    r, _ = run(HEAD + per_call.replace("    return [x for (x,) in loader]\n",
                                       "    for e in range(3):\n        for (x,) in loader:\n            pass\n"))
    assert len(infos(r)) == 1


# (cure-lab/LTSF-Linear run_longExp.py: ``for ii in range(args.itr): exp = Exp(args);
# exp.train(setting)``, ``train()`` getting a new loader from ``data_provider()``)
PROVIDER = """\
def data_provider(flag):
    return ds, DataLoader(ds, num_workers=10, shuffle=flag == 'train')


class Exp:
    def train(self):
        train_data, train_loader = data_provider('train')
{loop}

for ii in range(3):
    Exp().train()
"""


@pytest.mark.parametrize("loop, advised", [
    ("        for (x,) in train_loader:\n            pass\n", False),  # a new loader each run, iterated once
    ("        for e in range(3):\n            for (x,) in train_loader:\n                pass\n", True),  # epochs
])
def test_persistent_workers_advice_for_a_loader_a_helper_builds(loop, advised):
    r, _ = run(HEAD + PROVIDER.format(loop=loop))
    assert len(bugs(r)) == 1 and len(infos(r)) == advised, [f.message for f in r.findings]


def test_constant_read_by_a_worker_function_stays_top_level():
    out = fixed(HEAD + """\
def collate(batch):
    return [b * FACTOR for b in batch]


loader = DataLoader(ds, num_workers=2, collate_fn=collate)
first = next(iter(loader))
FACTOR = 3
print(first)
""")
    assert out.endswith('FACTOR = 3\n\nif __name__ == "__main__":\n    ds = TensorDataset(torch.randn(8, 2))\n\n'
                        '    loader = DataLoader(ds, num_workers=2, collate_fn=collate)\n    first = next(iter(loader))\n'
                        '    print(first)\n'), out


@pytest.mark.parametrize(
    "src, why",
    [
        (HEAD + "loader = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\nfor b in loader:\n    pass\n", "lambda"),
        (HEAD + "def run():\n    def collate(b):\n        return b\n    for b in DataLoader(ds, num_workers=2, collate_fn=collate):\n"
         "        pass\n\n\nrun()\n", "`collate` is defined inside a function"),
    ],
)
def test_unpicklable_loader_arguments_are_report_only(src, why):
    # the guard alone would not make these run under spawn (pitfalls 3.9)
    reported(src, why)


def test_imports_are_not_hoisted_past_sys_path_or_environ_changes():
    reported(HEAD + "import sys\nloader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n"
             "sys.path.insert(0, 'lib')\nimport helpers\n", "would move above it")
    reported(HEAD + "import os\nloader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n"
             "os.environ['MODE'] = 'eval'\nimport evaluator\n", "would move above it")
    # an import after harmless statements is hoisted
    out = fixed(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\nimport json\nprint(json.dumps([1]))\n")
    assert "import json\nif __name__" in out


def test_a_main_py_is_fixed_when_only_an_attribute_named_main_is_imported(tmp_path):
    # the pytorch/examples shape: `from lightning...upgrade_checkpoint import main` elsewhere in
    # the tree says nothing about examples/dcgan/main.py
    (tmp_path / "examples" / "dcgan").mkdir(parents=True)
    (tmp_path / "examples" / "dcgan" / "main.py").write_text(
        HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n")
    pkg = tmp_path / "lightning" / "utilities"
    pkg.mkdir(parents=True)
    (tmp_path / "lightning" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "upgrade_checkpoint.py").write_text("def main():\n    pass\n")
    (tmp_path / "lightning" / "cli.py").write_text("from lightning.utilities.upgrade_checkpoint import main\nmain()\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "main.py").write_text((tmp_path / "examples" / "dcgan" / "main.py").read_text())
    (tmp_path / "test_tools.py").write_text("from tools.main import loader\n")
    res = {os.path.relpath(r.path, tmp_path): r for r in runner.run([str(tmp_path)], Options(select=frozenset({"TM301"})), jobs=1).results}
    assert res[os.path.join("examples", "dcgan", "main.py")].changed
    # tools/main.py is imported as the namespace module tools.main: report only
    t = res[os.path.join("tools", "main.py")]
    assert not t.changed and "imports this module" in t.findings[0].message


def test_the_importers_a_worker_asked_for_are_read_once_by_the_runner(tmp_path, monkeypatch):
    """A file a worker could not finish without the tree's import index says which
    modules it asked about; the runner reads their importers as the result comes (while
    the other files are still being processed) and the processes that take the file
    again inherit them: each module's importers are read once in the run, not once per
    process, and the findings are those of a run on one index."""
    from torchmend import project

    for d in ("a", "b"):  # two scripts of the same stem: one scan serves both
        (tmp_path / d).mkdir()
        (tmp_path / d / "main.py").write_text(HEAD + "loader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n")
    (tmp_path / "other.py").write_text("import os\n")
    log = tmp_path / "scans.log"
    orig = project.ImportIndex._scan

    def scan(self, stem):
        with open(log, "a") as f:  # (from any process)
            f.write(f"{os.getpid()} {stem} {len(self.files)}\n")
        return orig(self, stem)

    monkeypatch.setattr(project.ImportIndex, "_scan", scan)
    opts = Options(select=frozenset({"TM301"}))
    res = runner.run([str(tmp_path)], opts, jobs=2)
    got = [r for r in res.results if r.path.endswith("main.py")]
    assert len(got) == 2 and all(len(r.findings) == 1 and r.error is None for r in got)
    # (each script's directory is read by its own small index, in the worker)
    scans = [s.split() for s in log.read_text().split("\n")[:-1] if s.split()[2] == "3"]
    assert [s[1] for s in scans] == ["main"] and scans[0][0] == str(os.getpid())


# ---------------------------------------------------------------------- what spawn's workers cannot unpickle
# (pytorch/pytorch#87016: the Dataset class defined under the guard; the local
# ``main.<locals>.collate_fn`` and ``collate_fn=lambda x: x`` of many issue reports)
SPAWN = """\
import torch
from torch.utils.data import DataLoader, Dataset

{top}
if __name__ == "__main__":
{guard}
    loader = DataLoader({dataset}, batch_size=2, num_workers={workers}{extra})
    for batch in loader:
        pass
"""
CLASS = "class Chat(Dataset):\n    def __len__(self):\n        return 4\n\n    def __getitem__(self, i):\n        return i\n"


def _indent(text):
    return textwrap.indent(text, "    ")


@pytest.mark.parametrize(
    "top, guard, dataset, extra, why",
    [("", _indent(CLASS), "Chat()", "", "`Chat`, defined under `if __name__ == \"__main__\":`"),
     (CLASS, "    def collate(b):\n        return b\n", "Chat()", ", collate_fn=collate",
      "`collate`, defined under `if __name__"),
     (CLASS, "", "Chat()", ", collate_fn=lambda b: b", "it gets a lambda (`lambda b: b`)")],
)
def test_what_the_workers_cannot_unpickle_is_reported(top, guard, dataset, extra, why):
    src = SPAWN.format(top=top, guard=guard, dataset=dataset, workers=2, extra=extra)
    f = reported(src, why)
    assert f.message.startswith("DataLoader `loader` with num_workers=2: under spawn")


def test_a_dataset_class_local_to_a_function():
    src = ("import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\ndef main():\n"
           + _indent(CLASS) + "    for b in DataLoader(Chat(), num_workers=4):\n        pass\n\n\n"
           "if __name__ == \"__main__\":\n    main()\n")
    reported(src, "`Can't pickle local object 'main.<locals>.Chat'`")


@pytest.mark.parametrize(
    "top, guard, workers, extra",
    [(CLASS, "", 2, ""),  # defined at the top level: the workers import it
     ("", _indent(CLASS), 0, ""),  # no workers
     ("", _indent(CLASS), 2, ", multiprocessing_context='fork'")],  # nothing pickled
)
def test_what_the_workers_can_import_is_silent(top, guard, workers, extra):
    r, _ = run(SPAWN.format(top=top, guard=guard, dataset="Chat()", workers=workers, extra=extra))
    assert bugs(r) == [], [f.message for f in r.findings]


# (a workers count chosen per platform with an ``if`` statement, like ``0 if os.name ==
# "nt" else 4``: the author thought about spawn)
def test_a_worker_count_chosen_per_platform_by_an_if_statement_is_silent():
    src = HEAD + ("import os\nif os.name == 'nt':\n    workers = 0\nelse:\n    workers = os.cpu_count()\n"
                  "loader = DataLoader(ds, num_workers=workers)\nfor b in loader:\n    pass\n")
    r, _ = run(src)
    assert bugs(r) == [], [f.message for f in r.findings]


# (pyg-team/pytorch_geometric#1774: ``NeighborSampler(..., num_workers=12)`` derives from
# torch's DataLoader and starts workers as it does)
@pytest.mark.parametrize("imp", ["from torch_geometric.loader import NeighborSampler",
                                 "from torch_geometric.data import NeighborSampler"])
def test_a_pyg_loader_with_workers_at_import_time(imp):
    out = fixed(f"{imp}\nloader = NeighborSampler(edge_index, sizes=[25, 10], batch_size=1024, num_workers=12)\n"
                "for batch_size, n_id, adjs in loader:\n    pass\n")
    assert 'if __name__ == "__main__":' in out


@pytest.mark.parametrize(
    "ctx_arg, reported",
    [(", multiprocessing_context='spawn'", True),  # spawn everywhere: pickled on every platform
     (", multiprocessing_context=None", True)],  # the default start method
)
def test_a_start_method_other_than_fork_still_pickles(ctx_arg, reported):
    src = SPAWN.format(top=CLASS, guard="", dataset="Chat()", workers=2, extra=", collate_fn=lambda b: b" + ctx_arg)
    r, _ = run(src)
    assert len(bugs(r)) == (1 if reported else 0), [f.message for f in r.findings]


# (xternalz/WideResNet-pytorch, pytorch/examples mnist_forward_forward, facebookresearch/DiT:
# a lambda in the dataset's ``transforms.Compose([...])``, the dataset pickled with it)
@pytest.mark.parametrize("transform", [
    "transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x * 2)])",
    "transforms.Lambda(lambda x: x * 2)",
])
@pytest.mark.parametrize("named", [False, True])
def test_a_lambda_inside_the_dataset_transform(transform, named):
    head = "    t = " + transform + "\n" if named else ""
    src = ("import torch\nimport torchvision.transforms as transforms\nimport torchvision.datasets as datasets\n"
           "from torch.utils.data import DataLoader\n\n\ndef main():\n" + head
           + "    ds = datasets.CIFAR10('data', train=True, transform=" + ("t" if named else transform) + ")\n"
           "    for x, y in DataLoader(ds, batch_size=32, num_workers=2):\n        pass\n\n\n"
           "if __name__ == \"__main__\":\n    main()\n")
    reported(src, "it gets a lambda (`lambda x: x * 2`)")
    r, _ = run(src.replace("lambda x: x * 2", "double"))
    assert bugs(r) == [], [f.message for f in r.findings]


# (dragen1860/MAML-Pytorch MiniImagenet: the dataset's own __init__ stores
# ``transforms.Compose([lambda x: Image.open(x).convert('RGB'), ...])``)
@pytest.mark.parametrize("stored, why", [
    ("self.transform = transforms.Compose([lambda x: x, transforms.ToTensor()])", "it gets a lambda (`lambda x: x`)"),
    ("self.fns = {'load': lambda p: p}", "it gets a lambda (`lambda p: p`)"),
    ("self.files = sorted(files, key=lambda f: f.name)", None),  # only read while built
    ("self.transform = transforms.Compose([load, transforms.ToTensor()])", None),  # a top-level function
])
def test_what_a_dataset_stores_in_its_own_init(stored, why):
    src = ("import torch\nimport torchvision.transforms as transforms\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
           "def load(p):\n    return p\n\n\nclass Data(Dataset):\n    def __init__(self, files):\n        " + stored + "\n"
           "        self.n = len(files)\n\n    def __len__(self):\n        return self.n\n\n    def __getitem__(self, i):\n"
           "        return i\n\n\ndef main():\n    for b in DataLoader(Data([]), num_workers=2):\n        pass\n\n\n"
           "if __name__ == \"__main__\":\n    main()\n")
    if why is None:
        r, _ = run(src)
        assert bugs(r) == [], [f.message for f in r.findings]
    else:
        reported(src, why)


def test_a_local_function_a_dataset_only_reads_while_built_is_not_held():
    """``self.files = sorted(files, key=key)``: the key function is not kept, the
    dataset pickles (and a library dataset's ``is_valid_file`` likewise)."""
    files = CLASS.replace("class Chat(Dataset):\n", "class Chat(Dataset):\n    def __init__(self, files, key):\n"
                          "        self.files = sorted(files, key=key)\n\n")
    src = ("import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n" + files + "\n\ndef main(files):\n"
           "    def by_stem(f):\n        return f.stem\n    for b in DataLoader(Chat(files, by_stem), num_workers=4):\n"
           "        pass\n\n\nif __name__ == \"__main__\":\n    main([])\n")
    r, _ = run(src)
    assert bugs(r) == [], [f.message for f in r.findings]
    kept = src.replace("self.files = sorted(files, key=key)", "self.files, self.key = files, key")
    reported(kept, "`Can't pickle local object 'main.<locals>.by_stem'`")


def test_a_module_level_loader_of_a_guarded_script_is_reported_once():
    src = HEAD + ("loader = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)\nfor b in loader:\n    pass\n\n\n"
                  "if __name__ == \"__main__\":\n    print('done')\n")
    r, _ = run(src)
    assert len(bugs(r)) == 1, [f.message for f in r.findings]


# (swz30/MPRNet train.py: ``if torch.cuda.device_count() > 1:`` with a 2-space body, the
# training loop with 4-space blocks)
def test_the_guard_is_indented_as_the_code_it_holds():
    src = HEAD + ("if torch.cuda.device_count() > 1:\n  print('GPUs')\n\n"
                  "for epoch in range(3):\n    for (x,) in DataLoader(ds, num_workers=2):\n        pass\n")
    out = fixed(src)
    assert out.endswith("    for epoch in range(3):\n"
                        "        for (x,) in DataLoader(ds, num_workers=2):\n            pass\n"), out
    assert "if __name__ == '__main__':\n    ds = " in out
    # a file indented alike throughout: LibCST's own default
    out = fixed(HEAD + "for (x,) in DataLoader(ds, num_workers=2):\n  pass\n")
    assert out.endswith("if __name__ == \"__main__\":\n  ds = TensorDataset(torch.randn(8, 2))\n"
                        "  for (x,) in DataLoader(ds, num_workers=2):\n    pass\n"), out


# (rasbt/machine-learning-book ch13_part3_lightning.py, rasbt/deeplearning-models'
# Lightning templates: ``trainer.fit(model=..., datamodule=dm)`` at module level, the
# DataModule's train_dataloader() with num_workers=4)
LIGHTNING = """\
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class DM(pl.LightningDataModule):
    def setup(self, stage=None):
        self.train = TensorDataset(torch.randn(8, 2))

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=4, num_workers=4)


class Model(pl.LightningModule):
    pass


dm = DM()
model = Model()
trainer = pl.Trainer(max_epochs=1)
trainer.fit(model=model, datamodule=dm)
"""


def test_a_lightning_trainer_run_iterates_the_hooks_loaders():
    out = fixed(LIGHTNING)
    assert out.endswith('if __name__ == "__main__":\n    dm = DM()\n    model = Model()\n'
                        '    trainer = pl.Trainer(max_epochs=1)\n    trainer.fit(model=model, datamodule=dm)\n'), out
    r, _ = run(LIGHTNING)
    assert "is iterated at import time (line 21, by `trainer.fit`)" in bugs(r)[0].message
    # test() iterates test_dataloader(), which this datamodule lacks; a Trainer of no
    # known library; a loader given to fit() is iterated as surely as the hook's
    silent(LIGHTNING.replace("trainer.fit(", "trainer.test("))
    silent(LIGHTNING.replace("pl.Trainer(max_epochs=1)", "make_trainer()"))
    given = LIGHTNING.replace("trainer.fit(model=model, datamodule=dm)",
                              "loader = DataLoader(TensorDataset(torch.randn(8, 2)), num_workers=2)\n"
                              "trainer.fit(model, loader)")
    r, _ = run(given)
    assert [f.fix.safety.value for f in bugs(r)] == ["safe"], [f.message for f in r.findings]


# (datawhalechina/thorough-pytorch chapter 6: the Dataset's cell is there twice)
def test_a_notebook_dataset_class_defined_twice_is_still_the_notebooks():
    cls = "class Cars(torch.utils.data.Dataset):\n    def __len__(self):\n        return 2\n\n    def __getitem__(self, i):\n        return i\n\n\n"
    src = HEAD + cls + cls + "for b in DataLoader(Cars(), num_workers=4):\n    pass\n"
    b = reported(src, "its workers need `Cars`, defined in this notebook", notebook=True)
    assert b.message.count("`Cars`") == 1 and "`Cars`, `Cars`" not in b.message  # named once


def test_a_script_in_cells_is_reported_not_guarded():
    # jupytext's percent format (and editors' cell scripts) run cell by cell or become a
    # notebook: a guard would indent the cells under one ``if``
    src = ("# %% [markdown]\n# A tutorial\n\n# %%\n" + HEAD + "loader = DataLoader(ds, num_workers=4)\n\n"
           "# %%\nfor b in loader:\n    pass\n")
    reported(src, "a notebook in script form")
    reported("# ---\n# jupyter:\n#   jupytext:\n#     formats: ipynb,py:light\n# ---\n\n" + HEAD
             + "for b in DataLoader(ds, num_workers=4):\n    pass\n", "a notebook in script form")
    fixed(src.replace("# %%\n", "# step\n"))  # one comment is no cell marker


DATAMODULE = """\
import torch
from torch.utils.data import DataLoader


class DM:
    def __init__(self, num_workers=0, **loader_kwargs):
        self.num_workers = num_workers
        self.kwargs = {{"num_workers": loader_kwargs.get("workers", 0)}}

    def train_dataloader(self):
        return DataLoader(torch.randn(64, 4), batch_size=8, {workers})


dm = DM({args})
for x in dm.train_dataloader():
    pass
"""


@pytest.mark.parametrize("workers", ["num_workers=self.num_workers", "**self.kwargs"])
def test_worker_count_from_the_constructor(workers):
    # ``self.num_workers`` / ``kwargs.get("workers", 0)``: what the constructor was given
    silent(DATAMODULE.format(workers=workers, args=""))
    silent(DATAMODULE.format(workers=workers, args="num_workers=0, workers=0"))
    fixed(DATAMODULE.format(workers=workers, args="num_workers=2, workers=2"))


def test_random_split_parts_hold_the_notebooks_dataset():
    src = HEAD + ("from torch.utils.data import random_split\n\n\nclass Toy(torch.utils.data.Dataset):\n"
                  "    def __len__(self):\n        return 64\n\n    def __getitem__(self, i):\n        return torch.randn(4)\n\n\n"
                  "train_set, val_set = random_split(Toy(), [48, 16])\nfor b in DataLoader(train_set, num_workers=2):\n    pass\n")
    reported(src, "`Toy`, defined in this notebook", notebook=True)


def test_a_lambda_the_dataset_holds_makes_the_guard_report_only():
    # the guard alone would not do: spawn's workers still cannot unpickle the lambda
    src = ("import torch\nfrom torch.utils.data import DataLoader\nfrom torchvision import transforms, datasets\n\n"
           "tf = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x.view(-1, 784))])\n"
           "data = datasets.MNIST(root='/data', download=True, transform=tf)\n"
           "loader = DataLoader(data, batch_size=128, num_workers=4)\nfor x, y in loader:\n    pass\n")
    reported(src, "holds a lambda")


SIBLING = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def get(batch_size, num_workers=0):
    ds = TensorDataset(torch.randn(8, 2))
    return DataLoader(ds, batch_size=batch_size, num_workers=num_workers), None
"""


@pytest.mark.parametrize("main,found", [
    ("import dataset\n\ntrain_loader, _ = dataset.get(batch_size=2, num_workers=1)\nfor b in train_loader:\n    pass\n", True),
    ("import dataset\n\ntrain_loader, _ = dataset.get(batch_size=2, num_workers=0)\nfor b in train_loader:\n    pass\n", False),
    ("import dataset\n\nif __name__ == '__main__':\n    loader, _ = dataset.get(batch_size=2, num_workers=1)\n"
     "    for b in loader:\n        pass\n", False),
    ("import dataset\n\n\ndef train():\n    loader, _ = dataset.get(batch_size=2, num_workers=1)\n"
     "    for b in loader:\n        pass\n", False),  # nothing runs it at import
])
def test_a_loader_a_sibling_module_makes_is_reported(tmp_path, main, found):
    (tmp_path / "dataset.py").write_text(SIBLING)
    (tmp_path / "main.py").write_text(main)
    r = process_text(str(tmp_path / "main.py"), main, Options(select=frozenset({"TM301"})))
    assert [f.code for f in r.findings] == (["TM301"] if found else []) and not r.changed
    if found:
        assert "makes a DataLoader in dataset.py with num_workers=1" in r.findings[0].message


_DATA_MODULE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
{all}
workers = {workers}
ds = TensorDataset(torch.randn(8, 2))
train_loader = DataLoader(ds, batch_size=2, shuffle=True, num_workers=workers)
"""


@pytest.mark.parametrize("imports, workers, all_, found", [
    ("from data import train_loader", 2, "", True),
    ("from data import *", 2, "", True),  # (GeonwooVincentKim/New_DCGAN: ``from Main.DCGAN import *``)
    ("from data import *", 2, "__all__ = ['train_loader']\n", True),
    # look-alikes: no worker; a star import that leaves the loader out; a name bound here
    ("from data import train_loader", 0, "", False),
    ("from data import *", 2, "__all__ = ['ds']\n", False),
    ("from data import *\ntrain_loader = []", 2, "", False),
])
def test_a_loader_a_sibling_module_makes_as_it_is_imported(tmp_path, imports, workers, all_, found):
    """data.py builds ``train_loader`` with workers at its top level; the script imports
    it and iterates it at import time, with no guard: spawn's workers re-run the script."""
    (tmp_path / "data.py").write_text(_DATA_MODULE.format(all=all_, workers=workers))
    main = f"{imports}\n\nfor epoch in range(2):\n    for i, batch in enumerate(train_loader, 0):\n        print(batch)\n"
    (tmp_path / "main.py").write_text(main)
    opts = Options(select=frozenset({"TM301"}))
    ran = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=1).results}
    project = Project(roots=(str(tmp_path),))
    for r in (process_text(str(tmp_path / "main.py"), main, opts, project), ran["main.py"]):
        assert [f.code for f in r.findings] == (["TM301"] if found else []) and not r.changed
        if found:
            assert "DataLoader `train_loader` of data.py, made there with num_workers=workers" in r.findings[0].message
            assert r.findings[0].line == 4
    # (guarded: nothing)
    guarded = f"{imports}\n\nif __name__ == '__main__':\n    for batch in train_loader:\n        print(batch)\n"
    assert process_text(str(tmp_path / "main.py"), guarded, opts, project).findings == []


@pytest.mark.parametrize("files, main", [
    # (review) the loader that runs is another module's, with no worker, that Python's
    # star-import rules pick: a later star import re-exporting it, a relative one, one
    # under a ``try``, one after the loop, an ``__all__`` that leaves it out (a quoted name
    # elsewhere in that module), a binding that runs only under the module's own guard
    ({"settings.py": "from cpu_data import *\n"}, "from data import *\nfrom settings import *\n"),
    ({"pkg/__init__.py": "", "pkg/data.py": None, "pkg/cpu_data.py": None},
     "from pkg.data import *\nfrom .cpu_data import *\n"),
    ({}, "from data import *\ntry:\n    from cpu_data import *\nexcept ImportError:\n    pass\n"),
    ({}, "from cpu_data import *\n\nfor (x,) in train_loader:\n    pass\nfrom data import *\n"),
    ({"data.py": "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n__all__ = ['ds']\n"
                 "ds = TensorDataset(torch.zeros(8, 2))\ntrain_loader = DataLoader(ds, batch_size=4, num_workers=2)\n"
                 "CONFIG = {'train_loader': 4}\n"}, "from cpu_data import *\nfrom data import *\n"),
    ({"data.py": "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
                 "ds = TensorDataset(torch.zeros(8, 2))\nif __name__ == '__main__':\n"
                 "    train_loader = DataLoader(ds, batch_size=4, num_workers=2)\n"}, "from cpu_data import *\nfrom data import *\n"),
])
def test_a_star_import_that_may_bring_another_loader_is_not_read(tmp_path, files, main):
    loader = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
              "ds = TensorDataset(torch.zeros(8, 2))\ntrain_loader = DataLoader(ds, batch_size=4, num_workers={n})\n")
    base = {"data.py": loader.format(n=2), "cpu_data.py": loader.format(n=0)}
    for name, text in {**base, **files}.items():
        if text is None:
            text = base[os.path.basename(name)]
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    where = tmp_path / ("pkg/train.py" if "from ." in main else "train.py")
    src = main + ("" if "for (x,)" in main else "\nfor (x,) in train_loader:\n    pass\n")
    where.write_text(src)
    r = process_text(str(where), src, Options(select=frozenset({"TM301"})), Project(roots=(str(tmp_path),)))
    assert r.findings == []


def test_a_loader_whose_count_is_positional_is_read_as_the_gate_reads_it(tmp_path):
    # (review) ``DataLoader(ds, 4, True, None, None, 2)``: the project gate looks for
    # ``num_workers`` in the module's text; the check reads the keyword only, so both agree
    (tmp_path / "data.py").write_text("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
                                      "ds = TensorDataset(torch.zeros(8, 2))\n"
                                      "train_loader = DataLoader(ds, 4, True, None, None, 2)\n")
    src = "from data import train_loader\n\nfor (x,) in train_loader:\n    pass\n"
    (tmp_path / "train.py").write_text(src)
    for shortcuts in (True, False):
        res = runner.run([str(tmp_path)], Options(select=frozenset({"TM301"}), shortcuts=shortcuts), jobs=1)
        assert not [f for r in res.results for f in r.findings]


def test_a_function_that_rebinds_the_datasets_name_runs_the_loader(tmp_path):
    """(triage: rmuraix/digit-recognizer) ``train = TensorDataset(...)``, the loader made of
    it, then ``def train():`` iterating the loader, called at import time: the call runs
    the function (the binding that reaches it).  The fix guards from the call: moving the
    loader below the ``def`` would hand it the function."""
    src = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
           "train = TensorDataset(torch.randn(10, 3), torch.zeros(10))\n"
           "train_loader = DataLoader(train, batch_size=2, num_workers=2, shuffle=True)\n\n\n"
           "def train():\n    for epoch in range(3):\n        for x, y in train_loader:\n            pass\n    return 1\n\n\n"
           "r = train()\n")
    r = process_text("t.py", src, Options(select=frozenset({"TM301"})))
    assert [f.severity for f in r.findings if f.severity is Severity.BUG] == [Severity.BUG]
    out = apply_patch(src.encode(), r.diff).decode()
    assert "train_loader = DataLoader(train, batch_size=2, num_workers=2, shuffle=True)\n\n\ndef train():" in out
    assert out.endswith('if __name__ == "__main__":\n    r = train()\n')


def test_a_rebound_name_is_read_the_same_however_the_file_is_parsed():
    """(soundness on the triage trees) in a file parsed lazily, chunk by chunk, the call
    ``train()`` after ``train = ...`` and ``def train():`` runs the function as it does
    when the file is parsed whole: the binding is read from the statements' order."""
    pad = "".join(f"\n\ndef helper_{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(60))
    src = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
           "train = TensorDataset(torch.randn(10, 3), torch.zeros(10))\n"
           "train_loader = DataLoader(train, batch_size=2, num_workers=2, shuffle=True)\n" + pad +
           "\n\ndef train():\n    for x, y in train_loader:\n        pass\n    return 1\n\n\nr = train()\n")
    assert len(src) > 3000  # (files from 2,000 characters on are parsed lazily)
    got = []
    for shortcuts in (True, False):
        r = process_text("t.py", src, Options(select=frozenset({"TM301"}), shortcuts=shortcuts))
        got.append([(f.line, f.severity) for f in r.findings])
    assert got[0] == got[1] and (5, Severity.BUG) in got[0]


_GETTER = """\
import torch
import torch.utils.data as data
from torch.utils.data import TensorDataset

WORKERS = {workers}


def get_loader(is_train, args):
    dset = TensorDataset(torch.randn(8, 2))
    loader = data.DataLoader(dataset=dset, batch_size=2, shuffle=is_train, num_workers={count})
    print('Loader for {{}} batches created.'.format(len(loader)))
    return loader
"""


def _train_both_ways(tmp_path, main: str):
    """TM301 on ``train.py`` (text ``main``) of the tree ``tmp_path``: ``(the run's results
    by file name, [train.py's result alone with the tree's project, train.py's in the run])``."""
    opts = Options(select=frozenset({"TM301"}))
    ran = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], opts, jobs=1).results}
    return ran, [process_text(str(tmp_path / "train.py"), main, opts, Project(roots=(str(tmp_path),))), ran["train.py"]]


@pytest.mark.parametrize("workers, count, loop, found", [
    # the function makes its loader with a worker count of its own; the script iterates
    # what it returns at import time, in a ``for`` or under a ``while True:``
    (2, "2", "for epoch in range(2):\n    for b in train_loader:\n        pass\n", True),
    (2, "WORKERS", "while True:\n\n    for batch, (x,) in enumerate(train_loader):\n        break\n    break\n", True),
    # look-alikes: no worker; a count the caller gives (not known there); nothing
    # iterates at import time
    (0, "WORKERS", "for b in train_loader:\n    pass\n", False),
    (2, "args.workers", "for b in train_loader:\n    pass\n", False),
    (2, "2", "def train():\n    for b in train_loader:\n        pass\n", False),
])
def test_a_loader_a_sibling_function_returns(tmp_path, workers, count, loop, found):
    """chaoyuaw/pytorch-vcii train.py: ``train_loader = get_loader(...)`` of ``from dataset
    import get_loader`` (whose DataLoader has ``num_workers=2``), iterated under the
    script's module-level ``while True:`` with no guard."""
    (tmp_path / "dataset.py").write_text(_GETTER.format(workers=workers, count=count))
    main = f"from dataset import get_loader\n\ntrain_loader = get_loader(is_train=True, args=None)\n{loop}"
    (tmp_path / "train.py").write_text(main)
    _, results = _train_both_ways(tmp_path, main)
    for r in results:
        assert [f.code for f in r.findings] == (["TM301"] if found else []) and not r.changed
        if found:
            assert f"`get_loader(...)` returns a DataLoader made in dataset.py with num_workers={count}" \
                in r.findings[0].message
            assert r.findings[0].line == 3


_EVAL_LOADERS = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(32, 4), torch.zeros(32, dtype=torch.long))
train_loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)
valid_loader = DataLoader(ds, batch_size=8, num_workers=2)
test_loader = DataLoader(ds, batch_size=8, num_workers=2)
model = nn.Linear(4, 2)


def compute_accuracy(model, data_loader):
    correct = 0
    for x, y in data_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


for epoch in range(3):
    for x, y in train_loader:
        pass
    valid_acc = compute_accuracy(model, valid_loader)
{tail}"""


@pytest.mark.parametrize("tail, advised", [
    # the test loader goes through the same function once, after training: no advice
    ("test_acc = compute_accuracy(model, test_loader)\n", {"train_loader", "valid_loader"}),
    ("for k in range(2):\n    test_acc = compute_accuracy(model, test_loader)\n", {"train_loader", "valid_loader", "test_loader"}),
])
def test_persistent_workers_advice_follows_the_loader_through_its_calls(tail, advised):
    """2min0/Compare-NN assignment notebooks: ``compute_accuracy(model, loader)`` is
    called every epoch with the validation loader and once, after training, with the
    test loader; only the first is iterated again every epoch."""
    src = _EVAL_LOADERS.format(tail=tail)
    r = process_text("t.py", src, Options(select=frozenset({"TM301"})))
    infos = {f.message.split("`")[1] for f in r.findings if f.severity is Severity.INFO}
    assert infos == advised


@pytest.mark.parametrize("loop", [
    "with tqdm(loader, desc='TRAIN') as bar:\n    for x, y in bar:\n        pass\n",
    "with tqdm(loader) as bar:\n    for i, (x, y) in enumerate(bar):\n        pass\n",
    "def train():\n    with tqdm(loader) as bar:\n        for x, y in bar:\n            pass\n\n\nfor epoch in range(2):\n"
    "    train()\n",
])
def test_a_loader_iterated_through_a_progress_bar_of_a_with(loop):
    """AIRLABkhu/D-BADGE train_victim.py: ``with tqdm(loader) as progress_bar:`` then
    ``for ... in enumerate(progress_bar):`` (tqdm's ``__enter__`` returns itself)."""
    src = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nfrom tqdm import tqdm\n\n"
           "ds = TensorDataset(torch.randn(8, 2))\nloader = DataLoader(ds, batch_size=2, num_workers=2)\n" + loop)
    r = process_text("t.py", src, Options(select=frozenset({"TM301"})))
    assert [f.code for f in r.findings if f.severity is Severity.BUG] == ["TM301"]


@pytest.mark.parametrize("models_init, found", [
    # a second star import of a package that certainly binds no ``DataLoader`` (read through
    # its own star import) leaves the first one's (6sephiruth/ad_masking mask_layer.py)
    ("from models.net import *\n", True),
    # one that may bind it (a module the tree lacks, or one that binds the name): unknown
    ("from models.net import *\nfrom somewhere_else import *\n", False),
    ("from models.net import *\nDataLoader = list\n", False),
])
def test_a_later_star_import_that_binds_no_such_name(tmp_path, models_init, found):
    files = {"utils/__init__.py": "from utils.data_util import *\n",
             "utils/data_util.py": "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
                                   "def make_ds():\n    return TensorDataset(torch.randn(64, 4))\n",
             "models/__init__.py": models_init,
             "models/net.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    main = ("from utils import *\nfrom models import *\n\nds = make_ds()\n"
            "loader = DataLoader(ds, batch_size=8, num_workers=4)\nfor (x,) in loader:\n    print(x)\n")
    (tmp_path / "main.py").write_text(main)
    ran = {os.path.basename(r.path): r for r in runner.run([str(tmp_path)], Options(select=frozenset({"TM301"})),
                                                            jobs=1).results}
    assert [f.code for f in ran["main.py"].findings if f.severity is Severity.BUG] == (["TM301"] if found else [])


def _tm301_of(tmp_path, name: str = "train.py"):
    """The TM301 result of the script ``name`` in a run over the whole tree ``tmp_path``."""
    ran = runner.run([str(tmp_path)], Options(select=frozenset({"TM301"})), jobs=1).results
    return next(r for r in ran if os.path.basename(r.path) == name)


# learnpytorch.io's "going modular" layout: data_setup.py makes the loaders with a worker
# count of its parameter's default, engine.py iterates them, train.py runs both at import
_DATA_SETUP = """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset

NUM_WORKERS = {default}


def create_dataloaders(batch_size: int, num_workers: int = NUM_WORKERS):
    train_data = TensorDataset(torch.randn(64, 3), torch.randint(0, 2, (64,)))
    test_data = TensorDataset(torch.randn(16, 3), torch.randint(0, 2, (16,)))
    train_dataloader = DataLoader(train_data, batch_size=batch_size, shuffle=True, num_workers=num_workers)
    test_dataloader = DataLoader(test_data, batch_size=batch_size, num_workers=num_workers)
    return train_dataloader, test_dataloader, ["a", "b"]
"""
_ENGINE = """\
import torch


def train_step(model, dataloader, loss_fn, optimizer):
    for batch, (X, y) in enumerate(dataloader):
        loss = loss_fn(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train(model, train_dataloader, test_dataloader, loss_fn, optimizer, epochs):
    for epoch in range(epochs):
        train_step(model=model, dataloader={given}, loss_fn=loss_fn, optimizer=optimizer)
"""
_TRAIN = """\
import torch
import data_setup, engine

train_dataloader, test_dataloader, class_names = data_setup.create_dataloaders({args})
model = torch.nn.Linear(3, 2)
engine.train(model=model, train_dataloader=train_dataloader, test_dataloader=test_dataloader,
             loss_fn=torch.nn.CrossEntropyLoss(), optimizer=torch.optim.SGD(model.parameters(), lr=0.1), epochs=2)
"""


@pytest.mark.parametrize("default, args, given, found", [
    ("os.cpu_count()", "batch_size=32", "train_dataloader", "num_workers=num_workers (default `NUM_WORKERS`)"),
    ("2", "32", "train_dataloader", "num_workers=num_workers (default `NUM_WORKERS`)"),
    ("0", "batch_size=32, num_workers=4", "train_dataloader", "num_workers=4"),
    ("0", "32, 4", "train_dataloader", "num_workers=4"),
    # look-alikes: no worker by default; a count not known here; the engine iterates
    # something else; a platform-dependent default
    ("0", "batch_size=32", "train_dataloader", None),
    ("os.cpu_count()", "batch_size=32, num_workers=args.workers", "train_dataloader", None),
    ("os.cpu_count()", "batch_size=32", "[]", None),
    ("0 if os.name == 'nt' else 4", "batch_size=32", "train_dataloader", None),
])
def test_a_loader_a_sibling_function_returns_and_another_module_iterates(tmp_path, default, args, given, found):
    (tmp_path / "data_setup.py").write_text(_DATA_SETUP.format(default=default))
    (tmp_path / "engine.py").write_text(_ENGINE.format(given=given))
    main = _TRAIN.format(args=args)
    (tmp_path / "train.py").write_text(main)
    ran, results = _train_both_ways(tmp_path, main)
    for r in results:
        assert [f.code for f in r.findings] == (["TM301"] if found else []) and not r.changed
        if found:
            m = r.findings[0].message
            assert f"`data_setup.create_dataloaders(...)` " in m and found in m, m
            assert "iterated at import time (line 6, by `engine.train`)" in m, m
            assert r.findings[0].line == 4
    assert not [f for r in ran.values() if os.path.basename(r.path) != "train.py" for f in r.findings]


def test_a_loader_made_here_that_another_modules_function_iterates_is_a_sure_site(tmp_path):
    """The loader made here goes to ``engine.train``, which iterates it: the guard fix is
    safe (it was unsafe while the callee was not read)."""
    (tmp_path / "engine.py").write_text(_ENGINE.format(given="train_dataloader"))
    main = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nimport engine\n\n"
            "ds = TensorDataset(torch.randn(64, 3), torch.randint(0, 2, (64,)))\n"
            "train_dataloader = DataLoader(ds, batch_size=32, num_workers=2)\nmodel = torch.nn.Linear(3, 2)\n"
            "engine.train(model, train_dataloader, None, torch.nn.CrossEntropyLoss(), None, 2)\n")
    (tmp_path / "train.py").write_text(main)

    r = _tm301_of(tmp_path)
    assert [f.code for f in r.findings] == ["TM301"] and r.changed
    assert "is iterated at import time (line 8, by `engine.train`)" in r.findings[0].message
    # the callee hands the loader on to nothing that iterates it: the call may iterate it
    (tmp_path / "engine.py").write_text(_ENGINE.format(given="[]"))
    r = _tm301_of(tmp_path)
    assert [f.code for f in r.findings] == ["TM301"] and not r.changed
    assert "which may iterate it" in r.findings[0].message


def test_a_generator_of_another_module_iterates_nothing_when_called(tmp_path):
    """(review) ``batches = engine.cycle(train_loader)`` of a generator function: calling
    it iterates nothing; the call may iterate it (as before), not for sure."""
    (tmp_path / "engine.py").write_text("def cycle(loader):\n    while True:\n        for batch in loader:\n"
                                        "            yield batch\n")
    main = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\nimport engine\n\n"
            "ds = TensorDataset(torch.randn(64, 3))\ntrain_loader = DataLoader(ds, batch_size=8, num_workers=2)\n"
            "batches = engine.cycle(train_loader)\n")
    (tmp_path / "train.py").write_text(main)
    r = _tm301_of(tmp_path)
    assert [f.code for f in r.findings] == ["TM301"] and "which may iterate it" in r.findings[0].message


def test_a_positional_only_parameter_takes_its_place(tmp_path):
    """(review) ``def get_loader(root, /, batch_size, num_workers=4)`` called as
    ``get_loader("data/", 32, 0)``: the count is the third argument, 0."""
    (tmp_path / "data.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "def get_loader(root, /, batch_size, num_workers=4):\n    ds = TensorDataset(torch.randn(64, 3))\n"
        "    return DataLoader(ds, batch_size=batch_size, num_workers=num_workers)\n")
    for args, found in (('"data/", 32, 0', False), ('"data/", 32', True), ('"data/", 32, 2', True)):
        main = f"import torch\nimport data\n\ntrain_loader = data.get_loader({args})\nfor x in train_loader:\n    pass\n"
        (tmp_path / "train.py").write_text(main)
        r = _tm301_of(tmp_path)
        assert [f.code for f in r.findings] == (["TM301"] if found else []), (args, [f.message for f in r.findings])


@pytest.mark.parametrize("args", ["batch_size=32, num_workers=os.cpu_count()", "32, NUM"])
def test_a_cpu_count_given_here_is_a_worker_count_above_0(tmp_path, args):
    """(shaheer-shehri's going_modular train.py) ``num_workers=os.cpu_count()`` passed by
    the script itself: at least one worker, as the function's own default is."""
    (tmp_path / "data_setup.py").write_text(_DATA_SETUP.format(default="0"))
    (tmp_path / "engine.py").write_text(_ENGINE.format(given="train_dataloader"))
    main = "import os\n" + _TRAIN.format(args=args).replace("import data_setup, engine\n",
                                                              "import data_setup, engine\nNUM = os.cpu_count()\n")
    (tmp_path / "train.py").write_text(main)
    r = _tm301_of(tmp_path)
    assert [f.code for f in r.findings] == ["TM301"], [f.message for f in r.findings]


@pytest.mark.parametrize("imports", ["import going_modular.data_setup as data_setup\nimport going_modular.engine as engine",
                                     "from going_modular import data_setup, engine"])
def test_the_going_modular_scripts_importing_their_namespace_package_by_name(tmp_path, imports):
    """(shaheer-shehri's going_modular/train.py, no ``__init__.py``, run as ``python -m
    going_modular.train``) the modules named through the script's own directory are its
    siblings: reported as with ``import data_setup, engine``."""
    pkg = tmp_path / "going_modular"
    pkg.mkdir()
    (pkg / "data_setup.py").write_text(_DATA_SETUP.format(default="os.cpu_count()"))
    (pkg / "engine.py").write_text(_ENGINE.format(given="train_dataloader"))
    (pkg / "train.py").write_text(_TRAIN.format(args="batch_size=32").replace("import data_setup, engine", imports))
    r = _tm301_of(pkg)
    assert [f.code for f in r.findings] == ["TM301"], [f.message for f in r.findings]
    assert "iterated at import time" in r.findings[0].message and not r.changed


def test_d2l_style_loaders_named_iter_handed_to_a_training_function_of_the_project(tmp_path):
    """(YuxuanZhao23's d2l scripts) ``train_iter, test_iter = load_data(16)`` then
    ``train_nested(net, train_iter, ...)``, which hands it on to ``train_epoch``: a script
    with no loop and no word ``loader`` is read (the project gate) and reported."""
    utils = tmp_path / "utils"
    utils.mkdir()
    (utils / "__init__.py").write_text("")
    (utils / "utils.py").write_text(
        "import torch\nfrom torch.utils import data\n\n\ndef load_data(batch_size):\n"
        "    ds = data.TensorDataset(torch.randn(64, 8))\n"
        "    return (data.DataLoader(ds, batch_size, num_workers=4), data.DataLoader(ds, batch_size, num_workers=4))\n\n\n"
        "def train_epoch(net, train_iter):\n    for X in train_iter:\n        net(X)\n\n\n"
        "def train_nested(net, train_iter, test_iter, num_epochs):\n    for epoch in range(num_epochs):\n"
        "        train_epoch(net, train_iter)\n")
    main = ("from torch import nn\nfrom utils.utils import load_data, train_nested\n\n"
            "train_iter, test_iter = load_data(16)\nnet = nn.Linear(8, 2)\ntrain_nested(net, train_iter, test_iter, 2)\n")
    (tmp_path / "softmax.py").write_text(main)
    r = _tm301_of(tmp_path, "softmax.py")
    assert [f.code for f in r.findings] == ["TM301"], [f.message for f in r.findings]
    assert "(line 6, by `train_nested`)" in r.findings[0].message


@pytest.mark.parametrize("loop, advised", [
    # (Jackksonns' k-fold script) a new loader each fold, iterated once: no advice
    ("for fold in range(5):\n    test_dl = create_testdls(bs=8)\n    for (x,) in test_dl:\n        pass\n", False),
    # the same loader iterated every epoch: advised
    ("test_dl = create_testdls(bs=8)\nfor epoch in range(5):\n    for (x,) in test_dl:\n        pass\n", True),
])
def test_the_persistent_workers_advice_of_a_loader_made_again_at_module_level(loop, advised):
    src = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\ndef create_testdls(bs):\n"
           "    return DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=bs, num_workers=2)\n\n\n" + loop)
    r = process_text("kfold.py", src, Options(select=frozenset({"TM301"})))
    assert [f.severity.value for f in r.findings].count("info") == (1 if advised else 0), [f.message for f in r.findings]
