"""The simulated GPU, in process (FakeCudaMode as a context manager; torch.cuda itself is
only patched in the subprocesses)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torchmend.verify import detectors
from torchmend.verify.simulate import SAME_DEVICE_MSG, FakeCudaMode, check_same_device

SAME = SAME_DEVICE_MSG.format("cuda:0", "cpu")


def test_meta_alone_does_not_check_devices():
    """Why the mode checks devices itself: these accept a CPU input with meta weights."""
    w = torch.empty(10, 4, device="meta")
    F.embedding(torch.tensor([[1, 2]]), w)  # no error
    F.conv1d(torch.randn(1, 3, 8), torch.empty(2, 3, 3, device="meta"))  # no error (garbage CPU output)


@pytest.mark.parametrize(
    "make,x",
    [
        (lambda: nn.Linear(4, 2), torch.randn(3, 4)),
        (lambda: nn.Embedding(10, 4), torch.tensor([[1, 2, 3]])),
        (lambda: nn.Conv2d(3, 2, 3), torch.randn(1, 3, 6, 6)),
        (lambda: nn.LSTM(4, 3, batch_first=True), torch.randn(2, 5, 4)),
    ],
    ids=["linear", "embedding", "conv2d", "lstm"],
)
@pytest.mark.parametrize("move", ["to_str", "to_device", "cuda"])
def test_module_on_cuda_fed_cpu_raises(make, x, move):
    with FakeCudaMode():
        m = make()
        if move == "to_str":
            m = m.to("cuda")
        elif move == "to_device":
            m.to(torch.device("cuda:0"))
        else:
            m.cuda()
        p = next(m.parameters())
        assert p.is_meta and p.device == torch.device("cuda", 0) and p.is_cuda
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            m(x)
        out = m(x.to("cuda"))  # moved: fine
        out = out[0] if isinstance(out, tuple) else out
        assert out.is_meta


def test_values_have_standins_and_training_runs():
    with FakeCudaMode():
        m = nn.Linear(4, 3).cuda()
        opt = torch.optim.Adam(m.parameters())
        x, y = torch.randn(5, 4).cuda(), torch.randint(0, 3, (5,)).to("cuda")
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        assert loss.item() == 0.0 and float(loss) == 0.0 and f"{loss:.2f}" == "0.00"
        assert (m(x).argmax(1) == y).sum().item() == 0
        assert m(x).detach().cpu().shape == (5, 3) and not m(x).cpu().is_meta
        assert torch.zeros(2, device=x.device).is_meta  # device follows as on a GPU
        assert x.new_zeros(3).is_meta and torch.zeros_like(x).is_meta
        assert m.weight.grad is None


def test_optimizer_built_before_move_sees_moved_params():
    import torch.__future__ as fut

    old = fut.get_swap_module_params_on_conversion()
    fut.set_swap_module_params_on_conversion(True)
    try:
        with FakeCudaMode():
            m = nn.Linear(4, 2)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            m.to("cuda")
            assert opt.param_groups[0]["params"][0] is m.weight and m.weight.is_meta
            m(torch.randn(3, 4).cuda()).sum().backward()
            opt.step()
    finally:
        fut.set_swap_module_params_on_conversion(old)


def test_cpu_scalars_mix_like_on_cuda():
    with FakeCudaMode():
        x = torch.randn(3).cuda()
        assert (x * torch.tensor(2.0)).is_meta  # 0-dim CPU tensor: allowed
        with pytest.raises(RuntimeError, match="same device"):
            x + torch.randn(3)
        x[torch.tensor([0, 1])] = 1.0  # CPU index into a device tensor: allowed
        x.copy_(torch.randn(3))  # copies cross devices


def test_check_same_device_message():
    with pytest.raises(RuntimeError) as e:
        check_same_device(None, (torch.randn(2), torch.empty(2, device="meta")), {})
    assert str(e.value) == SAME
    check_same_device(None, (torch.randn(2), torch.randn(()),), {})


@pytest.mark.parametrize(
    "x,code",
    [
        (torch.softmax(torch.randn(8, 5), 1), "TM501"),
        (torch.log_softmax(torch.randn(8, 5), 1), "TM502"),
        (torch.log_softmax(torch.randn(2, 7, 4), 1), "TM502"),  # (N, C, T)
        (torch.softmax(torch.randn(5), 0), "TM501"),  # unbatched
        (torch.randn(8, 5), None),  # logits
        (torch.randn(8, 5) * 10, None),
        (torch.randn(8, 1), None),  # one class
        (torch.softmax(torch.randn(8, 5), 1) * 0.5, None),
        (torch.empty(4, 3, device="meta"), None),  # no values
    ],
)
def test_classify_ce_input(x, code):
    assert detectors.classify_ce_input(x) == code


# ----------------------------------------------------------------- cuda on the CPU
@pytest.mark.parametrize("move", [
    lambda t: t.cuda(), lambda t: t.cuda(0), lambda t: t.to("cuda"), lambda t: t.to("cuda:0"),
    lambda t: t.to(torch.device("cuda")), lambda t: t.to(0), lambda t: t.to(device="cuda", dtype=torch.float64),
])
def test_cuda_on_cpu_moves_stay_on_the_cpu_with_their_values(move):
    from torchmend.verify.simulate import CudaOnCpuMode

    x = torch.randn(3)
    with CudaOnCpuMode():
        y = move(x)
    assert y.device.type == "cpu" and torch.equal(y.double(), x.double())


def test_cuda_on_cpu_runs_a_gpu_training_step_with_values():
    """A script written for a GPU (``model.cuda()``, ``device="cuda"`` factories) trains on
    the CPU: the values the zero_grad and softmax detectors read are real."""
    from torchmend.verify.simulate import CudaOnCpuMode

    torch.manual_seed(0)
    with CudaOnCpuMode():
        model = nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(8, 4, device="cuda")
        y = torch.zeros(8, 1).to("cuda")
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert losses[2] < losses[0] and model.weight.grad is not None and model.weight.grad.abs().sum() > 0
