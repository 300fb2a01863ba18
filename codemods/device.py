"""Pitfall: device (see ../shared/pitfalls.md). STUB: rules not implemented yet."""

from __future__ import annotations

from .rule import FileContext, Rule, Severity


class DeviceBatchNotMoved(Rule):
    """The model is moved to a device but the batch from the DataLoader is not.

    Not implemented yet.
    """

    code = "TM101"
    name = "device-batch-not-moved"
    pitfall = "device"
    summary = 'the model is moved to a device but the batch from the DataLoader is not'
    severity = Severity.BUG
    needles = ("DataLoader", "loader")

    def check(self, ctx: FileContext):
        return ()


class TensorCreatedWithoutDevice(Rule):
    """A tensor created in forward() without device= lands on the CPU.

    Not implemented yet.
    """

    code = "TM102"
    name = "tensor-created-without-device"
    pitfall = "device"
    summary = 'a tensor created in forward() without device= lands on the CPU'
    severity = Severity.BUG
    needles = ("forward",)

    def check(self, ctx: FileContext):
        return ()
