"""Robustness, properties: generated programs that reach the rules.

Random programs (hypothesmith and the like) almost never contain what a rule's text
pre-filter looks for, so they test the parser, not the rules.  These are torch-shaped
templates (a training loop, a model class, a DataLoader script, a fine-tuning load, a
classifier head) whose parts hypothesis varies: names, where ``zero_grad`` goes, whether
the batch is moved, comments, blank lines, trailing whitespace, line endings, a BOM,
extra statements, a wrapping function.  For every example: the engine is reached (not
stopped by the pre-filter), nothing crashes, the output parses, fixing the output again
changes nothing, ``git apply --check`` accepts the diff, and a variant that only renames
or reformats the canonical bug still gets its finding.
"""

import ast
import codecs
import keyword
import os
import subprocess
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchmend.engine import STAGE_PREFILTER, Options, process_source
from torchmend.sourcefile import decode_source

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in {"torch", "nn", "F", "print", "range", "len", "self", "super", "int", "float", "list", "dict", "set", "type", "id", "map", "sum", "min", "max"}
)
COMMENT = st.sampled_from(["", "  # note", "  # torchmend is not mentioned here", "  # TODO: tune"])
EXTRA = st.sampled_from(["", "pass", "print('step')", "_ = 1 + 1", "assert True"])


def _loop(d, zero, names):
    m, o, c, ld, x, y, loss, ep = names
    lines = [
        "import torch",
        "from torch import nn",
        "from torch.utils.data import DataLoader, TensorDataset",
        "",
        f"{m} = nn.Linear(4, 1){d(COMMENT)}",
        f"{o} = torch.optim.SGD({m}.parameters(), lr=0.1)",
        f"{c} = nn.MSELoss()",
        f"{ld} = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)",
        "",
        f"for {ep} in range(3):",
    ]
    if zero == "epoch":
        lines.append(f"    {o}.zero_grad()")
    lines.append(f"    for {x}, {y} in {ld}:")
    if zero == "before":
        lines.append(f"        {o}.zero_grad()")
    lines += [f"        {loss} = {c}({m}({x}), {y}){d(COMMENT)}", f"        {loss}.backward()"]
    if zero == "between":
        lines.append(f"        {o}.zero_grad()")
    lines.append(f"        {o}.step()")
    extra = d(EXTRA)
    if extra:
        lines.append(f"        {extra}")
    want = {"none": {"TM201"}, "between": {"TM202"}, "epoch": {"TM202"}, "before": set()}[zero]
    return lines, want


def _device(d, moved, names):
    m, o, c, ld, x, y, loss, ep = names
    lines = [
        "import torch",
        "from torch import nn",
        "from torch.utils.data import DataLoader, TensorDataset",
        "",
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        f"{m} = nn.Linear(4, 1).to(device)",
        f"{o} = torch.optim.SGD({m}.parameters(), lr=0.1)",
        f"{ld} = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)",
        f"for {x}, {y} in {ld}:",
    ]
    if moved:
        lines.append(f"    {x}, {y} = {x}.to(device), {y}.to(device)")
    lines += [f"    {o}.zero_grad()", f"    {loss} = nn.functional.mse_loss({m}({x}), {y})", f"    {loss}.backward()", f"    {o}.step()"]
    return lines, set() if moved else {"TM101"}


def _softmax(d, soft, names):
    m, o, c, ld, x, y, loss, ep = names
    inp = f"torch.softmax({m}({x}), dim=1)" if soft else f"{m}({x})"
    lines = [
        "import torch",
        "from torch import nn",
        "",
        f"{m} = nn.Linear(4, 3)",
        f"{c} = nn.CrossEntropyLoss()",
        f"{o} = torch.optim.SGD({m}.parameters(), lr=0.1)",
        f"{x} = torch.randn(8, 4)",
        f"{y} = torch.randint(0, 3, (8,))",
        f"for {ep} in range(2):",
        f"    {o}.zero_grad()",
        f"    {loss} = {c}({inp}, {y}){d(COMMENT)}",
        f"    {loss}.backward()",
        f"    {o}.step()",
    ]
    return lines, {"TM501"} if soft else set()


def _workers(d, guarded, names):
    m, o, c, ld, x, y, loss, ep = names
    lines = [
        "import torch",
        "from torch.utils.data import DataLoader, TensorDataset",
        "",
        f"{ld} = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2, num_workers=2)",
    ]
    body = [f"for ({x},) in {ld}:", f"    print({x}.shape)"]
    if guarded:
        lines += ['if __name__ == "__main__":'] + ["    " + b for b in body]
    else:
        lines += body
    return lines, set() if guarded else {"TM301"}


def _model(d, with_device, names):
    m, o, c, ld, x, y, loss, ep = names
    dev = f", device={x}.device" if with_device else ""
    lines = [
        "import torch",
        "from torch import nn",
        "",
        "",
        f"class {m.capitalize()}Net(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(4, 4)",
        "",
        f"    def forward(self, {x}):",
        f"        {y} = torch.zeros({x}.shape[0], 4{dev})",
        f"        return self.fc({x}) + {y}",
        "",
        "",
        f"{o} = {m.capitalize()}Net().to('cuda')",
    ]
    return lines, set() if with_device else {"TM102"}


def _finetune(d, strict, names):
    m, o, c, ld, x, y, loss, ep = names
    lines = [
        "import torch",
        "import torchvision",
        "from torch import nn",
        "",
        f"{m} = torchvision.models.resnet18()",
        f"{m}.fc = nn.Linear({m}.fc.in_features, 10)",
        f"{m}.load_state_dict(torch.load('pretrained.pt'){'' if strict else ', strict=False'})",
    ]
    return lines, {"TM401"} if strict else set()


TEMPLATES = [(_loop, st.sampled_from(["none", "before", "between", "epoch"])), (_device, st.booleans()),
             (_softmax, st.booleans()), (_workers, st.booleans()), (_model, st.booleans()), (_finetune, st.booleans())]


@st.composite
def programs(draw):
    make, variant = draw(st.sampled_from(TEMPLATES))
    names = draw(st.lists(NAMES, min_size=8, max_size=8, unique=True))
    lines, want = make(draw, draw(variant), names)
    exact = True  # only names, comments, layout and bytes changed: the finding must stay
    if draw(st.booleans()):  # blank lines here and there
        for _ in range(draw(st.integers(0, 3))):
            i = draw(st.integers(0, len(lines)))
            lines.insert(i, "")
    if draw(st.integers(0, 4)) == 0:  # everything inside a function that is called
        lines = [ln for ln in lines if ln.startswith(("import ", "from "))] + ["", "", "def main():"] + [
            "    " + ln if ln else "" for ln in lines if not ln.startswith(("import ", "from "))
        ] + ["", "", "main()"]
        exact = False
    if draw(st.integers(0, 4)) == 0:  # an unrelated statement somewhere at the top level
        tops = [i for i in range(3, len(lines) + 1) if i == len(lines) or lines[i][:1] not in ("", " ")]
        lines.insert(draw(st.sampled_from(tops)), draw(st.sampled_from(["x_unrelated = [1, 2, 3]", "def helper():\n    return 1"])))
        exact = False
    trail = draw(st.sampled_from(["", " ", "\t"]))
    text = "\n".join(ln + (trail if ln and draw(st.booleans()) else "") for ln in lines) + draw(st.sampled_from(["\n", "", "\n\n", "\n  "]))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    raw = text.replace("\n", nl).encode()
    if draw(st.integers(0, 5)) == 0:
        raw = codecs.BOM_UTF8 + raw
    return raw, want, exact


def _git_apply_check(raw: bytes, diff: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.py"), "wb") as f:
            f.write(raw)
        p = subprocess.run(["git", "apply", "--check", "-"], input=diff, cwd=d, capture_output=True)
        assert p.returncode == 0, (p.stderr, diff)


def _apply(raw: bytes, diff: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.py"), "wb") as f:
            f.write(raw)
        subprocess.run(["git", "apply", "-"], input=diff, cwd=d, check=True, capture_output=True)
        with open(os.path.join(d, "t.py"), "rb") as f:
            return f.read()


@given(programs(), st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_generated_torch_programs_reach_the_rules_and_fix_cleanly(prog, unsafe):
    raw, want, exact = prog
    ast.parse(raw.decode("utf-8-sig"))  # the generator makes valid Python
    r = process_source(decode_source("t.py", raw), Options(unsafe_fixes=unsafe))
    assert r.error is None, r.error
    if r.stage == STAGE_PREFILTER:
        # the gates stop only files where no rule can report: a look-alike may stop there
        # (every factory says device=), a bug never; and with no gate the same holds
        assert not want, "a buggy example never reached the rules"
        ref = process_source(decode_source("t.py", raw), Options(unsafe_fixes=unsafe, shortcuts=False))
        assert not ref.findings and not ref.changed, [f.code for f in ref.findings]
        return
    if exact:
        assert want <= {f.code for f in r.findings}, (want, [f.code for f in r.findings], raw.decode())
    if not r.changed:
        return
    _git_apply_check(raw, r.diff)
    new = _apply(raw, r.diff)
    ast.parse(new.decode("utf-8-sig"))
    again = process_source(decode_source("t.py", new), Options(unsafe_fixes=unsafe))
    assert again.error is None and not again.changed, (again.error, again.diff)
