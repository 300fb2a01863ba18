"""Pitfall: filtered_load (see ../shared/pitfalls.md). STUB: rules not implemented yet."""

from __future__ import annotations

from .rule import FileContext, Rule, Severity


class StrictLoadAfterHeadChange(Rule):
    """Strict load_state_dict(torch.load(...)) after the model's head was replaced.

    Not implemented yet.
    """

    code = "TM401"
    name = "strict-load-after-head-change"
    pitfall = "filtered_load"
    summary = "strict load_state_dict(torch.load(...)) after the model's head was replaced"
    severity = Severity.BUG
    needles = ("load_state_dict",)

    def check(self, ctx: FileContext):
        return ()
