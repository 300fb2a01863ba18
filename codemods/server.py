"""``torchmend server``: a Language Server (LSP over stdio, with pygls).

Diagnostics are published on open, change and save, from the same engine and the same
settings as ``torchmend check`` (``config.resolve`` once, ``Settings.for_file`` per
document: the nearest ``torchmend.toml`` / ``pyproject.toml``).  Code actions, for the
findings in the requested range: each fix (an unsafe one titled "(unsafe)"), "add a
suppression comment" (``# noqa: TMxxx``, :func:`torchmend.suppression.add_noqa`), and
``source.fixAll``: every safe fix, the text ``torchmend apply`` would write.  Notebooks
come through the LSP notebook document sync: their cells are analysed together, as a
kernel runs them (``Options.notebook``), and each cell gets its own diagnostics and edits.

pygls is imported only by :func:`serve`: ``import torchmend.server`` stays cheap and the
rest of the command line never loads it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import unquote, urlparse

SOURCE = "torchmend"


# --------------------------------------------------------------------------- analysis (no pygls)
@dataclass
class Analysis:
    """One document's (or notebook's) findings as output.Diagnostic records, plus what the
    code actions need."""

    path: str
    text: str  # the document's text (a notebook: its JSON, built from the cells)
    diags: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    error: Optional[str] = None


def uri_to_path(uri: str) -> str:
    p = urlparse(uri)
    if p.scheme == "file":
        return unquote(p.path)
    return unquote(p.path) or uri


class Engine:
    """The engine behind the server: settings resolved once (like one run of the command
    line), documents analysed on demand."""

    def __init__(self, cwd: Optional[str] = None):
        from .config import CliOptions, resolve

        self.settings = resolve(CliOptions(), cwd)

    def options(self, path: str, **kw):
        from .engine import Options

        fs = self.settings.for_file(path)
        return Options(select=fs.select, unsafe_fixes=fs.unsafe_fixes, **kw)

    def analyse(self, path: str, text: str) -> Analysis:
        """Findings with the diff of each fix alone (``fix_edits``), nothing written."""
        from .engine import process_text
        from .output import diagnostics
        from .sourcefile import Skipped, SourceError

        out = Analysis(path, text)
        try:
            res = process_text(path, text, self.options(path, fix=False, fix_edits=True))
        except Skipped:
            return out
        except SourceError as e:
            out.error = str(e)
            return out
        out.error = res.error
        out.findings = res.findings
        out.diags = diagnostics([res], "all")
        return out

    def fix_all(self, path: str, text: str) -> Optional[str]:
        """The text with every safe fix applied (what ``apply`` writes), None if none
        applies.  For a notebook: its JSON."""
        from dataclasses import replace

        from .engine import fix_text, process_text
        from .notebook import is_notebook
        from .project import Project
        from .sourcefile import Skipped, SourceError, decode_source

        opts = replace(self.options(path, fix=True), unsafe_fixes=False)
        try:
            if is_notebook(path):
                res = process_text(path, text, opts)
                return res.new_raw.decode("utf-8") if res.changed and not res.error else None
            src = decode_source(path, text.encode("utf-8"))
            _f, new_text, _a, _c = fix_text(path, src.text, opts, Project(standalone=True), tail=src.hold)
        except (SourceError, Skipped):
            return None
        return None if new_text == src.text else src.encode(new_text).decode("utf-8")


def notebook_json(cells: list[tuple[str, str]]) -> str:
    """A minimal nbformat 4 notebook of ``(kind, source)`` cells ("code" / "markdown"):
    what the engine reads for a notebook the editor holds."""
    nb_cells = []
    for kind, src in cells:
        if kind == "code":
            nb_cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src})
        else:
            nb_cells.append({"cell_type": "markdown", "metadata": {}, "source": src})
    return json.dumps({"cells": nb_cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                       "nbformat_minor": 4}, indent=1)


def whole_text_edit(old: str, new: str):
    """(start line, end line, replacement) of the smallest run of whole lines of ``old``
    that differs from ``new``."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return i, len(a) - j, "".join(b[i:len(b) - j])


# --------------------------------------------------------------------------- the server
def serve() -> None:  # pragma: no cover - run as a subprocess by tests/test_lsp.py
    server = make_server()
    server.start_io()


def make_server():
    from lsprotocol import types as T
    from pygls.lsp.server import LanguageServer

    from . import __version__

    server = LanguageServer(
        SOURCE, __version__, text_document_sync_kind=T.TextDocumentSyncKind.Full,
        notebook_document_sync=T.NotebookDocumentSyncOptions(
            notebook_selector=[T.NotebookDocumentFilterWithCells(
                notebook="jupyter-notebook", cells=[T.NotebookCellLanguage(language="python")])],
            save=True,
        ),
    )
    state: dict = {"engine": None}
    SEV = {"bug": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
           "info": T.DiagnosticSeverity.Information}

    def engine() -> Engine:
        if state["engine"] is None:
            root = None
            folders = server.workspace.folders
            if folders:
                root = uri_to_path(next(iter(folders.values())).uri)
            elif server.workspace.root_path:
                root = server.workspace.root_path
            state["engine"] = Engine(root if root and os.path.isdir(root) else None)
        return state["engine"]

    def lsp_range(d, line_offset: int = 0) -> "T.Range":
        return T.Range(start=T.Position(line=max(d.line - 1, 0), character=max(d.col - 1, 0)),
                       end=T.Position(line=max(d.end_line - 1, 0), character=max(d.end_col - 1, 0)))

    def lsp_diag(d) -> "T.Diagnostic":
        msg = d.message
        if d.applicability == "unsafe":
            msg += " (unsafe fix available)"
        elif d.applicability == "safe":
            msg += " (fix available)"
        return T.Diagnostic(range=lsp_range(d), message=msg, severity=SEV.get(d.severity, T.DiagnosticSeverity.Warning),
                            code=d.code, source=SOURCE, data={"code": d.code, "line": d.line, "col": d.col})

    # ------------------------------------------------------------------ documents
    def notebook_of(cell_uri: str):
        return server.workspace.get_notebook_document(cell_uri=cell_uri)

    def notebook_state(nb) -> tuple[str, str, list[str]]:
        """(path, JSON text, cell URIs in order) of a notebook the client holds."""
        cells, uris = [], []
        for c in nb.cells:
            doc = server.workspace.get_text_document(c.document)
            cells.append(("code" if c.kind == T.NotebookCellKind.Code else "markdown", doc.source))
            uris.append(c.document)
        return uri_to_path(nb.uri), notebook_json(cells), uris

    def publish(uri: str, diags: list) -> None:
        server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diags))

    def lint_text(uri: str) -> None:
        doc = server.workspace.get_text_document(uri)
        an = engine().analyse(uri_to_path(uri), doc.source)
        diags = [lsp_diag(d) for d in an.diags]
        if an.error:
            diags.append(T.Diagnostic(range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
                                      message=f"torchmend: {an.error}", severity=T.DiagnosticSeverity.Warning, source=SOURCE))
        publish(uri, diags)

    def lint_notebook(nb) -> None:
        path, text, uris = notebook_state(nb)
        an = engine().analyse(path, text)
        by_cell: dict[int, list] = {i: [] for i in range(1, len(uris) + 1)}
        for d in an.diags:
            if d.cell in by_cell:
                by_cell[d.cell].append(lsp_diag(d))
        for i, uri in enumerate(uris, 1):
            publish(uri, by_cell[i])

    def is_cell(uri: str) -> bool:
        return notebook_of(uri) is not None

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: T.DidOpenTextDocumentParams):
        lint_text(params.text_document.uri)

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: T.DidChangeTextDocumentParams):
        lint_text(params.text_document.uri)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: T.DidSaveTextDocumentParams):
        lint_text(params.text_document.uri)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: T.DidCloseTextDocumentParams):
        publish(params.text_document.uri, [])

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_OPEN)
    def nb_open(ls, params: T.DidOpenNotebookDocumentParams):
        nb = server.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if nb is not None:
            lint_notebook(nb)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def nb_change(ls, params: T.DidChangeNotebookDocumentParams):
        nb = server.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if nb is not None:
            lint_notebook(nb)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_SAVE)
    def nb_save(ls, params: T.DidSaveNotebookDocumentParams):
        nb = server.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if nb is not None:
            lint_notebook(nb)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def nb_close(ls, params: T.DidCloseNotebookDocumentParams):
        for c in params.cell_text_documents:
            publish(c.uri, [])

    # ------------------------------------------------------------------ code actions
    def text_edits(edits, line_count: int) -> list:
        out = []
        for e in edits:
            out.append(T.TextEdit(range=T.Range(start=T.Position(line=e.row - 1, character=0),
                                                end=T.Position(line=e.end_row - 1, character=0)), new_text=e.content))
        return out

    def overlaps(d, rng: "T.Range") -> bool:
        a0, a1 = (d.line - 1, d.col - 1), (d.end_line - 1, d.end_col - 1)
        b0, b1 = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
        return a0 <= b1 and b0 <= a1

    @server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(
        code_action_kinds=[T.CodeActionKind.QuickFix, T.CodeActionKind.SourceFixAll], resolve_provider=False))
    def code_action(ls, params: T.CodeActionParams):
        from . import suppression

        uri = params.text_document.uri
        nb = notebook_of(uri)
        if nb is not None:
            path, text, uris = notebook_state(nb)
            cell = uris.index(uri) + 1 if uri in uris else 0
        else:
            path, text, uris, cell = uri_to_path(uri), server.workspace.get_text_document(uri).source, [uri], 0
        eng = engine()
        an = eng.analyse(path, text)
        want = params.context.only
        actions = []
        cell_text = server.workspace.get_text_document(uri).source
        for d, f in zip(an.diags, an.findings):
            if (d.cell or 0) != cell or not overlaps(d, params.range):
                continue
            diag = lsp_diag(d)
            if d.edits and (not want or any(k.startswith(T.CodeActionKind.QuickFix) for k in want)):
                changes: dict[str, list] = {}
                for e in d.edits:
                    target = uris[(e.cell or 1) - 1] if e.cell else uri
                    changes.setdefault(target, []).extend(text_edits([e], 0))
                unsafe = d.applicability == "unsafe"
                actions.append(T.CodeAction(
                    title=f"{d.code}: fix {d.name}" + (" (unsafe)" if unsafe else ""),
                    kind=T.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=not unsafe,
                    edit=T.WorkspaceEdit(changes=changes)))
            if not want or any(k.startswith(T.CodeActionKind.QuickFix) for k in want):
                from dataclasses import replace

                new, n = suppression.add_noqa(cell_text, [replace(f, cell=0)])
                if n:
                    s, e, repl = whole_text_edit(cell_text, new)
                    actions.append(T.CodeAction(
                        title=f"{d.code}: add a suppression comment (# noqa: {d.code})", kind=T.CodeActionKind.QuickFix,
                        diagnostics=[diag], edit=T.WorkspaceEdit(changes={uri: [T.TextEdit(
                            range=T.Range(start=T.Position(line=s, character=0), end=T.Position(line=e, character=0)),
                            new_text=repl)]})))
        if any(d.applicability == "safe" for d in an.diags) and (
                not want or any(T.CodeActionKind.SourceFixAll.startswith(k) or k.startswith(T.CodeActionKind.SourceFixAll)
                                for k in want)):
            fixed = eng.fix_all(path, text)
            if fixed is not None:
                changes = {}
                if nb is not None:
                    from .notebook import Notebook

                    new_cells = Notebook(fixed.encode("utf-8"), path).nb["cells"]
                    for i, u in enumerate(uris):
                        old = server.workspace.get_text_document(u).source
                        if new_cells[i]["source"] != old:
                            s, e, repl = whole_text_edit(old, new_cells[i]["source"])
                            changes[u] = [T.TextEdit(range=T.Range(start=T.Position(line=s, character=0),
                                                                   end=T.Position(line=e, character=0)), new_text=repl)]
                else:
                    s, e, repl = whole_text_edit(text, fixed)
                    changes[uri] = [T.TextEdit(range=T.Range(start=T.Position(line=s, character=0),
                                                             end=T.Position(line=e, character=0)), new_text=repl)]
                actions.append(T.CodeAction(title="torchmend: fix all safe", kind=T.CodeActionKind.SourceFixAll,
                                            edit=T.WorkspaceEdit(changes=changes)))
        return actions

    return server
