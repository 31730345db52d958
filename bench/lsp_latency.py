#!/usr/bin/env python3
"""How fast ``torchlint server`` answers an editor: typing, reopening, shutting down.

    python bench/lsp_latency.py [--baseline SRC] [--runs N]

A pygls client drives the server over stdio as an editor does, on buffers made of
copies of a 10-line training loop (one TL301 each), and measures from the client's
side:

- typing: 20 edits 50 ms apart in the middle of a 2,000-line buffer (a comment typed
  one character at a time): how many publishes, and how long after the last edit the
  diagnostics of the final text arrive (target: at most one publish per settled
  version, final diagnostics within 300 ms);
- the same with edits 300 ms apart, so that lints start between edits;
- reopening an unchanged 2,000-line document: didOpen to its diagnostics (100 ms);
- ``shutdown`` after 10 edits to a 10,000-line buffer (1 s).

With ``--baseline SRC`` the same rows run first against the torchlint found at SRC
(a checkout's ``src`` folder, e.g. a ``git worktree`` of an older commit), in the same
command, so that the two are compared under the same load. Each row is the median of
``--runs`` runs. Needs the ``lsp`` extra (pygls).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOOP = '''
def train_{i}(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
'''


def buffer(lines: int) -> str:
    parts, count, i = ["import torch\n"], 1, 0
    while count < lines:
        chunk = LOOP.format(i=i)
        parts.append(chunk)
        count += chunk.count("\n")
        i += 1
    return "".join(parts)


def typed(text: str, keystrokes: int) -> list:
    """The texts after each keystroke of a comment typed on a line in the middle."""
    lines = text.split("\n")
    middle = len(lines) // 2
    comment = "  # typed while the server lints"
    return ["\n".join(lines[:middle] + [lines[middle] + comment[:k + 1]] + lines[middle + 1:])
            for k in range(keystrokes)]


class Editor:
    """A pygls client recording when each publish arrives."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.publishes: list = []

    async def start(self) -> None:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        self.client = LanguageClient("lsp-latency", "1")

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params):
            self.publishes.append((time.monotonic(), params.uri, params.version, len(params.diagnostics)))

        env = dict(os.environ, PYTHONPATH=self.src)
        await self.client.start_io(sys.executable, "-m", "torchlint", "server", env=env)
        await self.client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
        self.client.initialized(types.InitializedParams())

    def open(self, uri: str, text: str, version: int = 1) -> None:
        from lsprotocol import types

        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))

    def close(self, uri: str) -> None:
        from lsprotocol import types

        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def change(self, uri: str, version: int, text: str) -> None:
        from lsprotocol import types

        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def published(self, uri: str, version: int, after: float = 0.0, timeout: float = 120) -> float:
        """When the diagnostics of ``uri`` at ``version`` arrived (after ``after``)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for when, where, v, _ in self.publishes:
                if where == uri and v == version and when >= after:
                    return when
            await asyncio.sleep(0.002)
        raise TimeoutError(f"{uri} version {version}")

    async def stop(self, shut_down: bool = True) -> None:
        if shut_down:
            await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def typing(src: str, folder: Path, gap: float) -> dict:
    editor = Editor(src)
    await editor.start()
    uri = (folder / f"typing_{int(gap * 1000)}.py").as_uri()
    text = buffer(2000)
    editor.open(uri, text)
    await editor.published(uri, 1)
    editor.publishes.clear()
    texts = typed(text, 20)
    for version, edited in enumerate(texts, start=2):
        editor.change(uri, version, edited)
        last_edit = time.monotonic()
        await asyncio.sleep(gap)
    final_version = len(texts) + 1
    final = await editor.published(uri, final_version)
    await asyncio.sleep(1.0)  # anything still coming?
    versions = [v for _, where, v, _ in editor.publishes if where == uri]
    await editor.stop()
    return {"final_ms": 1000 * (final - last_edit), "publishes": len(versions),
            "one_per_version": len(versions) == len(set(versions))}


async def reopening(src: str, folder: Path) -> dict:
    editor = Editor(src)
    await editor.start()
    uri = (folder / "reopened.py").as_uri()
    text = buffer(2000)
    editor.open(uri, text)
    await editor.published(uri, 1)
    editor.close(uri)
    await asyncio.sleep(0.2)
    start = time.monotonic()
    editor.open(uri, text, version=2)
    answered = await editor.published(uri, 2, after=start)
    await editor.stop()
    return {"reopen_ms": 1000 * (answered - start)}


async def shutting_down(src: str, folder: Path) -> dict:
    editor = Editor(src)
    await editor.start()
    uri = (folder / "big.py").as_uri()
    text = buffer(10000)
    editor.open(uri, text)
    await editor.published(uri, 1)
    for version, edited in enumerate(typed(text, 10), start=2):
        editor.change(uri, version, edited)
    await asyncio.sleep(0.3)  # a lint of the newest text is under way
    start = time.monotonic()
    await editor.client.shutdown_async(None)
    answered = time.monotonic()
    await editor.stop(shut_down=False)
    return {"shutdown_ms": 1000 * (answered - start)}


async def measure(src: str, runs: int) -> dict:
    rows: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for _ in range(runs):
            for name, job in (("typing, edits 50 ms apart", typing(src, folder, 0.05)),
                              ("typing, edits 300 ms apart", typing(src, folder, 0.3)),
                              ("reopen an unchanged 2,000-line document", reopening(src, folder)),
                              ("shutdown after 10 edits, 10,000 lines", shutting_down(src, folder))):
                for key, value in (await job).items():
                    rows.setdefault((name, key), []).append(value)
    return {key: (statistics.median(values) if not isinstance(values[0], bool) else all(values))
            for key, values in rows.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a torchlint src folder to measure first, for comparison")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    try:
        import pygls  # noqa: F401
    except ImportError:
        print("bench/lsp_latency.py needs pygls: pip install -e '.[lsp]'", file=sys.stderr)
        return 2
    columns = {}
    if args.baseline:
        columns["baseline"] = asyncio.run(measure(str(Path(args.baseline).resolve()), args.runs))
    columns["this checkout"] = asyncio.run(measure(str(REPO / "src"), args.runs))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; median of {args.runs} runs")
    print("| row | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for key in next(iter(columns.values())):
        cells = []
        for values in columns.values():
            value = values.get(key)
            cells.append(str(value) if isinstance(value, bool) else f"{value:.0f}")
        print(f"| {key[0]}: {key[1]} | " + " | ".join(cells) + " |")
    now = columns["this checkout"]
    print("\ntargets (this checkout):")
    for label, met, shown in _targets(now):
        print(f"  [{'x' if met else ' '}] {label}: {shown}")
    return 0


def _targets(rows: dict) -> list:
    final = rows[("typing, edits 50 ms apart", "final_ms")]
    spaced = rows[("typing, edits 300 ms apart", "final_ms")]
    reopen = rows[("reopen an unchanged 2,000-line document", "reopen_ms")]
    shutdown = rows[("shutdown after 10 edits, 10,000 lines", "shutdown_ms")]
    one_each = all(rows[(name, "one_per_version")] for name in ("typing, edits 50 ms apart", "typing, edits 300 ms apart"))
    return [
        ("final diagnostics within 300 ms of the last edit, 2,000 lines", max(final, spaced) <= 300,
         f"{final:.0f} ms (edits 50 ms apart), {spaced:.0f} ms (300 ms apart)"),
        ("at most one publish per settled version", one_each, str(one_each)),
        ("a document linted lately answers within 100 ms (reopened, 2,000 lines)", reopen <= 100, f"{reopen:.0f} ms"),
        ("shutdown answered within 1 s", shutdown <= 1000, f"{shutdown:.0f} ms"),
    ]


if __name__ == "__main__":
    sys.exit(main())
