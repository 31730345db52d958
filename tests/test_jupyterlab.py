"""torchlint in JupyterLab through jupyterlab-lsp (docs/notebooks.md): jupyter-lsp finds
``torchlint server`` through the ``jupyter_lsp_spec_v1`` entry point, and the server
lints what jupyterlab-lsp sends, a notebook's code cells joined into one Python text
document named ``.virtual_documents/<notebook>.ipynb``, with IPython magics rewritten as
calls. The messages below are the ones JupyterLab 4.6 with jupyterlab-lsp 5.3 sent
(recorded between them and the server); editors/jupyterlab/run.sh runs the real thing."""
from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from torchlint.jupyter_lsp_spec import spec  # noqa: E402

# The notebook's cells: "%matplotlib inline" and a model in the first, Markdown in the
# second, the output's .numpy() (TL402) in the third, joined as jupyterlab-lsp joins them.
VIRTUAL_DOCUMENT = ('get_ipython().run_line_magic("matplotlib", " inline")\nimport torch\n'
                    "model = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4)\n\n\n\n\n\n"
                    "out = model(x)\nprint(out.numpy())\n")


def test_jupyter_lsp_finds_the_server_through_the_entry_point():
    found = {ep.name: ep for ep in entry_points(group="jupyter_lsp_spec_v1")}
    assert found["torchlint"].load() is spec
    server = spec(manager=None)["torchlint"]
    # what jupyter-lsp's schema requires of a spec
    assert server["languages"] == ["python"] and server["version"] == 2
    assert server["argv"][1:] == ["-m", "torchlint", "server"]


def test_without_pygls_the_spec_has_no_command(monkeypatch):
    """jupyter-lsp leaves out a spec whose argv is empty: no server that cannot start."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "pygls" else real(name))
    assert spec()["torchlint"]["argv"] == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=spec()["torchlint"]["argv"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=None, root_uri=None))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_notebook_as_jupyterlab_lsp_sends_it_is_linted_as_python(client: LanguageClient, tmp_path):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    uri = (tmp_path / ".virtual_documents" / "analysis.ipynb").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=0, text=VIRTUAL_DOCUMENT)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    found = client.diagnostics[uri]
    assert [(d.code, d.range.start.line, d.range.start.character) for d in found] == [("TL402", 10, 6)]

    # its quick fix works on the joined text too (jupyterlab-lsp maps edits back to the cell)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=found[0].range,
        context=types.CodeActionContext(diagnostics=list(found))))
    fix = next(action for action in actions if "TL402" in action.title and not action.title.startswith("Suppress"))
    edit, = fix.edit.changes[uri]
    assert edit.range.start.line == edit.range.end.line == 10
    line = VIRTUAL_DOCUMENT.splitlines()[10]
    assert line[:edit.range.start.character] + edit.new_text + line[edit.range.end.character:] == \
        "print(out.detach().numpy())"
