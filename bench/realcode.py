"""Rebuild the real-code tree: the ``.py`` files of pinned public packages and repositories.

    python bench/realcode.py build DEST                          # pip download + git clone (network)
    python bench/realcode.py build DEST --mirror-dir /work/.mirror   # repositories from local mirrors
    python bench/realcode.py build DEST --wheel-dir DIR          # reuse wheels already downloaded
    python bench/realcode.py build DEST --extras ultralytics     # also the optional sources
    python bench/realcode.py manifest DEST                       # print the manifest of a built tree

The tree holds one directory per source: ``NAME-VERSION/`` for a wheel (its ``.py``
members, as laid out in the wheel), ``OWNER+NAME/`` for a repository (its ``.py`` files
at the pinned commit).  Nothing but ``.py`` files lands there, so every linter sees the
same input; the build's own files live in ``DEST/.realcode/`` (stamps, downloaded
wheels, fetched repositories) and ``DEST/MANIFEST.tsv``.

Wheels come from ``pip download --no-deps`` of a pinned version for a pinned platform
(the ``.py`` files of a binary wheel do not depend on the platform, but its file name
does), and their sha256 is checked against the pin.  Repositories are read at a pinned
commit with ``git ls-tree`` and ``git cat-file`` from a bare git directory: a local
mirror (``--mirror-dir``, layout ``OWNER+NAME/repo`` or ``OWNER+NAME``) when it has the
commit, else one fetched from GitHub (``git fetch --depth 1 URL COMMIT``).  Blobs a
mirror lacks are counted in the manifest's ``missing`` column.

Idempotent: a source whose stamp matches its pin is reused as it is; a source is
written into a temporary directory and renamed into place when complete.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field

# --------------------------------------------------------------------------- pins


@dataclass(frozen=True)
class Wheel:
    name: str  # distribution name for pip
    version: str
    filename: str  # the wheel pip downloads for the pinned platform
    sha256: str
    pip_args: tuple[str, ...] = ()
    note: str = ""

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def source(self) -> str:
        return self.name


@dataclass(frozen=True)
class Repo:
    slug: str  # OWNER/NAME on GitHub
    commit: str
    note: str = ""

    @property
    def dirname(self) -> str:
        return self.slug.replace("/", "+")

    @property
    def source(self) -> str:
        return self.slug


_LINUX_311 = ("--platform", "manylinux_2_28_x86_64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311")

# The tree of issues 10 and 11 (4,553 files, 1.59M lines).
WHEELS = (
    Wheel("transformers", "5.18.0", "transformers-5.18.0-py3-none-any.whl", "d79e5a515a572ee3deb33eb0d578be47d91e70c75d54cf21bf6eede6edef14a9"),
    Wheel("torchvision", "0.29.1", "torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl", "2cb678029a5dd45afbbfa662fce49736827d52be33242b5a8a731e0db02ccdf5", _LINUX_311),
)
REPOS = (
    Repo("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    Repo("karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"),
    Repo("karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26"),
    Repo("yunjey/pytorch-tutorial", "0500d3df5a2a8080ccfccbc00aca0eacc21818db"),
    Repo("openai/CLIP", "d05afc436d78f1c48dc0dbf8e5980a9d471f35f6"),
    Repo("ultralytics/yolov5", "5081342f04fb287fc2e5f2b5a4e06752b7937b1c"),
    Repo("facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833"),
    Repo("huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d", "holds timm (the timm wheel is the same package)"),
    Repo("Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414", "holds lightning, pytorch_lightning, lightning_fabric (the wheels are the same packages)"),
)
# Opt-in (--extras NAME,...): not part of the issues' tree.  timm and lightning repeat
# code the repositories above already hold; ultralytics (YOLOv8+) is new code.
EXTRAS = (
    Wheel("ultralytics", "8.4.190", "ultralytics-8.4.190-py3-none-any.whl", "bd309728efa168af64d39040136828edd2dbcb4aeceb4510bdff4f3ca0ea01b8", note="not covered by ultralytics/yolov5"),
    Wheel("timm", "1.0.31", "timm-1.0.31-py3-none-any.whl", "5bd50f7d0fe6d09bf9285ac2523234a1b7e6bf075c0be3e7aed09139fcb617c7", note="same package as huggingface/pytorch-image-models"),
    Wheel("lightning", "2.6.6", "lightning-2.6.6-py3-none-any.whl", "2bcbd6ee840071cd076c7dc9953d7ac1040df92f1c5fa76583aae644f037ab85", note="same package as Lightning-AI/pytorch-lightning"),
)

META = ".realcode"
MANIFEST = "MANIFEST.tsv"
COLUMNS = ("source", "kind", "version", "dir", "files", "lines", "bytes", "missing", "origin")


@dataclass
class Entry:
    source: str
    kind: str
    version: str
    dir: str
    files: int = 0
    lines: int = 0
    bytes: int = 0
    missing: int = 0
    origin: str = ""
    extra: dict = field(default_factory=dict)

    def row(self) -> list[str]:
        return [str(getattr(self, c)) for c in COLUMNS]


class BuildError(Exception):
    pass


# --------------------------------------------------------------------------- helpers


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write(root: str, relpath: str, data: bytes) -> None:
    rel = relpath.replace("\\", "/")
    if rel.startswith("/") or ".." in rel.split("/"):
        raise BuildError(f"{relpath}: refusing a path outside the tree")
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)


def count_tree(root: str) -> tuple[int, int, int]:
    """(files, lines, bytes) of the ``.py`` files under ``root``; lines = newlines, like ``wc -l``."""
    files = lines = nbytes = 0
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(".py"):
                with open(os.path.join(d, n), "rb") as f:
                    data = f.read()
                files += 1
                lines += data.count(b"\n")
                nbytes += len(data)
    return files, lines, nbytes


def _git(gitdir: str, *args: str, input: bytes | None = None) -> bytes:
    r = subprocess.run(["git", f"--git-dir={gitdir}", *args], input=input, capture_output=True)
    if r.returncode:
        raise BuildError(f"git {' '.join(args[:2])} in {gitdir}: {r.stderr.decode(errors='replace').strip().splitlines()[-1:] or r.returncode}")
    return r.stdout


def _has_commit(gitdir: str, commit: str) -> bool:
    r = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    return r.returncode == 0


def mirror_gitdir(mirror_dir: str, slug: str) -> str | None:
    """The bare git directory of ``slug`` in a mirror directory, or None."""
    base = os.path.join(mirror_dir, slug.replace("/", "+"))
    for cand in (os.path.join(base, "repo"), base, base + ".git", os.path.join(base, ".git")):
        if os.path.isdir(cand) and os.path.exists(os.path.join(cand, "HEAD")) and os.path.isdir(os.path.join(cand, "objects")):
            return cand
    return None


def extract_commit(gitdir: str, commit: str, dest: str) -> tuple[int, int]:
    """Write the ``.py`` blobs of ``commit`` under ``dest``; (written, missing).  Symbolic
    links and submodules are skipped."""
    out = _git(gitdir, "ls-tree", "-r", "-z", commit)
    todo: list[tuple[str, str]] = []
    for ent in out.split(b"\0"):
        if not ent:
            continue
        meta, path = ent.split(b"\t", 1)
        mode, typ, sha = meta.split()
        if typ != b"blob" or mode == b"120000" or not path.endswith(b".py"):
            continue
        todo.append((sha.decode(), os.fsdecode(path)))
    if not todo:
        return 0, 0
    # one cat-file process for every blob; a missing blob answers "<sha> missing"
    p = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin and p.stdout
    written = missing = 0
    try:
        for sha, path in todo:
            p.stdin.write(sha.encode() + b"\n")
            p.stdin.flush()
            header = p.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":
                missing += 1
                continue
            size = int(header[2])
            data = p.stdout.read(size)
            p.stdout.read(1)  # the newline after the contents
            _write(dest, path, data)
            written += 1
    finally:
        p.stdin.close()
        p.wait()
    return written, missing


# --------------------------------------------------------------------------- sources


def _stamp_path(dest: str, dirname: str) -> str:
    return os.path.join(dest, META, "stamps", dirname + ".json")


def _pin(src) -> dict:
    if isinstance(src, Wheel):
        return {"kind": "wheel", "name": src.name, "version": src.version, "filename": src.filename, "sha256": src.sha256}
    return {"kind": "git", "slug": src.slug, "commit": src.commit}


def _reusable(dest: str, src) -> dict | None:
    try:
        with open(_stamp_path(dest, src.dirname)) as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    if stamp.get("pin") != _pin(src) or not os.path.isdir(os.path.join(dest, src.dirname)):
        return None
    return stamp


def fetch_wheel(w: Wheel, wheel_dir: str, log=print) -> str:
    """The pinned wheel's path in ``wheel_dir``, downloaded with pip when absent."""
    path = os.path.join(wheel_dir, w.filename)
    if not os.path.exists(path):
        os.makedirs(wheel_dir, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", wheel_dir, *w.pip_args, f"{w.name}=={w.version}"]
        log(f"  {' '.join(cmd[1:])}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode or not os.path.exists(path):
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
            raise BuildError(f"{w.name}=={w.version}: pip download did not give {w.filename}: {tail[0]}")
    got = _sha256(path)
    if got != w.sha256:
        raise BuildError(f"{path}: sha256 {got}, pinned {w.sha256}")
    return path


def build_wheel(w: Wheel, dest: str, wheel_dir: str, log=print) -> Entry:
    path = fetch_wheel(w, wheel_dir, log)
    part = os.path.join(dest, META, "part", w.dirname)
    shutil.rmtree(part, ignore_errors=True)
    os.makedirs(part)
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.filename.endswith(".py") and not info.is_dir():
                _write(part, info.filename, z.read(info))
    return Entry(w.source, "wheel", w.version, w.dirname, origin=f"pip download {w.filename} sha256:{w.sha256[:12]}", extra={"part": part})


def fetch_repo(r: Repo, dest: str, mirror_dir: str | None, log=print) -> tuple[str, str]:
    """(bare git directory holding the pinned commit, where it came from)."""
    if mirror_dir:
        g = mirror_gitdir(mirror_dir, r.slug)
        if g and _has_commit(g, r.commit):
            return g, f"mirror {g}"
        log(f"  {r.slug}: not in {mirror_dir} at {r.commit[:12]}; fetching from GitHub")
    g = os.path.join(dest, META, "git", r.dirname + ".git")
    if not (os.path.isdir(g) and _has_commit(g, r.commit)):
        os.makedirs(g, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", g], check=True)
        url = f"https://github.com/{r.slug}.git"
        log(f"  git fetch --depth 1 {url} {r.commit}")
        res = subprocess.run(["git", f"--git-dir={g}", "fetch", "-q", "--depth", "1", url, r.commit], capture_output=True, text=True)
        if res.returncode or not _has_commit(g, r.commit):
            tail = res.stderr.strip().splitlines()[-1:] or ["commit not found"]
            raise BuildError(f"{r.slug}@{r.commit[:12]}: git fetch failed: {tail[0]}")
    return g, f"git {url_of(r)}"


def url_of(r: Repo) -> str:
    return f"https://github.com/{r.slug}@{r.commit[:12]}"


def build_repo(r: Repo, dest: str, mirror_dir: str | None, log=print) -> Entry:
    g, origin = fetch_repo(r, dest, mirror_dir, log)
    part = os.path.join(dest, META, "part", r.dirname)
    shutil.rmtree(part, ignore_errors=True)
    os.makedirs(part)
    _, missing = extract_commit(g, r.commit, part)
    return Entry(r.source, "git", r.commit, r.dirname, missing=missing, origin=origin, extra={"part": part})


def sources(extras: list[str]) -> list:
    names = {e.name: e for e in EXTRAS}
    unknown = [x for x in extras if x not in names]
    if unknown:
        raise BuildError(f"unknown extra source(s): {', '.join(unknown)} (known: {', '.join(names)})")
    return [*WHEELS, *REPOS, *(names[x] for x in extras)]


def build(dest: str, mirror_dir: str | None = None, wheel_dir: str | None = None, extras: list[str] = (), srcs: list | None = None, log=print) -> list[Entry]:
    """Build (or reuse) every source under ``dest``; returns the manifest entries."""
    dest = os.path.abspath(dest)
    os.makedirs(os.path.join(dest, META, "stamps"), exist_ok=True)
    wheel_dir = wheel_dir or os.path.join(dest, META, "wheels")
    entries = []
    selected = srcs if srcs is not None else sources(list(extras))
    # a source built earlier but not selected now (an extra) would still be benchmarked
    names = {s.dirname for s in selected}
    for stamp in sorted(os.listdir(os.path.join(dest, META, "stamps"))):
        d = stamp[: -len(".json")]
        if stamp.endswith(".json") and d not in names:
            log(f"remove  {d} (built earlier, not selected now)")
            shutil.rmtree(os.path.join(dest, d), ignore_errors=True)
            os.remove(os.path.join(dest, META, "stamps", stamp))
    for d in sorted(os.listdir(dest)):
        if d not in names and d not in (META, MANIFEST) and not d.startswith("."):
            log(f"warning: {os.path.join(dest, d)} is not one of the pinned sources and will be benchmarked too")
    for src in selected:
        stamp = _reusable(dest, src)
        if stamp is not None:
            e = Entry(**stamp["entry"])
            log(f"reused  {src.dirname}")
        else:
            log(f"build   {src.dirname}")
            e = build_wheel(src, dest, wheel_dir, log) if isinstance(src, Wheel) else build_repo(src, dest, mirror_dir, log)
            part = e.extra.pop("part")
            e.files, e.lines, e.bytes = count_tree(part)
            final = os.path.join(dest, src.dirname)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(part, final)
            tmp = _stamp_path(dest, src.dirname) + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"pin": _pin(src), "entry": e.__dict__}, f, indent=1)
            os.replace(tmp, _stamp_path(dest, src.dirname))
        entries.append(e)
    write_manifest(dest, entries)
    return entries


def write_manifest(dest: str, entries: list[Entry]) -> str:
    path = os.path.join(dest, MANIFEST)
    with open(path + ".tmp", "w") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for e in entries:
            f.write("\t".join(e.row()) + "\n")
    os.replace(path + ".tmp", path)
    return path


def read_manifest(dest: str) -> list[Entry]:
    with open(os.path.join(dest, MANIFEST)) as f:
        head = f.readline().rstrip("\n").split("\t")
        out = []
        for line in f:
            d = dict(zip(head, line.rstrip("\n").split("\t")))
            for k in ("files", "lines", "bytes", "missing"):
                d[k] = int(d[k])
            out.append(Entry(**d))
    return out


def source_of_dir(dirname: str, tree: str | None = None) -> str:
    """The stable source name of a top-level directory of the tree (``transformers``,
    ``pytorch/examples``): from the manifest when there is one, else from the name."""
    if tree:
        try:
            for e in read_manifest(tree):
                if e.dir == dirname:
                    return e.source
        except OSError:
            pass
    for src in (*WHEELS, *REPOS, *EXTRAS):
        if src.dirname == dirname:
            return src.source
    if "+" in dirname:
        return dirname.replace("+", "/", 1)
    import re

    return re.sub(r"-\d[\w.]*$", "", dirname)


def format_manifest(entries: list[Entry]) -> str:
    w = max(len(e.source) for e in entries)
    lines = [f"{'source':{w}}  {'kind':5}  {'version / commit':40}  {'files':>6}  {'lines':>9}  {'missing':>7}"]
    for e in entries:
        lines.append(f"{e.source:{w}}  {e.kind:5}  {e.version:40}  {e.files:6}  {e.lines:9}  {e.missing:7}")
    lines.append(f"{'total':{w}}  {'':5}  {'':40}  {sum(e.files for e in entries):6}  {sum(e.lines for e in entries):9}  {sum(e.missing for e in entries):7}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build or reuse the tree under DEST")
    b.add_argument("dest")
    b.add_argument("--mirror-dir", help="local git mirrors (OWNER+NAME/repo bare git directories)")
    b.add_argument("--wheel-dir", help="where wheels are downloaded / already are (default DEST/.realcode/wheels)")
    b.add_argument("--extras", default="", help=f"comma-separated optional sources: {', '.join(e.name for e in EXTRAS)}")
    m = sub.add_parser("manifest", help="print the manifest of a built tree")
    m.add_argument("dest")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "build":
            extras = [x for x in a.extras.split(",") if x]
            entries = build(a.dest, a.mirror_dir, a.wheel_dir, extras, log=lambda s: print(s, file=sys.stderr, flush=True))
            print(f"manifest: {os.path.join(os.path.abspath(a.dest), MANIFEST)}")
        else:
            entries = read_manifest(a.dest)
    except (BuildError, OSError) as e:
        print(f"realcode: {e}", file=sys.stderr)
        return 2
    print(format_manifest(entries))
    for e in entries:
        if e.missing:
            print(f"note: {e.source}: {e.missing} .py blob(s) absent from {e.origin}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
