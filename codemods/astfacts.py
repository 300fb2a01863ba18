"""Cheap facts about a file from one walk of its stdlib ``ast`` tree, for ``Rule.ast_check``.

The engine parses a file with ``ast`` (several times cheaper than LibCST plus metadata)
when a rule's needles match and asks each rule's ``ast_check`` whether it can fire at
all.  Every rule's gate reads the same :class:`AstFacts`, computed once per tree and
cached on the tree object.

The facts are deliberately coarse and over-approximate: names are matched by spelling
(an ``import x as y`` contributes both ``x``'s parts and ``y``), loops count every call
in their body including nested functions.  A gate built on them answers False only when
the rule's own ``check`` provably finds nothing; ``tests/test_gates.py`` checks that the
gated and ungated runs give identical results on the corpus and on a generated tree.
"""

from __future__ import annotations

import ast

__all__ = ["AstFacts", "facts"]

# method-call names whose presence inside a loop body matters (zero_grad rules)
_LOOP_METHODS = frozenset({"backward", "step"})
_HEADS = frozenset({"fc", "classifier", "head", "heads", "last_linear"})


class AstFacts:
    """What the gates need to know about one module.

    * ``names``: every identifier spelled in the file (``Name`` ids, attribute names,
      imported names split at dots, ``as`` names);
    * ``methods``: names of every method-style call ``<expr>.name(...)``;
    * ``loop_backward_step``: some ``for``/``while`` body calls ``.backward(...)`` and
      ``.step(...)``; ``nested_backward_step``: such a loop sits inside another loop;
    * ``noop_move``: an expression statement ``name.to(...)`` / ``name.cuda(...)``;
    * ``sync_for``: a (non-async) ``for`` loop exists;
    * ``forward_class``: a class with bases defines ``forward`` in its body;
    * ``head_assign``: ``x.fc = ...`` / ``x.classifier[-1] = ...`` (single target,
      attribute named like a classification head);
    * ``num_workers``: a ``num_workers=`` keyword or a ``"num_workers"`` string;
      ``six_positional``: a call with 6+ positional arguments (``DataLoader``'s
      ``num_workers`` is its 6th parameter);
    * ``main_guard``: a top-level ``if __name__ == "__main__":``, spelled exactly the
      way ``codemods.main_guard.is_main_guard`` recognises it;
    * ``import_from``: some ``from MODULE import name`` (a model imported from a
      sibling file, which the softmax rules may read).
    """

    __slots__ = (
        "names", "methods", "loop_backward_step", "nested_backward_step", "noop_move", "sync_for",
        "forward_class", "head_assign", "num_workers", "six_positional", "main_guard", "import_from",
        "stored", "noop_names", "for_over_name", "fc_calls", "fc_calls_nodevice", "fc_init_calls", "aliases", "called", "for_names",
        "assigned_calls", "params", "calls", "assigns", "classes", "from_imports", "fors", "loops", "functions", "scope_decl_lines",
    )

    def __init__(self, tree: ast.AST):
        names: set[str] = set()
        methods: set[str] = set()
        called: set[str] = set()  # last name of every callee: f(...), a.b.f(...)
        loops: list[list] = []  # [has_backward, has_step, nested]
        noop_move = sync_for = forward_class = head_assign = False
        num_workers = six_positional = import_from = for_over_name = False
        stored: set[str] = set()  # names assigned anywhere (Store context)
        noop_names: set[str] = set()  # N of a statement `N.to(...)` / `N.cuda(...)`
        fc_calls: set[str] = set()  # callee names called in a class defining forward() (not in __init__)
        fc_init_calls: set[str] = set()  # ... in its __init__
        fc_calls_nodevice: set[str] = set()  # ... without a device= keyword
        aliases: dict[str, str] = {}  # import ... as NAME -> last part of what it imports
        Store = ast.Store
        for_names: set[str] = set()  # N of `for ... in N` (through enumerate/tqdm/iter)
        assigned_calls: list[tuple[str, str]] = []  # (N, callee) of `N = callee(...)`
        params: set[str] = set()  # every parameter name of every function
        arguments = ast.arguments
        calls: list = []  # every Call node
        assigns: list = []  # every Assign / AnnAssign node
        classes: list = []  # every ClassDef node
        from_imports: list = []  # every ImportFrom node
        fors: list = []  # every (non-async) For: (node, name iterated or None, batch names or None)
        loop_nodes: list = []  # every For / AsyncFor / While node
        functions: list = []  # every FunctionDef / AsyncFunctionDef node
        scope_decl_lines: list = []  # line of every ``global`` / ``nonlocal`` statement
        Global, Nonlocal = ast.Global, ast.Nonlocal
        AnnAssign = ast.AnnAssign

        Call, Name, Attribute, Expr, Assign = ast.Call, ast.Name, ast.Attribute, ast.Expr, ast.Assign
        For, AsyncFor, While, ClassDef, Constant = ast.For, ast.AsyncFor, ast.While, ast.ClassDef, ast.Constant
        keyword, alias, ImportFrom, Subscript = ast.keyword, ast.alias, ast.ImportFrom, ast.Subscript
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        iter_children = ast.iter_child_nodes
        loop_methods = _LOOP_METHODS

        stack: list = [(tree, (), False)]
        pop, push = stack.pop, stack.append
        while stack:
            node, encl, fc = pop()
            t = type(node)
            if t is Name:
                names.add(node.id)
                if type(node.ctx) is Store:
                    stored.add(node.id)
                continue  # children: only ctx
            if t is Attribute:
                names.add(node.attr)
            elif t is Call:
                calls.append(node)
                f = node.func
                if type(f) is Name:
                    called.add(f.id)
                elif type(f) is Attribute:
                    m = f.attr
                    methods.add(m)
                    called.add(m)
                    if encl and m in loop_methods:
                        i = 0 if m == "backward" else 1
                        for lp in encl:
                            lp[i] = True
                if len(node.args) >= 6:
                    six_positional = True
                if fc:
                    callee = f.attr if type(f) is Attribute else f.id if type(f) is Name else None
                    if callee is not None:
                        (fc_init_calls if fc == "init" else fc_calls).add(callee)
                        if not any(k.arg == "device" for k in node.keywords):
                            fc_calls_nodevice.add(callee)
            elif t is Constant:
                if node.value == "num_workers":
                    num_workers = True
                continue
            elif t is keyword:
                if node.arg == "num_workers":
                    num_workers = True
            elif t is Expr:
                v = node.value
                if (
                    type(v) is Call
                    and type(v.func) is Attribute
                    and v.func.attr in ("to", "cuda")
                    and type(v.func.value) is Name
                ):
                    noop_move = True
                    noop_names.add(v.func.value.id)
            elif t is AnnAssign:
                assigns.append(node)
            elif t is Assign:
                assigns.append(node)
                v = node.value
                if type(v) is Call:
                    f = v.func
                    callee = f.attr if type(f) is Attribute else f.id if type(f) is Name else None
                    if callee is not None:
                        for tg in node.targets:
                            if type(tg) is Name:
                                assigned_calls.append((tg.id, callee))
                if len(node.targets) == 1:
                    tg = node.targets[0]
                    if type(tg) is Subscript:
                        tg = tg.value
                    if type(tg) is Attribute and tg.attr in _HEADS:
                        head_assign = True
            elif t is For or t is AsyncFor or t is While:
                if t is For:
                    sync_for = True
                    it, batch = _peel_for(node)
                    fors.append((node, it, batch))
                    if it is not None:
                        for_over_name = True
                        for_names.add(it)
                lp = [False, False, bool(encl)]
                loops.append(lp)
                loop_nodes.append((node, bool(encl)))
                inner = encl + (lp,)
                body = node.body
                for child in body:
                    push((child, inner, fc))
                for child in iter_children(node):
                    if child not in body:
                        push((child, encl, fc))
                continue
            elif t in defs:
                functions.append(node)
            elif t is ClassDef:
                classes.append(node)
                if node.bases and any(type(s) in defs and s.name == "forward" for s in node.body):
                    forward_class = True
                    for child in iter_children(node):
                        init = type(child) in defs and child.name == "__init__" and child in node.body
                        push((child, encl, "init" if init else True))
                    continue
            elif t is alias:
                parts = node.name.split(".")
                names.update(parts)
                if node.asname:
                    names.add(node.asname)
                    aliases[node.asname] = parts[-1]
                continue
            elif t is Global or t is Nonlocal:
                scope_decl_lines.append(node.lineno)
                continue
            elif t is arguments:
                for a in (*node.posonlyargs, *node.args, *node.kwonlyargs):
                    params.add(a.arg)
            elif t is ImportFrom:
                from_imports.append(node)
                if node.module is not None and not (len(node.names) == 1 and node.names[0].name == "*"):
                    import_from = True
            for child in iter_children(node):
                push((child, encl, fc))

        self.names = names
        self.methods = methods
        self.loop_backward_step = any(b and s for b, s, _ in loops)
        self.nested_backward_step = any(b and s and n for b, s, n in loops)
        self.noop_move = noop_move
        self.sync_for = sync_for
        self.forward_class = forward_class
        self.head_assign = head_assign
        self.num_workers = num_workers
        self.six_positional = six_positional
        self.main_guard = any(_is_main_guard(s) for s in getattr(tree, "body", ()))
        self.import_from = import_from
        self.stored = stored
        self.noop_names = noop_names
        self.for_over_name = for_over_name
        self.fc_calls = fc_calls
        self.fc_calls_nodevice = fc_calls_nodevice
        self.fc_init_calls = fc_init_calls
        self.aliases = aliases
        self.called = called
        self.for_names = for_names
        self.assigned_calls = assigned_calls
        self.params = params
        self.calls = calls
        self.assigns = assigns
        self.classes = classes
        self.from_imports = from_imports
        self.fors = fors
        self.loops = loop_nodes  # (node, nested in another loop)
        self.functions = functions
        self.scope_decl_lines = scope_decl_lines

    def spelled(self, name: str) -> set[str]:
        """The names under which ``name`` may be called here: itself and its ``as`` aliases."""
        return {name} | {a for a, orig in self.aliases.items() if orig == name}

    def callee_names(self, callees: set[str]) -> set[str]:
        """``callees`` with import aliases resolved to what they import (both kept)."""
        return callees | {self.aliases[c] for c in callees if c in self.aliases}


_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter"})


# statements that hold other statements (what LibCST does not put in a simple statement line)
COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
    ast.AsyncFunctionDef, ast.ClassDef, ast.Match,
) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _peel_for(loop: ast.For):
    """What ``device._loop_targets`` sees of a ``for`` loop: the name iterated, through
    enumerate/tqdm/iter (None when it is not a plain name), and the batch names bound
    (None when an ``enumerate`` target is not a pair, which that function rejects)."""
    it, target = loop.iter, loop.target
    while type(it) is ast.Call and it.args and _dotted(it.func) in _WRAPPERS:
        if _dotted(it.func) == "enumerate":
            if type(target) is ast.Tuple and len(target.elts) == 2:
                target = target.elts[1]
            else:
                target = None
        it = it.args[0]
        if type(it) is ast.Starred:
            it = it.value
    if type(it) is not ast.Name:
        return None, None
    batch = None if target is None else {n.id for n in ast.walk(target) if type(n) is ast.Name}
    return it.id, batch


def _dotted(node: ast.AST):
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_main_guard(stmt: ast.AST) -> bool:
    """``if __name__ == "__main__":`` as ``main_guard.is_main_guard`` sees it in LibCST: one
    ``==`` comparison of the name ``__name__`` with a plain (not implicitly concatenated)
    string literal ``"__main__"``.  When unsure, say no (the gate then lets the file through)."""
    if type(stmt) is not ast.If or type(stmt.test) is not ast.Compare:
        return False
    t = stmt.test
    if len(t.ops) != 1 or type(t.ops[0]) is not ast.Eq:
        return False
    sides = [t.left, t.comparators[0]]
    names = [s for s in sides if type(s) is ast.Name and s.id == "__name__"]
    strs = [
        s for s in sides
        if type(s) is ast.Constant and s.value == "__main__"
        and s.lineno == s.end_lineno and s.end_col_offset - s.col_offset in (10, 11)  # "__main__", u"__main__"
    ]
    return len(names) == 1 and len(strs) == 1


def facts(tree: ast.AST) -> AstFacts:
    """The facts of ``tree``, computed on first use and cached on the tree object."""
    f = getattr(tree, "_torchmend_facts", None)
    if f is None:
        f = AstFacts(tree)
        tree._torchmend_facts = f
    return f
