"""A simulated GPU for CPU-only machines.

``install()`` makes a script believe it has one CUDA device:

* ``torch.cuda.is_available()`` is True, ``device_count()`` is 1, and the housekeeping calls
  (``synchronize``, ``set_device``, ``empty_cache``, ``get_device_name``,
  ``get_device_properties``, memory queries, ...) are harmless stand-ins; so is
  ``torch.accelerator`` (``is_available()``, ``current_accelerator()`` is cuda); pinning
  memory is a no-op;
* a ``TorchFunctionMode`` (:class:`FakeCudaMode`) maps the cuda device onto PyTorch's ``meta``
  device wherever it appears: ``device=`` arguments of factories, ``Tensor.to(...)``,
  ``Tensor.cuda()``, ``Module.to(...)``/``Module.cuda()`` (they go through ``Tensor.to`` /
  ``Tensor.cuda``), ``torch.load(map_location="cuda")``.  Meta tensors carry shapes and
  dtypes but no values, so a training loop runs its forward, ``backward()`` and optimizer
  steps in microseconds;
* meta tensors report themselves as ``cuda:0`` (``t.device``, ``t.is_cuda``,
  ``t.get_device()``), so code such as ``torch.zeros(n, device=x.device)`` or
  ``next(model.parameters()).device`` behaves as on a real GPU;
* the meta device does not check device mixing in every operation (``F.linear``,
  ``F.embedding`` and convolutions accept a CPU input with meta weights), so the mode checks
  that the tensor arguments of every operation share one device and raises PyTorch's own
  message, ``Expected all tensors to be on the same device, but found at least two devices,
  cuda:0 and cpu!``.  As on CUDA, 0-dim CPU tensors may be mixed with device tensors, and
  copies/moves/indexing (``to``, ``copy_``, ``__getitem__``, ``__setitem__``, ...) may cross;
* reading a value out of a meta tensor (``.item()``, ``float(t)``, ``.tolist()``,
  ``.cpu()``, ``.numpy()``, ``f"{t:.3f}"``, ``bool(t)``) returns a stand-in (zeros, False):
  the simulation proves where tensors live, not what they compute, so scripts must not
  take value-dependent decisions that matter.  ``torch.save`` writes zeros in place of meta
  tensors (in dicts, lists and tuples, e.g. state dicts).

``install_cpu()`` is the other simulation, for the runs that need values, not devices (the
zero_grad and softmax detectors, main_guard's spawn, a fixed copy run on the CPU) on a
machine without CUDA: every cuda device a script names is the CPU (``.cuda()``,
``.to("cuda")``, ``device="cuda"``, ``torch.load(map_location="cuda")``, a checkpoint
saved on a GPU), the CUDA housekeeping calls are harmless, and ``torch.cuda.is_available()``
keeps telling the truth; nothing about devices is checked.

``nn.Module.to()`` keeps the identity of its parameters (``torch.__future__``'s
swap-on-conversion is switched on inside ``Module._apply`` only; ``load_state_dict`` keeps
copying into the parameters) so an optimizer built before ``model.to(device)`` sees the
moved parameters, as it does with real CUDA.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

SAME_DEVICE_MSG = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
META = torch.device("meta")
FAKE = torch.device("cuda", 0)

_TB = torch._C.TensorBase
# operations whose tensor arguments may legitimately live on different devices
_CROSSING = {
    _TB.to, _TB.cuda, _TB.cpu, _TB.copy_, _TB.__getitem__, _TB.__setitem__, _TB.type, _TB.type_as,
    _TB.new_tensor, _TB.new_zeros, _TB.new_ones, _TB.new_empty, _TB.new_full, _TB.set_,
    torch.tensor, torch.as_tensor, torch.utils.swap_tensors,
}
_CROSSING_NAMES = {"_pack_padded_sequence", "swap_tensors", "_has_compatible_shallow_copy_type", "__set__", "__get__",
                   "__delete__", "is_same_size", "_is_view", "pin_memory", "is_pinned", "__reduce_ex__",
                   "__deepcopy__", "_make_subclass", "__torch_function__"}
_DEVICE_KW = ("device",)
# packed sequences keep their batch_sizes on the CPU, on CUDA too
_CPU_INDEX_OK = {"lstm", "gru", "rnn_tanh", "rnn_relu", "_pad_packed_sequence", "_pack_padded_sequence"}


def _is_cuda(d) -> bool:
    if isinstance(d, torch.device):
        return d.type == "cuda"
    if isinstance(d, str):
        return d.split(":")[0].strip() == "cuda"
    return False


def _map_device(d):
    return META if _is_cuda(d) else d


def _names_cuda(a) -> bool:
    """A ``Tensor.to`` argument that names the cuda device: ``"cuda"``, a cuda
    ``torch.device``, a device index (``t.to(0)``)."""
    return _is_cuda(a) or (isinstance(a, int) and not isinstance(a, bool))


# the CUDA housekeeping calls both simulations make harmless no-ops
_NO_OPS = ("set_device", "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "ipc_collect", "reset_peak_memory_stats", "reset_max_memory_allocated")


def _standin_scalar(t: torch.Tensor):
    if t.dtype == torch.bool:
        return False
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return 0.0
    return 0


def _cpu_standin(t: torch.Tensor, dtype=None) -> torch.Tensor:
    out = torch.zeros(t.shape, dtype=dtype or t.dtype)
    if t.requires_grad and out.dtype.is_floating_point:
        out.requires_grad_(True)
    return out


def _wants_cpu(args, kwargs) -> bool:
    """Tensor.to(...) arguments that name the CPU."""
    for a in list(args[1:]) + [kwargs.get("device")]:
        if isinstance(a, torch.device) and a.type == "cpu":
            return True
        if isinstance(a, str) and a.split(":")[0] == "cpu":
            return True
        if isinstance(a, torch.Tensor) and not a.is_meta and a.device.type == "cpu":
            return True
    return False


def _dev_name(d: torch.device) -> str:
    return "cuda:0" if d.type == "meta" else str(d)


def check_same_device(func, args, kwargs) -> None:
    flat, _ = tree_flatten((args, kwargs))
    devices = []
    int_ok = getattr(func, "__name__", "") in _CPU_INDEX_OK
    for a in flat:
        if isinstance(a, torch.Tensor):
            d = a.device
            if d.type == "cpu" and a.dim() == 0:
                continue  # CPU scalars mix with device tensors, as on CUDA
            if int_ok and d.type == "cpu" and a.dtype == torch.int64:
                continue
            if d not in devices:
                devices.append(d)
    if len(devices) > 1:
        dev = sorted(devices, key=lambda d: d.type != "meta")  # the device first, as PyTorch prints it
        raise RuntimeError(SAME_DEVICE_MSG.format(_dev_name(dev[0]), _dev_name(dev[1])))


class FakeCudaMode(TorchFunctionMode):
    """See the module docstring."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        # --- properties: meta tensors present themselves as cuda:0
        if name == "__get__" and owner is not None and getattr(owner, "__objclass__", None) is _TB:
            attr = owner.__name__
            t = args[0] if args else None
            if isinstance(t, torch.Tensor) and t.is_meta:
                if attr == "device":
                    return FAKE
                if attr == "is_cuda":
                    return True
            return func(*args, **kwargs)
        t0 = args[0] if args and isinstance(args[0], torch.Tensor) else None
        meta0 = t0 is not None and t0.is_meta
        # --- moves
        if func is _TB.cuda:
            kw = {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
            return t0.to(META, **kw)
        if func is _TB.to:
            if meta0 and _wants_cpu(args, kwargs):
                dtype = next((a for a in list(args[1:]) + [kwargs.get("dtype")] if isinstance(a, torch.dtype)), None)
                return _cpu_standin(t0, dtype)
            args = tuple(META if _names_cuda(a) else a for a in args)
            if "device" in kwargs:
                kwargs["device"] = _map_device(kwargs["device"])
            return func(*args, **kwargs)
        if func is _TB.cpu and meta0:
            return _cpu_standin(t0)
        if func is _TB.get_device and meta0:
            return 0
        # --- values out of meta tensors: stand-ins
        if meta0:
            if func in (_TB.item, _TB.__float__, _TB.__int__, _TB.__index__, _TB.__bool__):
                v = _standin_scalar(t0)
                return {_TB.__float__: float, _TB.__int__: int, _TB.__index__: int, _TB.__bool__: bool}.get(func, lambda x: x)(v)
            if func is _TB.tolist:
                return _cpu_standin(t0).tolist()
            if func is _TB.numpy:
                return _cpu_standin(t0).numpy()
            if name == "__format__":
                spec = args[1] if len(args) > 1 else ""
                return format(_standin_scalar(t0), spec) if t0.dim() == 0 else format(repr(t0), spec)
            if func is _TB.pin_memory:
                return t0
        # --- device= arguments
        for k in _DEVICE_KW:
            if k in kwargs:
                kwargs[k] = _map_device(kwargs[k])
        if func not in _CROSSING and name not in _CROSSING_NAMES:
            check_same_device(func, args, kwargs)
        return func(*args, **kwargs)


_installed: list = []
CPU = torch.device("cpu")


class CudaOnCpuMode(TorchFunctionMode):
    """See ``install_cpu`` in the module docstring."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is _TB.cuda:
            return args[0]
        if func is _TB.to:
            args = tuple(CPU if _names_cuda(a) else a for a in args)
        for k in _DEVICE_KW:
            if k in kwargs and _is_cuda(kwargs[k]):
                kwargs[k] = CPU
        return func(*args, **kwargs)


class FakeStream:
    """Stand-in for a CUDA stream: never capturing, always synchronised."""

    device = FAKE
    device_type = "cuda"

    def is_capturing(self):
        return False

    def query(self):
        return True

    def synchronize(self):
        return None

    def wait_stream(self, other):
        return None

    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _const(value):
    """A fresh stand-in function returning ``value`` (one object per patched name:
    torch._dynamo keys its tables by function object)."""

    def f(*a, **k):
        return value

    return f


def install() -> None:
    """Patch ``torch.cuda`` and enter :class:`FakeCudaMode` for the rest of the process."""
    if _installed:
        return
    import torch.cuda as tc

    import torch.__future__ as fut

    _orig_apply = torch.nn.Module._apply

    def _apply(self, fn, *a, **k):
        # swap parameters in place (identity kept) while moving; load_state_dict keeps copy_
        old = fut.get_swap_module_params_on_conversion()
        fut.set_swap_module_params_on_conversion(True)
        try:
            return _orig_apply(self, fn, *a, **k)
        finally:
            fut.set_swap_module_params_on_conversion(old)

    torch.nn.Module._apply = _apply
    patches = {
        "is_available": _const(True),
        "device_count": _const(1),
        "current_device": _const(0),
        "is_initialized": _const(True),
        "init": _const(None),
        "get_device_name": _const("torchmend simulated GPU (meta device)"),
        "get_device_capability": _const((9, 0)),
        "is_bf16_supported": _const(True),
        "memory_allocated": _const(0),
        "max_memory_allocated": _const(0),
        "memory_reserved": _const(0),
        "max_memory_reserved": _const(0),
    }
    from types import SimpleNamespace

    props = SimpleNamespace(
        name="torchmend simulated GPU (meta device)", total_memory=80 * 2**30, major=9, minor=0,
        multi_processor_count=132, is_integrated=False,
    )
    patches.update(
        get_device_properties=_const(props),
        mem_get_info=_const((80 * 2**30, 80 * 2**30)),
        current_stream=_const(FakeStream()),
        default_stream=_const(FakeStream()),
        is_current_stream_capturing=_const(False),
    )
    patches.update((k, _const(None)) for k in _NO_OPS)
    for k, v in patches.items():
        setattr(tc, k, v)
    acc = getattr(torch, "accelerator", None)  # torch >= 2.6: the device-generic API
    if acc is not None:
        for k, v in dict(
            is_available=_const(True),
            current_accelerator=_const(torch.device("cuda")),
            device_count=_const(1),
            current_device_index=_const(0),
            current_device_idx=_const(0),
            set_device_index=_const(None),
            set_device_idx=_const(None),
            synchronize=_const(None),
            current_stream=_const(FakeStream()),
        ).items():
            if hasattr(acc, k):
                setattr(acc, k, v)
    # DataParallel on the one simulated device: it scatters CPU inputs to the device itself
    def dp_forward(self, *inputs, **kwargs):
        from torch.utils._pytree import tree_map

        def move(t):
            return t.to(META) if isinstance(t, torch.Tensor) else t

        return self.module(*tree_map(move, inputs), **tree_map(move, kwargs))

    torch.nn.DataParallel.forward = dp_forward
    # the DataLoader's pin-memory thread runs outside the mode: pinning is a no-op
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    _orig_load = torch.load

    def load(f, map_location=None, *a, **k):
        if _is_cuda(map_location):
            map_location = "meta"
        return _orig_load(f, map_location, *a, **k)

    torch.load = load
    _orig_save = torch.save

    def save(obj, f, *a, **k):
        from torch.utils._pytree import tree_map

        def standin(t):
            if isinstance(t, torch.Tensor) and t.is_meta:
                return torch.zeros(t.shape, dtype=t.dtype)
            return t

        return _orig_save(tree_map(standin, obj), f, *a, **k)

    torch.save = save
    mode = FakeCudaMode()
    mode.__enter__()
    _installed.append(mode)


def install_cpu() -> None:
    """Enter :class:`CudaOnCpuMode` for the rest of the process (see the module docstring)."""
    if _installed:
        return
    import torch.cuda as tc

    for k in _NO_OPS:
        setattr(tc, k, _const(None))
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    _orig_load = torch.load

    def load(f, map_location=None, *a, **k):
        if map_location is None or _is_cuda(map_location):
            map_location = "cpu"  # (a checkpoint saved on a GPU too)
        return _orig_load(f, map_location, *a, **k)

    torch.load = load
    mode = CudaOnCpuMode()
    mode.__enter__()
    _installed.append(mode)
