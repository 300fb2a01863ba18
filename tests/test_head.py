"""head.py places a fix's helpers and imports by text exactly where the LibCST path
(engine.add_helpers_and_imports on a parse of the whole file) puts them, or declines."""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchmend.engine import Options, add_helpers_and_imports, process_text
from torchmend.head import head_edits
from torchmend.rules.tm401_strict_load_after_head_change import HELPER, HELPER_SOURCE

HELPERS = {HELPER: HELPER_SOURCE}
WARN = [("warnings", None)]


def _reference(text: str, helpers: dict, imports: list) -> str:
    return add_helpers_and_imports(cst.parse_module(text), helpers, imports).code


def _by_text(text: str, helpers: dict, imports: list):
    edits = head_edits(text, helpers, imports)
    if edits is None:
        return None
    out, pos = [], 0
    for at, add in edits:
        assert pos <= at
        out += [text[pos:at], add]
        pos = at
    return "".join(out) + text[pos:]


DOCS = ["", '"""A training script."""\n', "'''Multi\nline.'''\n", 'b"bytes doc"\n', 'f"{x} doc"\n']
IMPORTS = [
    "import os\n", "import torch\n", "import torch.nn as nn\n", "from torch import nn\n",
    "from torch.utils.data import (\n    DataLoader,\n    Dataset,\n)\n", "import warnings\n",
    "import warnings as w\n", "from warnings import warn\n", "import os, sys\n", "import numpy as np  # arrays\n",
]
BETWEEN = ["", "\n", "\n\n", "\n\n\n", "# a comment\n", "\n# a comment\n\n", "   \n", "# c1\n\n# c2\n"]
NEXT = [
    "logger = None\n",
    "def main():\n    return 1\n",
    "@decorator\ndef main():\n    return 1\n",
    "@decorator\n\n# between\n@other\nclass Net:\n    pass\n",
    "class Net(nn.Module):\n  def forward(self, x):\n    return x\n",
    "def main():\n\treturn 1\n",
    "if __name__ == '__main__':\n    main()\n",
    "x = 1; y = 2\n",
    "def load_matching_state_dict(model, sd):\n    return None\n",
    "load_matching_state_dict = None\n",
]
TAIL = ["", "\nimport late\n\nz = 3\n", "\ndef train():\n    pass\n", "\nfrom __future__ import annotations\n"]


@st.composite
def modules(draw):
    text = draw(st.sampled_from(DOCS))
    text += "".join(draw(st.lists(st.sampled_from(IMPORTS), max_size=4)))
    text += draw(st.sampled_from(BETWEEN)) + draw(st.sampled_from(NEXT)) + draw(st.sampled_from(TAIL))
    return text


@st.composite
def additions(draw):
    helpers = HELPERS if draw(st.booleans()) else {}
    imports = draw(st.sampled_from([[], WARN, [("torch", None)], [("torch.nn", None)], [("warnings", "warn")], WARN + [("torch", None)]]))
    return helpers, imports


@settings(max_examples=400, deadline=None)
@given(modules(), additions())
def test_text_placement_is_the_libcst_placement(text, add):
    helpers, imports = add
    try:
        compile(text, "<m>", "exec")
    except SyntaxError:
        return  # (a __future__ import after code: no fix is built on such a file)
    got = _by_text(text, helpers, imports)
    if got is not None:
        assert got == _reference(text, helpers, imports)


SCRIPT = (
    '"""Fine-tune."""\nimport os\n\nimport torch\nimport torch.nn as nn\n\n# the model\nclass Net(nn.Module):\n'
    "    def forward(self, x):\n        return x\n"
)


@pytest.mark.parametrize(
    "text, helpers, imports",
    [
        (SCRIPT, HELPERS, WARN),
        (SCRIPT, HELPERS, []),
        (SCRIPT, {}, WARN),
        (SCRIPT.replace("import os\n", "import os\nimport warnings\n"), HELPERS, WARN),
        ("import torch\nmodel = None\n", HELPERS, WARN),
        ("import torch\n\n\n\n@torch.no_grad()\ndef f():\n  return 1\n", HELPERS, WARN),
        ("from __future__ import annotations\n" + SCRIPT.split('"""\n', 1)[1], HELPERS, WARN),
        ("import torch\nmodel = None\nimport late\n", HELPERS, WARN),
    ],
)
def test_the_usual_shapes_are_placed_by_text(text, helpers, imports):
    got = _by_text(text, helpers, imports)
    assert got is not None
    assert got == _reference(text, helpers, imports)


@pytest.mark.parametrize(
    "text",
    [
        SCRIPT.replace("\n", "\r\n"),  # another newline
        "import torch\n",  # nothing after the imports: the module's footer
        "x = 1\nimport torch\n\ndef f():\n    pass\n",  # no leading import block for the helper
        SCRIPT.replace("    ", "\t"),  # a tab indent
        "import torch; import os\n\ndef f():\n    pass\n",  # one statement line of two imports
    ],
)
def test_other_shapes_are_left_to_libcst(text):
    assert _by_text(text, HELPERS, WARN) is None


def test_a_helper_fix_is_made_on_its_chunk_and_equals_the_whole_file_fix():
    # TM401's fix adds load_matching_state_dict and ``import warnings``: the result is the
    # same with the one-chunk parse as with the whole file parsed (shortcuts off)
    src = (
        "import torch\nimport torchvision.models as models\nimport torch.nn as nn\n\n\n"
        "def main():\n    model = models.resnet18()\n    model.fc = nn.Linear(512, 10)\n"
        '    model.load_state_dict(torch.load("resnet18-imagenet.pth"))\n'
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return model, opt\n"
    )
    fast = process_text("train.py", src, Options(fix=True))
    slow = process_text("train.py", src, Options(fix=True, shortcuts=False))
    assert fast.diff and fast.diff == slow.diff
    assert b"+def load_matching_state_dict" in fast.diff and b"+import warnings" in fast.diff


@pytest.mark.parametrize("late", [
    "import matplotlib.pyplot as plt\n",  # a late import in a script
    "import warnings\n",  # the very import, only after the code that needs it
])
def test_the_import_a_helper_needs_runs_before_the_code_that_calls_it(late):
    """(AsserElfeki's notebook) the helper goes after the leading imports and the code
    below calls it at import time: ``import warnings`` must stand in that leading block,
    not after the last top-level import (a later cell, or below the call)."""
    text = "import torch\n\nmodel = build()\nmodel.load(ckpt)\n" + late + "plot()\n"
    for out in (_reference(text, HELPERS, WARN), _by_text(text, HELPERS, WARN)):
        assert out.startswith("import torch\nimport warnings\n\n\ndef load_matching_state_dict("), out
