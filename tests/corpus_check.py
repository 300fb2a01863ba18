"""Quick corpus report for rule work: ``python -m tests.corpus_check [pitfall ...]``
prints each failing case (codes found vs declared, safe/unsafe output vs expected) and
a count; exit 1 if any fails.  The same checks as tests/test_corpus.py, readable."""

import sys

from torchmend.engine import Options, process_text
from tests.corpus_cases import load_cases
from tests.patching import apply_patch


def main(argv):
    only = set(argv)
    ok = bad = 0
    for case in load_cases():
        if only and case.pitfall not in only:
            continue
        src = case.read()
        r = process_text(case.path(), src.decode(), Options(fix=False))
        got = sorted(f.code for f in r.findings)
        problems = []
        if r.error:
            problems.append(r.error)
        if got != case.codes:
            problems.append(f"codes {got} != {case.codes}")
        for unsafe, want in ((False, case.expected()), (True, case.expected_unsafe())):
            rr = process_text(case.path(), src.decode(), Options(unsafe_fixes=unsafe))
            if rr.error:
                problems.append(f"fix error {rr.error}")
                continue
            out = apply_patch(src, rr.diff) if rr.changed else src
            if out != want:
                problems.append(f"unsafe={unsafe} output differs:\n{rr.diff.decode()}")
        if problems:
            bad += 1
            print("FAIL", case.id, *problems, sep="\n  ")
            for f in r.findings:
                print("   ", f.format())
        else:
            ok += 1
    print("ok", ok, "bad", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
