"""What a rule may need to know beyond its own file: the project index.

* ``package_of(path)``: the dotted package a file belongs to (its directory and each
  parent holding an ``__init__.py``), for relative imports;
* ``is_imported(path, name=None)``: does another file of the tree import this file's
  module (or ``name`` from it)?  Module paths are resolved the way Python would: a file
  in a package by its full dotted name, a script outside any package by its bare name,
  and only from a file in the same directory (the script's directory is ``sys.path[0]``);
  ``from a.b import c`` imports ``a.b`` and maybe submodule ``a.b.c``, never a ``c.py``
  elsewhere;
* ``module_file(dotted, importer)``: the file of the tree a module name refers to from
  ``importer`` (its directory first, then the package roots);
* ``model_for(path)``: the semantic model of another file (recorded as a dependency).

The import index is one per run, answered on demand from a textual scan of the import
statements of the files that mention the module's name (no parse).  Worker processes do
not have it: a rule that asks raises :class:`NeedsProject`, the file's result says so,
the parent reads the importers of the modules it asked about and gives the file out
again, in the same run, with that part of the index (:meth:`ImportIndex.partial`; a
module it still lacks raises again).  Runs without worker processes of their own (in
this process, an executor) process those files again at the end with the one index
(``runner.run``).
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache
from typing import Optional

__all__ = ["ImportIndex", "NeedsProject", "Project", "package_of"]


class NeedsProject(Exception):
    """The analysis needs the import index, which this process does not have;
    ``modules``: the dotted names it asked about (the parent reads their importers
    while the other files are still being processed)."""

    def __init__(self, modules: tuple[str, ...] = ()):
        super().__init__(*modules)
        self.modules = tuple(modules)


# an import statement from the start of a statement; applied only where "import" stands
_IMPORT = re.compile(r"[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)?|[^\n#;]*)|import[ \t]+([^\n#;]+))")
# where a statement may begin inside a line: after a ";" or a compound statement's ":"
# (``try: import x``); in a string or a comment too, which can only add names
_STATEMENT_BREAK = re.compile(r"[;:]")
_CONTINUATION = re.compile(r"\\\r?\n")


def _import_statements(text: str):
    """(from-module or None, [names]) for each import statement (textual): at the start
    of a line, after a ``;`` or a ``:`` on it, continued with backslashes or inside the
    brackets of ``from m import (...)``.  A superset of the statements (every file
    that imports a module is an importer: the rules then only report)."""
    pos = 0
    while True:
        i = text.find("import", pos)
        if i < 0:
            return
        start = text.rfind("\n", 0, i) + 1
        stop = text.find("\n", i)
        while stop > 0 and (text[stop - 1] == "\\" or text[stop - 2 : stop] == "\\\r"):
            stop = text.find("\n", stop + 1)  # a backslash continues the line
        stop = len(text) if stop < 0 else stop
        pos = stop + 1
        line = text[start:stop]
        if "\\" in line:
            line = _CONTINUATION.sub(" ", line)
        seg = 0
        for k in [m.start() for m in _STATEMENT_BREAK.finditer(line)] + [len(line)]:
            if "import" in line[seg:k]:
                m = _IMPORT.match(line, seg)
                if m is not None and m.start() < k:
                    stmts, after = _statements(m, line, text, stop)
                    yield from stmts
                    pos = max(pos, after)
            seg = k + 1


def _statements(m, line: str, text: str, stop: int):
    """The statements ``m`` matched in ``line`` (which ends at ``stop`` in ``text``): one
    per module of ``import a, b``; and where the scan goes on (past the brackets of a
    ``from m import (...)`` list continued on later lines; 0: after the line)."""
    if m.group(3) is not None:
        out = []
        for part in m.group(3).split(","):
            name = part.strip().split()[0] if part.strip() else ""
            if name and re.fullmatch(r"[\w.]+", name):
                out.append((None, [name]))
        return out, 0
    names = m.group(2).strip().strip("()")
    after = 0
    if m.group(2).startswith("(") and ")" not in m.group(2):
        close = text.find(")", stop)
        if close > 0:
            names = m.group(2)[1:] + text[stop:close]
            after = text.find("\n", close) + 1 or len(text)
    out = []
    if "#" in names:
        names = re.sub(r"#[^\n]*", "", names)  # comments between the names of a bracketed list
    for part in names.replace("\\", " ").split(","):
        p = part.strip().split()
        if p and re.fullmatch(r"[\w*]+", p[0]):
            out.append(p[0])
    return [(m.group(1), out)], after


@lru_cache(maxsize=4096)
def package_of(path: str) -> Optional[str]:
    """The dotted package of the file at ``path``; None outside any package."""
    d = os.path.dirname(os.path.abspath(path))
    parts: list[str] = []
    while os.path.isfile(os.path.join(d, "__init__.py")):
        parts.append(os.path.basename(d))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return ".".join(reversed(parts)) if parts else None


def module_name(path: str) -> tuple[str, Optional[str]]:
    """(dotted module name, package) of a file; a script outside a package is its stem."""
    stem = os.path.splitext(os.path.basename(path))[0]
    pkg = package_of(path)
    if pkg is None:
        return stem, None
    return (pkg if stem == "__init__" else f"{pkg}.{stem}"), pkg


# what a project's root directory holds (where ``Project._package_dir_above`` stops)
_PROJECT_MARKERS = frozenset({".git", "setup.py", "setup.cfg", "pyproject.toml"})


def _resolve_relative(mod: str, importer: str, pkg=False) -> Optional[str]:
    """The absolute name of the relative module ``mod`` imported from ``importer``
    (``pkg``: its package, when known)."""
    level = len(mod) - len(mod.lstrip("."))
    rest = mod[level:]
    if pkg is False:
        pkg = package_of(importer)
    if pkg is None:
        return None
    parts = pkg.split(".")
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if rest:
        base += rest.split(".")
    return ".".join(base)


class ImportIndex:
    """Who imports what, found on demand: ``importers(module)`` reads the import
    statements of the files of the tree whose bytes contain the module's last name
    (``main`` for ``examples.dcgan.main``) and the word ``import`` (from the second last
    name on, a table of every file's import statements, read once); results are kept per
    last name.  module name -> {importer file -> names imported from it ("*": the
    module itself)}."""

    def __init__(self, files: list[str], read=None):
        self.files = list(files)
        self._read = read
        self._by_stem: dict[str, dict[str, dict[str, set[str]]]] = {}
        self._partial = False
        # (path, its import statements) of every file that has some, read once the run
        # asks for a second stem: a tree with many scripts (a monorepo) asks for many, and
        # each scan read every file of the tree again
        self._table: Optional[list] = None
        # the table's records for every stem, made in one pass over it once a third
        # stem is asked for (a monorepo asks for dozens, and each had been a pass over
        # the whole table): stem -> module -> importer path -> names
        self._all: Optional[dict] = None
        self._passed = False  # a stem was read in a pass over the table
        self._reals: dict[str, str] = {}

    def _real(self, path: str) -> str:
        real = self._reals.get(path)
        if real is None:
            real = self._reals[path] = os.path.realpath(path)
        return real

    def answers(self, modules) -> dict:
        """What ``importers`` found for the last names of ``modules`` (each read now if
        not yet): the part of the index a :meth:`partial` one is made of."""
        for m in modules:
            self.importers(m)
        return {s: self._by_stem[s] for s in {m.rsplit(".", 1)[-1] for m in modules}}

    @classmethod
    def partial(cls, answers: dict) -> "ImportIndex":
        """An index that knows only ``answers`` (from :meth:`answers` in the parent): a
        worker process answers with it the files that asked for those modules, and a
        module it does not know raises :class:`NeedsProject` again (never read as
        imported by no file)."""
        index = cls([])
        index._by_stem = dict(answers)
        index._partial = True
        return index

    def _text(self, path: str) -> Optional[bytes]:
        try:
            if self._read is not None:
                return self._read(path).encode("utf-8", "surrogatepass")
            return _read_bytes(path)
        except OSError:
            return None

    def importers(self, module: str) -> dict[str, set[str]]:
        stem = module.rsplit(".", 1)[-1]
        idx = self._by_stem.get(stem)
        if idx is None:
            if self._partial:
                raise NeedsProject((module,))
            idx = self._by_stem[stem] = self._scan(stem)
        return idx.get(module, {})

    def _scan(self, stem: str) -> dict[str, dict[str, set[str]]]:
        """The importers of the modules named ``stem``: the first stem by reading the
        files whose bytes may name it in an import (``_named_in_an_import``), every later
        one from the table of all import statements, read on the second (the same
        records: the test only leaves out files where no statement records the stem);
        the second in a pass over the table, every later one from the records of every
        stem made in one more pass (``_index_by_stem``)."""
        if self._table is None and self._by_stem:  # a stem was scanned already: read them all, once
            self._table = [(path, stmts) for path in self.files for stmts in [self._statements_of(path)] if stmts]
        idx: dict[str, dict[str, set[str]]] = {}
        if self._table is not None and not self._passed:
            self._passed = True
            for path, stmts in self._table:
                _record_stem(idx, path, stmts, stem)
            return idx
        if self._table is not None:
            if self._all is None:  # a third stem: every stem's records, in one more pass
                self._all = _index_by_stem(self._table)
            for module, by_path in self._all.get(stem, {}).items():
                got = idx[module] = {}
                for path, names in by_path.items():
                    got.setdefault(self._real(path), set()).update(names)  # (links to one file: one importer)
            return idx
        key = stem.encode("utf-8")
        for path in self.files:
            data = self._text(path)
            if data is not None and path.endswith(".ipynb") and key in data:
                data = _notebook_code(data)  # a kernel runs its code cells: their imports import
            if data is None or b"import" not in data or not _named_in_an_import(data, key):
                continue
            _record_stem(idx, path, _import_statements(data.decode("utf-8", "replace")), stem)
        return idx

    def _statements_of(self, path: str) -> list:
        """The import statements of one file, as ``_scan`` reads them (a notebook's code
        cells)."""
        data = self._text(path)
        if data is not None and path.endswith(".ipynb"):
            data = _notebook_code(data)
        if data is None or b"import" not in data:
            return []
        return list(_import_statements(data.decode("utf-8", "replace")))


def _record_stem(idx: dict, path: str, stmts, stem: str) -> None:
    """Record in ``idx`` the statements of ``path`` that may import a module named ``stem``."""
    real = None
    for mod, names in stmts:
        if stem not in (mod or "") and not any(stem in n for n in names):
            continue  # (``import pkg.mod``: the stem inside a dotted name counts)
        if real is None:
            real = os.path.realpath(path)
        _record(idx, real, path, mod, names)


def _index_by_stem(table: list) -> dict:
    """What ``_record_stem`` records for each stem, from one pass over ``table``: stem ->
    module of that stem -> importer path -> names.  A statement counts for a module only
    when the module's stem stands in its text, as ``_record_stem`` picks the statements
    of a stem (the records it makes for modules of other stems are never read from that
    stem's scan: ``importers`` looks a module up in the scan of its own stem)."""
    out: dict = {}
    for path, stmts in table:
        for mod, names in stmts:
            rec: dict = {}
            _record(rec, path, path, mod, names)
            for module, by_path in rec.items():
                stem = module.rsplit(".", 1)[-1]
                if stem not in (mod or "") and not any(stem in n for n in names):
                    continue
                out.setdefault(stem, {}).setdefault(module, {}).setdefault(path, set()).update(by_path[path])
    return out


def _notebook_code(data: bytes) -> Optional[bytes]:
    """The code cells of a notebook's JSON, one after another, as the scan reads a
    script; None when it is no notebook."""
    import json

    try:
        nb = json.loads(data)
    except (ValueError, RecursionError):
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return None
    out = []
    for c in cells:
        if isinstance(c, dict) and c.get("cell_type") == "code":
            src = c.get("source", "")
            if isinstance(src, list):
                src = "".join(x for x in src if isinstance(x, str))
            if isinstance(src, str):
                out.append(src)
    return "\n".join(out).encode("utf-8", "surrogatepass")


def _bytes_or_empty(path: str) -> bytes:
    """The bytes of a regular file; empty for anything else or what cannot be read."""
    try:
        return _read_bytes(path) or b""
    except OSError:
        return b""


def _read_bytes(path: str) -> Optional[bytes]:
    """The bytes of a regular file, None for anything else: opened without waiting
    (a FIFO named ``x.py`` in the tree had made the scan wait for a writer forever) and
    read only once ``fstat`` says it is a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        parts, total = [], 0
        while True:
            b = os.read(fd, max(st.st_size + 1 - total, 1 << 16))
            parts.append(b)
            total += len(b)
            # its end, or all fstat counted (no second call only to hear that it ended)
            if not b or total >= st.st_size:
                return b"".join(parts)
    finally:
        os.close(fd)


def _named_in_an_import(data: bytes, stem: bytes) -> bool:
    """``stem`` may stand as a word in an import statement of ``data``: on a line with
    ``import`` on it, or inside the brackets of a ``from ... import (`` above it.  A
    superset of what ``_import_statements`` records for it; most files that contain a
    script's stem (``main`` is in every ``__main__``) import no module of that name, and
    this tells them apart without reading their import statements."""
    i = data.find(stem)
    n = len(stem)
    while i >= 0:
        before = data[i - 1 : i]
        after = data[i + n : i + n + 1]
        if not (before.isalnum() or before == b"_") and not (after.isalnum() or after == b"_"):
            ls = data.rfind(b"\n", 0, i) + 1
            le = data.find(b"\n", i)
            if data.find(b"import", ls, le if le >= 0 else len(data)) >= 0:
                return True
            p = ls  # the lines above that a backslash continues onto this one
            while data[p - 2 : p] == b"\\\n" or data[p - 3 : p] == b"\\\r\n":
                q = data.rfind(b"\n", 0, p - 1) + 1
                if data.find(b"import", q, p) >= 0:
                    return True
                p = q
            j = data.rfind(b"import", 0, ls)
            if j >= 0:
                k = data.find(b"(", j, ls)
                if k >= 0 and data.find(b")", k, i) < 0 and not data[j + 6 : k].strip():
                    return True
        i = data.find(stem, i + n)
    return False


def _record(idx: dict, real: str, path: str, mod: Optional[str], names: list[str]) -> None:
    if mod is None:
        parts = names[0].split(".")
        for k in range(1, len(parts) + 1):
            idx.setdefault(".".join(parts[:k]), {}).setdefault(real, set()).add("*")
        return
    if mod.startswith("."):
        mod = _resolve_relative(mod, path)
        if not mod:
            return
    parts = mod.split(".")
    for k in range(1, len(parts)):
        idx.setdefault(".".join(parts[:k]), {}).setdefault(real, set()).add(parts[k])
    idx.setdefault(mod, {}).setdefault(real, set()).update(names)
    for n in names:  # ``from pkg import mod``: maybe a submodule
        if n != "*":
            idx.setdefault(f"{mod}.{n}", {}).setdefault(real, set()).add("*")


def _namespace_names(real: str, depth: int = 3) -> list[str]:
    """``a.b.train`` and ``b.train`` for ``.../a/b/train.py`` (directories that are
    identifiers, up to ``depth`` of them)."""
    stem = os.path.splitext(os.path.basename(real))[0]
    parts = os.path.dirname(real).split(os.sep)
    out = []
    for k in range(1, depth + 1):
        dirs = parts[len(parts) - k:] if k <= len(parts) else []
        if len(dirs) < k or not all(d.isidentifier() for d in dirs):
            break
        out.append(".".join([*dirs, stem]))
    return out


class Project:
    """The project facts of one run.  ``index`` is the :class:`ImportIndex` or None (a
    worker process: asking raises :class:`NeedsProject`; ``standalone``: a single text
    with no tree around it, which nothing imports)."""

    def __init__(self, roots: tuple[str, ...] = (), index: Optional[ImportIndex] = None, standalone: bool = False):
        self.roots = roots
        self.index = index
        self.standalone = standalone
        # what a rule consulted beyond the file itself (the engine resets both per file):
        # ``used``, the whole tree (the import index); ``deps``, single files it read.  The
        # cache keeps such a result only while those are unchanged.
        self.used = False
        self.deps: set[str] = set()
        self._models: dict = {}
        self._texts: dict = {}  # path -> its bytes (``text_holds``)
        self._holding: dict = {}  # (path, word) -> whether its bytes hold it (``imports_holding``)
        self._dir_entries: dict = {}  # directory -> the names in it (``module_file``), once per run
        self._above: dict = {}  # (bases, name) -> ``_package_dir_above``'s answer, once per run
        self._neighbours: dict[str, ImportIndex] = {}
        self._isfile: dict[str, bool] = {}  # path -> it is a file, asked while one file is analysed
        self._packages: dict[str, Optional[str]] = {}  # path -> its package (asked while one file is analysed)
        self._base_dirs: dict[str, tuple] = {}  # path -> where its imports are looked for (``_bases``), as ``_packages``

    def start_file(self) -> None:
        """A new file is analysed: what a rule consults is recorded afresh (``used``,
        ``deps``), and the files that exist are looked at again."""
        self.used = False
        self.deps = set()
        self._isfile.clear()
        self._packages.clear()
        self._base_dirs.clear()

    def _is_file(self, path: str) -> bool:
        """``os.path.isfile(path)``, looked at once per analysed file (the scope of each
        relative import of the file asks about the file itself)."""
        got = self._isfile.get(path)
        if got is None:
            got = self._isfile[path] = os.path.isfile(path)
        return got

    def package_of(self, path: str) -> Optional[str]:
        """The dotted package of the file at ``path`` (each relative import of a file
        asks: looked at once per analysed file)."""
        got = self._packages.get(path, False)
        if got is False:
            got = self._packages[path] = package_of(path) if path and self._is_file(path) else None
        return got

    def is_imported(self, path: str, name: Optional[str] = None, *, namespace: bool = False,
                    importer_has: Optional[tuple] = None, neighbours_only: bool = False) -> bool:
        """Does another file of the tree import the module at ``path`` (and, when
        ``name`` is given, possibly that name from it)?  Any file can be imported by its
        bare name from a neighbour (a script run from that directory has it as
        ``sys.path[0]``): the neighbours are read here.  A module of a package is also
        imported by its dotted name from anywhere: that needs the tree's index.  With
        ``namespace``, a script outside any package is also looked up by the dotted
        names its directories give it as a namespace package (``tools/train.py`` as
        ``tools.train``, from a file of the tree with the directory above on its path):
        that needs the index too.  With ``importer_has`` (words), only an importer whose
        text holds one of them counts; with ``neighbours_only``, only the files of its
        own directory are asked (by its bare and its dotted names: no index needed), and
        those of the directory above by ``<directory>.<module>`` (``from models.encoder
        import Encoder`` in ``train.py`` beside ``models/``).  A
        notebook is imported by nothing (``import gnn`` cannot read ``gnn.ipynb``)."""
        if self.standalone or not path or path.endswith(".ipynb") or not self._is_file(path):
            return False
        mod, pkg = module_name(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        real = os.path.realpath(path)
        here = os.path.dirname(real)
        index = self._neighbour_index(here)
        self.deps.update(f for f in index.files if f != real)  # (its own content is checked anyway)
        checks = [(index, stem, True)] if stem != "__init__" else []
        dotted = [mod] if pkg is not None else (_namespace_names(real) if namespace else [])
        if neighbours_only:
            checks += [(index, d, True) for d in dotted]
            up, d = os.path.dirname(here), os.path.basename(here)
            if up != here and d.isidentifier() and self._within_roots(up):
                # ``models/encoder.py`` imported as ``models.encoder`` by a script in the
                # directory above (``train.py``; ``models/__init__.py`` as ``models``)
                checks.append((self._neighbour_index(up), d if stem == "__init__" else f"{d}.{stem}", "up"))
        elif dotted:
            if self.index is None:
                raise NeedsProject(tuple(dotted))
            self.used = True
            checks += [(self.index, d, False) for d in dotted]
        for idx, module, here_only in checks:
            for importer, names in idx.importers(module).items():
                if importer == real:
                    continue
                if here_only == "up":
                    if os.path.dirname(importer) != os.path.dirname(here):
                        continue
                elif here_only and os.path.dirname(importer) != here:
                    continue  # a bare module name resolves next to the importer only
                if name is None or "*" in names or name in names:
                    if importer_has is not None and not self._holds(importer, importer_has):
                        continue
                    return True
        return False

    def neighbour_importers(self, path: str, name: str) -> list[tuple[str, str]]:
        """``(importer, module name)`` for the files of ``path``'s own directory, and of
        the one above it, that import ``name`` from it (``from train import fit``,
        ``from models.test import test_img`` in the directory above ``models/``) or the
        module itself (``import train``): by its bare name from its own directory, by its
        dotted name (its package's, or its directory's as a namespace package) from
        either; sorted.  Each file of those directories is a dependency of the result.
        The directory above is read only inside the run's roots.  None for a notebook."""
        if self.standalone or not path or path.endswith(".ipynb") or not self._is_file(path):
            return []
        mod, pkg = module_name(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == "__init__":
            return []
        real = os.path.realpath(path)
        here = os.path.dirname(real)
        up = os.path.dirname(here)
        dotted = mod if pkg is not None else f"{os.path.basename(here)}.{stem}"
        places = [(here, {stem, dotted})]
        if self._within_roots(up):
            places.append((up, {dotted}))
        # (a file added later, or a run with other roots, may import it: the result holds
        # only while the tree is unchanged, as the whole-tree index's does)
        self.used = True
        out = set()
        for where, modules in places:
            index = self._neighbour_index(where)
            self.deps.update(f for f in index.files if f != real)
            for module in modules:
                for importer, names in index.importers(module).items():
                    if importer != real and os.path.dirname(importer) == where and ("*" in names or name in names):
                        out.add((importer, module))
        return sorted(out)

    def _within_roots(self, directory: str) -> bool:
        """``directory`` (a real path) is one of the run's roots or inside one (a root
        that is a file: its directory)."""
        for r in self.roots:
            r = os.path.realpath(r)
            if not os.path.isdir(r):
                r = os.path.dirname(r)
            if directory == r or directory.startswith(r.rstrip(os.sep) + os.sep):
                return True
        return False

    def _neighbour_index(self, here: str) -> ImportIndex:
        index = self._neighbours.get(here)
        if index is None:
            index = self._neighbours[here] = ImportIndex(
                [os.path.join(here, n) for n in sorted(self._entries(here)) if n.endswith((".py", ".ipynb"))])
        return index

    def neighbour_files(self, path: str) -> list[str]:
        """The other ``.py`` files of ``path``'s directory (none for a text with no tree
        around it); each one read later through ``model_for`` is a dependency."""
        if self.standalone or not path or not self._is_file(path):
            return []
        real = os.path.realpath(path)
        return [f for f in self._neighbour_index(os.path.dirname(real)).files
                if f.endswith(".py") and os.path.realpath(f) != real]

    def module_file(self, dotted: str, importer: str) -> Optional[str]:
        """The file ``import dotted`` reaches from ``importer``: a module next to it, or
        in its package root.  Found in the listings of the directories on the way (each
        listed once per run), with one ``isfile`` for a name found: a file whose imports
        name dozens of modules and names asks for each of them."""
        found = self._found_modules(importer, self._bases(importer), dotted.split("."), ())
        return found[0] if found else None

    def _found_modules(self, importer: str, bases: tuple, parts: list, subs) -> list:
        """``_module_files`` under ``bases``, else under the directory above them where
        the project keeps a package named ``parts[0]`` (``_package_dir_above``)."""
        found = self._module_files(bases, parts, subs)
        if not found and bases:
            up = self._package_dir_above(bases, parts[0])
            if up is None and len(bases) == 1 and os.path.basename(bases[0]) == parts[0]:
                # the importer's own directory, a namespace package (no ``__init__.py``), named
                # by its script: ``going_modular/train.py`` importing ``going_modular.engine``
                # (run as ``python -m going_modular.train``)
                up = os.path.dirname(bases[0])
            if up is not None:
                found = self._module_files((up,), parts, subs)
        return found

    def _package_dir_above(self, bases: tuple, first: str) -> Optional[str]:
        """The nearest directory above ``bases`` (an importer's directory and package
        root), up to three levels and inside the run's roots, that holds a package named
        ``first`` (a directory with an ``__init__.py``): the project's own package, which a
        script of a subdirectory imports as it is installed (``examples/train.py``: ``from
        breizhcrops.models import LSTM``).  A plain module there is not one such a script
        can import.  The search stops at the project's root (a directory with ``.git``,
        ``setup.py``, ``setup.cfg`` or ``pyproject.toml``)."""
        key = (bases, first)
        if key not in self._above:  # (directories are listed once per run: so is the answer)
            self._above[key] = self._find_package_above(bases, first)
        return self._above[key]

    def _find_package_above(self, bases: tuple, first: str) -> Optional[str]:
        if any(not self._entries(os.path.realpath(b)).isdisjoint(_PROJECT_MARKERS) for b in bases):
            return None  # (the script's own directory is a project's root: nothing above is on its path)
        d = os.path.dirname(os.path.realpath(bases[-1]))
        for _ in range(3):
            if not self._within_roots(d):
                return None
            names = self._entries(d)
            if first in names and "__init__.py" in self._entries(os.path.join(d, first)):
                return d
            if not names.isdisjoint(_PROJECT_MARKERS):
                return None
            up = os.path.dirname(d)
            if up == d:
                return None
            d = up
        return None

    def _bases(self, importer: str) -> tuple:
        """Where ``module_file`` looks for the modules ``importer`` imports: its directory
        and its package root (none when it is no file); once per analysed file."""
        got = self._base_dirs.get(importer)
        if got is None:
            got = ()
            if importer and self._is_file(importer):
                here = os.path.dirname(os.path.abspath(importer))
                got = (here,)
                pkg = self.package_of(importer)
                if pkg:
                    root = here
                    for _ in range(pkg.count(".") + 1):
                        root = os.path.dirname(root)
                    got = (here, root)
            self._base_dirs[importer] = got
        return got

    def _entries(self, d: str) -> frozenset:
        """The names in directory ``d`` (empty when it cannot be listed), once per run."""
        got = self._dir_entries.get(d)
        if got is None:
            try:
                got = frozenset(os.listdir(d))
            except OSError:
                got = frozenset()
            self._dir_entries[d] = got
        return got

    def text_holds(self, path: str, word: str) -> bool:
        """The bytes of the file at ``path`` hold ``word`` (False when it cannot be read);
        the file is a dependency, as for ``model_for``."""
        self.deps.add(path)
        return self._holds(path, (word,))

    def imports_holding(self, path: str, text: str, word: str) -> bool:
        """An import statement of ``text`` (the file at ``path``) may reach a file of the
        tree whose bytes hold ``word``, or star-imports one (what it brings may come from
        further on); read without parsing.  A superset of the files that the semantic
        model's lookups in another module (``SemanticModel.sibling_definitions``) parse:
        each module an import names (relative ones too) wherever ``module_file`` looks
        for it, and for ``from m import a`` also ``m.a``, a submodule.  Each file found is
        a dependency, as for ``text_holds``; only the answer is kept per file and word,
        not its bytes."""
        bases = self._bases(path) if not self.standalone and path else ()
        if not bases:
            return False
        for mod, names in _import_statements(text):
            if mod is None:
                found = [f for c in names for f in self._found_modules(path, bases, c.split("."), ())]
            else:
                if mod.startswith("."):
                    mod = _resolve_relative(mod, path, self.package_of(path))
                    if mod is None:
                        continue
                found = self._found_modules(path, bases, mod.split("."), [n for n in names if n != "*"])
            for f in found:
                self.deps.add(f)
                if mod is not None and "*" in names:
                    return True
                key = (f, word)
                got = self._holding.get(key)
                if got is None:
                    got = self._holding[key] = word.encode("utf-8") in _bytes_or_empty(f)
                if got:
                    return True
        return False

    def _module_files(self, bases: tuple, parts: list, subs) -> list:
        """The files that module ``parts`` (and each submodule ``parts + [s]`` for ``s``
        in ``subs``) may be under each of ``bases``, as ``module_file`` finds them."""
        out = []
        last = parts[-1]
        for base in bases:
            d = base
            for part in parts[:-1]:
                if part not in self._entries(d):
                    break
                d = os.path.join(d, part)
            else:
                names = self._entries(d)
                if last + ".py" in names:
                    out.append(os.path.join(d, last + ".py"))
                if last in names:
                    inner = os.path.join(d, last)
                    below = self._entries(inner)
                    if "__init__.py" in below:
                        out.append(os.path.join(inner, "__init__.py"))
                    for s in subs:
                        if s + ".py" in below:
                            out.append(os.path.join(inner, s + ".py"))
                        if s in below and "__init__.py" in self._entries(os.path.join(inner, s)):
                            out.append(os.path.join(inner, s, "__init__.py"))
        return [f for f in out if os.path.isfile(f)]

    def _holds(self, path: str, words: tuple) -> bool:
        """The file at ``path`` holds one of ``words`` (False when it cannot be read);
        its bytes are read once per run."""
        data = self._texts.get(path)
        if data is None:
            data = self._texts[path] = _bytes_or_empty(path)
        return any(w.encode("utf-8") in data for w in words)

    def model_for(self, path: str):
        """The semantic model of another file (None when it cannot be read or parsed).
        Parsed whole, not part by part on demand: a part that does not parse (Python 2
        code) would raise later, inside the rule that reads it, as an error of the file
        being checked; a module that does not parse cannot be imported either."""
        self.deps.add(path)
        got = self._models.get(path, False)
        if got is not False:
            return got
        from .semantic import SemanticModel
        from .sourcefile import read_source

        try:
            src = read_source(path, 4 * 1024 * 1024)
            got = SemanticModel(src.text, path, self, lazy=False)
        except Exception:  # unreadable, generated, invalid: the rule sees nothing there
            got = None
        self._models[path] = got
        return got
