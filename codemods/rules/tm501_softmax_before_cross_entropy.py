"""TM501 softmax-before-cross-entropy."""

from __future__ import annotations

from ..rule import Context, Rule, Severity, Verify
from ._softmax import TM501, protos_for


class SoftmaxBeforeCrossEntropy(Rule):
    """## What it does
    Finds a softmax (also written `torch.exp(F.log_softmax(x, 1))`) whose output is the *input* (first argument) of
    `nn.CrossEntropyLoss` / `F.cross_entropy`: applied inline, through a variable, or as
    the last step of a model (`nn.Sequential(..., nn.Softmax(dim=1))`, `return
    F.softmax(x, dim=1)` or `return self.softmax(x)` in `forward`, `self.softmax` a
    module or the function; a Sequential head whose output `forward` returns, also
    through a name; the one element of a returned tuple that is the softmax, unpacked
    by the caller; a torchvision classifier whose `fc`/`classifier` was replaced by a
    Sequential ending with the softmax; a transpose/permute of the output that brings
    the softmax's dim to the class dim; rows of the output picked by a mask, an index
    tensor or a slice (`out[data.train_mask]`, `out[idx]`, `out[:n]`); an element of a softmax's result, `for out in
    outputs:` or `outputs[0]` with `outputs = torch.softmax(scores, -1)` (report only); a
    model made from a registry dict of same-file
    classes, `models[args.model](args)`, that no code changes).  The calls of a same-file
    loss module whose `forward` hands one of its parameters as it is to a cross-entropy
    (`class FocalLoss(nn.Module)` calling `F.cross_entropy(inputs, targets,
    reduction="none")`) are cross-entropy calls too (report only).  A model handed to code of another file
    together with a cross-entropy loss (skorch's `NeuralNetClassifier(Net,
    criterion=nn.CrossEntropyLoss)`, ignite's `create_supervised_trainer(model, opt,
    criterion)`, a `Trainer(model=..., loss_fn=...)`) is reported too: such code
    computes the loss on the model's output.  A softmax (not a log_softmax) fed to
    `F.nll_loss` / an `nn.NLLLoss`, which expect log-probabilities, is reported too: in
    the call (`F.nll_loss(F.softmax(out, 1), y)`) the fix makes it `F.log_softmax` /
    `x.log_softmax(1)` (safe: the loss the code meant); through a name, a softmax
    module object or a model that ends with the softmax, report only.  The loss object and
    the model are followed through names, `self` attributes, function parameters,
    builder functions and `nn.DataParallel`; a model class imported from a sibling
    module (or a builder function there, each class of a registry it calls too:
    `models.create(name)` returning `__factory[name](n)`) is read there (a model of another file is reported, never fixed: also one
    handed with a cross-entropy to a training function of another module, at the
    argument, and one the scripts of the directory, or of the one above, pass to a
    training function or method of this file, `train.fit(Net(), ...)` in main.py for `def
    fit(model, ...)` here, `LocalUpdate(args).train(net=copy.deepcopy(net))`, or to the
    constructor of a class of this file that keeps it, `Trainer(Net(), opt).fit(loader)`
    for `self.model = model` here).  A softmax on the *target* side (distillation), an attention
    softmax inside a network, a softmax used only for metrics, `log_softmax` with
    `NLLLoss` and a `forward` that branches on `self.training` are not reported.

    ## Why is this bad?
    Cross-entropy applies `log_softmax` to its input itself and expects raw logits.  Fed
    probabilities, it computes `log_softmax(softmax(z))`: the loss is squashed into a
    narrow range and its gradient nearly vanishes, so the model trains slowly or not at
    all, without any error.  Under `torch.no_grad()` (an evaluation) the value is the
    wrong one: it is not the cross-entropy of the predictions.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(model(x), y)
    ```

    ## Fix safety
    A softmax written inline or in a variable right before the loss is dropped (safe;
    the variable stays when something else reads it, and the loss gets the logits).
    When a model ends with the softmax, every use of the model in the file is checked:
    the loss, `argmax` / `max(..., dim)[1]` / `topk(...).indices` along the softmax's
    dim, shapes, and module methods such as `eval()`, `parameters()`, `state_dict()` and
    `.to()` are unaffected, so the final softmax is removed (safe).  Uses that need the
    probabilities get `.softmax(dim=...)` re-applied (unsafe; each such line is reported
    too).  When the model is used where the file cannot show how (saved whole, passed to
    an unknown function, the file imported by another one, a skorch wrapper, a model
    from another module, a softmax returned in a tuple, a replaced torchvision head, a
    model handed to a trainer with the loss), the rule only reports.  Comments on a removed line move to
    the line that remains.
    """

    code = TM501
    name = "softmax-before-cross-entropy"
    pitfall = "softmax"
    summary = "softmax output fed into CrossEntropyLoss / F.cross_entropy, which expects logits"
    severity = Severity.BUG
    # the model may come from another file: the loss is the only certain trace
    needles = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")
    verify = Verify("softmax", ("TM501",))
    corpus_minimum = (10, 8)
    uses_project = True
    valid = (
        "import torch.nn.functional as F\nloss = F.cross_entropy(logits, y)\nprobs = F.softmax(logits, dim=1)\n",
        "import torch.nn.functional as F\nloss = F.cross_entropy(student(x), F.softmax(teacher(x), dim=1))\n",
    )
    invalid = (
        "import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(model(x), dim=1), y)\n",
        "import torch\nfrom torch import nn\nnet = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n"
        "loss = nn.CrossEntropyLoss()(net(x), y)\n",
        "import torch\nfrom torch import nn\nnet = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\n"
        "loss = nn.NLLLoss()(net(x), y)\n",
    )

    def check(self, ctx: Context):
        for p in protos_for(ctx, self.code):
            yield ctx.finding(self, p.node, p.message, p.fix, p.severity)
