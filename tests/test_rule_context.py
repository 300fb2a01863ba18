"""FileContext metadata helpers."""

import libcst as cst

from torchmend.rule import FileContext


def test_qualnames_resolve_lazy_values():
    src = "import torch.nn.functional as F\nfrom torch.nn import CrossEntropyLoss as CE\nF.softmax(x, 1)\nCE()\n"
    ctx = FileContext("x.py", src, cst.parse_module(src))
    calls = [s.body[0].value for s in ctx.module.body[2:]]
    assert ctx.qualnames(calls[0].func) == {"torch.nn.functional.softmax"}
    assert ctx.is_qualname(calls[1].func, "torch.nn.CrossEntropyLoss")
    assert ctx.qualnames(calls[1].func) == {"torch.nn.CrossEntropyLoss"}  # twice: stable
