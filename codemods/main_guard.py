"""Pitfall: main_guard (see ../shared/pitfalls.md). STUB: rules not implemented yet."""

from __future__ import annotations

from .rule import FileContext, Rule, Severity


class DataLoaderWithoutMainGuard(Rule):
    """A DataLoader with workers is iterated at module level without `if __name__ == "__main__":`.

    Not implemented yet.
    """

    code = "TM301"
    name = "dataloader-workers-without-main-guard"
    pitfall = "main_guard"
    summary = 'a DataLoader with workers is iterated at module level without `if __name__ == "__main__":`'
    severity = Severity.BUG
    needles = ("num_workers",)

    def check(self, ctx: FileContext):
        return ()
