"""``torchlint server``: a Language Server over stdio (needs ``pip install 'torchlint[lsp]'``).

It lints a Python document when it is opened, changed or saved and publishes
the findings (severity warning, the rule code linked to its docs page, source
``torchlint``). The configuration is the one nearest the file, resolved as
for ``torchlint check`` (docs/configuration.md); an excluded file shows nothing.

Code actions, per finding: apply the rule's fix when the fixer module is
installed and the rule has one (an unsafe fix says so in its title), and
always "suppress with # noqa: CODE".

Only this module imports pygls, and only ``torchlint server`` imports this module.
"""
from __future__ import annotations

import logging
from typing import List, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchlint import __version__
from torchlint.links import rule_url
from torchlint.noqa import noqa_pattern

SOURCE = "torchlint"
log = logging.getLogger(__name__)
server = LanguageServer("torchlint", __version__)


# -- linting a document ------------------------------------------------------

def _settings(path: str):
    """What applies to a file (``config.FileSettings``): the config nearest it, as for
    ``torchlint check``; a broken config is shown to the user and the defaults used."""
    from torchlint import config as config_mod

    try:
        return config_mod.Settings().resolve(path)
    except config_mod.ConfigError as exc:
        server.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error, message=f"torchlint: {exc}; using the defaults"))
        return config_mod.Settings(isolated=True).resolve(path)


def lint_document(path: str, source: str) -> list:
    """The torchlint Diagnostics for a document's current text."""
    if path.endswith(".ipynb"):  # notebooks are checked by `torchlint check`, not as text
        return []
    from torchlint.runner import lint_data

    settings = _settings(path)
    if settings.excluded:
        return []
    result = lint_data(path, source, settings.codes)  # text, not bytes: no coding-line re-decoding
    for error in result.errors:
        log.warning("%s: %s", error.path, error.message)
    return result.diagnostics


def _fix_record(d) -> Optional[dict]:
    from torchlint.reporters._common import fix_record

    return fix_record(d)


def to_lsp(d, document) -> types.Diagnostic:
    line = d.line - 1
    start = types.Position(line=line, character=d.col - 1)
    if d.end_line is not None and d.end_col is not None:
        end = types.Position(line=d.end_line - 1, character=d.end_col - 1)
    else:
        end = types.Position(line=line, character=d.col)
    severity = types.DiagnosticSeverity.Error if d.code == "TL001" else types.DiagnosticSeverity.Warning
    return types.Diagnostic(
        range=document.range_to_client_units(types.Range(start=start, end=end)),
        message=d.message,
        severity=severity,
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)),
        source=SOURCE,
        data={"fix": _fix_record(d)},
    )


def _is_python(document, path: str) -> bool:
    """What the editor says the document is; its name where the editor does not say."""
    if document.language_id:
        return document.language_id.lower() in _PYTHON_IDS
    return path.endswith((".py", ".pyi", ".pyw"))


_PYTHON_IDS = frozenset(("python", "python3", "py"))


def _publish(ls: LanguageServer, uri: str) -> None:
    document = ls.workspace.get_text_document(uri)
    path = to_fs_path(uri) or uri
    if not _is_python(document, path):  # a Markdown file, a text file, a config file...
        return
    try:
        diagnostics = [to_lsp(d, document) for d in lint_document(path, document.source)]
    except Exception as exc:  # never let one document take the server down
        log.exception("linting %s failed", uri)
        ls.window_log_message(types.LogMessageParams(
            type=types.MessageType.Error, message=f"torchlint: {path}: {exc!r}"))
        diagnostics = []
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=document.version, diagnostics=diagnostics))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


# -- code actions ------------------------------------------------------------

def _fixed_text(path: str, source: str, code: str, unsafe: bool) -> Optional[str]:
    """The document with ``code``'s fixes applied; None when they change nothing."""
    from torchlint.fixer import fix_source

    try:
        fixed = fix_source(source, path, codes=[code], unsafe=unsafe, enabled=_settings(path).codes)
    except Exception:
        log.exception("fixing %s in %s failed", code, path)
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


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
)
def code_action(ls: LanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    path = to_fs_path(uri) or uri
    actions = []
    for diagnostic in params.context.diagnostics:
        if diagnostic.source != SOURCE or not isinstance(diagnostic.code, str):
            continue
        code = diagnostic.code
        fix = (diagnostic.data or {}).get("fix") if isinstance(diagnostic.data, dict) else None
        if fix:
            unsafe = fix.get("safety") == "unsafe"
            fixed = _fixed_text(path, document.source, code, unsafe)
            if fixed is not None:
                what = fix.get("description") or f"Fix {code}"
                actions.append(types.CodeAction(
                    title=f"{what} ({code}{', unsafe' if unsafe else ''})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=not unsafe,
                    edit=types.WorkspaceEdit(changes={uri: [_minimal_edit(document, document.source, fixed)]}),
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


def serve() -> None:
    server.start_io()
