"""Output formats (torchmend.output) on real engine results: Ruff-shaped JSON with the
fix's edits (applied to the original they give the fixed file), SARIF 2.1.0 valid
against the OASIS schema, GitHub annotations, GitLab Code Quality, JUnit, colour."""

import json
import os
import xml.etree.ElementTree as ET

import pytest

from tests.corpus_cases import ROOT
from torchmend import output
from torchmend.engine import Options, process_text
from torchmend.output import Style

CASES = [os.path.join(ROOT, "corpus", p) for p in (
    "zero_grad/missing_basic.py", "softmax/seq_softmax_last.py", "device/lstm_h0_zeros.py", "main_guard/tutorial_loop.py")]


@pytest.fixture(scope="module")
def results():
    out = []
    for p in CASES:
        with open(p) as f:
            out.append(process_text(os.path.relpath(p), f.read(), Options(fix=False, fix_edits=True)))
    return out


@pytest.fixture(scope="module")
def diags(results):
    d = output.diagnostics(results)
    assert {x.code for x in d} >= {"TM201", "TM501", "TM102", "TM301"}
    return d


def apply_edits(text: str, edits) -> str:
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: e.row, reverse=True):
        lines[e.row - 1 : e.end_row - 1] = [e.content]
    return "".join(lines)


def test_json_is_ruff_shaped_and_edits_reproduce_the_fix(diags, tmp_path):
    data = json.loads(output.render_json(diags))
    assert len(data) == len(diags)
    for obj, d in zip(data, diags):
        assert set(obj) >= {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url", "severity", "name"}
        assert obj["location"] == {"row": d.line, "column": d.col}
        assert (obj["end_location"]["row"], obj["end_location"]["column"]) >= (d.line, d.col)
        assert os.path.isabs(obj["filename"])
        fix = obj["fix"]
        if d.applicability is None:
            assert fix is None
            continue
        assert fix["applicability"] in ("safe", "unsafe") and fix["edits"]
        # the edits, applied to the original, give exactly that fix's diff
        with open(obj["filename"]) as f:
            original = f.read()
        edits = [output.Edit(e["content"], e["location"]["row"], e["end_location"]["row"]) for e in fix["edits"]]
        from torchmend.gitdiff import unified_diff

        assert d.diff and unified_diff(original.encode(), apply_edits(original, edits).encode(), d.path) == d.diff
    lines = output.render_json_lines(diags).splitlines()
    assert [json.loads(ln) for ln in lines] == data


def test_edits_from_diff_roundtrip(results):
    for r in results:
        for s in r.suggestions:
            with open(os.path.join(ROOT, r.path) if not os.path.isabs(r.path) else r.path) as f:
                original = f.read()
            edits = output.edits_from_diff(s.diff)
            fixed = apply_edits(original, edits)
            from torchmend.gitdiff import unified_diff

            assert unified_diff(original.encode(), fixed.encode(), r.path) == s.diff


def test_sarif_is_valid_against_the_oasis_schema(diags):
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "tests", "data", "sarif-schema-2.1.0.json")) as f:
        schema = json.load(f)
    doc = json.loads(output.render_sarif(diags))
    jsonschema.Draft4Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=str)
    assert errors == []
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "torchmend"
    assert len(run["results"]) == len(diags)
    rules = run["tool"]["driver"]["rules"]
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("corpus/")
    assert any("fixes" in r for r in run["results"])
    # an empty run is valid too
    assert list(jsonschema.Draft4Validator(schema).iter_errors(json.loads(output.render_sarif([])))) == []
    # and the validator does reject a broken document (the check can fail)
    bad = json.loads(output.render_sarif(diags))
    bad["runs"][0]["results"][0]["level"] = "fatal"
    assert list(jsonschema.Draft4Validator(schema).iter_errors(bad))


def test_github_annotations(diags):
    text = output.render_github(diags)
    lines = text.splitlines()
    assert len(lines) == len(diags)
    d = diags[0]
    assert lines[0].startswith(f"::error title=torchmend ({d.code}),file={os.path.relpath(d.path)},line={d.line},col={d.col},endLine={d.end_line},endColumn={d.end_col}::")
    # values are escaped as the workflow-command syntax requires
    weird = output.Diagnostic("a,b:c.py", "TM201", "n", "50% done\nnext", "warning", 1, 2, 1, 3)
    assert output.render_github([weird]) == "::warning title=torchmend (TM201),file=a%2Cb%3Ac.py,line=1,col=2,endLine=1,endColumn=3::a,b:c.py:1:2: TM201 50%25 done%0Anext\n"


def test_gitlab_and_junit(diags, results):
    gl = json.loads(output.render_gitlab(diags))
    assert len(gl) == len(diags) and len({g["fingerprint"] for g in gl}) == len(gl)
    assert all(g["location"]["positions"]["begin"]["line"] >= 1 and g["severity"] in ("major", "minor", "info") for g in gl)
    assert json.loads(output.render_gitlab(diags)) == gl  # stable fingerprints
    xml = output.render_junit(diags, files=[r.path for r in results] + ["clean.py"])
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.tag == "testsuites" and int(root.get("failures")) == len(diags)
    suites = {s.get("name"): s for s in root}
    assert "clean.py" in suites and suites["clean.py"].get("failures") == "0"
    assert sum(len(s.findall("testcase/failure")) for s in root) == len(diags)


def test_full_shows_the_source_with_a_caret(diags):
    d = next(x for x in diags if x.code == "TM201")
    text = output.render_full([d], Style(False))
    lines = text.splitlines()
    assert lines[0].startswith(f"{os.path.relpath(d.path)}:{d.line}:{d.col}: TM201 [bug]")
    src_line = [ln for ln in lines if ln.startswith(f"{d.line} |")][0]
    caret = lines[lines.index(src_line) + 1]
    assert src_line.endswith("opt.step()")
    col = len(f"{d.line} | ")
    assert caret[col + d.col - 1 : col + d.end_col - 1] == "^" * (d.end_col - d.col)


def test_colour_decisions_and_styles():
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    assert output.use_color(Tty(), {}) and not output.use_color(Pipe(), {})
    assert not output.use_color(Tty(), {"NO_COLOR": "1"})
    assert output.use_color(Pipe(), {"FORCE_COLOR": "1"})
    assert not output.use_color(Tty(), {"TERM": "dumb"})
    d = output.Diagnostic("x.py", "TM201", "n", "msg", "bug", 1, 1, 1, 2, applicability="safe")
    plain = output.concise_line(d, Style(False))
    assert plain == "x.py:1:1: TM201 [bug] msg (fix available)"
    colored = output.concise_line(d, Style(True))
    assert "\x1b[31;1mTM201\x1b[0m" in colored and "\x1b[1mx.py\x1b[0m" in colored
    diff = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert output.color_diff(diff, Style(False)) == diff
    assert b"\x1b[32m+b\x1b[0m\n" in output.color_diff(diff, Style(True))


def test_statistics_and_plural(diags):
    st = output.statistics(diags, Style(False))
    rows = [ln.split("\t") for ln in st.splitlines()]
    assert sum(int(r[0]) for r in rows) == len(diags)
    assert [int(r[0]) for r in rows] == sorted((int(r[0]) for r in rows), reverse=True)
    assert output.plural(1, "file") == "1 file" and output.plural(2, "file") == "2 files" and output.plural(0, "file") == "0 files"
