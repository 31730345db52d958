"""``torchlint server`` takes the editor's settings: the command line's ``select``,
``extend-select``, ``ignore`` and ``unsafe-fixes``, as ``initializationOptions`` or in
``workspace/didChangeConfiguration``. They apply where no config file covers a file;
where one does, the config decides (docs/editors.md). A real client over stdio."""
from __future__ import annotations

import sys

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import STORED_LOSS  # noqa: E402

STORED = STORED_LOSS.format(suffix="")
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "torchlint", "server"]))
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def _start(client: LanguageClient, options) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=None, root_uri=None,
        initialization_options=options))


async def _codes(client: LanguageClient, uri: str, text: str = STORED) -> list:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await client.wait_for_notification(PUBLISH)
    return [d.code for d in client.diagnostics[uri]]


@pytest.mark.asyncio
async def test_editor_selection_applies_where_no_config_does_and_the_config_wins_elsewhere(client, tmp_path):
    await _start(client, {"ignore": ["TL301"], "extend-select": ["TL010"]})
    loose = tmp_path / "loose"
    loose.mkdir()
    # TL301 ignored by the editor; TL010 (opt-in) turned on by it: the noqa suppresses nothing
    assert await _codes(client, (loose / "train.py").as_uri(), STORED + "x = 1  # noqa: TL501\n") == ["TL010"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL302"]\n')
    # the project's config covers this file: the editor's ignore and extend-select do not apply
    assert await _codes(client, (project / "train.py").as_uri(), STORED + "x = 1  # noqa: TL501\n") == ["TL301"]


@pytest.mark.asyncio
async def test_changed_settings_lint_open_documents_again(client, tmp_path):
    await _start(client, {"select": ["TL1"]})
    uri = (tmp_path / "train.py").as_uri()
    assert await _codes(client, uri) == []

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"torchlint": {}}))
    await client.wait_for_notification(PUBLISH)
    assert [d.code for d in client.diagnostics[uri]] == ["TL301"]


@pytest.mark.asyncio
async def test_settings_without_torchlints_section_change_nothing(client, tmp_path):
    await _start(client, {"ignore": ["TL3"]})
    uri = (tmp_path / "train.py").as_uri()
    assert await _codes(client, uri) == []
    # a pull-model client's empty notification, then an unrelated tool's section: no re-lint,
    # and the next lint (a change) still honours the editor's ignore
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"ruff": {}}))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=STORED + "\n")]))
    params = await client.wait_for_notification(PUBLISH)
    assert params.version == 2 and list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_wrong_settings_are_shown_once_and_left_out(client, tmp_path):
    await _start(client, {"ignore": ["TL999"]})
    uri = (tmp_path / "train.py").as_uri()
    assert await _codes(client, uri) == ["TL301"]  # the defaults
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "editor settings: ignore: unknown rule code 'TL999'" in errors[0]

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"torchlint": {"extendSelect": ["TL010"]}}))
    await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
    assert "unknown setting 'extendSelect'" in client.messages[-1].message


@pytest.mark.asyncio
async def test_unsafe_fixes_setting_lets_fix_all_apply_unsafe_fixes(client, tmp_path):
    """TL301's only fix is unsafe: fix-all offers nothing until the editor says unsafe-fixes."""
    uri = (tmp_path / "train.py").as_uri()
    await _start(client, {"unsafe-fixes": False})
    await _codes(client, uri)
    assert list(await _fix_all(client, uri)) == []

    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"torchlint": {"unsafe-fixes": True}}))
    await client.wait_for_notification(PUBLISH)
    action, = await _fix_all(client, uri)
    assert action.title == "Fix all torchlint findings (unsafe fixes included)"
    assert action.kind == "source.fixAll.torchlint"
    edit, = action.edit.changes[uri]
    assert edit.new_text in (".item()", ".detach()")


async def _fix_all(client: LanguageClient, uri: str) -> list:
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.torchlint"])))


@pytest.mark.parametrize("values, problem", [
    ([], "expected an object"),
    ({"select": "TL1"}, "select: expected a list of rule codes"),
    ({"unsafe-fixes": "yes"}, "unsafe-fixes: expected true or false"),
    ({"select": ["TL1"], "ignore": ["TL1"]}, "select and ignore both name TL1"),
])
def test_editor_settings_are_checked_like_a_config(values, problem):
    from torchlint import config, server

    with pytest.raises(config.ConfigError, match=problem):
        server.editor_settings(values)


def test_editor_settings_that_name_nothing_add_no_layer():
    from torchlint import server

    assert server.editor_settings(None) == server.EditorSettings()
    assert server.editor_settings({"select": None, "ignore": []}) == server.EditorSettings()
    assert server.editor_settings({"unsafe-fixes": True}).unsafe_fixes is True
