"""The one table of qualified names the rules recognise, and the one framework check.

Every rule asks here: is this callee a DataLoader, an optimizer constructor, a loss, a
tensor factory, a model zoo builder; does this import mean a training framework drives
the loop?  Names are the dotted paths the semantic model resolves imports to
(``from torch import nn`` then ``nn.CrossEntropyLoss`` -> ``torch.nn.CrossEntropyLoss``).
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "LOADERS", "WORKER_LOADERS", "LOSS_CE", "LOSS_NLL", "FACTORIES", "framework_of", "is_loader", "is_module_class",
    "is_optimizer", "is_scheduler", "is_scaler", "is_tensor_factory", "is_model_zoo", "is_softmax",
    "is_log_softmax", "is_cross_entropy_class", "is_cross_entropy_function", "is_torch",
]

LOADERS = frozenset({
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
    "torch_geometric.loader.DataLoader",
    "torch_geometric.data.DataLoader",
    "monai.data.DataLoader",
})

# loaders that start worker processes as torch's DataLoader does (they derive from it),
# whatever they yield: what TM301 looks for (TM101 reads the batches of LOADERS only)
_PYG = ("DataLoader", "NeighborLoader", "NeighborSampler", "LinkNeighborLoader", "HGTLoader", "ClusterLoader",
        "GraphSAINTSampler", "GraphSAINTNodeSampler", "GraphSAINTEdgeSampler", "GraphSAINTRandomWalkSampler",
        "ShaDowKHopSampler", "RandomNodeLoader", "DataListLoader", "DenseDataLoader", "NodeLoader", "LinkLoader")
WORKER_LOADERS = LOADERS | frozenset(
    [f"torch_geometric.loader.{n}" for n in _PYG] + [f"torch_geometric.data.{n}" for n in _PYG]
    + ["dgl.dataloading.DataLoader", "dgl.dataloading.GraphDataLoader", "monai.data.ThreadDataLoader"]
)

# tensor factories: the result is a new tensor on the default device unless device= says otherwise
FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace",
    "logspace", "tensor", "randperm", "normal", "range", "as_tensor", "from_numpy",
    "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "ByteTensor", "DoubleTensor", "HalfTensor",
})
# factories whose device follows an argument tensor
LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"})

LOSS_CE = frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"})
LOSS_CE_FUNC = frozenset({"torch.nn.functional.cross_entropy"})
LOSS_NLL = frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"})
LOSS_NLL_FUNC = frozenset({"torch.nn.functional.nll_loss"})
SOFTMAX_FUNCS = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
LOG_SOFTMAX_FUNCS = frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"})
SOFTMAX_CLASSES = frozenset({"torch.nn.Softmax", "torch.nn.modules.activation.Softmax"})
LOG_SOFTMAX_CLASSES = frozenset({"torch.nn.LogSoftmax", "torch.nn.modules.activation.LogSoftmax"})
DEVICE = frozenset({"torch.device"})
SCALERS = frozenset({
    "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
})
TORCH_LOAD = frozenset({"torch.load"})
HUB_LOADERS = frozenset({
    "torch.hub.load_state_dict_from_url", "torch.utils.model_zoo.load_url", "torch.hub.load",
    "torchvision.models.utils.load_state_dict_from_url", "torch.utils.model_zoo.load_state_dict_from_url",
})

# training frameworks that drive the loop (zero_grad, device placement) themselves
_FRAMEWORK_PREFIXES = {
    "lightning": "Lightning", "pytorch_lightning": "Lightning", "lightning_fabric": "Lightning Fabric",
    "accelerate": "Accelerate", "deepspeed": "DeepSpeed", "skorch": "skorch", "ignite": "Ignite",
    "fastai": "fastai", "catalyst": "Catalyst", "composer": "Composer", "mmengine": "MMEngine",
    "pytorch_accelerated": "pytorch-accelerated", "poutyne": "Poutyne", "torchbearer": "torchbearer",
}
_FRAMEWORK_NAMES = {
    "transformers.Trainer": "HF Trainer", "transformers.Seq2SeqTrainer": "HF Trainer",
    "transformers.trainer.Trainer": "HF Trainer", "trl.SFTTrainer": "TRL", "trl": "TRL",
    "detectron2.engine": "detectron2 engine", "torch.distributed.fsdp": "FSDP",
}


def is_torch(q: Optional[str]) -> bool:
    return bool(q) and (q == "torch" or q.startswith("torch."))


def framework_of(q: Optional[str]) -> Optional[str]:
    """The training framework a qualified name belongs to, or None."""
    if not q:
        return None
    top = q.split(".", 1)[0]
    if top in _FRAMEWORK_PREFIXES:
        return _FRAMEWORK_PREFIXES[top]
    for prefix, name in _FRAMEWORK_NAMES.items():
        if q == prefix or q.startswith(prefix + "."):
            return name
    return None


def is_loader(q: Optional[str]) -> bool:
    return q in LOADERS


def is_module_class(q: Optional[str]) -> bool:
    """``torch.nn.Linear``, ``torch.nn.Sequential``, ``torch.nn.modules.conv.Conv2d``: a
    library class whose instances are ``nn.Module``s (not ``torch.nn.functional``)."""
    if not q or not q.startswith("torch.nn."):
        return False
    parts = q.split(".")
    if "functional" in parts or "init" in parts or "utils" in parts or "parameter" in parts:
        return False
    last = parts[-1]
    return last[:1].isupper() and last not in ("Parameter", "ParameterList", "ParameterDict", "Buffer")


def is_model_zoo(q: Optional[str]) -> bool:
    """A builder that returns a (possibly pretrained) model."""
    if not q:
        return False
    if q.startswith("torchvision.models.") and q.rsplit(".", 1)[-1][:1].islower():
        return q.rsplit(".", 1)[-1] not in ("list_models", "get_weight", "get_model_weights", "get_model_builder")
    if q in ("timm.create_model", "timm.models.create_model", "torch.hub.load"):
        return True
    if q.startswith("transformers.") and q.endswith(".from_pretrained"):
        return True
    return False


def is_optimizer(q: Optional[str]) -> bool:
    """A ``torch.optim`` optimizer class (not the base class, not LBFGS whose closure
    clears the gradients, not schedulers)."""
    if not q or not q.startswith("torch.optim."):
        return False
    parts = q.split(".")
    if any(p in ("lr_scheduler", "swa_utils") for p in parts):
        return False
    last = parts[-1]
    return last[:1].isupper() and last not in ("Optimizer", "LBFGS")


def is_scheduler(q: Optional[str]) -> bool:
    return bool(q) and ("lr_scheduler" in q.split(".") or q.startswith("transformers.get_") and "schedule" in q)


def is_scaler(q: Optional[str]) -> bool:
    return q in SCALERS


def is_tensor_factory(q: Optional[str]) -> bool:
    """``torch.zeros`` etc.: makes a tensor on the default device unless told otherwise."""
    if not q or not q.startswith("torch."):
        return False
    parts = q.split(".")
    return len(parts) == 2 and parts[1] in FACTORIES


def is_softmax(q: Optional[str]) -> bool:
    return q in SOFTMAX_FUNCS


def is_log_softmax(q: Optional[str]) -> bool:
    return q in LOG_SOFTMAX_FUNCS


def is_cross_entropy_class(q: Optional[str]) -> bool:
    return q in LOSS_CE


def is_cross_entropy_function(q: Optional[str]) -> bool:
    return q in LOSS_CE_FUNC


# ---- added for device
# wrappers that scatter or move their inputs to the devices of the module they wrap
PARALLEL_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.parallel.DistributedDataParallelCPU",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
})


def is_parallel_wrapper(q: Optional[str]) -> bool:
    return q in PARALLEL_WRAPPERS


# ---- added for softmax
SEQUENTIAL = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential", "torch.nn.modules.Sequential"})
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.modules.Module"})
ARGMAX = frozenset({"torch.argmax"})
MAX = frozenset({"torch.max"})
TOPK = frozenset({"torch.topk"})
SORT = frozenset({"torch.sort"})
LOG = frozenset({"torch.log"})
# torch.nn.Softmax / LogSoftmax live under more module paths than the table above lists
SOFTMAX_CLASSES = SOFTMAX_CLASSES | {"torch.nn.modules.Softmax"}
LOG_SOFTMAX_CLASSES = LOG_SOFTMAX_CLASSES | {"torch.nn.modules.LogSoftmax"}
LOSS_CE = LOSS_CE | {"torch.nn.modules.CrossEntropyLoss"}


def is_softmax_class(q: Optional[str]) -> bool:
    return q in SOFTMAX_CLASSES


def is_log_softmax_class(q: Optional[str]) -> bool:
    return q in LOG_SOFTMAX_CLASSES


def is_sequential(q: Optional[str]) -> bool:
    return q in SEQUENTIAL


def is_module_base(q: Optional[str]) -> bool:
    """``torch.nn.Module`` itself (what a model class derives from)."""
    return q in MODULE_BASES


LIGHTNING_MODULES = frozenset({
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
    "pytorch_lightning.core.lightning.LightningModule",
})


def is_lightning_module(q: Optional[str]) -> bool:
    return q in LIGHTNING_MODULES


LIGHTNING_TRAINERS = frozenset({
    "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
    "lightning.pytorch.trainer.trainer.Trainer", "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer",
    "pytorch_lightning.trainer.trainer.Trainer",
})
# what a Lightning Trainer's run iterates: the dataloader hooks of the model or datamodule
# it is given (and the loaders given to it)
LIGHTNING_RUNS = {
    "fit": ("train_dataloader", "val_dataloader"), "validate": ("val_dataloader",),
    "test": ("test_dataloader",), "predict": ("predict_dataloader",),
}


# ---- added for main_guard
# builtins that consume an iterable right away (iterating it, so starting a DataLoader's workers)
CONSUMERS = frozenset(f"builtins.{n}" for n in (
    "iter", "next", "list", "tuple", "sorted", "set", "frozenset", "sum", "any", "all", "max", "min", "dict",
))
# lazy wrappers: they iterate their argument(s) when they are themselves iterated
ITER_WRAPPERS = frozenset({
    "builtins.enumerate", "builtins.zip", "builtins.reversed", "builtins.map", "builtins.filter",
    "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
    "itertools.islice", "itertools.cycle", "itertools.chain", "itertools.zip_longest", "itertools.tee",
})
# calls whose result yields the elements of their (first) argument unchanged, in some order
ITER_PASSTHROUGH = frozenset({
    "builtins.reversed", "builtins.sorted", "builtins.list", "builtins.tuple", "builtins.iter", "builtins.set",
    "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
    "itertools.islice", "itertools.cycle",
})


# ---- added for device (TM102)
# torch.nn layers that own parameters (or, for batch norms, buffers): after ``model.to(dev)``
# their weights are on ``dev``, and a CPU input (or a CPU hidden state) fails
PARAM_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention",
    "PReLU", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
})
RNN_LAYERS = frozenset({"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"})
# layers whose parameters can be switched off by a keyword (``LayerNorm(d, elementwise_affine=False)``)
PARAM_SWITCHES = {"LayerNorm": "elementwise_affine", "GroupNorm": "affine", "RMSNorm": "elementwise_affine",
                  "InstanceNorm1d": "affine", "InstanceNorm2d": "affine", "InstanceNorm3d": "affine"}
# factories that take ``device=`` (the legacy ``torch.FloatTensor(...)`` constructors and
# ``from_numpy`` do not; ``normal`` only in one of its forms)
DEVICE_FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "eye", "linspace", "logspace",
    "tensor", "randperm", "range", "as_tensor",
})


def nn_layer(q: Optional[str]) -> Optional[str]:
    """``torch.nn.LSTM`` / ``torch.nn.modules.rnn.LSTM`` -> ``"LSTM"``: the class name of a
    library ``nn.Module`` class, or None."""
    return q.rsplit(".", 1)[-1] if is_module_class(q) else None


def factory_name(q: Optional[str]) -> Optional[str]:
    """``torch.zeros`` -> ``"zeros"`` for a tensor factory, else None."""
    return q.split(".", 1)[1] if is_tensor_factory(q) else None
