"""``torchlint server`` end to end: a real LSP client (pytest-lsp) talking to it over stdio."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import STORED_LOSS  # noqa: E402

STORED = STORED_LOSS.format(suffix="")


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "torchlint", "server"]),
)
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        process_id=None,
        root_uri=None,
    ))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, uri: str, text: str, version: int = 1) -> list:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics[uri]


@pytest.mark.asyncio
async def test_diagnostic_on_open_change_and_code_actions(client: LanguageClient, tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    diagnostics = await _open(client, uri, STORED)
    assert len(diagnostics) == 1
    diagnostic = diagnostics[0]
    assert diagnostic.code == "TL301" and diagnostic.source == "torchlint"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range == types.Range(start=types.Position(line=9, character=8),
                                           end=types.Position(line=9, character=27))
    assert diagnostic.code_description.href.endswith("/docs/rules/TL301.md")
    assert "loss.item()" in diagnostic.message

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    ))
    titles = [action.title for action in actions]
    assert "Suppress TL301 on this line (# noqa: TL301)" in titles
    noqa = next(a for a in actions if a.title.startswith("Suppress"))
    assert noqa.kind == types.CodeActionKind.QuickFix
    edit, = noqa.edit.changes[uri]
    assert edit.new_text == "  # noqa: TL301"
    assert edit.range.start == types.Position(line=9, character=27)

    # the edit applied: the finding goes away on the next change
    fixed = STORED.replace("losses.append(loss)", "losses.append(loss)  # noqa: TL301")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
    ))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_config_next_to_the_file_applies(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL301"]\n')
    uri = (tmp_path / "train.py").as_uri()
    assert list(await _open(client, uri, STORED)) == []


@pytest.mark.asyncio
async def test_broken_code_does_not_stop_the_server(client: LanguageClient, tmp_path):
    broken = (tmp_path / "broken.py").as_uri()
    diagnostics = await _open(client, broken, "for x in loader:\n    f(\n")
    assert [d.code for d in diagnostics] == ["TL001"]
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error
    good = (tmp_path / "train.py").as_uri()
    assert [d.code for d in await _open(client, good, STORED)] == ["TL301"]


def test_server_without_pygls_says_how_to_install_it():
    probe = (
        "import sys; sys.modules['pygls'] = None\n"
        "from torchlint.cli import main\n"
        "sys.exit(main(['server']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "pip install 'torchlint[lsp]'" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- the pieces behind the quick fixes, in process ---------------------------

def test_fix_action_uses_the_fixer(monkeypatch):
    from pygls.workspace import TextDocument

    from torchlint import server
    from torchlint.diagnostic import Applicability, Diagnostic

    calls = []

    def fix_source(source, path, request, codes, unsafe, at):
        calls.append((path, tuple(codes), unsafe, at, request.target_torch))
        return source.replace("losses.append(loss)", "losses.append(loss.item())")

    import torchlint.fixer
    from torchlint.torch_version import NEWEST_KNOWN

    monkeypatch.setattr(torchlint.fixer, "fix_source", fix_source)
    fixed = server._fixed_text("/p/train.py", STORED, "TL301", (10, 9), unsafe=True)
    # the file's target torch version, as its check used: nothing in /p says one
    assert calls == [("/p/train.py", ("TL301",), True, (10, 9), NEWEST_KNOWN)]
    document = TextDocument("file:///p/train.py", STORED)
    edit = server._minimal_edit(document, STORED, fixed)
    assert edit.new_text == ".item()"
    assert edit.range.start == edit.range.end == types.Position(line=9, character=26)

    d = Diagnostic("/p/train.py", 10, 9, "TL301", "m", 10, 28,
                   fix=Applicability.UNSAFE, fix_description="store loss.item()")
    lsp = server.to_lsp(d, document)
    assert lsp.data == {"fix": {"safety": "unsafe", "description": "store loss.item()"}, "at": [10, 9]}


def test_a_fix_that_changes_nothing_offers_no_action():
    from torchlint import server

    clean = "x = 1\n"
    assert server._fixed_text("/p/train.py", clean, "TL301", None, unsafe=True) is None
    assert server._fixed_text("/p/train.py", clean, "TL301", (1, 1), unsafe=True) is None


@pytest.mark.parametrize("line, expected", [
    ("x = f(y)", (8, "  # noqa: TL301")),
    ("x = f(y)  # noqa: TL101", (23, ", TL301")),
    ("x = f(y)  # noqa", None),
])
def test_noqa_edit(line, expected):
    from pygls.workspace import TextDocument

    from torchlint import server

    edit = server._noqa_edit(TextDocument("file:///a.py", line + "\n"), 0, "TL301")
    assert (edit.range.start.character, edit.new_text) == expected if expected else edit is None


def test_ranges_go_out_in_the_editors_units_whether_the_text_is_ascii_or_not():
    """to_lsp_all splits the text once (pygls splits it per range); columns after a
    character outside the BMP still count two UTF-16 units for it."""
    from pygls.workspace import TextDocument

    from torchlint import server
    from torchlint.diagnostic import Diagnostic

    found = [Diagnostic("/p/t.py", 1, 10, "TL301", "m", 1, 14), Diagnostic("/p/t.py", 2, 1, "TL301", "m", 2, 3)]
    wide = TextDocument("file:///p/t.py", "s = '😀'; x = 1\ny = 2\n")
    ranges = [d.range for d in server.to_lsp_all(found, wide)]
    assert ranges == [wide.range_to_client_units(r) for r in ranges_in_code_points(found)]
    assert ranges[0].start.character == 10  # code point 9, one more unit for the emoji
    ascii_text = TextDocument("file:///p/t.py", "s = 'ab'; x = 1\ny = 2\n")
    assert [d.range for d in server.to_lsp_all(found, ascii_text)] == ranges_in_code_points(found)


def ranges_in_code_points(found):
    return [types.Range(start=types.Position(line=d.line - 1, character=d.col - 1),
                        end=types.Position(line=d.end_line - 1, character=d.end_col - 1)) for d in found]
