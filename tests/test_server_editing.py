"""``torchlint server`` while the user types: debounced linting, stale results
dropped, shutdown answered mid-lint, protocol errors logged, one fix per finding,
fix-all, hovers, config changes. A real client (pytest-lsp) over stdio, plus the
lint queue in process. No wall-clock thresholds: counts and orderings only."""
from __future__ import annotations

import asyncio
import sys
import threading

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, make_test_lsp_client  # noqa: E402

from conftest import STORED_LOSS  # noqa: E402

STORED = STORED_LOSS.format(suffix="")
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS

TWO_CHECKPOINTS = """\
import torch
from torch.utils.checkpoint import checkpoint


class Net(torch.nn.Module):
    def forward(self, x):
        x = checkpoint(self.stem, x)
        return checkpoint(self.head, x)
"""

TWO_NUMPYS = """\
import torch

model = torch.nn.Linear(4, 2)
x = torch.randn(8, 4)
out = model(x)
print(out.numpy())
print(out.cpu().numpy())
"""


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics in arrival order."""
    client = make_test_lsp_client()
    client.publishes = []
    features = client.protocol.fm.features
    store = features[PUBLISH]

    def record(params):
        client.publishes.append(params)
        return store(params)

    features[PUBLISH] = record
    return client


def _client_fixture(capabilities: types.ClientCapabilities, shut_down: bool = True):
    @pytest_lsp.fixture(config=ClientServerConfig(
        server_command=[sys.executable, "-m", "torchlint", "server"], client_factory=_recording_client))
    async def fixture(lsp_client: LanguageClient):
        await lsp_client.initialize_session(types.InitializeParams(
            capabilities=capabilities, process_id=None, root_uri=None))
        yield
        if shut_down:
            await lsp_client.shutdown_session()
        else:  # the test shut it down: a second shutdown gets no answer
            lsp_client.exit(None)

    return fixture


client = _client_fixture(types.ClientCapabilities())
shut_client = _client_fixture(types.ClientCapabilities(), shut_down=False)
# an editor that resolves code actions' edits lazily, as VS Code and Neovim do
resolving_client = _client_fixture(types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
    code_action=types.CodeActionClientCapabilities(
        resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])))))


def _open(client: LanguageClient, uri: str, text: str, language_id: str = "python") -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def _published(client: LanguageClient, uri: str, version: int) -> list:
    """The diagnostics published for ``uri`` at ``version`` (waits for them)."""
    while not any(p.uri == uri and p.version == version for p in client.publishes):
        await client.wait_for_notification(PUBLISH)
    return next(p for p in reversed(client.publishes) if p.uri == uri and p.version == version).diagnostics


def _apply(text: str, edits: list) -> str:
    """``text`` with LSP TextEdits applied (ASCII texts: UTF-16 units are code points)."""
    lines = text.splitlines(keepends=True)

    def offset(position):
        return sum(len(line) for line in lines[:position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def _buffer(copies: int) -> str:
    """A long document: ``copies`` training loops, each storing its loss (one TL301 each)."""
    body = STORED.split("\n", 2)[2]
    return "import torch\n" + "".join("\n" + body.replace("def train(", f"def train_{i}(") for i in range(copies))


# -- debouncing, stale results, shutdown ----------------------------------------

@pytest.mark.asyncio
async def test_a_burst_of_edits_is_linted_once_for_its_last_version(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    text = _buffer(40)
    _open(client, uri, text)
    assert len(await _published(client, uri, 1)) == 40
    client.publishes.clear()
    for version in range(2, 22):  # 20 edits, sent faster than the server's pause
        text += f"x_{version} = {version}\n"
        _change(client, uri, version, text)
    assert len(await _published(client, uri, 21)) == 40
    # a stale result never follows a newer one, and the burst is not linted edit by edit
    versions = [p.version for p in client.publishes]
    assert versions == sorted(set(versions)) and versions[-1] == 21
    assert len(versions) < 20


@pytest.mark.asyncio
async def test_shutdown_is_answered_while_a_long_lint_runs(shut_client: LanguageClient, tmp_path):
    client = shut_client
    uri = (tmp_path / "big.py").as_uri()
    text = _buffer(300)  # 3,000 lines: a lint of seconds on a CI machine
    _open(client, uri, text)
    await _published(client, uri, 1)
    for version in range(2, 12):
        text += f"x_{version} = {version}\n"
        _change(client, uri, version, text)
    # the reply comes from the loop while the worker lints version 11; that lint's
    # result, arriving after the shutdown, is dropped
    await client.shutdown_async(None)
    assert [p.version for p in client.publishes] == [1]


class _GatedLint:
    """A lint the test lets finish: records the versions it was asked for."""

    def __init__(self):
        self.started = threading.Event()
        self.release = threading.Event()
        self.versions = []

    def __call__(self, job):
        self.versions.append(job.version)
        self.started.set()
        assert self.release.wait(60)
        return job.version


def test_the_queue_lints_the_newest_text_and_hands_stale_results_back_marked_stale():
    from torchlint.server import LintJob, LintQueue

    lint, delivered, done = _GatedLint(), [], threading.Event()
    queue = LintQueue(lint, lambda job, result: (delivered.append((result, queue.is_waiting(job.uri))),
                                                 result == 5 and done.set()), delay=0)
    queue.submit(LintJob("file:///a.py", "/a.py", 1, "v1"))
    assert lint.started.wait(60)  # version 1 is being linted: 2..5 arrive meanwhile
    for version in range(2, 6):
        queue.submit(LintJob("file:///a.py", "/a.py", version, f"v{version}"))
    lint.release.set()
    assert done.wait(60)
    assert lint.versions == [1, 5]  # 2, 3 and 4 were replaced while waiting
    # version 1's result comes back while 5 waits: the receiver can tell it is stale
    assert delivered == [(1, True), (5, False)]
    queue.stop()


def test_a_lint_overtaken_by_a_newer_text_stops_and_delivers_nothing(tmp_path):
    """The worker's lint asks, between its steps, whether a newer text of its document
    is queued: then it stops, nothing is delivered, and the newer text is linted."""
    from torchlint import server
    from torchlint.server import CANCELLED, LintJob, LintQueue

    path = tmp_path / "train.py"
    delivered, done = [], threading.Event()

    def lint(job):
        if job.version == 1:  # a newer text arrives while version 1 is linted
            queue.submit(LintJob(job.uri, job.path, 2, STORED))
        return server._lint_job(job)

    def deliver(job, result):
        delivered.append((job.version, result))
        done.set()

    queue = LintQueue(lint, deliver, delay=0)
    real_queue, server.LINTS = server.LINTS, queue
    try:
        queue.submit(LintJob(path.as_uri(), str(path), 1, STORED))
        assert done.wait(60)
    finally:
        server.LINTS = real_queue
        queue.stop()
    assert [version for version, _ in delivered] == [2]
    assert [d.code for d in delivered[0][1].diagnostics] == ["TL301"]
    assert all(result is not CANCELLED for _, result in delivered)


def test_a_text_linted_lately_is_answered_from_memory_until_a_module_it_read_changes(tmp_path):
    from torchlint.server import LintResult, _RecentResults

    helper = tmp_path / "helpers.py"
    helper.write_text("def evaluate(model, data):\n    return model(data)\n")
    stamp = helper.stat()
    recent = _RecentResults(size=2)
    result = LintResult(["a finding"], None, {str(helper): [stamp.st_mtime_ns, stamp.st_size]})
    recent.put("/p/train.py", "text", 0, result)
    assert recent.get("/p/train.py", "text", 0) is result
    assert recent.get("/p/train.py", "text", 1) is None  # another config generation
    assert recent.get("/p/train.py", "other text", 0) is None
    helper.write_text("def evaluate(model, data):\n    with torch.no_grad():\n        return model(data)\n")
    assert recent.get("/p/train.py", "text", 0) is None  # the project module it read changed
    for name in ("a.py", "b.py"):
        recent.put(name, "text", 0, LintResult([]))
    assert recent.get("a.py", "text", 0) is not None and recent.get("/p/train.py", "text", 0) is None


def test_a_stopped_queue_takes_no_more_work():
    from torchlint.server import LintJob, LintQueue

    lint = _GatedLint()
    lint.release.set()
    queue = LintQueue(lint, lambda job, result: None, delay=0)
    queue.stop()
    queue.submit(LintJob("file:///a.py", "/a.py", 1, "v1"))
    assert not queue.is_waiting("file:///a.py") and lint.versions == []


# -- protocol errors and what is linted -------------------------------------------

@pytest.mark.asyncio
async def test_a_change_to_an_unopened_document_is_logged_not_shown(client: LanguageClient, tmp_path):
    _change(client, (tmp_path / "never_opened.py").as_uri(), 2, STORED)
    readme, train = (tmp_path / "README.md").as_uri(), (tmp_path / "train.py").as_uri()
    _open(client, readme, STORED, language_id="markdown")  # not Python: not linted
    _open(client, train, STORED)
    assert [d.code for d in await _published(client, train, 1)] == ["TL301"]
    assert client.messages == []  # no pop-up
    assert any("KeyError" in m.message for m in client.log_messages)
    assert [p.uri for p in client.publishes] == [train]


# -- code actions and hovers ------------------------------------------------------

async def _actions(client: LanguageClient, uri: str, diagnostics: list, only=None) -> list:
    span = diagnostics[0].range if diagnostics else types.Range(start=types.Position(line=0, character=0),
                                                                end=types.Position(line=0, character=0))
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=span,
        context=types.CodeActionContext(diagnostics=diagnostics, only=only)))


@pytest.mark.asyncio
async def test_a_fix_action_fixes_only_its_own_finding(client: LanguageClient, tmp_path):
    uri = (tmp_path / "net.py").as_uri()
    _open(client, uri, TWO_CHECKPOINTS)
    first, second = await _published(client, uri, 1)
    assert first.code == second.code == "TL501" and first.range.start.line == 6
    for diagnostic, fixed_line in ((first, "        x = checkpoint(self.stem, x, use_reentrant=False)\n"),
                                   (second, "        return checkpoint(self.head, x, use_reentrant=False)\n")):
        fix = next(a for a in await _actions(client, uri, [diagnostic]) if not a.title.startswith("Suppress"))
        assert "unsafe" in fix.title
        fixed = _apply(TWO_CHECKPOINTS, fix.edit.changes[uri])
        changed = [line for line in fixed.splitlines(keepends=True) if line not in TWO_CHECKPOINTS]
        assert changed == [fixed_line]


@pytest.mark.asyncio
async def test_fix_all_applies_every_safe_fix_resolved_lazily(resolving_client: LanguageClient, tmp_path):
    client = resolving_client
    uri = (tmp_path / "script.py").as_uri()
    _open(client, uri, TWO_NUMPYS)
    diagnostics = await _published(client, uri, 1)
    assert [d.code for d in diagnostics] == ["TL402", "TL402"]
    action, = await _actions(client, uri, [], only=[types.CodeActionKind.SourceFixAll])
    assert action.kind == "source.fixAll.torchlint" and action.edit is None  # computed on resolve
    resolved = await client.code_action_resolve_async(action)
    fixed = _apply(TWO_NUMPYS, resolved.edit.changes[uri])
    assert fixed.count(".detach()") == 2
    _change(client, uri, 2, fixed)
    assert list(await _published(client, uri, 2)) == []
    # nothing left to fix: no fix-all offered
    assert list(await _actions(client, uri, [], only=[types.CodeActionKind.SourceFixAll])) == []


@pytest.mark.asyncio
async def test_hover_shows_the_rule_its_measured_line_and_its_page(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    _open(client, uri, STORED)
    diagnostic, = await _published(client, uri, 1)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start))
    text = hover.contents.value
    assert text.startswith("**TL301** (")
    assert "**Measured** on " in text
    assert diagnostic.code_description.href in text
    nothing = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
    assert nothing is None


def test_hover_text_of_a_status_code_and_an_unmeasured_rule():
    from torchlint.server import hover_text

    assert hover_text("TL001").startswith("**TL001** (")
    assert "rule page" in hover_text("TL301")


# -- config changes ------------------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["save", "watched"])
async def test_a_saved_config_relints_open_documents(client: LanguageClient, tmp_path, how):
    uri = (tmp_path / "train.py").as_uri()
    _open(client, uri, STORED)
    assert [d.code for d in await _published(client, uri, 1)] == ["TL301"]
    config = tmp_path / "torchlint.toml"
    config.write_text('ignore = ["TL301"]\n')
    if how == "save":
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=config.as_uri())))
    else:
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]))
    while len(client.publishes) < 2:
        await client.wait_for_notification(PUBLISH)
    assert [(p.version, len(p.diagnostics)) for p in client.publishes] == [(1, 1), (1, 0)]


@pytest.mark.asyncio
async def test_a_changed_requirements_file_relints_for_the_new_target(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    _open(client, uri, "import torch\n\nstate = torch.load('model.pt')\n")
    assert [d.code for d in await _published(client, uri, 1)] == []
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch>=2.1\n")  # before 2.6, torch.load without weights_only unpickles anything
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=requirements.as_uri(), type=types.FileChangeType.Created)]))
    while len(client.publishes) < 2:
        await client.wait_for_notification(PUBLISH)
    assert [d.code for d in client.publishes[-1].diagnostics] == ["TL507"]


@pytest.mark.asyncio
async def test_saving_an_unchanged_document_publishes_nothing_new(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    _open(client, uri, STORED)
    await _published(client, uri, 1)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    # a later document's publish proves the save was handled first
    other = (tmp_path / "other.py").as_uri()
    _open(client, other, STORED)
    await _published(client, other, 1)
    assert [p.uri for p in client.publishes] == [uri, other]


# -- notebooks ----------------------------------------------------------------------

def _notebook_open(client: LanguageClient, uri: str, cells: list) -> list:
    """Open a notebook of ``cells`` ((kind, text) pairs); returns the cells' URIs."""
    cell_uris = [f"vscode-notebook-cell:{uri[len('file:'):]}#cell{i}" for i in range(len(cells))]
    kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=uri, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kinds[kind], document=cell_uri)
                   for (kind, _), cell_uri in zip(cells, cell_uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=cell_uri, language_id="python" if kind == "code" else "markdown",
                                                    version=1, text=text)
                             for (kind, text), cell_uri in zip(cells, cell_uris)]))
    return cell_uris


@pytest.mark.asyncio
async def test_a_notebook_is_linted_as_one_program_and_findings_go_to_their_cells(client: LanguageClient, tmp_path):
    """As ``torchlint check nb.ipynb``: code cells joined (a model built in one cell is
    evaluated in another), markdown cells counted, each finding published on its cell."""
    uri = (tmp_path / "eval.ipynb").as_uri()
    cells = [("markdown", "# Evaluation"),
             ("code", "import torch\nmodel = torch.nn.Linear(4, 2)\nlosses = []"),
             ("code", "for x in torch.randn(10, 4):\n    loss = model(x).sum()\n    loss.backward()\n"
                      "    losses.append(loss)\n")]
    cell_uris = _notebook_open(client, uri, cells)
    while not any(p.uri == cell_uris[2] for p in client.publishes):
        await client.wait_for_notification(PUBLISH)
    published = {p.uri: p.diagnostics for p in client.publishes}
    assert [(d.code, d.range.start.line) for d in published[cell_uris[2]]] == [("TL301", 3)]
    assert list(published[cell_uris[1]]) == []
    # the cell's finding offers its noqa, not a fix (a fix needs the whole notebook)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=cell_uris[2]),
        range=published[cell_uris[2]][0].range,
        context=types.CodeActionContext(diagnostics=published[cell_uris[2]])))
    assert [a.title for a in actions] == ["Suppress TL301 on this line (# noqa: TL301)"]
    # an edit of a cell is a notebook change: the finding goes when the loss is detached
    client.publishes.clear()
    fixed = cells[2][1].replace("losses.append(loss)", "losses.append(loss.item())")
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uris[2], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
    while not any(p.uri == cell_uris[2] for p in client.publishes):
        await client.wait_for_notification(PUBLISH)
    assert [list(p.diagnostics) for p in client.publishes if p.uri == cell_uris[2]] == [[]]


@pytest.mark.asyncio
async def test_a_document_reopened_unchanged_is_answered_from_memory(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    _open(client, uri, STORED)
    first = await _published(client, uri, 1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=2, text=STORED)))
    again = await asyncio.wait_for(_published(client, uri, 2), 60)  # a failure must not hang
    assert [(d.code, d.range) for d in again] == [(d.code, d.range) for d in first] != []


# -- the newest text of a module wins -------------------------------------------

NOT_A_MODEL = "class Learner:\n    pass\n"
A_MODEL = "import torch.nn as nn\n\n\nclass Learner(nn.Module):\n    def forward(self, x):\n        return x\n"
# Nothing here is named like a model: only the module ``nets`` says what ``Learner`` is.
KEEPS_OUTPUTS = """\
import torch
from nets import Learner


def fit(data):
    learner = Learner()
    opt = torch.optim.SGD(learner.parameters(), lr=0.1)
    kept = []
    for x, y in data:
        out = learner(x)
        opt.zero_grad()
        out.sum().backward()
        opt.step()
        kept.append(out)
"""


def test_an_unsaved_buffer_of_a_module_wins_over_its_file(tmp_path):
    from torchlint import buffers, server

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "nets.py").write_text(NOT_A_MODEL)
    train = str(tmp_path / "train.py")
    (tmp_path / "train.py").write_text(KEEPS_OUTPUTS)
    assert server.lint_document(train, KEEPS_OUTPUTS) == []  # on disk, Learner is no model
    buffers.set_buffer(str(tmp_path / "nets.py"), A_MODEL)
    try:
        assert [d.code for d in server.lint_document(train, KEEPS_OUTPUTS)] == ["TL301"]
    finally:
        buffers.drop_buffer(str(tmp_path / "nets.py"))
    assert server.lint_document(train, KEEPS_OUTPUTS) == []


@pytest.mark.asyncio
async def test_editing_a_module_relints_the_open_documents_that_import_it(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "nets.py").write_text(NOT_A_MODEL)
    (tmp_path / "train.py").write_text(KEEPS_OUTPUTS)
    train, nets = (tmp_path / "train.py").as_uri(), (tmp_path / "nets.py").as_uri()
    _open(client, train, KEEPS_OUTPUTS)
    assert not await _published(client, train, 1)
    _open(client, nets, NOT_A_MODEL)
    _change(client, nets, 2, A_MODEL)  # unsaved: the file on disk still says Learner is no model
    while not any(p.uri == train and p.diagnostics for p in client.publishes):
        await client.wait_for_notification(PUBLISH)
    assert [d.code for d in client.publishes[-1].diagnostics] == ["TL301"]
    client.publishes.clear()
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=nets)))  # closed unsaved: the disk wins again
    while not any(p.uri == train for p in client.publishes):
        await client.wait_for_notification(PUBLISH)
    assert not [p.diagnostics for p in client.publishes if p.uri == train][-1]
