// The extension's client side against a real `torchlint server`, started as the
// extension starts it and given the settings the extension sends.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";

import { fixAllEdits } from "../src/fixAll";
import type { TextEdit } from "../src/fixAll";
import { changedSettings, FIX_ALL_KIND, serverSettings } from "../src/settings";
import type { RuleSettings } from "../src/settings";
import { NUMPY_ON_OUTPUT, Session, STORED_LOSS } from "./harness";

const DEFAULTS: RuleSettings = { select: null, extendSelect: [], ignore: [], unsafeFixes: false };

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "torchlint-vscode-"));
}

function uriOf(dir: string, name: string): string {
  return pathToFileURL(path.join(dir, name)).href;
}

/** `text` with `edits` applied (they do not overlap; applied from the last). */
function applied(text: string, edits: TextEdit[]): string {
  const lines = text.split("\n");
  const offset = (p: { line: number; character: number }) =>
    lines.slice(0, p.line).reduce((sum, line) => sum + line.length + 1, 0) + p.character;
  const ordered = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  return ordered.reduce((out, edit) => out.slice(0, offset(edit.range.start)) + edit.newText + out.slice(offset(edit.range.end)), text);
}

describe("a Python file with the default settings", () => {
  let session: Session;
  let dir: string;
  before(async () => {
    session = await Session.start(serverSettings(DEFAULTS));
    dir = tempDir();
  });
  after(() => session.close());

  test("shows the finding, its quick fixes and its measured evidence", async () => {
    const uri = uriOf(dir, "train.py");
    session.open(uri, STORED_LOSS);
    const [finding, ...rest] = await session.diagnosticsFor(uri, 1);
    assert.deepEqual(rest, []);
    assert.equal(finding.code, "TL301");
    assert.equal(finding.source, "torchlint");
    assert.deepEqual(finding.range.start, { line: 9, character: 8 });

    const hover = (await session.connection.sendRequest("textDocument/hover", {
      textDocument: { uri }, position: { line: 9, character: 12 },
    })) as { contents: { kind: string; value: string } };
    assert.equal(hover.contents.kind, "markdown");
    assert.match(hover.contents.value, /\*\*TL301\*\* \(graph-kept-across-iterations\)/);
    assert.match(hover.contents.value, /\*\*Measured\*\* on CPU/);
    assert.match(hover.contents.value, /\[TL301 rule page\]\(https:\/\/\S+\/docs\/rules\/TL301\.md\)/);

    const actions = (await session.connection.sendRequest("textDocument/codeAction", {
      textDocument: { uri }, range: finding.range, context: { diagnostics: [finding] },
    })) as Array<{ title: string; edit?: unknown }>;
    const titles = actions.map((action) => action.title);
    assert.ok(titles.includes("Suppress TL301 on this line (# noqa: TL301)"), titles.join(" | "));
    const fix = actions.find((action) => action.title.endsWith("(TL301, unsafe)"));
    assert.ok(fix, titles.join(" | "));
    assert.equal(fix.edit, undefined); // resolved only when picked, as VS Code asks
    const resolved = (await session.connection.sendRequest("codeAction/resolve", fix)) as { edit: { changes: Record<string, TextEdit[]> } };
    assert.match(applied(STORED_LOSS, resolved.edit.changes[uri]), /losses\.append\(loss\.(detach|item)\(\)\)/);
  });

  test("fix-all on save applies the safe fixes only", async () => {
    const uri = uriOf(dir, "numpy_out.py");
    session.open(uri, NUMPY_ON_OUTPUT);
    assert.deepEqual((await session.diagnosticsFor(uri, 1)).map((d) => d.code), ["TL402"]);
    const fixed = applied(NUMPY_ON_OUTPUT, await fixAllEdits((m, p) => session.connection.sendRequest(m, p), uri));
    assert.match(fixed, /print\(out\.detach\(\)\.numpy\(\)\)/);

    const stored = uriOf(dir, "stored.py");
    session.open(stored, STORED_LOSS);
    await session.diagnosticsFor(stored, 1);
    // TL301's fix is unsafe: nothing to do on save without torchlint.unsafeFixes
    assert.deepEqual(await fixAllEdits((m, p) => session.connection.sendRequest(m, p), stored), []);
  });

  test("a notebook's cells are linted as one program, each finding on its cell", async () => {
    const notebook = uriOf(dir, "analysis.ipynb");
    const cell = (n: number) => `vscode-notebook-cell:${new URL(notebook).pathname}#W${n}sZmlsZQ%3D%3D`;
    const cells = [
      "import torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4)",
      "# The model's output, read out\n",
      "out = model(x)\nprint(out.numpy())",
    ];
    await session.connection.sendNotification("notebookDocument/didOpen", {
      notebookDocument: {
        uri: notebook, notebookType: "jupyter-notebook", version: 1,
        cells: cells.map((_, n) => ({ kind: n === 1 ? 1 : 2, document: cell(n) })),
      },
      cellTextDocuments: cells.map((text, n) => ({
        uri: cell(n), languageId: n === 1 ? "markdown" : "python", version: 1, text,
      })),
    });
    const found = await session.diagnosticsFor(cell(2));
    assert.deepEqual(found.map((d) => [d.code, d.range.start.line]), [["TL402", 1]]);
    assert.deepEqual(await session.diagnosticsFor(cell(0)), []);
  });
});

describe("the extension's rule settings", () => {
  test("apply where no config does, change while running, and give way to a project's config", async () => {
    const session = await Session.start(serverSettings({ ...DEFAULTS, ignore: ["TL301"], extendSelect: ["TL010"] }));
    try {
      const dir = tempDir();
      const loose = uriOf(dir, "train.py");
      const text = `${STORED_LOSS}x = 1  # noqa: TL501\n`;
      session.open(loose, text);
      assert.deepEqual((await session.diagnosticsFor(loose, 1)).map((d) => d.code), ["TL010"]);

      const project = path.join(dir, "project");
      fs.mkdirSync(project);
      fs.writeFileSync(path.join(project, "torchlint.toml"), 'ignore = ["TL302"]\n');
      const governed = uriOf(project, "train.py");
      session.open(governed, text);
      assert.deepEqual((await session.diagnosticsFor(governed, 1)).map((d) => d.code), ["TL301"]);

      const before = session.published.length;
      await session.connection.sendNotification("workspace/didChangeConfiguration", changedSettings(DEFAULTS));
      assert.deepEqual((await session.diagnosticsFor(loose, 1, before)).map((d) => d.code), ["TL301"]);
    } finally {
      await session.close();
    }
  });

  test("unsafe fixes: fix-all includes them when the setting is on", async () => {
    const session = await Session.start(serverSettings({ ...DEFAULTS, unsafeFixes: true }));
    try {
      const uri = uriOf(tempDir(), "train.py");
      session.open(uri, STORED_LOSS);
      await session.diagnosticsFor(uri, 1);
      const actions = (await session.connection.sendRequest("textDocument/codeAction", {
        textDocument: { uri },
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
        context: { diagnostics: [], only: [FIX_ALL_KIND] },
      })) as Array<{ title: string }>;
      assert.deepEqual(actions.map((a) => a.title), ["Fix all torchlint findings (unsafe fixes included)"]);
      const fixed = applied(STORED_LOSS, await fixAllEdits((m, p) => session.connection.sendRequest(m, p), uri));
      assert.match(fixed, /losses\.append\(loss\.(detach|item)\(\)\)/);
    } finally {
      await session.close();
    }
  });

  test("a wrong rule code is said once and the defaults apply", async () => {
    const session = await Session.start(serverSettings({ ...DEFAULTS, select: ["TL9999"] }));
    try {
      const uri = uriOf(tempDir(), "train.py");
      session.open(uri, STORED_LOSS);
      assert.deepEqual((await session.diagnosticsFor(uri, 1)).map((d) => d.code), ["TL301"]);
      assert.equal(session.messages.length, 1);
      assert.match(session.messages[0].message, /editor settings: select: unknown rule code 'TL9999'/);
    } finally {
      await session.close();
    }
  });
});
