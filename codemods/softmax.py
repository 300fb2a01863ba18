"""Pitfall: softmax (see ../shared/pitfalls.md). STUB: rules not implemented yet."""

from __future__ import annotations

from .rule import FileContext, Rule, Severity


class SoftmaxBeforeCrossEntropy(Rule):
    """Softmax output fed into CrossEntropyLoss / F.cross_entropy, which expects logits.

    Not implemented yet.
    """

    code = "TM501"
    name = "softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = 'softmax output fed into CrossEntropyLoss / F.cross_entropy, which expects logits'
    severity = Severity.BUG
    needles = ("softmax", "Softmax")

    def check(self, ctx: FileContext):
        return ()


class LogSoftmaxBeforeCrossEntropy(Rule):
    """Log_softmax output fed into cross-entropy: redundant (use NLLLoss).

    Not implemented yet.
    """

    code = "TM502"
    name = "log-softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = 'log_softmax output fed into cross-entropy: redundant (use NLLLoss)'
    severity = Severity.WARNING
    needles = ("log_softmax", "LogSoftmax")

    def check(self, ctx: FileContext):
        return ()
