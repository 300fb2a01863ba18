"""TM502 log-softmax-before-cross-entropy."""

from __future__ import annotations

from ..rule import Context, Rule, Severity, Verify
from ._softmax import TM502, protos_for


class LogSoftmaxBeforeCrossEntropy(Rule):
    """## What it does
    Finds a `log_softmax` (`F.log_softmax`, `Tensor.log_softmax`, `nn.LogSoftmax`) whose
    output is the input of `nn.CrossEntropyLoss` / `F.cross_entropy`: inline, through a
    variable, or as the last step of a model.  `log_softmax` followed by `NLLLoss` /
    `F.nll_loss` is the canonical pair and is not reported.

    ## Why is this bad?
    Cross-entropy is `log_softmax` followed by `NLLLoss`.  Applying `log_softmax` first is
    redundant: it is idempotent, so the loss value is unchanged, but the code says
    something it does not mean and pays for a second normalisation.

    ## Example
    ```python
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)  # model.forward returns F.log_softmax(x, dim=1)
    ```

    ## Use instead
    ```python
    criterion = nn.NLLLoss()
    loss = criterion(model(x), y)
    ```

    ## Fix safety
    A `log_softmax` written right before the loss (inline or in a single-use variable)
    is dropped, which is exact for every loss option (safe).  When a model ends with
    `log_softmax`, the model is kept and the loss becomes `NLLLoss` (`F.cross_entropy` ->
    `F.nll_loss`), reported and fixed at the loss's own line (safe: exactly equivalent).
    With `label_smoothing` or other options `NLLLoss` lacks, probability targets, a loss
    object that also receives other values or is used where the file cannot follow it,
    or a model from another module, the rule only reports.
    """

    code = TM502
    name = "log-softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = "log_softmax output fed into cross-entropy: redundant (use NLLLoss)"
    severity = Severity.WARNING
    needles = ("cross_entropy", "CrossEntropyLoss")
    verify = Verify("softmax", ("TM502",))
    corpus_minimum = (10, 8)
    uses_project = True
    valid = (
        "import torch.nn.functional as F\nloss = F.nll_loss(F.log_softmax(z, dim=1), y)\n",
        "import torch.nn.functional as F\nkd = F.kl_div(F.log_softmax(s, 1), F.softmax(t, 1))\nloss = F.cross_entropy(s, y)\n",
    )
    invalid = (
        "import torch.nn.functional as F\nloss = F.cross_entropy(F.log_softmax(z, dim=1), y)\n",
        "import torch\nfrom torch import nn\nnet = nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1))\n"
        "crit = nn.CrossEntropyLoss()\nloss = crit(net(x), y)\n",
    )

    def check(self, ctx: Context):
        for p in protos_for(ctx, self.code):
            yield ctx.finding(self, p.node, p.message, p.fix, p.severity)
