"""TM102 tensor-created-without-device: one snippet per shape it reports, and look-alikes
that must produce no finding at all (each of them legal on a GPU)."""

import ast
import pathlib
import os
import textwrap

import pytest

from torchmend.engine import Options, process_text
from tests.patching import apply_patch

MOD_HEAD = """\
import torch
import torch.nn as nn
from torch import Tensor

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def run(body: str, unsafe: bool = True, head: str = MOD_HEAD, path: str = "t.py"):
    src = head + textwrap.dedent(body)
    res = process_text(path, src, Options(unsafe_fixes=unsafe))
    assert res.error is None, res.error
    out = apply_patch(src.encode(), res.diff).decode() if res.changed else src
    if res.changed:  # idempotent
        again = process_text(path, out, Options(unsafe_fixes=unsafe))
        assert again.error is None and not again.changed, again.diff
    return [f for f in res.findings if f.code == "TM102"], out, src


def codes(findings):
    return sorted(f.code for f in findings)


def fixable(findings):
    return [f for f in findings if f.applied]


def added(src: str, out: str) -> list[str]:
    """Lines the fix inserted or rewrote (stripped), in order."""
    from torchmend.gitdiff import unified_diff

    diff = unified_diff(src.encode(), out.encode(), "t.py").decode()
    return [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


# ----------------------------------------------------------------------------- reported, with a fix


def test_lstm_h0_unsafe_fix():
    body = """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(3, 4, batch_first=True)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), 4)
                return self.rnn(x, (h0, h0))
        """
    f, out, src = run(body, unsafe=False)
    assert codes(f) == ["TM102"] and out == src  # unsafe: not applied by default
    assert "hidden state of `self.rnn`" in f[0].message
    f, out, src = run(body)
    assert added(src, out) == ["h0 = torch.zeros(1, x.size(0), 4, device=x.device)"]


HIDDEN_TUPLE = """
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 16)
            self.lstm = nn.LSTM(16, 32, batch_first=True)

        def init_hidden(self, b):
            return (torch.zeros(1, b, 32), torch.zeros(1, b, 32))

        def forward(self, x):
            {hidden}
            out, _ = self.lstm(self.emb(x), {given})
            return out
    """


@pytest.mark.parametrize("hidden,given,fixed", [
    # the hidden state's tuple bound to a name first
    ("hidden = (torch.zeros(1, x.size(0), 32), torch.zeros(1, x.size(0), 32))", "hidden", True),
    # returned by a method, kept whole
    ("hidden = self.init_hidden(x.size(0))", "hidden", False),
    ("pass", "self.init_hidden(x.size(0))", False),
    # kept in an attribute (the PyTorch tutorial's BiLSTM-CRF)
    ("self.hidden = self.init_hidden(x.size(0))", "self.hidden", False),
])
def test_rnn_hidden_state_tuple_made_on_the_cpu(hidden, given, fixed):
    f, out, src = run(HIDDEN_TUPLE.format(hidden=hidden, given=given))
    assert codes(f) == ["TM102", "TM102"], [x.message for x in f]
    assert all("hidden state of `self.lstm` (LSTM)" in x.message for x in f)
    assert (out != src) is fixed  # a device to add only where the input is at hand


@pytest.mark.parametrize("hidden,given", [
    ("hidden = self.init_hidden(x.size(0))", "None"),  # made, not given
    ("hidden = tuple(h.to(x.device) for h in self.init_hidden(x.size(0)))", "hidden"),  # moved first
    ("hidden = self.init_hidden(x.size(0)); print(len(hidden))", "None"),  # read, not given
    # moved before use: on a GPU (a conditional move), or by a later assignment
    ("hidden = self.init_hidden(x.size(0))\n            if x.is_cuda:\n"
     "                hidden = tuple(h.cuda() for h in hidden)", "hidden"),
    ("self.hidden = self.init_hidden(x.size(0))\n            self.hidden = tuple(h.to(x.device) for h in self.hidden)",
     "self.hidden"),
])
def test_rnn_hidden_state_tuple_lookalikes(hidden, given):
    f, out, src = run(HIDDEN_TUPLE.format(hidden=hidden, given=given))
    assert f == [] and out == src


LOSS_MODULE = """
    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(300, 128)
            self.loss = {loss}

        def forward(self, x1, x2):
            predict = self.enc(x1) @ self.enc(x2).t()
            target = torch.arange(x1.size(0))
            return self.loss(predict, {target})
    """


@pytest.mark.parametrize("loss", ["nn.CrossEntropyLoss()", "nn.NLLLoss(reduction='sum')"])
def test_cpu_target_meets_the_input_in_a_loss_module(loss):
    f, out, src = run(LOSS_MODULE.format(loss=loss, target="target"))
    assert codes(f) == ["TM102"] and "in `self.loss` (" in f[0].message
    assert added(src, out) == ["target = torch.arange(x1.size(0), device=x1.device)"]


@pytest.mark.parametrize("loss,target", [
    ("nn.CTCLoss()", "target"),  # its lengths and targets may stay on the CPU
    ("nn.CrossEntropyLoss()", "target.to(predict.device)"),  # moved first
])
def test_loss_module_lookalikes(loss, target):
    f, out, src = run(LOSS_MODULE.format(loss=loss, target=target))
    assert f == [] and out == src


LIGHTNING = """\
import torch
from torch import nn
import pytorch_lightning as pl


class Enc(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(300, 128)
        self.lstm = nn.LSTM(8, 16, 2)
        self.ce = nn.CrossEntropyLoss()

    def forward(self, x1, x2):
        return self.enc(x1) @ self.enc(x2).t()

    def training_step(self, batch, batch_idx):
        x1, x2 = batch
        predict = self(x1, x2)
        {step}
"""


@pytest.mark.parametrize("step,fixed", [
    # the Trainer moves the module and the batch: a target made on the CPU meets the output
    ("target = torch.arange(x1.size(0))\n        return self.ce(predict, target)",
     "target = torch.arange(x1.size(0), device=x1.device)"),
    # no input at hand in the factory's arguments: said, not fixed
    ("target = torch.tensor([0, 1, 2, 3])\n        return self.ce(predict, target)", None),
    # the length of a device tensor (train-CLIP's contrastive labels)
    ("target = torch.arange(len(predict))\n        return self.ce(predict, target)",
     "target = torch.arange(len(predict), device=predict.device)"),
])
def test_cpu_tensor_in_a_lightning_step(step, fixed):
    # no device is named anywhere: Lightning's Trainer places the module
    f, out, src = run("", head=LIGHTNING.format(step=step))
    assert codes(f) == ["TM102"] and "in `training_step`" in f[0].message
    assert added(src, out) == ([fixed] if fixed else [])


@pytest.mark.parametrize("step", [
    "target = torch.arange(x1.size(0), device=self.device)\n        return self.ce(predict, target)",
    "target = torch.arange(x1.size(0)).type_as(predict).long()\n        return self.ce(predict, target)",
    "self.log('n', torch.tensor(x1.size(0)))\n        return predict.sum()",
])
def test_lightning_step_lookalikes(step):
    f, out, src = run("", head=LIGHTNING.format(step=step))
    assert f == [] and out == src


def test_plain_module_step_method_is_not_a_root():
    # a method named like a step in a plain module runs only where the code calls it
    f, out, src = run("", head=LIGHTNING.format(step="return self.ce(predict, torch.arange(x1.size(0)))").replace(
        "pl.LightningModule", "nn.Module"))
    assert f == []


TEMPLATE_LOSS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Base(nn.Module):
    def forward(self, prediction: torch.Tensor, target: torch.Tensor):
        return self._forward(prediction, target)

    def _forward(self, prediction, target):
        raise NotImplementedError


class MyLoss(Base):
    def _forward(self, prediction, target):
        target_new = F.one_hot(torch.tensor([int(v) for v in target]), 3)
        return F.cross_entropy(prediction, target_new.float())


device = torch.device("cuda")
"""


def test_method_a_base_forward_calls_on_self_runs_with_the_module():
    # ``Base.forward`` calls ``self._forward``: the subclass's override runs there
    f, out, src = run("", head=TEMPLATE_LOSS)
    assert codes(f) == ["TM102"] and "in `_forward`" in f[0].message
    # a method of that name in an unrelated class is not reached
    f, out, src = run("", head=TEMPLATE_LOSS.replace("class MyLoss(Base):", "class MyLoss(nn.Module):"))
    assert f == []


def test_arange_uses_annotated_tensor_param():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, n_steps: int, ids: Tensor):
                pos = torch.arange(n_steps)
                return ids + pos
        """
    )
    assert added(src, out) == ["pos = torch.arange(n_steps, device=ids.device)"]


def test_randn_follows_sized_tensor_in_helper_method():
    f, out, src = run(
        """
        class VAE(nn.Module):
            def sample(self, mu, std):
                eps = torch.randn(std.size())
                return mu + eps * std

            def forward(self, x):
                return self.sample(x, x.exp())
        """
    )
    assert added(src, out) == ["eps = torch.randn(std.size(), device=std.device)"]


def test_trailing_comma_and_kwargs_kept():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x):
                mask = torch.ones(
                    x.shape[0],
                    dtype=torch.bool,
                )
                return x * mask
        """
    )
    assert "dtype=torch.bool, device=x.device,\n" in out
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x):
                return x * torch.ones(x.shape[0], 1 )
        """
    )
    assert added(src, out) == ["return x * torch.ones(x.shape[0], 1, device=x.device )"]


def test_multiple_factories_and_from_import():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x):
                a = Z(3)
                b = torch.linspace(0, 1, 5)
                c = torch.tensor([1.0, 2.0])
                x = x.view(-1)
                return x[:3] + a, x[:5] * b, x[:2] - c
        """,
        head=MOD_HEAD + "from torch import zeros as Z\n",
    )
    assert codes(f) == ["TM102"] * 3
    assert added(src, out) == [
        "a = Z(3, device=x.device)",
        "b = torch.linspace(0, 1, 5, device=x.device)",
        "c = torch.tensor([1.0, 2.0], device=x.device)",
    ]


def test_device_source_is_read_where_the_factory_runs():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x, xs):
                x = x.view(-1)
                sizes = torch.tensor([t.shape[0] for t in xs])
                return x[:2] + sizes
        """
    )
    # `t` exists in the comprehension only: the device comes from the parameter `x`
    assert added(src, out) == ["sizes = torch.tensor([t.shape[0] for t in xs], device=x.device)"]


def test_a_device_keyword_of_a_nested_call_is_not_the_factorys():
    # the text screen that spares parsing chunks whose factories all say device= must
    # not be fooled by a nested call's keyword or a string
    f, out, src = run(
        """
        def pick(device=None):
            return torch.float32

        class M(nn.Module):
            def forward(self, x):
                a = torch.zeros(x.size(0), dtype=pick(device=x.device))
                b = torch.tensor([1.0, 2.0]) if "device=" else None
                return x[:, 0] + a, x[0, :2] * b
        """
    )
    assert codes(f) == ["TM102", "TM102"]


def test_mask_from_lengths_comparison():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x, lengths):
                T = x.size(1)
                mask = torch.arange(T)[None, :] < lengths[:, None]
                return x * mask[..., None]
        """
    )
    assert codes(f) == ["TM102"]
    assert added(src, out) == ["mask = torch.arange(T, device=x.device)[None, :] < lengths[:, None]"]


def test_index_select_with_a_cpu_index_needs_one_device():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x):
                return x.index_select(1, torch.arange(0, x.size(1), 2))
        """
    )
    assert codes(f) == ["TM102"] and "index_select" in f[0].message
    assert added(src, out) == ["return x.index_select(1, torch.arange(0, x.size(1), 2, device=x.device))"]


def test_value_through_a_tuple_returned_by_a_helper():
    f, out, src = run(
        """
        def make(n):
            ids = torch.arange(n)
            return ids, n

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)

            def forward(self, x):
                ids, n = make(x.size(1))
                return self.emb(ids) + x[..., None]
        """
    )
    assert codes(f) == ["TM102"] and "self.emb" in f[0].message and not fixable(f)  # no tensor in `make`


# ----------------------------------------------------------------------------- reported, no fix


def test_optional_input_is_report_only():
    f, out, src = run(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x=None):
                h = self.fc(x)
                return h + torch.zeros(4)
        """
    )
    assert codes(f) == ["TM102"] and not fixable(f) and out == src


def test_mask_built_by_a_module_level_helper():
    f, out, src = run(
        """
        def causal_mask(T):
            return torch.triu(torch.ones(T, T), diagonal=1).bool()

        class Attn(nn.Module):
            def forward(self, q, k):
                scores = q @ k.transpose(-2, -1)
                return scores.masked_fill(causal_mask(q.size(1)), float("-inf")).softmax(-1)
        """
    )
    assert codes(f) == ["TM102"] and "masked_fill" in f[0].message and not fixable(f)


def test_module_instantiated_in_forward_and_plain_attribute_report_only():
    f, out, src = run(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(4)
                self.register_buffer("offset", torch.zeros(4))

            def forward(self, x):
                y = nn.BatchNorm1d(4)(x)
                z = nn.ReLU()(x)
                return x * self.scale + self.offset + y + z
        """
    )
    assert codes(f) == ["TM102", "TM102"] and not fixable(f) and out == src
    msgs = " ".join(x.message for x in f)
    assert "instantiated inside `forward`" in msgs and "register_buffer" in msgs and "`self.scale`" in msgs


def test_plain_attribute_built_by_a_static_builder_and_indexed_on_the_device():
    f, out, src = run(
        """
        class Schedule(nn.Module):
            def __init__(self, T=10):
                super().__init__()
                self.alphas = self.make(T)

            @staticmethod
            def make(T):
                betas = torch.linspace(1e-4, 0.02, T)
                return torch.cumprod(1 - betas, dim=0)

            def forward(self, x):
                t = torch.randint(0, 10, (x.size(0),), device=x.device)
                a = self.alphas.gather(0, t)
                return x * a[:, None]
        """
    )
    assert codes(f) == ["TM102"] and "`self.alphas`" in f[0].message and not fixable(f)
    assert f[0].line == 10  # the assignment in __init__


def test_schedule_derived_in_init_and_indexed_with_device_timesteps():
    f, out, src = run(
        """
        class Diffusion(nn.Module):
            def __init__(self, net, T=100):
                super().__init__()
                self.net = net
                self.betas = torch.linspace(1e-4, 0.02, T)
                self.alpha_hat = torch.cumprod(1.0 - self.betas, dim=0)

            def noise(self, x, t):
                a = self.alpha_hat[t][:, None, None, None]
                return a.sqrt() * x

            def forward(self, x):
                t = torch.randint(1, 100, (x.shape[0],), device=x.device)
                return self.net(self.noise(x, t), t)
        """
    )
    # the CPU table indexed with device timesteps fails (and would meet `x` right after)
    assert codes(f) == ["TM102"] and "`self.alpha_hat`" in f[0].message and not fixable(f)


def test_legacy_constructor_has_no_device_keyword():
    f, out, src = run(
        """
        class M(nn.Module):
            def forward(self, x):
                return x.view(-1) + torch.FloatTensor([1.0, 2.0])
        """
    )
    assert codes(f) == ["TM102"] and not fixable(f) and "takes no `device=`" in f[0].message


# ----------------------------------------------------------------------------- look-alikes

TM102_LOOKALIKES = {
    "device_following": """
        class M(nn.Module):
            def forward(self, x):
                a = x.new_zeros(3)
                b = torch.zeros_like(x)
                c = torch.randn_like(x)
                d = torch.arange(4, device=x.device)
                e = torch.ones(3).to(x)
                f = torch.ones(3).float().cuda()
                g = torch.zeros(2).type_as(x)
                h = torch.tensor(2.0)
                k = torch.empty(3)
                k = k.to(x.device)
                return x + a + b + c + d + e + f + g + h + k
        """,
    "pack_padded_lengths": """
        from torch.nn.utils.rnn import pack_padded_sequence

        class M(nn.Module):
            def forward(self, x):
                lengths = torch.full((x.size(0),), x.size(1), dtype=torch.long)
                p = pack_padded_sequence(x, lengths, batch_first=True)
                q = pack_padded_sequence(x, lengths=torch.tensor([3, 2]), batch_first=True)
                return p, q
        """,
    "outside_forward": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mask", torch.tril(torch.ones(4, 4)))

            def forward(self, x):
                return x @ self.mask

            def unused_helper(self, x):
                return x + torch.zeros(3)
        """,
    "not_a_module": """
        class Sampler:
            def forward(self, x):
                return x + torch.zeros(3)
        """,
    "factory_kwargs": """
        class M(nn.Module):
            def forward(self, x, **kw):
                return x + torch.zeros(3, **kw)
        """,
    "factory_kwargs_dict_with_device": """
        class M(nn.Module):
            def forward(self, x):
                factory_kwargs = {"device": x.device, "dtype": x.dtype}
                return x + torch.zeros(3, **factory_kwargs)
        """,
    "param_free_layer_in_forward": """
        class M(nn.Module):
            def forward(self, x):
                return nn.Dropout(0.1)(nn.ReLU()(x))
        """,
    "cpu_index_into_device_tensor": """
        class M(nn.Module):
            def forward(self, x):
                mask = torch.ones(x.shape[0], dtype=torch.bool)
                idx = torch.arange(x.size(1))
                x[idx] = 0.0
                return x[mask], x[:, idx], x[:, torch.arange(2)]
        """,
    "zero_dim_values": """
        class M(nn.Module):
            def forward(self, x):
                if self.training and torch.rand([]) < 0.1:
                    return x
                a = torch.ones(3)
                return x * torch.tensor(2.0) + a.sum() + torch.zeros(4).mean() - torch.full((), 1.0)
        """,
    "python_numbers": """
        class M(nn.Module):
            def forward(self, x):
                if torch.rand(1) < 0.5:
                    x = x.flip(-1)
                scale = torch.empty(1).uniform_(0.5, 1.5).item()
                n = int(torch.randint(1, 4, (1,)))
                k = torch.linspace(0, 1, 5).tolist()
                return x * scale * n * k[2]
        """,
    "integer_index_may_be_zero_dim": """
        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.temps = torch.linspace(0.04, 0.07, 30)

            def forward(self, out, epoch: int):
                return (out - out.mean()) / self.temps[epoch]
        """,
    "returned_unmet": """
        class M(nn.Module):
            def forward(self, x):
                return torch.zeros(3)
        """,
    "moved_by_caller": """
        def causal_mask(T):
            return torch.triu(torch.ones(T, T), diagonal=1).bool()

        class Attn(nn.Module):
            def forward(self, scores):
                mask = causal_mask(scores.size(-1)).to(scores.device)
                return scores.masked_fill(mask, 0.0)
        """,
    "rebound_to_the_device_before_use": """
        class M(nn.Module):
            def forward(self, x, lengths=None):
                if lengths is None:
                    m = torch.ones(x.shape[:2])
                    m = m.unsqueeze(-1)
                    m = m.to(x.device)
                else:
                    m = lengths[:, None, None] > 0
                return x * m
        """,
    "table_registered_as_buffer": """
        class PE(nn.Module):
            def __init__(self, n=8, d=4):
                super().__init__()
                pe = self.table(n, d)
                self.register_buffer("pe", pe, persistent=False)

            @staticmethod
            def table(n, d):
                pos = torch.arange(n).float()[:, None]
                return torch.sin(pos * torch.ones(d))

            def forward(self, x):
                return x + self.pe[: x.size(1)]
        """,
    "table_as_parameter": """
        class PE(nn.Module):
            def __init__(self, n=8, d=4):
                super().__init__()
                enc = torch.zeros(n, d)
                enc = enc - enc.mean()
                enc = nn.Parameter(enc, requires_grad=False)
                self.enc = enc

            def forward(self, x):
                return x + self.enc
        """,
    "attribute_moved_in_forward": """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = torch.ones(4)

            def forward(self, x):
                self.table = self.table.to(x.device)
                return x * self.table
        """,
    "moved_when_the_input_is_on_cuda": """
        class M(nn.Module):
            def forward(self, x, label):
                one_hot = torch.zeros(x.size())
                if x.is_cuda:
                    one_hot = one_hot.cuda()
                one_hot.scatter_(1, label.view(-1, 1), 1)
                index = torch.LongTensor([0, 1]).cuda() if x.is_cuda else torch.LongTensor([0, 1])
                h = torch.zeros(x.shape)
                h = h.cuda() if x.is_cuda else h
                return x * one_hot + x.index_select(1, index) + h
        """,
    "input_may_be_a_pil_image": """
        class Jitter(nn.Module):
            def forward(self, img):
                if not isinstance(img, torch.Tensor):
                    return img
                noise = torch.randn(img.shape)
                return img + noise
        """,
    "inside_torch_device_context": """
        class M(nn.Module):
            def forward(self, x):
                with torch.device(x.device):
                    z = torch.zeros(x.shape)
                return x + z
        """,
    "tracing_branch": """
        class M(nn.Module):
            def forward(self, x):
                if torch.jit.is_tracing():
                    return x + torch.zeros(x.shape)
                return x
        """,
    "copied_into_a_device_tensor": """
        class M(nn.Module):
            def forward(self, x):
                v = torch.empty([x.size(0), 2]).normal_()
                x[:, :2] = v
                return x
        """,
    "layer_moved_after_construction": """
        class M(nn.Module):
            def forward(self, x):
                lin = nn.Linear(4, 4).to(x.device)
                return lin(x)
        """,
    "layer_moved_in_place": """
        def check_cuda(m, use_cuda):
            return m.cuda() if use_cuda else m

        class M(nn.Module):
            def forward(self, x):
                lin = nn.Linear(4, 4)
                lin.to(x.device)
                if not hasattr(self, "head"):
                    self.head = nn.Linear(4, 2)
                    self.head = check_cuda(self.head, x.is_cuda)
                return self.head(lin(x))
        """,
    "layer_norm_without_weights": """
        class M(nn.Module):
            def forward(self, x):
                return nn.LayerNorm(4, elementwise_affine=False)(x)
        """,
}


@pytest.mark.parametrize("name", sorted(TM102_LOOKALIKES))
def test_tm102_lookalike(name):
    f, out, src = run(TM102_LOOKALIKES[name])
    assert f == [], [x.message for x in f]
    assert out == src


def test_test_files_are_skipped():
    body = """
        class M(nn.Module):
            def forward(self, x):
                return x + torch.ones(x.size(1))
        """
    assert codes(run(body)[0]) == ["TM102"]
    for path in ("tests/test_model.py", "pkg/tests/model.py", "model_test.py"):
        assert run(body, path=path)[0] == []


def test_cpu_only_script_is_not_flagged():
    src = """\
import torch
import torch.nn as nn

class M(nn.Module):
    def forward(self, x):
        return x + torch.zeros(x.size(1))

print(M()(torch.randn(2, 3)))
"""
    res = process_text("t.py", src, Options(unsafe_fixes=True))
    assert res.findings == [] and not res.changed


# ----------------------------------------------------------------------------- the whole-file gate

ROPE = """\
class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        rope_init_fn = self.compute_default_rope_parameters
        inv_freq, _ = rope_init_fn(dim)
        self.register_buffer("inv_freq", inv_freq)

    @staticmethod
    @some_decorator(version="5")
    def compute_default_rope_parameters(
        dim, base=10000.0,
    ) -> tuple:
        # a comment at any indent
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        return inv_freq, 1.0

    def forward(self, x):
        return x * self.inv_freq
"""


@pytest.mark.parametrize(
    "body, head, reported",
    [
        # the only factory call is aliased: the gate reads the alias from the import
        ("class M(nn.Module):\n    def forward(self, x):\n        return x + Z(x.size(1))\n",
         MOD_HEAD + "from torch import (\n    ones,  # a comment\n    zeros as Z,\n)\n", True),
        ("class M(nn.Module):\n    def forward(self, x):\n        return x + zeros(x.size(1))\n",
         MOD_HEAD + "from torch import zeros\n", True),
        # every factory says device=, or is registered: nothing to report, not analysed
        ("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
         "        self.register_buffer('b', torch.zeros(3))\n"
         "    def forward(self, x):\n        return x + torch.zeros(3, device=x.device) + self.b\n", MOD_HEAD, False),
        # a layer built in forward passes the gate (and is reported)
        ("class M(nn.Module):\n    def forward(self, x):\n        return nn.Linear(3, 4)(x)\n", MOD_HEAD, True),
        # 0-d or of unknown shape (tensor of a name or a number, a size of ()): mixes like a number
        ("class M(nn.Module):\n    def forward(self, x):\n        return x * torch.tensor(self.scale) + torch.as_tensor(\n"
         "            2.0) + torch.rand(()) + torch.zeros([ ]) + torch.randn()\n", MOD_HEAD, False),
        # a size that is not (): at least 1-d
        ("class M(nn.Module):\n    def forward(self, x):\n        return x + torch.rand((x.size(1),))\n", MOD_HEAD, True),
        # no ``def forward`` in the file (the word alone): a training script's helper called
        # from main is no module's code
        ("def noise(x):\n    return x + torch.randn(x.size(1))\n\n\ndef main(model, x):\n"
         "    model.to('cuda')\n    return noise(x.cuda())  # the forward pass, by model.forward\n", MOD_HEAD, False),
        # a static method no code of the file calls (a rotary embedding's ``rope_init_fn =
        # self.compute_default_rope_parameters``): what it makes meets nothing here
        (ROPE, MOD_HEAD, False),
        # called from forward, its result meets the input
        (ROPE.replace("inv_freq, _ = rope_init_fn(dim)", "inv_freq, _ = rope_init_fn(dim)\n        self.extra, _ = "
                      "self.compute_default_rope_parameters(dim)")
         .replace("return x * self.inv_freq", "return x * self.compute_default_rope_parameters(x.size(-1) * 2)[0]"),
         MOD_HEAD, True),
        # a forward written with other spacing, or defined by a same-file base
        ("class M(nn.Module):\n    async  def \tforward(self, x):\n        return x + torch.rand(x.size(1))\n",
         MOD_HEAD, True),
    ],
)
def test_whole_file_gate_agrees_with_the_rule(body, head, reported):
    """TM102's gate (the chunk screens on the whole text) lets through every file the
    rule reports in, and a file it stops has no finding with every shortcut off."""
    from torchmend.rules.tm102_tensor_created_without_device import TensorCreatedWithoutDevice

    src = head + body
    gate = TensorCreatedWithoutDevice.may_match(src)
    ref = process_text("t.py", src, Options(fix=False, shortcuts=False))
    found = [f for f in ref.findings if f.code == "TM102"]
    assert bool(found) == reported
    assert gate == reported
    shipped = process_text("t.py", src, Options(fix=False))
    assert [(f.line, f.message) for f in shipped.findings if f.code == "TM102"] == [(f.line, f.message) for f in found]


@pytest.mark.parametrize(
    "change, screened",
    [
        (None, True),
        # called by its name (through self, or as a plain function elsewhere)
        (("return x * self.inv_freq", "return x * self.compute_default_rope_parameters(4)[0]"), False),
        (("return x * self.inv_freq", "return x * compute_default_rope_parameters(4)[0]"), False),
        # not a static method: its ``self`` may carry the tensor to an attribute
        (("    @staticmethod\n", ""), False),
        (("    @staticmethod\n", "    @classmethod\n"), False),
        # a ``global`` or an indented class statement anywhere: the tensor may leave the function
        (("class Rotary", "X = None\n\n\ndef f():\n    global X\n\n\nclass Rotary"), False),
        (("        return inv_freq, 1.0", "        class Holder(nn.Module):\n            pass\n        return inv_freq, 1.0"),
         False),
        # a factory past the end of the method's body (a line at its indent comes first)
        (("        return inv_freq, 1.0\n", "        return inv_freq, 1.0\n    table = torch.arange(4)\n"), False),
    ],
)
def test_a_static_method_no_code_calls_is_screened_out(change, screened):
    """The factory screen leaves out a factory in the body of a ``@staticmethod`` that no
    code of the file calls (with no ``global`` and no nested class in the file): the rule
    cannot report what it makes.  Any of those conditions missing, or the factory not
    plainly in its body, and the factory passes the screen."""
    from torchmend.rules._tensor_device import _factory_screen, factory_words

    src = MOD_HEAD + ROPE
    if change is not None:
        assert change[0] in src
        src = src.replace(change[0], change[1], 1)
    assert _factory_screen(factory_words())(src, 0, len(src)) is not screened
    ref = process_text("t.py", src, Options(fix=False, shortcuts=False))
    shipped = process_text("t.py", src, Options(fix=False))
    assert [(f.line, f.message) for f in shipped.findings] == [(f.line, f.message) for f in ref.findings]


@pytest.mark.parametrize(
    "extra, discounted",
    [
        ("", True),
        ("def g(m):\n    return super(Base, m)._init_weights(m)\n", True),
        ("def g(m):\n    m._init_weights(m)\n", False),  # a real call
        ("super = object\n", False),  # ``super`` bound: it may be a same-file class
        ("class super:\n    pass\n", False),
        ("from builtins import super\n", False),
    ],
)
def test_a_call_through_super_is_not_a_call_of_a_same_file_method(extra, discounted):
    """``super()._init_weights(module)`` in an override is no call the semantic model
    finds (``super()`` is no instance of a same-file class): the screens do not count it
    as a call of ``_init_weights``, unless ``super`` may be something else in the file."""
    from torchmend.rules._tensor_device import _called_elsewhere

    src = ("class Base(Lib):\n    def _init_weights(self, m):\n        super()._init_weights(m)\n"
           "        m.ids = torch.arange(m.n)\n\n\n" + extra)
    assert _called_elsewhere(src, "_init_weights") is not discounted
    full = MOD_HEAD + src + "\n\nclass M(Base):\n    def forward(self, x):\n        return x + 1\n"
    ref = process_text("t.py", full, Options(fix=False, shortcuts=False))
    shipped = process_text("t.py", full, Options(fix=False))
    assert [(f.line, f.message) for f in shipped.findings] == [(f.line, f.message) for f in ref.findings]


@pytest.mark.parametrize("head", ["def forward", "def  forward", "async def\tforward", "def \\\n        forward"])
def test_factory_screen_finds_forward_however_it_is_spaced(head):
    """A method nothing calls by name is passed by the chunk screen when its class has a
    ``forward`` (``in_module`` holds for it), whatever the spacing of that ``def``."""
    from torchmend.rules._tensor_device import _factory_screen, factory_words

    text = (f"class M(nn.Module):\n    def reset(self):\n        self.grid = torch.zeros(3)\n\n"
            f"    {head}(self, x):\n        return x + self.grid\n")
    ast.parse(text)
    assert _factory_screen(factory_words())(text, 0, len(text))
    assert not _factory_screen(factory_words())(text.replace("forward", "forwards"), 0, len(text) + 1)


@pytest.mark.parametrize("call, passes", [
    ("torch.tensor(scale)", False), ("torch.tensor(-1.0, dtype=x.dtype)", False), ("torch.as_tensor(n)", False),
    ("torch.rand(())", False), ("torch.zeros([ ])", False), ("torch.ones(\n    (),\n)", False), ("torch.empty()", False),
    # what Analysis.zero_dim may read as at least 1-d passes
    ("torch.tensor([1.0, 2.0])", True), ("torch.tensor(\n    (1, 2))", True), ("torch.tensor(data=v)", True),
    ("torch.as_tensor([v for v in vs])", True), ("torch.zeros((), dtype=t)", True), ("torch.zeros(n)", True),
    ("torch.full((), 2.0)", True), ("torch.Tensor([])", True), ("torch.rand(*shape)", True),
])
def test_factory_screen_reads_dimensions_as_the_rule_does(call, passes):
    """The chunk screen passes a factory call in forward unless ``Analysis.zero_dim``
    could only read it as 0-d or of unknown shape (what the rule never reports)."""
    from torchmend.rules._tensor_device import _factory_screen, factory_words

    text = f"class M(nn.Module):\n    def forward(self, x):\n        return x + {call}\n"
    assert _factory_screen(factory_words())(text, 0, len(text)) is passes


@pytest.mark.parametrize("head, reported", [
    ("import numpy as np\n", False), ("import numpy as np  # arrays\nif True:\n    import numpy as np\n", False),
    ("import numpy\nnp = numpy\n", False),  # (``np`` assigned: screened in, the rule reads numpy.zeros)
    # np is torch: reported, and the screen lets it through; np may be torch (two
    # bindings, a star import): the screen lets it through, the rule decides
    ("import torch as np\n", True), ("import numpy as np\nnp = torch\n", None),
    ("import numpy as np\nfrom torch import *\n", None), ("import numpy as np\nfrom torch import*\n", None),
    ("import numpy as np\nfrom torch import\t*\n", None), ("import numpy as np\nfrom torch import \\\n    *\n", None),
    ("try:\n    import numpy as np\nexcept ImportError:\n    np = torch\n", None),
])
def test_a_numpy_array_in_forward_is_screened_out_only_when_np_is_numpy(head, reported):
    """``np.zeros(n)`` in ``forward`` makes no tensor when ``np`` can only be numpy (bound
    by ``import numpy as np`` alone): the screen skips it; any other binding of ``np``
    leaves it to the rule, which reports it when ``np`` is torch."""
    from torchmend.rules._tensor_device import _factory_screen, factory_words, may_make_a_cpu_tensor

    body = ("class M(nn.Module):\n    def forward(self, x):\n        return x + np.zeros(x.size(1))\n\n\n"
            "net = M().cuda()\n")
    src = "import torch\nimport torch.nn as nn\n" + head + "\n\n" + body
    ref = process_text("t.py", src, Options(fix=False, shortcuts=False, select=frozenset({"TM102"})))
    if reported is not None:
        assert bool(ref.findings) is reported
    screened = _factory_screen(factory_words())(src, 0, len(src))
    assert may_make_a_cpu_tensor(src) is screened
    assert screened is (head not in ("import numpy as np\n", "import numpy as np  # arrays\nif True:\n    import numpy as np\n"))
    assert screened or not ref.findings
    shipped = process_text("t.py", src, Options(fix=False, select=frozenset({"TM102"})))
    assert [(f.line, f.message) for f in shipped.findings] == [(f.line, f.message) for f in ref.findings]


def test_imported_factories_reads_aliases_and_gives_up_on_backslashes():
    from torchmend.rules._tensor_device import _imported_factories

    assert _imported_factories("from torch import nn, zeros as Z, Tensor\n") == {"zeros", "Z", "Tensor"}
    assert _imported_factories("from torch import nn\nimport torch as th\n") == set()
    assert _imported_factories("from torch import nn, \\\n    zeros\n") is None
    # a bracket in a comment of the list does not end it
    assert _imported_factories("from torch import (  # (see below)\n    zeros as Z,\n)\n") == {"zeros", "Z"}


@pytest.mark.parametrize("args, top", [
    ("(3, device='cpu')", "3, device=\"\""),
    ("(n, dtype=d  # (a comment)\n)", "n, dtype=d  \n"),
    ("(x[\")\"], 'a(b', \"\"\"c)\"\"\")", "x, \"\", \"\""),
    ("(n,  # device=d is not here (a comment)\n   dtype=t)", "n,  \n   dtype=t"),
    ("(s = 'it\\'s', r'\\\\')", "s = \"\", r\"\""),  # (a prefix stays)
])
def test_the_screen_reads_arguments_past_strings_and_comments(args, top):
    from torchmend.rules._tensor_device import _parenthesised

    text = "torch.zeros" + args + " + 1"
    got = _parenthesised(text, text.index("("), len(text))
    assert got is not None and got[0] == top and text[got[1]] == ")" and text[got[1] + 1 :] == " + 1"


def test_the_screen_gives_up_on_f_strings_and_open_brackets():
    from torchmend.rules._tensor_device import _parenthesised

    for text in ("torch.zeros(f'{x}')", "torch.zeros(rf'{x}')", "torch.zeros(t'{x}')", "torch.zeros(3, 'open", "torch.zeros(3,"):
        assert _parenthesised(text, text.index("("), len(text)) is None, text


@pytest.mark.parametrize("call, passes", [
    ("torch.zeros(3, 4).to(x.device)", False), ("torch.ones(3).to(device=x.device, dtype=torch.float)", False),
    ("torch.arange(4).cuda()", False), ("torch.rand(3) .type_as(x)", False), ("torch.ones(3).to('cuda')", False),
    ("torch.ones(3).to(**kw)", False),
    # not certainly a move: a dtype change keeps the tensor on the CPU, a name may hold a dtype
    ("torch.ones(3).to(torch.float16)", True), ("torch.ones(3).to(x.dtype)", True), ("torch.ones(3).to(dtype=f(device=1))", True),
    ("torch.ones(3).to(d)", True), ("torch.ones(3).float()", True),
])
def test_factory_screen_skips_a_tensor_moved_at_once(call, passes):
    """A factory whose result is moved by the method called on it at once (``.cuda()``,
    ``.to(x.device)``, ``.to(device=...)``) is never reported: the chunk screen skips it;
    a ``.to(...)`` that may be a dtype change is left to the rule, which reports it."""
    from torchmend.rules._tensor_device import _factory_screen, factory_words

    text = f"class M(nn.Module):\n    def forward(self, x):\n        return x + {call}\n"
    assert _factory_screen(factory_words())(text, 0, len(text)) is passes
    src = "import torch\nimport torch.nn as nn\n\n\n" + text.replace("return x +", "return x.view(-1) +")
    ref = process_text("t.py", src, Options(fix=False, shortcuts=False, select=frozenset({"TM102"})))
    if not passes:
        assert not ref.findings
    elif "float16" in call or "dtype)" in call:
        assert [f.code for f in ref.findings] == ["TM102"]


# (pytorch/pytorch#52186: ``self.lstm = nn.LSTM(...).double()``: the layer is still an
# LSTM, whose hidden state ``h0`` must be on the input's device)
@pytest.mark.parametrize("build", ["nn.LSTM(4, 8, 2, batch_first=True).double()",
                                   "nn.LSTM(4, 8, 2, batch_first=True).to(device).float()"])
def test_an_rnn_converted_when_built_is_still_an_rnn(build):
    f, out, _ = run(f"""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = {build}

            def forward(self, x):
                h0 = torch.zeros(2, x.size(0), 8).double()
                c0 = torch.zeros(2, x.size(0), 8).double()
                out, _ = self.lstm(x, (h0, c0))
                return out
        """)
    assert [x.line for x in f] == [13, 14], [x.message for x in f]
    assert "hidden state of `self.lstm`" in f[0].message
    assert "torch.zeros(2, x.size(0), 8, device=x.device).double()" in out


# (yhenon/pytorch-retinanet losses.py: ``if torch.cuda.is_available(): t = torch.ones(s).cuda() * a
# else: t = torch.ones(s) * a``: the else branch runs only where there is no CUDA device)
@pytest.mark.parametrize(
    "test, branch, reported",
    [("torch.cuda.is_available()", "else", False),
     ("not torch.cuda.is_available()", "body", False),
     ("torch.cuda.is_available()", "body", True),
     ("self.training", "else", True)],
)
def test_a_factory_on_the_cpu_path_of_a_cuda_test(test, branch, reported):
    cpu = "t = torch.ones(x.shape) * x"
    gpu = "t = torch.ones(x.shape).cuda() * x"
    body, orelse = (gpu, cpu) if branch == "else" else (cpu, gpu)
    f, _, _ = run(f"""
        class Loss(nn.Module):
            def forward(self, x):
                if {test}:
                    {body}
                else:
                    {orelse}
                return t.sum()
        """)
    assert len(f) == (1 if reported else 0), [x.message for x in f]


# (yhenon/pytorch-retinanet losses.py: ``regression_losses.append(torch.tensor(0).float())``
# beside ``regression_losses.append(regression_loss.mean())``, then
# ``torch.stack(regression_losses)``: stacking needs one device, 0-d tensors too)
@pytest.mark.parametrize(
    "made, join, reported",
    [("torch.tensor(0).float()", "torch.stack(losses).mean()", True),
     ("torch.zeros(1)", "torch.cat(losses).mean()", True),
     # summed as Python would: a 0-d CPU tensor adds to a device one
     ("torch.tensor(0.0)", "sum(losses)", False),
     # on the input's device already
     ("torch.tensor(0.0, device=x.device)", "torch.stack(losses).mean()", False)],
)
def test_a_cpu_tensor_stacked_with_device_ones(made, join, reported):
    f, out, _ = run(f"""
        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x, ys):
                losses = []
                for y in ys:
                    if y is None:
                        losses.append({made})
                        continue
                    losses.append((self.proj(x) - y).abs().mean())
                return {join}
        """)
    assert len(f) == (1 if reported else 0), [m.message for m in f]
    if reported:
        assert "`torch." in f[0].message and "of `losses`" in f[0].message
        assert "device=x.device" in out


def test_a_word_containing_mps_is_no_mps_device():
    """``json.dumps`` names no MPS device: the CPU path of the CUDA test stays silent."""
    f, _, _ = run("""
        import json


        def log(d):
            return json.dumps(d)


        class Loss(nn.Module):
            def forward(self, x):
                if torch.cuda.is_available():
                    t = torch.ones(x.shape).cuda() * x
                else:
                    t = torch.ones(x.shape) * x
                return t.sum()
        """)
    assert f == [], [m.message for m in f]


def test_a_factory_in_one_branch_does_not_reach_the_other():
    """``mask`` made in the ``if mask is None:`` branch is not what the ``else`` reads
    (there it is the caller's): no finding; the same factory read after the ``if`` is."""
    body = """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x, mask=None):
                if mask is None:
                    mask = torch.ones(x.size(1))
                    x = x.to(x.device)
                else:
                    x = self.fc(x) * mask
                return x
        """
    f, out, src = run(body)
    assert f == [] and out == src
    f, _, _ = run(body.replace("        return x", "        return self.fc(x) * mask"))
    assert codes(f) == ["TM102"]


HELPER = textwrap.dedent("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x)


    def accuracy(pred, y):
        correct = (pred.argmax(1) == y).float()
        return correct.sum() / torch.FloatTensor([y.shape[0]])


    model = Net().to(device)
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        print(accuracy({arg}, y))
""")


def test_a_metric_helper_fed_device_tensors_at_every_call():
    f, out, src = run(HELPER.replace("{arg}", "model(x)"))
    assert codes(f) == ["TM102"] and "in `accuracy`" in f[0].message
    # a call with CPU tensors (a number read from a list): not every call passes a device tensor
    f, _, _ = run(HELPER.replace("{arg}", "model(x)") + "print(accuracy(torch.tensor([[0.1, 0.9]]), torch.tensor([1])))\n")
    assert f == []
    # a model never moved: its output is where its input is
    f, _, _ = run(HELPER.replace("{arg}", "model(x)").replace("Net().to(device)", "Net()").replace(
        "x, y = x.to(device), y.to(device)", "pass"))
    assert f == []


def test_a_loss_helper_fix_follows_its_device_parameter():
    f, out, src = run("""
        class Net(nn.Module):
            def forward(self, x):
                return x


        def ordinal(logits, levels):
            ones = torch.ones(levels.shape[0], 1)
            return (logits * torch.cat([ones, levels[:, :-1]], dim=1)).mean()


        model = Net().to(device)
        levels = torch.rand(8, 3, device=device)
        print(ordinal(model(levels), levels))
        """)
    assert codes(f) == ["TM102"]
    assert "ones = torch.ones(levels.shape[0], 1, device=levels.device)" in out


# (L1aoXingyu's VAE notebook: ``eps = torch.FloatTensor(std.size()).normal_()`` then ``if
# torch.cuda.is_available(): eps = Variable(eps.cuda())``: the move through Variable(...)
# takes care of the device; without it the factory meets ``std``)
@pytest.mark.parametrize("branch, reported", [
    ("            eps = Variable(eps.cuda())\n", False),
    ("            eps = Variable(eps).cuda()\n", False),
    ("            pass\n", True),
])
def test_a_factory_moved_through_variable_on_the_cuda_path(branch, reported):
    body = (
        "from torch.autograd import Variable\n\n\n"
        "class VAE(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n"
        "        std = self.fc(x).mul(0.5).exp_()\n"
        "        eps = torch.FloatTensor(std.size()).normal_()\n"
        "        if torch.cuda.is_available():\n" + branch +
        "        else:\n            eps = Variable(eps)\n"
        "        return eps.mul(std)\n"
    )
    f, out, src = run(body)
    assert bool(f) == reported, [x.message for x in f]


# (yandexdataschool/Practical_DL StyleGAN2 weights_deformations: ``value * torch.ones(n)``
# in the except branch taken when ``value`` is a Python number; ``device=value.device``
# would raise there)
def test_a_factory_in_an_except_branch_is_left_alone():
    body = """
        def expand(value, n):
            try:
                assert value.shape[0] == n
            except Exception:
                value = value * torch.ones(n)
            return value

        class M(nn.Module):
            def forward(self, x):
                return x * expand(self.shift, x.shape[0])[:, None]

        m = M().to(device)
        """
    f, out, src = run(body)
    assert f == [] and out == src, [x.message for x in f]
    f, _, _ = run(body.replace("try:\n                assert value.shape[0] == n\n            except Exception:\n"
                               "                value = value * torch.ones(n)",
                               "if value.dim() == 0:\n                value = value * torch.ones(n)"))
    assert codes(f) == ["TM102"], [x.message for x in f]


_KL_PRIOR = """
{imp}


class VAE(nn.Module):
    def __init__(self, num_tokens=16):
        super().__init__()
        self.num_tokens = num_tokens
        self.encoder = nn.Conv2d(3, num_tokens, 1)

    def forward(self, img, return_loss=False):
        num_tokens = self.num_tokens
        logits = self.encoder(img)
        if not return_loss:
            return logits
        logits = {call}(logits, 'b n h w -> b (h w) n')
        qy = torch.nn.functional.softmax(logits, dim=-1)
        log_qy = torch.log(qy + 1e-20)
        g = torch.log(torch.Tensor([1. / num_tokens]))
        return (qy * (log_qy - g)).sum()


if __name__ == '__main__':
    vae = VAE().cuda()
    for _ in range(2):
        images = torch.randn(4, 3, 8, 8).cuda()
        loss = vae(images, return_loss=True)
"""


@pytest.mark.parametrize("imp,call,found", [
    # DALLE-pytorch's KL prior (lucidrains/DALLE-pytorch #41): the logits go through einops,
    # which keeps the device, nine steps from the device tensor
    ("from einops import rearrange", "rearrange", 1),
    ("import einops", "einops.rearrange", 1),
    ("from einops import repeat as rearrange", "rearrange", 1),
    # look-alike: a function of unknown code may return anything
    ("from mylib import rearrange", "rearrange", 0),
])
def test_a_tensor_rearranged_by_einops_keeps_its_device(imp, call, found):
    got, _, _ = run(_KL_PRIOR.format(imp=imp, call=call))
    assert len(got) == found, [f.message for f in got]
    if found:
        assert "`torch.Tensor(...)` in `forward`" in got[0].message and "meets `log_qy`" in got[0].message


@pytest.mark.parametrize("wrap", ["Variable({})", "Variable({}, requires_grad=False)", "{}"])
def test_a_hidden_state_made_by_a_helper_in_an_autograd_variable(wrap):
    # Seanny123/da-rnn: ``init_hidden`` returns ``Variable(torch.zeros(...))`` on the CPU
    # to the encoder's forward, which concatenates it with its input
    made = wrap.format("torch.zeros(1, x.size(0), hidden_size)")
    found, out, _ = run(f"""
        from torch.autograd import Variable


        def init_hidden(x, hidden_size: int):
            return {made}


        class Encoder(nn.Module):
            def __init__(self, n: int, hidden_size: int):
                super().__init__()
                self.n, self.hidden_size = n, hidden_size
                self.attn = nn.Linear(2 * hidden_size + n, 1)

            def forward(self, input_data):
                hidden = init_hidden(input_data, self.hidden_size)
                x = torch.cat((hidden.repeat(self.n, 1, 1).permute(1, 0, 2), input_data.permute(0, 2, 1)), dim=2)
                return self.attn(x)


        encoder = Encoder(3, 8).to(device)
        """)
    assert [f.line for f in found] == [11]
    assert "torch.zeros(1, x.size(0), hidden_size, device=x.device)" in out


def test_an_autograd_variable_of_a_moved_tensor_is_on_the_device():
    found, _, _ = run("""
        from torch.autograd import Variable


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                h = Variable(torch.zeros(x.size(0), 4).to(x.device))
                return self.fc(x + h)


        encoder = Encoder().to(device)
        """)
    assert found == []


@pytest.mark.parametrize("helper", [
    # hunkim/PyTorchZeroToAll: a helper that moves what it wraps where CUDA is
    "def cuda_variable(t):\n    if torch.cuda.is_available():\n        return Variable(t.cuda())\n    return Variable(t)\n",
    "def cuda_variable(t):\n    if torch.cuda.is_available():\n        return t.cuda()\n    else:\n        return t\n",
    "USE_CUDA = torch.cuda.is_available()\n\n\ndef cuda_variable(t):\n    if not USE_CUDA:\n        return t\n    return t.cuda()\n",
])
def test_a_cpu_tensor_only_where_cuda_is_not_available(helper):
    found, _, _ = run(f"""
        from torch.autograd import Variable


        {textwrap.indent(helper, "        ").lstrip()}

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, h):
                scores = cuda_variable(torch.zeros(h.size(0), 4))
                return self.fc(h) + scores


        attn = Attn().to(device)
        """)
    assert found == []


def test_a_cpu_branch_that_is_not_about_cuda_is_followed():
    found, _, _ = run("""
        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, h):
                if self.training:
                    scores = torch.ones(h.size(0), 4, device=h.device)
                else:
                    scores = torch.zeros(h.size(0), 4)
                return self.fc(h) + scores


        attn = Attn().to(device)
        """)
    assert [f.line for f in found] == [16]


# (lucidrains/slot-attention before 4224f9d, Seanny123/da-rnn, likyoo/Siam-NestedUNet
# utils/metrics.py: a file of modules that never names a device, imported by the code
# that moves them to the GPU)
LIB = ("import torch\nfrom torch import nn\n\n\nclass Slots(nn.Module):\n    def __init__(self, dim):\n"
       "        super().__init__()\n        self.mu = nn.Parameter(torch.randn(1, 1, dim))\n\n"
       "    def forward(self, inputs):\n        mu = self.mu.expand(inputs.shape[0], 4, -1)\n"
       "        return inputs[:, :4] + mu + torch.randn(mu.shape)\n")


@pytest.mark.parametrize("train, lib_extra, reported", [
    ("from slots import Slots\nm = Slots(8).to('cuda')\n", "", True),
    ("from slots import Slots\nm = Slots(8)\n", "", False),  # the project never names a device: CPU only
    ("import os\n", "", False),  # nobody imports it
    ("from slots import Slots\nm = Slots(8).cuda()\n", "\nif __name__ == '__main__':\n    Slots(8)(torch.zeros(2, 4, 8))\n",
     False),  # a script of its own
])
def test_a_module_library_that_never_names_a_device(tmp_path, train, lib_extra, reported):
    from torchmend.engine import process_file
    from torchmend.project import ImportIndex, Project

    (tmp_path / "slots.py").write_text(LIB + lib_extra)
    (tmp_path / "train.py").write_text(train)
    files = [str(tmp_path / "slots.py"), str(tmp_path / "train.py")]
    project = Project(roots=(str(tmp_path),), index=ImportIndex(files))
    res = process_file(str(tmp_path / "slots.py"), Options(select=frozenset({"TM102"})), project)
    assert res.error is None, res.error
    assert len(res.findings) == (1 if reported else 0), [f.message for f in res.findings]


@pytest.mark.parametrize("method, found", [
    ("def inference(self, n=1):\n        z = torch.randn([n, self.latent])\n        return self.decoder(z)\n", True),
    ("def sample(self, n):\n        return self.decoder(torch.randn(n, self.latent))\n", True),
    # look-alikes: made on the model's device; a private helper; one that __init__ runs
    # (the model is still on the CPU then); a meet with an argument, not the weights
    ("def inference(self, n=1):\n        z = torch.randn([n, self.latent], device=self.decoder.weight.device)\n"
     "        return self.decoder(z)\n", False),
    ("def _probe(self, n=1):\n        return self.decoder(torch.randn(n, self.latent))\n", False),
    ("def out_size(self):\n        return self.decoder(torch.zeros(1, self.latent)).shape[1]\n", False),
    ("def shift(self, x):\n        return x + torch.ones(4)\n", False),
])
def test_a_public_method_called_on_the_model(method, found):
    """timbmg/VAE-CVAE-MNIST (before PR #4): ``VAE.inference(n)`` makes ``z =
    torch.randn([n, latent])`` on the CPU and decodes it; train.py calls
    ``vae.inference(...)`` on the moved model.  A public method of a module class that
    nothing runs while the module is built feeds a layer whose weights are on the
    module's device."""
    init_call = "        self.size = self.out_size()\n" if "out_size" in method else ""
    f, _, _ = run(f"""
class VAE(nn.Module):
    def __init__(self, latent):
        super().__init__()
        self.latent = latent
        self.decoder = nn.Linear(latent, 784)
{init_call}
    def forward(self, z):
        return self.decoder(z)

    {method}

vae = VAE(16).to(device)
""")
    assert codes(f) == (["TM102"] if found else [])


@pytest.mark.parametrize("build, found", [
    ("self.mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU())", True),
    ("self.mlp = nn.Sequential()\n        for i in range(2):\n"
     "            self.mlp.add_module(name=f'L{i}', module=nn.Linear(4, 4))\n"
     "            self.mlp.add_module(name=f'A{i}', module=nn.ReLU())", True),
    ("self.mlp = nn.Sequential()\n        self.mlp.add_module('L', nn.Linear(4, 4))", True),
    # look-alikes: no layer with weights in it
    ("self.mlp = nn.Sequential(nn.ReLU(), nn.Dropout(0.1))", False),
    ("self.mlp = nn.Sequential()\n        self.mlp.add_module('A', nn.ReLU())", False),
])
def test_a_cpu_tensor_into_a_sequential_with_weights(build, found):
    """timbmg/VAE-CVAE-MNIST's decoder: ``self.MLP = nn.Sequential()`` filled by
    ``self.MLP.add_module(name=..., module=nn.Linear(...))`` in a loop; a CPU tensor made
    in ``forward`` and fed to it meets the layers' weights on the device."""
    f, _, _ = run(f"""
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        {build}

    def forward(self, x):
        z = torch.randn(x.size(0), 4)
        return self.mlp(z)

net = Decoder().to(device)
""")
    assert codes(f) == (["TM102"] if found else [])


@pytest.mark.parametrize("init, use, found", [
    ("self.fc = nn.Linear(self.tok.out_size(), 10)", "", False),
    ("self.fc = nn.Linear(8, 10)", "print(net.tok.out_size())\n", True),
])
def test_a_public_method_another_modules_init_runs_through_its_instance(init, use, found):
    """(SHI-Labs/Compact-Transformers' ``TextTokenizer.seq_len``, in one file) a shape
    probe called as ``self.tok.out_size()`` in another module's ``__init__``: it runs
    while the model is built, on the CPU, as one called on ``self`` does; called only on
    the moved model, it is reported."""
    f, _, _ = run(f"""
class Tok(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Linear(4, 8)

    def forward(self, x):
        return self.conv(x)

    def out_size(self):
        return self.forward(torch.zeros(1, 4)).shape[1]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = Tok()
        {init}

    def forward(self, x):
        return self.fc(self.tok(x))

net = Net().to(device)
{use}""")
    assert codes(f) == (["TM102"] if found else []), [x.message for x in f]


def test_a_public_method_that_moves_the_module_itself_first():
    """(review) ``def export(self): self.cpu(); dummy = torch.randn(...)``: the method
    places the module where its tensor is."""
    f, _, _ = run("""
class VAE(nn.Module):
    def __init__(self, latent):
        super().__init__()
        self.latent = latent
        self.decoder = nn.Linear(latent, 784)

    def forward(self, z):
        return self.decoder(z)

    def export(self):
        self.cpu()
        dummy = torch.randn(1, self.latent)
        return self.decoder(dummy)

vae = VAE(16).to(device)
""")
    assert codes(f) == []


@pytest.mark.parametrize("value, found", [
    # the data of a NumPy array, not a size: a 0-d tensor mixes like a number (masked_fill's
    # CUDA kernel takes a 0-d CPU value)
    ("torch.FloatTensor(np.array(-np.inf))", False),
    ("torch.FloatTensor(np.array(0.5))", False),
    ("torch.Tensor(np.asarray(np.pi))", False),
    ("torch.FloatTensor(np.zeros(()))", False),  # (an array of a shape not read: unknown)
    # a 1-d tensor of the array's data on the CPU meets the GPU output
    ("torch.FloatTensor(np.array([-np.inf, 0.0]))", True),
    # (review) ``ndmin=1`` makes it 1-d
    ("torch.FloatTensor(np.array(0.5, ndmin=1))", True),
])
def test_a_legacy_constructor_of_numpy_data(value, found):
    """Dirguis LSTMClassifier.py: ``w.masked_fill(mask, torch.FloatTensor(np.array(-np.inf)))``
    in forward, with the model on the GPU: the single argument is data, not a size."""
    f, _, _ = run(f"""
    import numpy as np


    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            w = self.fc(x)
            return w + {value}


    model = Attn().to(device)
    """)
    assert codes(f) == (["TM102"] if found else [])


_POOL = """\
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        return self.conv(x)


def train(model, target, pool_size=16, batch_size=4):
    optimizer = torch.optim.Adam(model.parameters())
    pool = torch.zeros(pool_size, 4, 8, 8).to(device)
    for epoch in range(3):
        batch_indices = torch.randint(0, pool_size, (batch_size,))
        batch = model(pool[batch_indices].clone())
        loss = F.mse_loss(batch, target.expand(batch_size, -1, -1, -1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            batch_losses = F.mse_loss(batch, target.expand(batch_size, -1, -1, -1), reduction="none")
            batch_losses = batch_losses.mean(dim=(1, 2, 3))
            worst_idx = batch_indices[{index}]
            pool[worst_idx] = 0.0


model = Net().to(device)
train(model, torch.ones(1, 4, 8, 8).to(device))
"""


@pytest.mark.parametrize("index, found", [
    # a 0-d integer tensor index is read with ``.item()`` wherever it lives (Anikhet's
    # neural cellular automata notebook): no meet
    ("batch_losses.argmax()", False),
    ("torch.argmin(batch_losses)", False),
    # a 1-d index on the device does meet the CPU tensor
    ("batch_losses.argmax(0, keepdim=True)", True),
    ("batch_losses.argsort()", True),
])
def test_a_cpu_tensor_indexed_by_a_zero_dim_device_index(index, found):
    f, _, _ = run(_POOL.format(index=index))
    assert len(f) == (1 if found else 0), [x.message for x in f]


@pytest.mark.parametrize("tail, reported", [
    # (kingjuno's Noisy-DQN) a script that moves nothing: "device" only as an unused
    # ``device=None`` parameter of a layer: the model stays on the CPU
    ("", False),
    # the same script moving its model: the tensor ``act`` makes meets the weights there
    ("net = net.to('cuda')\n", True),
])
def test_a_script_that_moves_nothing(tail, reported):
    src = (pathlib.Path(__file__).parent / "data" / "noisy_dqn_cpu_only.py").read_text()
    src = src.replace("optimizer = torch.optim.Adam", tail + "optimizer = torch.optim.Adam")
    res = process_text("dqn.py", src, Options(select=frozenset({"TM102"})))
    assert bool(res.findings) is reported


@pytest.mark.parametrize("place", ["model = accelerator.prepare(model)\nprint(accelerator.device)\n",
                                   "model = fabric.setup(model)\nprint(fabric.device)\n"])
def test_a_script_placed_by_accelerate_or_fabric_is_read(place):
    """(review) no ``.to(`` in an Accelerate or Fabric script: the framework places the model."""
    src = ("import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
           "        super().__init__()\n        self.rnn = nn.GRU(3, 4)\n\n    def forward(self, x):\n"
           "        h = torch.zeros(1, x.size(1), 4)\n        return self.rnn(x, h)\n\n\nmodel = M()\n" + place +
           "opt = torch.optim.Adam(model.parameters())\nloss = model(x)[0].sum()\nloss.backward()\n")
    res = process_text("train.py", src, Options(select=frozenset({"TM102"})))
    assert [f.code for f in res.findings] == ["TM102"]


@pytest.mark.parametrize("layout, found", [
    ({"models/encoder.py": "ENC", "train.py": "from models.encoder import Encoder\nMAIN"}, True),
    ({"models/__init__.py": "", "models/encoder.py": "ENC", "train.py": "from models.encoder import Encoder\nMAIN"}, True),
    ({"models/__init__.py": "ENC", "train.py": "from models import Encoder\nMAIN"}, True),
    # look-alikes: the script above names no device; nothing imports the module
    ({"models/encoder.py": "ENC", "train.py": "from models.encoder import Encoder\nEncoder()(torch.zeros(2, 3).long())\n"},
     False),
    ({"models/encoder.py": "ENC", "train.py": "MAIN"}, False),
])
def test_a_model_file_of_a_subdirectory_imported_by_a_script_above(tmp_path, layout, found):
    """(probe) ``models/encoder.py``'s ``forward`` makes ``torch.ones(...)`` without a
    device; ``train.py`` beside ``models/`` does ``from models.encoder import Encoder``
    and moves the model: read as when the two stand side by side."""
    from torchmend import runner

    enc = ("import torch\nimport torch.nn as nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self):\n"
           "        super().__init__()\n        self.emb = nn.Embedding(50, 16)\n\n    def forward(self, tokens):\n"
           "        h = self.emb(tokens)\n        mask = torch.ones(tokens.size(0), tokens.size(1))\n"
           "        return (h * mask.unsqueeze(-1)).sum(1)\n")
    main = ("import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "model = Encoder().to(device)\nprint(model(torch.zeros(2, 3, dtype=torch.long, device=device)))\n")
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(("import torch\n" if name == "train.py" else "")
                                     + text.replace("ENC", enc).replace("MAIN", main))
    res = runner.run([str(tmp_path)], Options(select=frozenset({"TM102"}), roots=(str(tmp_path),)), jobs=1).results
    got = [(os.path.relpath(r.path, tmp_path), f.code) for r in res for f in r.findings]
    assert len(got) == (1 if found else 0), got


@pytest.mark.parametrize("branch, found", [
    ("    if seq.is_cuda:\n        m = torch.from_numpy(a).cuda()\n    else:\n        m = torch.from_numpy(a)\n", False),
    ("    if not seq.is_cuda:\n        m = torch.from_numpy(a)\n    else:\n        m = torch.from_numpy(a).cuda()\n", False),
    # the body of ``if seq.is_cuda:`` is the GPU path
    ("    if seq.is_cuda:\n        m = torch.from_numpy(a)\n    else:\n        m = torch.from_numpy(a).cuda()\n", True),
])
def test_the_else_of_if_is_cuda_is_the_cpu_path(branch, found):
    """(w121211/pytorch-seq2seq) ``if seq.is_cuda: ...cuda() else: torch.from_numpy(...)``:
    the ``else`` runs only where the tensor is on the CPU, as the ternary form does."""
    f, _, _ = run("""
import numpy as np


def subsequent_mask(seq):
    a = np.triu(np.ones((seq.size(0), seq.size(1), seq.size(1))), k=1).astype('uint8')
""" + branch + """    return m


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)

    def forward(self, seq):
        pad = seq.eq(0).unsqueeze(1).expand(-1, seq.size(1), -1).to(torch.uint8)
        return self.emb(seq), torch.gt(pad + subsequent_mask(seq), 0)

dec = Dec().to(device)
""")
    assert codes(f) == (["TM102"] if found else []), [x.message for x in f]


def test_the_else_of_if_is_cuda_in_a_file_that_names_mps_is_not_the_cpu_path():
    """(review) an MPS tensor is not ``is_cuda`` either: in a file that picks ``mps`` the
    ``else`` may run on the MPS device."""
    f, _, _ = run("""
import numpy as np
device = "mps" if torch.backends.mps.is_available() else "cpu"


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)

    def forward(self, seq):
        a = np.ones((seq.size(0), 8), dtype=np.float32)
        if seq.is_cuda:
            m = torch.from_numpy(a).cuda()
        else:
            m = torch.from_numpy(a)
        return self.emb(seq).sum(1) + m

dec = Dec().to(device)
""")
    assert codes(f) == ["TM102"], [x.message for x in f]
