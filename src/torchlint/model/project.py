"""The project around a file: what its own modules define, so that a role does not stop at an import.

``from models import Learner`` or ``from .losses import focal_loss`` hides a model class
or a loss function in another module of the same project. When the model asks about
such a name, the module it comes from is found the way Python would find it when the
project runs (next to the importing file, at the project root, under ``src/``), read
with the standard library's ``ast`` (an eighth of a libcst parse) and summarised once.
A summary is kept per file with the digest of the text it read: a file whose size or
modification time changed is read again, and summarised again only when its text did,
so the language server and a long run pay for each module's text once.

A file with no project around it (standard input, a snippet) has no index and is
linted as before; every surface that names the file's path (the CLI, flake8,
``--stdin-filename``, the language server) sees the same project. The newest text of a
module wins: the language server registers the unsaved buffers of the documents open in
the editor (``buffers.set_buffer``), and a summary is then read from the buffer, not the disk.
"""
from __future__ import annotations

import ast
import hashlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Hashable, List, NamedTuple, Optional, Tuple, TypeVar, cast

import libcst as cst

from torchlint.buffers import buffer_of
from torchlint.cst_parse import parse_source
from torchlint.model.ast_reading import ast_dotted
from torchlint.model.function_effects import effects
from torchlint.model.function_summaries import FunctionSummary, summarize_functions
from torchlint.model.vocab import last_name

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Scope

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# Bases that make a class a model (by last name: torch's own, Lightning's, Hugging Face's,
# the usual project-level spellings), here across modules and in ``roles`` within a file.
MODEL_BASES = frozenset(
    "Module LightningModule PreTrainedModel ModelMixin Sequential ModuleList ModuleDict".split()
)
_MAX_SOURCE = 2_000_000  # bytes; a generated giant module is not worth reading for roles
_MAX_HOPS = 4  # re-exports and base classes followed across modules
T = TypeVar("T")
_MODELS_KEPT = 8  # libcst models of other modules (about 20 KB a line each)
_ANSWERED_KEPT = 512  # modules whose answers outlive their models (a few small values each)


@dataclass(frozen=True)
class ModuleSummary:
    """What one module defines at its top level that the roles care about."""

    class_bases: Dict[str, Tuple[str, ...]]  # class -> dotted base names as written
    imports: Dict[str, Tuple[str, int]]  # local name -> (qualified name, relative level)
    functions: Dict[str, FunctionSummary]  # the syntax each top-level function shows (``function_summaries``)


def summarize(source: str) -> Optional[ModuleSummary]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    bases, imports = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases[node.name] = tuple(filter(None, (ast_dotted(b) for b in node.bases)))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    module = f"{node.module}.{alias.name}" if node.module else alias.name
                    imports[alias.asname or alias.name] = (module, node.level)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0], 0)
    return ModuleSummary(bases, imports, summarize_functions(tree))


def _model_of(text: str, path: Path) -> Optional[FileModel]:
    from torchlint.model import FileModel  # the model reads this module: imported when first asked

    try:
        return FileModel(parse_source(text), str(path))
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None


class ProjectIndex:
    """The summaries of one project's modules, found from a root and read on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root = str(root)
        self._real_root = os.path.realpath(root)  # ``_inside`` compares real paths, a link resolved
        self._real_root_slash = os.path.join(self._real_root, "")
        # path -> (stamp as read, digest of the text, summary)
        self._summaries: Dict[Path, Tuple[Tuple[int, int], Optional[bytes], Optional[ModuleSummary]]] = {}
        self._lock = threading.Lock()  # the language server lints on a worker thread
        # path -> (digest, model): the libcst models of a few modules, least recently used first out
        self._models: "OrderedDict[Path, Tuple[bytes, Optional[FileModel]]]" = OrderedDict()
        # path -> (digest, {question: (answer, project files it read)}): what was asked of a module's
        # model, kept after the model is let go, so a module is parsed once per text it has
        self._answers: "OrderedDict[Path, Tuple[Optional[bytes], Dict[Hashable, Tuple[object, dict]]]]" = OrderedDict()

    def summary(self, path: Path) -> Optional[ModuleSummary]:
        return self.stamped_summary(path)[1]

    def stamped_summary(self, path: Path) -> Tuple[Optional[Tuple[int, int]], Optional[ModuleSummary]]:
        """``(mtime_ns, size)`` of the file as read (a buffer's stamp for an editor's buffer),
        and its summary. A new stamp means reading the text again, not summarising it again:
        a text whose digest is the one summarised (a file saved unchanged, a checkout that
        touched it, a buffer that returned to the saved text) keeps its summary."""
        buffer = buffer_of(path)
        if buffer is None:
            try:
                stat = path.stat()
            except OSError:
                return None, None
            key = (stat.st_mtime_ns, stat.st_size)
        else:
            key = buffer[0]
        with self._lock:
            known = self._summaries.get(path)
        if known is not None and known[0] == key:
            return key, known[2]
        text = self._text(path, buffer, key)
        digest = None if text is None else hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if known is not None and digest is not None and known[1] == digest:
            summary = known[2]
        else:
            summary = summarize(text) if text is not None else None
        with self._lock:
            self._summaries[path] = (key, digest, summary)
        return key, summary

    def answer(self, path: Path, question: Hashable, ask: Callable[[FileModel], Optional[T]]) -> Tuple[Optional[T], dict]:
        """``ask(model)`` of the module at ``path`` (its ``FileModel``) and the project files the
        answer read, kept per digest of the module's text beyond the life of its model: a
        question asked again of the same text is answered without parsing it again. None (and
        nothing read) when the module has no model."""
        stamp, summary = self.stamped_summary(path)
        if stamp is None or summary is None:
            return None, {}
        with self._lock:
            digest = self._summaries[path][1]
            kept = self._answers.get(path)
            if kept is not None and kept[0] == digest and question in kept[1]:
                self._answers.move_to_end(path)
                return cast("Tuple[Optional[T], dict]", kept[1][question])
        model = self._model(path, stamp, digest)
        answer, read = (ask(model), model.consulted_files()) if model is not None else (None, {})
        with self._lock:
            kept = self._answers.get(path)
            if kept is None or kept[0] != digest:
                kept = self._answers[path] = (digest, {})
            kept[1][question] = (answer, read)
            self._answers.move_to_end(path)
            while len(self._answers) > _ANSWERED_KEPT:
                self._answers.popitem(last=False)
        return answer, read

    def _model(self, path: Path, stamp: Tuple[int, int], digest: Optional[bytes]) -> Optional[FileModel]:
        """The model a lint of the module builds (``FileModel``) of its text as stamped and
        digested: parsed with libcst only when a question needs it (eight times the cost of the
        summary), the ``_MODELS_KEPT`` last asked kept."""
        with self._lock:
            kept = self._models.get(path)
            if kept is not None and kept[0] == digest:
                self._models.move_to_end(path)
                return kept[1]
        text = self._text(path, buffer_of(path), stamp)
        model = _model_of(text, path) if text is not None else None
        with self._lock:
            self._models[path] = (digest or b"", model)
            self._models.move_to_end(path)
            while len(self._models) > _MODELS_KEPT:
                self._models.popitem(last=False)
        return model

    @staticmethod
    def _text(path: Path, buffer: Optional[Tuple[Tuple[int, int], str]], key: Tuple[int, int]) -> Optional[str]:
        """The module's newest text (its buffer's, else its file's); None for one too big to be
        worth summarising or unreadable."""
        if buffer is not None:
            return buffer[1] if len(buffer[1]) <= _MAX_SOURCE else None
        if key[1] > _MAX_SOURCE:
            return None
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def module_file(self, module: str, level: int, importer: Path,
                    listed: Optional[Dict[str, Optional[Listing]]] = None) -> Optional[Path]:
        """The file ``import module`` (``level`` dots) from ``importer`` would load, if it
        belongs to this project. Asked for every imported module a call or a role meets
        (most of them a library's: nothing found), so it works on strings, not ``Path``
        objects, and reads folders' listings (``listing``), not a ``stat`` per path tried;
        ``listed`` keeps the listings one lint has read (each folder checked once a lint)."""
        parts = module.split(".") if module else []
        folder = os.path.dirname(str(importer))
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            bases = [folder]
        else:
            bases = [folder, self._root, os.path.join(self._root, "src")]
        listed = {} if listed is None else listed
        for base in bases:
            down = base
            _listed(down, listed)
            for part in parts[:-1]:  # down from the base: a folder absent above is not asked
                down = os.path.join(down, part)
                _listed(down, listed)
            stem = os.path.join(base, *parts)
            for candidate in ((stem + ".py") if parts else None, os.path.join(stem, "__init__.py")):
                if candidate is not None and (_is_file(candidate, listed) or buffer_of(candidate) is not None) \
                        and self._inside(candidate):
                    return Path(candidate)
        return None

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._real_root or real.startswith(self._real_root_slash)


@dataclass(frozen=True, eq=False)
class ProjectFunction:
    """A top-level function of another module of the project, as a call site sees it: its
    summary (``function_summaries``: cheap, a few fixed facts), and for any other question the
    model of its module, which answers it with the definitions a lint of that module uses."""

    summary: FunctionSummary
    path: Path
    name: str
    view: "ProjectView"

    def ask(self, fact: Callable[[FileModel, Scope], T]) -> Optional[T]:
        """``fact(model, scope)`` for this function's scope in its module's model (memoised there,
        as every derived analysis is, and kept by the index per text of the module); None when
        the module has no model."""
        def on(model: FileModel) -> Optional[T]:
            scope = _top_level_function(model, self.name)
            return model.derived(fact, scope, while_computing=None) if scope is not None else None

        return _asked(self.view, self.path, (fact, self.name), on)


def _asked(view: ProjectView, path: Path, question: Hashable, ask: Callable[[FileModel], Optional[T]]) -> Optional[T]:
    """``ask(model)`` of the module at ``path``, through the index's answers; None for a question
    that leads back to itself (a class built from a class of another module built from it).
    What the answer read in the project counts among what the asking file's result depends on."""
    answer, read = view.index.answer(path, question, ask)
    view.consulted.update(read)
    return answer


def _top_level_function(model: FileModel, name: str) -> Optional[Scope]:
    """The scope of the module's top-level ``def name`` Python keeps (its last)."""
    defined = [s for s in model.functions.get(name, ()) if s.parent is model.module_scope]
    return defined[-1] if defined else None


class ProjectView:
    """One file's questions to its project: what does an imported name stand for?"""

    def __init__(self, index: ProjectIndex, path: Path) -> None:
        self.index = index
        self.path = path
        self.consulted: Dict[str, Tuple[int, int]] = {}  # what a cached result depends on
        # ``module_file``'s answers for this file's questions: ``nn.Linear``, ``nn.Conv2d`` and
        # ``nn.ReLU`` each ask where ``torch.nn`` is (six paths tried, none of the project's)
        self._files: Dict[Tuple[str, int, Path], Optional[Path]] = {}
        self._listed: Dict[str, Optional[Listing]] = {}  # the folders those answers read

    def _module_file(self, module: str, level: int, importer: Path) -> Optional[Path]:
        key = (module, level, importer)
        if key not in self._files:
            self._files[key] = self.index.module_file(module, level, importer, self._listed)
        return self._files[key]

    def holds_module(self, module: str, level: int) -> bool:
        """Whether ``import module`` (``level`` dots) from this file loads a module of the project."""
        return self._module_file(module, level, self.path) is not None

    def kind_of(self, module: str, level: int, name: str) -> Optional[str]:
        """``"model"``, ``"loss"`` (a loss class or function) or None, for ``name`` of
        ``module`` imported from this file."""
        return self._kind(module, level, name, self.path, _MAX_HOPS)

    def _kind(self, module: str, level: int, name: str, importer: Path, hops: int) -> Optional[str]:
        found = self._defining(module, level, name, importer, hops,
                               lambda summary, n: n in summary.functions or n in summary.class_bases)
        if found is None:
            return None
        summary, name, target, hops = found
        if name not in summary.functions:
            return self._class_kind(summary, name, target, hops)
        function = ProjectFunction(summary.functions[name], target, name, self)
        # A function that returns a torch loss (``effects``' answer, asked only of one that calls a loss)
        returned = function.ask(effects) if function.summary.may_return_loss else None
        return "loss" if returned is not None and returned.returns_loss else None

    def function_of(self, module: str, level: int, name: str) -> Optional[FunctionSummary]:
        """The summary of function ``name`` of ``module`` imported from this file, following
        re-exports (``from .metrics import evaluate`` in a package's ``__init__``)."""
        found = self.function(module, level, name)
        return found.summary if found is not None else None

    def function(self, module: str, level: int, name: str) -> Optional[ProjectFunction]:
        """``function_of``'s function with the file that defines it, for questions beyond its summary."""
        found = self._defining(module, level, name, self.path, _MAX_HOPS,
                               lambda summary, n: n in summary.functions or n in summary.class_bases)
        if found is None or found[1] not in found[0].functions:
            return None  # a class
        return ProjectFunction(found[0].functions[found[1]], found[2], found[1], self)

    def star_imported_function(self, star_imports: List[Tuple[str, int]], name: str) -> Optional[FunctionSummary]:
        """The summary of ``star_imported``'s function."""
        found = self.star_imported(star_imports, name)
        return found.summary if found is not None else None

    def star_imported(self, star_imports: List[Tuple[str, int]], name: str) -> Optional[ProjectFunction]:
        """Function ``name`` of the last project module that one of this file's ``from module
        import *`` (``star_imports``: (module, level), in source order) finds it in: the binding
        Python keeps. None for a private name, which a star import leaves out."""
        if name.startswith("_"):
            return None
        for module, level in reversed(star_imports):
            found = self.function(module, level, name)
            if found is not None:
                return found
        return None

    def class_fact(self, module: str, level: int, name: str, fact: Callable[[FileModel, str], T]) -> Optional[T]:
        """``fact(model, name)`` for class ``name`` of ``module`` imported from this file (following
        re-exports), asked of the model of the module that defines it, as a lint of that module
        would ask it; None when the name is no class of the project or its module has no model."""
        found = self._defining(module, level, name, self.path, _MAX_HOPS,
                               lambda summary, n: n in summary.class_bases or n in summary.functions)
        if found is None or found[1] not in found[0].class_bases:
            return None
        name = found[1]
        return _asked(self, found[2], (fact, name),
                      lambda model: model.derived(fact, name, while_computing=None))

    def _defining(self, module: str, level: int, name: str, importer: Path, hops: int,
                  defines: Callable[[ModuleSummary, str], bool]) -> Optional[Tuple[ModuleSummary, str, Path, int]]:
        """``(summary, name, file, hops left)`` of the module that defines ``name`` as
        ``defines(summary, name)`` tells, following re-exports (``from .resnet import
        ResNet`` in ``__init__``) at most ``hops`` times; each module read is recorded
        in ``consulted``. None when the trail leaves the project or ends undefined."""
        while hops > 0:
            target = self._module_file(module, level, importer)
            if target is None:  # ``from package import module`` then ``module.Name``: a module
                return None
            stamp, summary = self.index.stamped_summary(target)
            if stamp is not None:
                self.consulted[str(target)] = stamp
            if summary is None:
                return None
            if defines(summary, name):
                return summary, name, target, hops
            if name not in summary.imports:
                return None
            qualified, level = summary.imports[name]
            module, _, name = qualified.rpartition(".")
            importer, hops = target, hops - 1
        return None

    def _class_kind(self, summary: ModuleSummary, name: str, where: Path, hops: int) -> Optional[str]:
        seen, todo = set(), [name]
        loss = name.endswith("Loss")
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for base in summary.class_bases.get(current, ()):
                head = base.split(".", 1)[0]
                if base in summary.class_bases:
                    todo.append(base)
                elif last_name(base) in MODEL_BASES or (last_name(base) == "_Loss"):
                    return "loss" if loss or last_name(base) == "_Loss" else "model"
                elif head in summary.imports and "." not in base:
                    qualified, level = summary.imports[head]
                    module, _, imported = qualified.rpartition(".")
                    kind = self._kind(module, level, imported, where, hops - 1)
                    if kind is not None:
                        return "loss" if loss else kind
        return None


_INDEXES: Dict[Path, ProjectIndex] = {}
_INDEXES_LOCK = threading.Lock()


def project_root(path: Path) -> Path:
    """The nearest folder above ``path`` with a project marker, else the file's own folder."""
    folder = os.path.dirname(str(path))  # strings, not ``path.parents``: asked at every lint
    while not _marked(folder):
        above = os.path.dirname(folder)
        if above == folder:
            return path.parent
        folder = above
    return Path(folder)


class Listing(NamedTuple):
    """What a folder holds, as one ``os.scandir`` read it."""

    stamp: int  # the folder's mtime_ns when read
    # None for a folder changed in the last seconds or of more than ``_MAX_LISTED`` entries (a
    # data or checkpoint folder beside a script): its paths are each asked of the file system
    present: Optional[FrozenSet[str]]  # names that exist (``os.path.exists``: not a dangling link)
    files: Optional[FrozenSet[str]]  # names of regular files, links followed (``os.path.isfile``)


_LISTINGS: Dict[str, Listing] = {}  # folder -> its listing, while its mtime stands
_SETTLED_NS = 2_000_000_000  # a folder's listing is kept once its mtime is this old
_MAX_LISTED = 2000
_MAX_FOLDERS = 4096  # listings kept at most


def listing(folder: str) -> Optional[Listing]:
    """What ``folder`` holds (None: no such folder). Every lint looks for markers in each
    folder above its file and for each imported module's file next to it and at the root:
    one ``stat`` of the folder answers while its entries are unchanged (a file made, removed
    or renamed changes the folder's mtime), instead of one per path tried. A folder changed
    in the last seconds is not read: an entry made within the clock's tick of the read would
    leave the mtime as it was (git's "racily clean" entries), and a folder in use would be
    read again at every lint; its paths are asked one by one."""
    try:
        status = os.stat(folder)
    except OSError:
        return None
    stamp, mode = status.st_mtime_ns, status.st_mode
    kept = _LISTINGS.get(folder)
    if kept is not None and kept.stamp == stamp:
        return kept
    if time.time_ns() - stamp <= _SETTLED_NS or not S_ISDIR(mode):
        # a folder in use (``/tmp``, checkpoints being written) would be read at every lint
        return Listing(stamp, None, None) if S_ISDIR(mode) else None
    try:
        found = _LISTINGS[folder] = _read_listing(folder, stamp)
    except OSError:  # not readable
        return None
    if len(_LISTINGS) > _MAX_FOLDERS:  # a long editor session over a big repository
        del _LISTINGS[next(iter(_LISTINGS))]  # the one kept longest
    return found


def _read_listing(folder: str, stamp: int) -> Listing:
    present, files = set(), set()
    with os.scandir(folder) as entries:
        for count, entry in enumerate(entries):
            if count == _MAX_LISTED:
                return Listing(stamp, None, None)
            if entry.is_file():
                files.add(entry.name)
            if not entry.is_symlink() or os.path.exists(entry.path):
                present.add(entry.name)
    return Listing(stamp, frozenset(present), frozenset(files))


def _listed(folder: str, listed: Dict[str, Optional[Listing]]) -> Optional[Listing]:
    """``listing(folder)``, read once per ``listed``; a folder whose parent (read already)
    is absent or lacks it is known absent without a ``stat``."""
    if folder in listed:
        return listed[folder]
    parent, name = os.path.split(folder)
    absent = False
    if parent != folder and parent in listed:
        above = listed[parent]
        absent = above is None or (above.present is not None and name not in above.present)
    found = None if absent else listing(folder)
    listed[folder] = found
    return found


def _is_file(path: str, listed: Dict[str, Optional[Listing]]) -> bool:
    """``os.path.isfile(path)``, read off its folder's listing."""
    folder, name = os.path.split(path)
    held = _listed(folder, listed)
    if held is None or held.files is None:
        return held is not None and os.path.isfile(path)
    return name in held.files


def _marked(folder: str) -> bool:
    """Whether ``folder`` holds a project marker."""
    held = listing(folder)
    if held is None or held.present is None:
        return held is not None and any(os.path.exists(os.path.join(folder, m)) for m in _ROOT_MARKERS)
    return any(marker in held.present for marker in _ROOT_MARKERS)


# Set to 1 to lint every file alone (the benchmark measures what the index costs with it).
NO_INDEX_ENV = "TORCHLINT_NO_PROJECT_INDEX"


class ProjectLookup:
    """A file's project view (``view_for``), found when first asked and then kept: one lint's
    tree gate and model share it, so the folders above the file are looked in once a lint."""

    __slots__ = ("path", "_view", "_found")

    def __init__(self, path: str) -> None:
        self.path = path
        self._view: Optional[ProjectView] = None
        self._found = False

    def view(self) -> Optional[ProjectView]:
        if not self._found:
            self._view, self._found = view_for(self.path), True
        return self._view

    def consulted_files(self) -> dict:
        """The project files read through the view: path -> (mtime_ns, size)."""
        return dict(self._view.consulted) if self._view is not None else {}


def view_for(path: str) -> Optional[ProjectView]:
    """The project view of a file on disk, or None (standard input, a snippet, no such file)."""
    if not path or path in ("-", "<stdin>") or not path.endswith((".py", ".ipynb", ".pyi")):
        return None
    if os.environ.get(NO_INDEX_ENV) == "1":
        return None
    absolute = os.path.abspath(path)
    if not os.path.isdir(os.path.dirname(absolute)):
        return None
    file = Path(absolute)
    root = project_root(file)
    with _INDEXES_LOCK:
        index = _INDEXES.get(root)
        if index is None:
            index = _INDEXES[root] = ProjectIndex(root)
    return ProjectView(index, file)
