"""``torchlint server``: a Language Server over stdio (needs ``pip install 'torchlint[lsp]'``).

It lints a Python document (or a notebook whose cells are Python, sent as a
notebook document: its cells joined as ``torchlint check`` joins them, each
finding published on its cell) when it is opened, changed or saved and publishes
the findings (severity warning, the rule code linked to its docs page, source
``torchlint``) with the document version they belong to. The configuration is
the one nearest the file, resolved as for ``torchlint check``
(docs/configuration.md); an excluded file shows nothing. Saving a
``pyproject.toml``, ``torchlint.toml`` or ``.torchlint.toml`` (or the editor
reporting it changed on disk) re-lints every open document.

Linting runs in one worker thread, never on the thread that reads requests:
a burst of edits is linted once, after the document has been quiet for
``DEBOUNCE_S``; a lint whose text the user has since changed stops at its next
checkpoint (between parsing, the model and each rule) and publishes nothing,
so ``shutdown`` and hovers are answered while a long file is being linted.
Lints of one document reuse the parsed pieces and finding ranges of the
unchanged parts of its text (``engine.LintMemory``), and a text linted lately
(reopened, saved unchanged) is answered from memory at once.

Code actions, per finding: apply that finding's fix only, when the rule has
one (an unsafe fix says so in its title), and "suppress with # noqa: CODE";
per document, ``source.fixAll.torchlint`` applies every safe fix (and the unsafe
ones too when the editor's settings say ``unsafe-fixes``).

The editor may send the command line's ``select``, ``extend-select``, ``ignore``
and ``unsafe-fixes`` as ``initializationOptions`` or, later, in
``workspace/didChangeConfiguration`` under ``"torchlint"``. The rule selection
applies to files that no torchlint config file covers: where a project has a
config, it decides, so the editor shows what the project's CI shows. Hovering a
finding shows its rule's message, the measured evidence line and a link to
the rule page. Errors outside a request are logged, never shown as pop-ups.

Only this module imports pygls, and only ``torchlint server`` imports this module.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import fnmatch
import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchlint import __version__
from torchlint.links import rule_url
from torchlint.noqa import noqa_pattern

if TYPE_CHECKING:
    from torchlint.config import FileSettings, Selection, Settings

SOURCE = "torchlint"
FIX_ALL = "source.fixAll.torchlint"
CONFIG_NAMES = frozenset((".torchlint.toml", "torchlint.toml", "pyproject.toml"))
# Requirement files set the target torch version where no config does (config.Settings).
REQUIREMENTS_GLOB = "requirements*.txt"
# How long a document must stay unchanged before it is linted: one lint per
# burst of keystrokes. Short, because a lint overtaken by an edit stops at its
# next checkpoint: starting one too early wastes little.
DEBOUNCE_S = 0.025
# Results kept for texts linted lately (documents reopened or saved unchanged).
RECENT_RESULTS = 32
log = logging.getLogger(__name__)


class TorchlintServer(LanguageServer):
    """pygls' server, except that errors outside a request (a ``didChange`` for a
    document never opened, a payload that does not parse) go to the log, not to
    an error pop-up: the user can do nothing about them."""

    def report_server_error(self, error: Exception, source) -> None:
        what = getattr(source, "__name__", str(source))
        log.error("%s: %r", what, error)
        try:
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"torchlint: {what}: {error!r}"))
        except Exception:  # the connection itself may be what failed
            log.exception("could not log the error to the client")


# Notebooks whose cells are Python, of any notebook type (Jupyter's, VS Code's...):
# the editor sends their cells with notebookDocument/* notifications.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        cells=[types.NotebookCellLanguage(language="python")], notebook="*")],
    save=True)
server = TorchlintServer("torchlint", __version__, notebook_document_sync=NOTEBOOK_SYNC)


# -- what applies to a file ------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class EditorSettings:
    """What the editor's settings ask for: a selection layer (``config.Selection``,
    None when they name no rule) and whether fix-all may apply unsafe fixes."""

    selection: Optional["Selection"] = None
    unsafe_fixes: bool = False


# The settings an editor may send, spelled as in [tool.torchlint] and on the command line.
EDITOR_LISTS = ("select", "extend-select", "ignore")
EDITOR_FLAGS = ("unsafe-fixes",)
EDITOR_WHERE = "editor settings: "


def editor_settings(values: object) -> EditorSettings:
    """``{"select": [...], "extend-select": [...], "ignore": [...], "unsafe-fixes": bool}``
    (a key left out or null: not set) checked as a config file is: a wrong key, type or
    rule code raises ``config.ConfigError`` naming it."""
    from torchlint import config as config_mod

    if values is None:
        return EditorSettings()
    if not isinstance(values, dict):
        raise config_mod.ConfigError(f"{EDITOR_WHERE}expected an object, got {values!r}")
    unknown = sorted(set(values) - set(EDITOR_LISTS) - set(EDITOR_FLAGS))
    if unknown:
        raise config_mod.ConfigError(f"{EDITOR_WHERE}unknown setting {unknown[0]!r} "
                                     f"(known: {', '.join(EDITOR_LISTS + EDITOR_FLAGS)})")
    lists = {}
    for key in EDITOR_LISTS:
        value = values.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise config_mod.ConfigError(f"{EDITOR_WHERE}{key}: expected a list of rule codes, got {value!r}")
        lists[key] = value
    unsafe = values.get("unsafe-fixes")
    if unsafe is not None and not isinstance(unsafe, bool):
        raise config_mod.ConfigError(f"{EDITOR_WHERE}unsafe-fixes: expected true or false, got {unsafe!r}")
    layer = config_mod.Selection(
        select=tuple(lists["select"]) if lists["select"] else None,
        extend_select=tuple(lists["extend-select"] or ()), ignore=tuple(lists["ignore"] or ()),
        where=EDITOR_WHERE)
    layer.validate()
    named = layer != config_mod.Selection(where=EDITOR_WHERE)
    return EditorSettings(layer if named else None, bool(unsafe))


class _Configs:
    """One ``config.Settings`` (it caches parsed config files) until a config file or
    the editor's settings change; then a fresh one, and a new generation, so documents
    are linted again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settings: Optional["Settings"] = None
        self._editor_settings: Optional["Settings"] = None
        self.editor = EditorSettings()
        self.generation = 0

    def settings(self) -> "Settings":
        from torchlint import config as config_mod

        with self._lock:
            if self._settings is None:
                self._settings = config_mod.Settings()
            return self._settings

    def editor_layered(self, isolated: bool = False) -> "Settings":
        """The editor's selection on top of the defaults, as ``--select`` and friends are:
        for files no config file covers (``isolated``: no config file at all)."""
        from torchlint import config as config_mod

        if isolated:
            return config_mod.Settings(overrides=self.editor.selection, isolated=True)
        with self._lock:
            if self._editor_settings is None:
                self._editor_settings = config_mod.Settings(overrides=self.editor.selection)
            return self._editor_settings

    def forget(self) -> None:
        with self._lock:
            self._settings = None
            self._editor_settings = None
            self.generation += 1

    def set_editor(self, editor: EditorSettings) -> None:
        with self._lock:
            self.editor = editor
        self.forget()


CONFIGS = _Configs()


def _settings(path: str) -> Tuple["FileSettings", Optional[str]]:
    """What applies to a file (``config.FileSettings``) and, when its config is
    broken, the message saying so (the defaults, with the editor's settings, apply then).
    A file that no config file covers gets the editor's settings; one that a config
    covers gets the config alone, as ``torchlint check`` in the project's CI does."""
    from torchlint import config as config_mod

    try:
        resolved = CONFIGS.settings().resolve(path)
    except config_mod.ConfigError as exc:
        return CONFIGS.editor_layered(isolated=True).resolve(path), f"torchlint: {exc}; using the defaults"
    if resolved.config.source is None and CONFIGS.editor.selection is not None:
        resolved = CONFIGS.editor_layered().resolve(path)
    return resolved, None


# -- linting a document ------------------------------------------------------

@dataclasses.dataclass
class LintResult:
    diagnostics: list  # torchlint Diagnostics
    config_message: Optional[str] = None
    dependencies: dict = dataclasses.field(default_factory=dict)  # project files read: path -> stamp


def lint_document(path: str, source: str) -> list:
    """The torchlint Diagnostics for a document's current text."""
    return lint_with_config_message(path, source).diagnostics


def lint_with_config_message(path: str, source: str, **options) -> LintResult:
    """The document's Diagnostics and, when its config is broken, the message saying so;
    ``options`` go to the engine (``memory``, ``cancelled``). A path ending ``.ipynb``
    holds a notebook's JSON (``_notebook_json``)."""
    from torchlint.runner import lint_data

    settings, message = _settings(path)
    if settings.excluded:
        return LintResult([], message)
    if path.endswith(".ipynb"):
        options = {}  # a notebook's cells are joined anew each time: nothing to reuse
    # text, not bytes: no coding-line re-decoding
    result = lint_data(path, source, settings.request, **options)
    for error in result.errors:
        log.warning("%s: %s", error.path, error.message)
    return LintResult(result.diagnostics, message, result.dependencies)


class _RecentResults:
    """The results of the texts linted lately, by (path, text, config generation):
    a document reopened or saved unchanged is answered without a lint, unless a
    project module its analysis read has changed on disk since."""

    def __init__(self, size: int = RECENT_RESULTS) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._results: "collections.OrderedDict[tuple, LintResult]" = collections.OrderedDict()

    def get(self, path: str, source: str, generation: int) -> Optional[LintResult]:
        from torchlint.runner import dependencies_unchanged

        with self._lock:
            result = self._results.get((path, source, generation))
        if result is None or not dependencies_unchanged(result.dependencies):
            return None
        return result

    def put(self, path: str, source: str, generation: int, result: LintResult) -> None:
        with self._lock:
            self._results[(path, source, generation)] = result
            self._results.move_to_end((path, source, generation))
            while len(self._results) > self._size:
                self._results.popitem(last=False)


RECENT = _RecentResults()


@dataclasses.dataclass
class LintJob:
    """One document's text to lint, as it was when the job was made."""

    uri: str
    path: str
    version: Optional[int]
    source: str
    generation: int = 0  # CONFIGS.generation when made
    due: float = 0.0


class LintQueue:
    """Lints documents in one worker thread, the newest text of each only.

    A job waits until its document has been quiet for ``delay`` seconds; a newer
    job for the same document replaces a waiting one. A running lint stops at its
    next checkpoint once ``is_waiting`` says a newer text is queued (``lint``
    returns ``CANCELLED``: nothing is delivered); every other result goes to
    ``deliver(job, result_or_exception)``, and the receiver drops what is stale.
    """

    def __init__(self, lint: Callable[[LintJob], object], deliver: Callable[[LintJob, object], None],
                 delay: float = DEBOUNCE_S) -> None:
        self._lint = lint
        self._deliver = deliver
        self._delay = delay
        self._waiting: Dict[str, LintJob] = {}
        self._wake = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def submit(self, job: LintJob) -> None:
        with self._wake:
            if self._stopped:
                return
            job.due = time.monotonic() + self._delay
            self._waiting[job.uri] = job
            if self._thread is None:  # daemon: a lint still running never holds up `exit`
                from torchlint.engine import start_big_stack_thread

                self._thread = start_big_stack_thread(self._work, "torchlint-lint")
            self._wake.notify()

    def discard(self, uri: str) -> None:
        with self._wake:
            self._waiting.pop(uri, None)

    def is_waiting(self, uri: str) -> bool:
        with self._wake:
            return uri in self._waiting

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._waiting.clear()
            self._wake.notify()

    def _take(self) -> Optional[LintJob]:
        with self._wake:
            while not self._stopped:
                if not self._waiting:
                    self._wake.wait()
                    continue
                job = min(self._waiting.values(), key=lambda waiting: waiting.due)
                left = job.due - time.monotonic()
                if left <= 0:
                    del self._waiting[job.uri]
                    return job
                self._wake.wait(left)
            return None

    def _work(self) -> None:
        while True:
            job = self._take()
            if job is None:
                return
            try:
                result = self._lint(job)
            except Exception as exc:  # never let one document stop the worker
                log.exception("linting %s failed", job.uri)
                result = exc
            if result is not CANCELLED:
                self._deliver(job, result)


CANCELLED = object()  # what a lint overtaken by a newer text of its document returns


class _Documents:
    """The server's view of open documents: the loop to publish on, and what was
    last published for each (for hovers, fix-all and skipping a needless re-lint)."""

    def __init__(self) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.published: Dict[str, List[types.Diagnostic]] = {}
        self.published_as: Dict[str, Tuple[Optional[int], int]] = {}  # uri -> (version, generation)
        # uri -> the project modules its last published lint read: re-linted when one of them changes
        self.depends_on: Dict[str, frozenset] = {}


DOCUMENTS = _Documents()


def _open_document(ls: LanguageServer, uri: str):
    """The open document at ``uri``, or None (pygls would read an unopened one from disk)."""
    documents = ls.workspace.text_documents
    return documents.get(uri) or documents.get(unquote(uri))


MEMORY = None  # the worker thread's engine.LintMemory, made with its first lint


def _lint_job(job: LintJob):
    """The job's LintResult, or CANCELLED when a newer text of the document (or shutdown)
    overtook it."""
    global MEMORY
    from torchlint.engine import LintCancelled, LintMemory

    if MEMORY is None:
        MEMORY = LintMemory()
    try:
        result = lint_with_config_message(job.path, job.source, memory=MEMORY,
                                          cancelled=lambda: LINTS.stopped or LINTS.is_waiting(job.uri))
    except LintCancelled:
        return CANCELLED
    RECENT.put(job.path, job.source, job.generation, result)
    return result


def _deliver(job: LintJob, result) -> None:
    """From the worker thread: hand the result to the server's loop."""
    loop = DOCUMENTS.loop
    if loop is None or loop.is_closed():
        return
    try:
        loop.call_soon_threadsafe(_publish_result, server, job, result)
    except RuntimeError:  # the loop closed meanwhile: the server is exiting
        pass


LINTS = LintQueue(_lint_job, _deliver)


def _request_lint(ls: LanguageServer, uri: str) -> None:
    document = _open_document(ls, uri)
    if document is None:
        if _open_notebook(ls, uri) is not None:
            _request_notebook_lint(ls, uri)
        else:
            log.warning("not linting %s: the editor never opened it", uri)
        return
    path = _text_path(uri)
    if not _is_python(document, path):  # a Markdown file, a text file, a config file...
        return
    if ls.workspace.get_notebook_document(cell_uri=uri) is not None:
        return  # a notebook's cell: linted with its notebook
    _queue(ls, LintJob(uri, path, document.version, document.source, CONFIGS.generation))


def _queue(ls: LanguageServer, job: LintJob) -> None:
    DOCUMENTS.loop = asyncio.get_running_loop()
    known = RECENT.get(job.path, job.source, job.generation)
    if known is not None:  # linted lately: answer now, and drop a lint queued for an older text
        LINTS.discard(job.uri)
        _publish_result(ls, job, known)
        return
    LINTS.submit(job)


def _publish_result(ls: LanguageServer, job: LintJob, result) -> None:
    """On the server's loop: publish ``result`` unless the document moved on meanwhile."""
    if LINTS.stopped or LINTS.is_waiting(job.uri) or _current(ls, job.uri) != (job.version, job.source):
        return  # shut down, a newer text is queued (its lint publishes), closed or changed
    if job.generation != CONFIGS.generation:
        return  # a config changed while this ran: the re-lint it started publishes
    if isinstance(result, Exception):
        ls.window_log_message(types.LogMessageParams(
            type=types.MessageType.Error, message=f"torchlint: {job.path}: {result!r}"))
        found = []
    else:
        if result.config_message:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                           message=result.config_message))
        found = result.diagnostics
        DOCUMENTS.depends_on[job.uri] = frozenset(result.dependencies)
    DOCUMENTS.published_as[job.uri] = (job.version, job.generation)
    notebook = _open_notebook(ls, job.uri)
    if notebook is None:
        document = _open_document(ls, job.uri)
        _publish(ls, job.uri, job.version, to_lsp_all(found, document))
        return
    for number, cell in enumerate(notebook.cells, start=1):  # torchlint counts every cell, as the editor shows them
        document = _open_document(ls, cell.document)
        if document is not None:
            # no fix actions in cells: a fix needs the whole notebook; noqa works per line
            diagnostics = to_lsp_all([d for d in found if d.cell == number], document, with_fix=False)
            _publish(ls, cell.document, document.version, diagnostics)


def _publish(ls: LanguageServer, uri: str, version: Optional[int], diagnostics: list) -> None:
    DOCUMENTS.published[uri] = diagnostics
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=version, diagnostics=diagnostics))


def _current(ls: LanguageServer, uri: str) -> Optional[Tuple[Optional[int], str]]:
    """(version, text) of the open document or notebook at ``uri``; None if not open."""
    document = _open_document(ls, uri)
    if document is not None:
        return document.version, document.source
    notebook = _open_notebook(ls, uri)
    if notebook is not None:
        return notebook.version, _notebook_json(ls, notebook)
    return None


# -- notebooks -------------------------------------------------------------------

def _open_notebook(ls: LanguageServer, uri: str):
    return ls.workspace.get_notebook_document(notebook_uri=uri)


def _notebook_json(ls: LanguageServer, notebook) -> str:
    """The notebook as nbformat 4 JSON, as ``torchlint check`` reads an ``.ipynb``: code
    cells with their current text, the other cells empty (they count in cell numbers)."""
    cells: List[dict] = []
    for cell in notebook.cells:
        document = _open_document(ls, cell.document)
        is_code = cell.kind == types.NotebookCellKind.Code
        source = document.source if (document is not None and is_code) else ""
        cells.append({"cell_type": "code" if is_code else "markdown", "metadata": {}, "source": source,
                      **({"outputs": [], "execution_count": None} if is_code else {})})
    metadata = {"language_info": {"name": "python"}}
    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})


def _request_notebook_lint(ls: LanguageServer, uri: str) -> None:
    notebook = _open_notebook(ls, uri)
    path = to_fs_path(uri) or uri
    if not path.endswith(".ipynb"):  # an untitled notebook: the name tells the engine what it is
        path += ".ipynb"
    _queue(ls, LintJob(uri, path, notebook.version, _notebook_json(ls, notebook), CONFIGS.generation))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: LanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    _request_notebook_lint(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: LanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    _request_notebook_lint(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: LanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    notebook = _open_notebook(ls, uri)
    if notebook is not None:
        _lint_unless_published(ls, uri, notebook.version)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: LanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    LINTS.discard(uri)
    DOCUMENTS.published_as.pop(uri, None)
    for cell in params.cell_text_documents:
        DOCUMENTS.published.pop(cell.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))


def _fix_record(d) -> Optional[dict]:
    from torchlint.reporters._common import fix_record

    return fix_record(d)


def to_lsp_all(found: list, document, with_fix: bool = True) -> List[types.Diagnostic]:
    """``to_lsp`` of each finding, the document's lines split once for all of them."""
    to_client = _client_units(document)
    return [to_lsp(d, document, with_fix, to_client) for d in found]


def _client_units(document) -> Callable[[types.Range], types.Range]:
    """Ranges in code points to the editor's units (UTF-16 unless it said otherwise).
    pygls's ``range_to_client_units`` splits the whole text into lines at every call:
    200 findings on a 2,000-line buffer took 30 ms. Split once here, and not at all for
    an ASCII text, where every unit counts the same."""
    source = document.source
    if source.isascii():
        return lambda span: span
    lines, codec = tuple(source.splitlines(True)), document.position_codec
    return lambda span: codec.range_to_client_units(lines, span)


def to_lsp(d, document, with_fix: bool = True,
           to_client: Optional[Callable[[types.Range], types.Range]] = None) -> types.Diagnostic:
    line = d.line - 1
    start = types.Position(line=line, character=d.col - 1)
    if d.end_line is not None and d.end_col is not None:
        end = types.Position(line=d.end_line - 1, character=d.end_col - 1)
    else:
        end = types.Position(line=line, character=d.col)
    severity = types.DiagnosticSeverity.Error if d.code == "TL001" else types.DiagnosticSeverity.Warning
    return types.Diagnostic(
        range=(to_client or _client_units(document))(types.Range(start=start, end=end)),
        message=d.message,
        severity=severity,
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)),
        source=SOURCE,
        # where torchlint put it (1-based line, column in code points): the quick
        # fix finds its finding by this, whatever units the editor counts in
        data={"fix": _fix_record(d) if with_fix else None, "at": [d.line, d.col]},
    )


def _text_path(uri: str) -> str:
    """The path a text document is linted as. A text document named like a notebook holds
    Python, not the notebook's JSON: jupyterlab-lsp sends a notebook's code cells joined,
    as ``.virtual_documents/nb.ipynb`` (notebooks sent as notebooks never come here)."""
    path = to_fs_path(uri) or uri
    return path + ".py" if path.endswith(".ipynb") else path


def _is_python(document, path: str) -> bool:
    """What the editor says the document is; its name where the editor does not say."""
    if document.language_id:
        return document.language_id.lower() in _PYTHON_IDS
    return path.endswith((".py", ".pyi", ".pyw"))


_PYTHON_IDS = frozenset(("python", "python3", "py"))


# -- the document lifecycle --------------------------------------------------------

EDITOR_PROBLEM: List[str] = []  # a message about the editor's settings, still to be shown


@server.feature(types.INITIALIZE)
def initialize(ls: LanguageServer, params: types.InitializeParams) -> None:
    """Take the editor's settings from ``initializationOptions``; a mistake in them is
    shown once the session starts (``initialized``), and the settings are left out."""
    EDITOR_PROBLEM.clear()
    _take_editor_settings(params.initialization_options)


def _take_editor_settings(values: object) -> None:
    """Use the editor's settings; when they are wrong, the defaults, and the message
    saying why in EDITOR_PROBLEM."""
    from torchlint import config as config_mod

    try:
        editor = editor_settings(values)
    except config_mod.ConfigError as exc:
        EDITOR_PROBLEM[:] = [f"torchlint: {exc}; the editor's torchlint settings are not used"]
        editor = EditorSettings()
    CONFIGS.set_editor(editor)


def _show_editor_problem(ls: LanguageServer) -> None:
    while EDITOR_PROBLEM:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                       message=EDITOR_PROBLEM.pop()))


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: LanguageServer, params: types.DidChangeConfigurationParams) -> None:
    """New settings under ``"torchlint"`` replace the old ones and every open document is
    linted again. A notification without that key (``settings: null``, as clients that
    expect the server to pull send) changes nothing."""
    settings = params.settings
    if not (isinstance(settings, dict) and "torchlint" in settings):
        return
    EDITOR_PROBLEM.clear()
    _take_editor_settings(settings["torchlint"])
    _show_editor_problem(ls)
    _relint_everything(ls)


@server.feature(types.INITIALIZED)
async def initialized(ls: LanguageServer, params: types.InitializedParams) -> None:
    """Say what was wrong with the editor's settings, if anything; ask the editor to report
    config files changing on disk, where it can."""
    _show_editor_problem(ls)
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if not (watched and watched.dynamic_registration):
        return
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}")
                for name in (*sorted(CONFIG_NAMES), REQUIREMENTS_GLOB)]
    registration = types.Registration(
        id="torchlint-config-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # the editor said no: config changes then apply on the next edit
        log.warning("could not watch config files: %r", exc)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _text_changed(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    _text_changed(ls, params.text_document.uri)


def _text_changed(ls: LanguageServer, uri: str) -> None:
    """A document's text is new: it is linted, and as the newest text of its module it wins over
    the file on disk for the other open documents that import it, which are linted again."""
    _request_lint(ls, uri)
    document = _open_document(ls, uri)
    path = _text_path(uri)
    if document is not None and path.endswith(".py"):
        from torchlint.buffers import set_buffer

        set_buffer(path, document.source)
        _relint_importers(ls, path)


def _relint_importers(ls: LanguageServer, path: str) -> None:
    """Lint again the open documents whose last lint read the module at ``path``."""
    changed = os.path.abspath(path)
    for uri, modules in list(DOCUMENTS.depends_on.items()):
        if changed in modules:
            _request_lint(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if _is_config(uri):
        _config_changed(ls)
        return
    document = _open_document(ls, uri)
    _lint_unless_published(ls, uri, document.version if document is not None else None)


def _lint_unless_published(ls: LanguageServer, uri: str, version: Optional[int]) -> None:
    """Lint a saved document, unless this version was linted under this config already."""
    if version is None or DOCUMENTS.published_as.get(uri) != (version, CONFIGS.generation):
        _request_lint(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    from torchlint.buffers import drop_buffer

    uri = params.text_document.uri
    LINTS.discard(uri)
    DOCUMENTS.published.pop(uri, None)
    DOCUMENTS.published_as.pop(uri, None)
    DOCUMENTS.depends_on.pop(uri, None)
    path = _text_path(uri)
    drop_buffer(path)  # the file on disk is the module's text again
    _relint_importers(ls, path)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: LanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(_is_config(change.uri) for change in params.changes):
        _config_changed(ls)


@server.feature(types.SHUTDOWN)
def shutdown(ls: LanguageServer, params) -> None:
    LINTS.stop()  # a lint still running finishes in its daemon thread; nothing more starts


def _is_config(uri: str) -> bool:
    name = os.path.basename(to_fs_path(uri) or uri)
    return name in CONFIG_NAMES or fnmatch.fnmatch(name, REQUIREMENTS_GLOB)


def _config_changed(ls: LanguageServer) -> None:
    """A config file changed: read configs afresh and lint every open document again."""
    CONFIGS.forget()
    _relint_everything(ls)


def _relint_everything(ls: LanguageServer) -> None:
    for uri in list(ls.workspace.text_documents):
        _request_lint(ls, uri)
    for uri in list(ls.workspace.notebook_documents):
        _request_notebook_lint(ls, uri)


# -- code actions ------------------------------------------------------------

def _fixed_text(path: str, source: str, code: str, at: Optional[Tuple[int, int]], unsafe: bool) -> Optional[str]:
    """The document with the ``code`` finding at ``at`` fixed (every ``code``
    finding when ``at`` is unknown); None when that changes nothing."""
    from torchlint.fixer import fix_source

    request = _settings(path)[0].request
    try:
        fixed = fix_source(source, path, request, codes=[code], unsafe=unsafe, at=at)
    except Exception:
        log.exception("fixing %s in %s failed", code, path)
        return None
    return fixed if fixed != source else None


def _fixed_all(path: str, source: str, unsafe: bool = False) -> Optional[str]:
    """The document with every safe fix its enabled rules offer applied (the unsafe ones
    too when ``unsafe``); None when none applies."""
    from torchlint.fixer import fix_source

    request = _settings(path)[0].request
    try:
        fixed = fix_source(source, path, request, codes=request.codes, unsafe=unsafe)
    except Exception:
        log.exception("fixing %s failed", path)
        return None
    return fixed if fixed != source else None


def _minimal_edit(document, old: str, new: str) -> types.TextEdit:
    """One edit covering only the changed span (editors keep the cursor and folds)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1

    def position(offset: int) -> types.Position:
        line = old.count("\n", 0, offset)
        column = offset - (old.rfind("\n", 0, offset) + 1)
        return types.Position(line=line, character=column)

    span = types.Range(start=position(prefix), end=position(len(old) - suffix))
    return types.TextEdit(range=document.range_to_client_units(span), new_text=new[prefix:len(new) - suffix])


def _noqa_edit(document, line_number: int, code: str) -> Optional[types.TextEdit]:
    lines = document.lines
    if line_number >= len(lines):
        return None
    line = lines[line_number].rstrip("\r\n")
    match = noqa_pattern().search(line)
    if match is not None and match.group("codes") is None:
        return None  # a bare noqa already silences everything
    if match is not None:
        at, text = match.end("codes"), f", {code}"
    else:
        at, text = len(line.rstrip()), f"  # noqa: {code}"
    position = types.Position(line=line_number, character=at)
    span = document.range_to_client_units(types.Range(start=position, end=position))
    return types.TextEdit(range=span, new_text=text)


def _wanted(only: Optional[Sequence[str]], kind: str) -> bool:
    """Whether the editor's ``only`` filter (None: everything) admits ``kind``."""
    return only is None or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _resolves_edits(ls: LanguageServer) -> bool:
    """Whether the editor asks ``codeAction/resolve`` for an action's edit: then the
    fix, which lints the document a few times, runs only for the action picked."""
    document = ls.client_capabilities.text_document
    code_action = document.code_action if document else None
    support = code_action.resolve_support if code_action else None
    return bool(support and "edit" in support.properties)


def _fix_data(diagnostic: types.Diagnostic) -> Tuple[Optional[dict], Optional[Tuple[int, int]]]:
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    at = data.get("at")
    at = (int(at[0]), int(at[1])) if isinstance(at, (list, tuple)) and len(at) == 2 else None
    fix = data.get("fix")
    return (fix if isinstance(fix, dict) else None), at


def _quick_fixes(uri: str, document, diagnostic: types.Diagnostic) -> List[types.CodeAction]:
    code = str(diagnostic.code)  # the caller took only findings of ours, whose codes are strings
    actions = []
    fix, at = _fix_data(diagnostic)
    if fix:
        unsafe = fix.get("safety") == "unsafe"
        what = fix.get("description") or f"Fix {code}"
        actions.append(types.CodeAction(
            title=f"{what} ({code}{', unsafe' if unsafe else ''})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=not unsafe,
            data={"uri": uri, "version": document.version, "code": code,
                  "at": list(at) if at else None, "unsafe": unsafe},
        ))
    edit = _noqa_edit(document, diagnostic.range.start.line, code)
    if edit is not None:
        actions.append(types.CodeAction(
            title=f"Suppress {code} on this line (# noqa: {code})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=types.WorkspaceEdit(changes={uri: [edit]}),
        ))
    return actions


def _has_fix(uri: str, unsafe: bool) -> bool:
    """Whether a finding published for ``uri`` has a fix fix-all would apply."""
    wanted = ("safe", "unsafe") if unsafe else ("safe",)
    return any(isinstance(d.data, dict) and (d.data.get("fix") or {}).get("safety") in wanted
               for d in DOCUMENTS.published.get(uri, ()))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True),
)
async def code_action(ls: LanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
    uri = params.text_document.uri
    document = _open_document(ls, uri)
    if document is None:
        return []
    only = params.context.only
    actions: List[types.CodeAction] = []
    if _wanted(only, types.CodeActionKind.QuickFix):
        for diagnostic in params.context.diagnostics:
            if diagnostic.source == SOURCE and isinstance(diagnostic.code, str):
                actions.extend(_quick_fixes(uri, document, diagnostic))
    unsafe = CONFIGS.editor.unsafe_fixes
    if _wanted(only, FIX_ALL) and _has_fix(uri, unsafe):
        actions.append(types.CodeAction(
            title="Fix all torchlint findings (unsafe fixes included)" if unsafe
            else "Fix all safe torchlint findings", kind=FIX_ALL,
            data={"uri": uri, "version": document.version, "all": True, "unsafe": unsafe}))
    if not _resolves_edits(ls):  # an editor that cannot resolve gets every edit now
        actions = [await _resolve(ls, action) if action.edit is None else action for action in actions]
        actions = [action for action in actions if action.edit is not None]
    return actions


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: LanguageServer, action: types.CodeAction) -> types.CodeAction:
    return await _resolve(ls, action)


async def _resolve(ls: LanguageServer, action: types.CodeAction) -> types.CodeAction:
    """Fill in a fix action's edit: the fix loop runs in a thread, off the loop that answers requests."""
    data = action.data if isinstance(action.data, dict) else {}
    document = _open_document(ls, data.get("uri", ""))
    if document is None or document.version != data.get("version"):
        return action  # the document changed since: no edit, the editor asks again
    uri, source = data["uri"], document.source
    path = _text_path(uri)
    loop = asyncio.get_running_loop()
    if data.get("all"):
        fixed = await loop.run_in_executor(None, _fixed_all, path, source, bool(data.get("unsafe")))
    else:
        at = tuple(data["at"]) if data.get("at") else None
        fixed = await loop.run_in_executor(
            None, _fixed_text, path, source, data.get("code", ""), at, bool(data.get("unsafe")))
    if fixed is not None and document.version == data.get("version"):
        action.edit = types.WorkspaceEdit(changes={uri: [_minimal_edit(document, source, fixed)]})
    return action


# -- hover -------------------------------------------------------------------

def hover_text(code: str) -> str:
    """A finding's rule in a few lines: its message, what was measured, its page."""
    from torchlint.measured import measured_line, packaged_evidence
    from torchlint.engine import STATUS_CODES
    from torchlint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code)
    if rule is None:
        name, line, _ = STATUS_CODES.get(code, (code, "not a torchlint rule", ""))
        return f"**{code}** ({name}): {line}.\n\n[{code}]({rule_url(code)})"
    entries = packaged_evidence().get("rules", {}).get(code, [])
    measured = [measured_line(entry) for entry in entries] or ["Not measured yet."]
    return "\n\n".join([f"**{code}** ({rule.name}): {rule.message}", *measured,
                        f"[{code} rule page]({rule_url(code)})"])


def _covers(span: types.Range, position: types.Position) -> bool:
    start, end = span.start, span.end
    return (start.line, start.character) <= (position.line, position.character) <= (end.line, end.character)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: types.HoverParams) -> Optional[types.Hover]:
    found = [d for d in DOCUMENTS.published.get(params.text_document.uri, ())
             if isinstance(d.code, str) and _covers(d.range, params.position)]
    if not found:
        return None
    text = "\n\n---\n\n".join(hover_text(code) for code in dict.fromkeys(str(d.code) for d in found))
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=found[0].range)


def serve() -> None:
    server.start_io()
