"""`torchmend server`: a real LSP session over stdio (JSON-RPC framed by hand).

``TORCHMEND_LSP_TRANSCRIPT=FILE`` writes the session of the corpus test to FILE (the
transcript in docs/lsp-session.md was made so)."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "corpus" / "zero_grad" / "missing_basic.py"


class Client:
    """A minimal LSP client: Content-Length framing, requests with ids, a reader thread."""

    def __init__(self, cwd):
        self.p = subprocess.Popen([sys.executable, "-m", "torchmend", "server"], cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.log: list = []  # (direction, message)
        self.msgs: list = []
        self.cv = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        f = self.p.stdout
        while True:
            headers = {}
            while True:
                line = f.readline()
                if not line:
                    with self.cv:
                        self.msgs.append(None)
                        self.cv.notify_all()
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                k, _, v = line.partition(":")
                headers[k.lower()] = v.strip()
            body = json.loads(f.read(int(headers["content-length"])))
            with self.cv:
                self.log.append(("<-", body))
                self.msgs.append(body)
                self.cv.notify_all()

    def send(self, msg):
        self.log.append(("->", msg))
        data = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.p.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=60):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        got = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        assert "error" not in got, got
        return got["result"]

    def wait(self, pred, timeout=60):
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for m in self.msgs:
                    if m is None:
                        raise AssertionError("server exited: " + self.p.stderr.read().decode(errors="replace"))
                    if pred(m):
                        self.msgs.remove(m)
                        return m
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for the server")
                self.cv.wait(left)

    def diagnostics(self, uri, timeout=60):
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri,
                         timeout)["params"]["diagnostics"]

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.p.wait(timeout=10)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            for s in (self.p.stdin, self.p.stdout, self.p.stderr):
                s.close()


def apply_edits(text: str, edits) -> str:
    """Apply LSP TextEdits (line/character positions) to ``text``."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def off(pos):
        if pos["line"] >= len(lines):
            return len(text)
        return starts[pos["line"]] + pos["character"]

    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        a, b = off(e["range"]["start"]), off(e["range"]["end"])
        text = text[:a] + e["newText"] + text[b:]
    return text


def initialize(c, root):
    caps = {"textDocument": {"publishDiagnostics": {}, "codeAction": {"codeActionLiteralSupport": {
        "codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}}}},
        "notebookDocument": {"synchronization": {}}}
    res = c.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": caps,
                                   "workspaceFolders": [{"uri": root.as_uri(), "name": "w"}]})
    c.notify("initialized", {})
    return res


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchmend]\n")
    return tmp_path


def test_session_on_a_corpus_case(workspace):
    src = CASE.read_text()
    expected = (CASE.parent / "missing_basic.expected.py").read_text()
    path = workspace / "missing_basic.py"
    path.write_text(src)
    uri = path.as_uri()
    c = Client(workspace)
    try:
        caps = initialize(c, workspace)["capabilities"]
        assert caps["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll"]
        assert caps["notebookDocumentSync"]["notebookSelector"][0]["notebook"] == "jupyter-notebook"
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": src}})
        [d] = c.diagnostics(uri)
        assert d["code"] == "TM201" and d["source"] == "torchmend" and d["severity"] == 1
        assert d["range"]["start"] == {"line": 16, "character": 4}
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"],
                                                        "context": {"diagnostics": [d]}})
        titles = [a["title"] for a in actions]
        assert titles == ["TM201: fix missing-zero-grad", "TM201: add a suppression comment (# noqa: TM201)",
                          "torchmend: fix all safe"]
        fix = actions[0]
        assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
        assert apply_edits(src, fix["edit"]["changes"][uri]) == expected
        assert apply_edits(src, actions[2]["edit"]["changes"][uri]) == expected
        noqa = apply_edits(src, actions[1]["edit"]["changes"][uri])
        assert "    opt.step()  # noqa: TM201\n" in noqa
        # the edit reaches the server: diagnostics follow the change (and the save)
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": expected}]})
        assert c.diagnostics(uri) == []
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": noqa}]})
        assert c.diagnostics(uri) == []
        path.write_text(src)
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": src}]})
        assert [x["code"] for x in c.diagnostics(uri)] == ["TM201"]
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [x["code"] for x in c.diagnostics(uri)] == ["TM201"]
    finally:
        c.close()
    assert c.p.returncode == 0
    out = os.environ.get("TORCHMEND_LSP_TRANSCRIPT")
    if out:
        Path(out).write_text("".join(f"{d} {json.dumps(m)}\n" for d, m in c.log))


def test_unsafe_fix_is_labelled_and_configuration_is_read(workspace):
    (workspace / "pyproject.toml").write_text('[tool.torchmend]\nselect = ["TM1"]\n')
    src = (ROOT / "corpus" / "zero_grad" / "missing_basic.py").read_text()
    path = workspace / "a.py"
    path.write_text(src)
    c = Client(workspace)
    try:
        initialize(c, workspace)
        c.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1,
                                                           "text": src}})
        assert c.diagnostics(path.as_uri()) == []  # TM201 is not selected there
        case = ROOT / "corpus" / "device" / "lengths_mask_compare.py"  # TM102: an unsafe device= fix
        text = case.read_text()
        b = workspace / "b.py"
        b.write_text(text)
        c.notify("textDocument/didOpen", {"textDocument": {"uri": b.as_uri(), "languageId": "python", "version": 1,
                                                           "text": text}})
        ds = c.diagnostics(b.as_uri())
        d = next(x for x in ds if "(unsafe fix available)" in x["message"])
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": b.as_uri()}, "range": d["range"],
                                                        "context": {"diagnostics": [d]}})
        assert any(a["title"].endswith("(unsafe)") and a.get("isPreferred") is False for a in actions)
    finally:
        c.close()


def test_notebook_document_sync(workspace):
    nb_uri = (workspace / "train.ipynb").as_uri()
    setup = "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\n" \
            "X, Y = torch.randn(32, 4), torch.randn(32, 1)\nloader = DataLoader(TensorDataset(X, Y), batch_size=8)\n" \
            "model = nn.Linear(4, 1)\ncriterion = nn.MSELoss()\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
    loop = "for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n    opt.step()\n"
    cells = [("%pip install torch\n" + setup, 2), ("# Training", 1), (loop, 2)]
    cell_uris = [f"vscode-notebook-cell:{workspace / 'train.ipynb'}#c{i}" for i in range(len(cells))]
    c = Client(workspace)
    try:
        initialize(c, workspace)
        c.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1,
                                 "cells": [{"kind": k, "document": u} for (_s, k), u in zip(cells, cell_uris)]},
            "cellTextDocuments": [{"uri": u, "languageId": "python" if k == 2 else "markdown", "version": 1, "text": s}
                                  for (s, k), u in zip(cells, cell_uris)]})
        got = {}
        for _ in cells:
            m = c.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
            got[m["params"]["uri"]] = m["params"]["diagnostics"]
        assert got[cell_uris[0]] == [] and got[cell_uris[1]] == []
        [d] = got[cell_uris[2]]
        assert d["code"] == "TM201" and d["range"]["start"] == {"line": 3, "character": 4}  # in the cell
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": cell_uris[2]}, "range": d["range"],
                                                        "context": {"diagnostics": [d]}})
        fix = actions[0]
        assert list(fix["edit"]["changes"]) == [cell_uris[2]]
        assert apply_edits(loop, fix["edit"]["changes"][cell_uris[2]]) == loop.replace("loader:\n", "loader:\n    opt.zero_grad()\n")
        fix_all = next(a for a in actions if a["kind"] == "source.fixAll")
        assert list(fix_all["edit"]["changes"]) == [cell_uris[2]]
    finally:
        c.close()


def test_server_module_is_import_light():
    code = "import sys, torchmend.server, torchmend.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'nbformat')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
