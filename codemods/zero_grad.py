"""Pitfall: zero_grad (see ../shared/pitfalls.md). STUB: rules not implemented yet."""

from __future__ import annotations

from .rule import FileContext, Rule, Severity


class MissingZeroGrad(Rule):
    """Backward() and step() in a loop with nothing that clears the gradients.

    Not implemented yet.
    """

    code = "TM201"
    name = "missing-zero-grad"
    pitfall = "zero_grad"
    summary = 'backward() and step() in a loop with nothing that clears the gradients'
    severity = Severity.BUG
    needles = ("backward",)

    def check(self, ctx: FileContext):
        return ()


class MisplacedZeroGrad(Rule):
    """Zero_grad() outside the loop that steps, or between backward() and step().

    Not implemented yet.
    """

    code = "TM202"
    name = "misplaced-zero-grad"
    pitfall = "zero_grad"
    summary = 'zero_grad() outside the loop that steps, or between backward() and step()'
    severity = Severity.BUG
    needles = ("zero_grad",)

    def check(self, ctx: FileContext):
        return ()
