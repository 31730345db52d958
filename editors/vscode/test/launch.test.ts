// Which program the extension starts, and the one message it shows when it cannot:
// probed against real interpreters, one with torchlint and ones without.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

import { chooseLaunch, installCommand, PATH_PYTHON, probe } from "../src/launch";
import { changedSettings, serverSettings } from "../src/settings";
import { REPO, testLaunch } from "./harness";

describe("chooseLaunch", () => {
  test("torchlint.path first, then torchlint.interpreter, then the Python extension's, then PATH", () => {
    const selected = "/envs/ml/bin/python";
    assert.deepEqual(chooseLaunch({ path: "/v/bin/torchlint", interpreter: "/x/python" }, selected),
      { command: "/v/bin/torchlint", args: ["server"], origin: "torchlint.path" });
    assert.deepEqual(chooseLaunch({ path: "", interpreter: "/x/python" }, selected),
      { command: "/x/python", args: ["-m", "torchlint", "server"], python: "/x/python", origin: "torchlint.interpreter" });
    assert.equal(chooseLaunch({ path: "", interpreter: "" }, selected).python, selected);
    assert.deepEqual(chooseLaunch({ path: "", interpreter: "" }),
      { command: PATH_PYTHON, args: ["-m", "torchlint", "server"], python: PATH_PYTHON, origin: "PATH" });
  });
});

describe("settings go to the server under the command line's names", () => {
  test("initializationOptions and didChangeConfiguration", () => {
    const rules = { select: ["TL3"], extendSelect: ["TL106"], ignore: ["TL302"], unsafeFixes: true };
    const sent = { "select": ["TL3"], "extend-select": ["TL106"], "ignore": ["TL302"], "unsafe-fixes": true };
    assert.deepEqual(serverSettings(rules), sent);
    assert.deepEqual(changedSettings(rules), { settings: { torchlint: sent } });
  });
});

/** An executable script standing in for a Python interpreter (a venv's `bin/python`). */
function fakePython(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "torchlint-python-"));
  const file = path.join(dir, "python");
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe("probe", { skip: process.platform === "win32" ? "the fake interpreters are sh scripts" : false }, () => {
  test("a Python with torchlint and pygls: its version, no message", async () => {
    const found = await probe(testLaunch());
    assert.equal(found.problem, undefined);
    assert.match(found.version ?? "", /^\d+\.\d+/);
  });

  test("a Python without torchlint: one message naming it and the pip command", async () => {
    const real = testLaunch().command;
    // -I -S: no site-packages, so neither torchlint nor pygls can be found
    const python = fakePython(`exec "${real}" -I -S "$@"`);
    const found = await probe(chooseLaunch({ path: "", interpreter: python }));
    assert.equal(found.problem,
      `torchlint is not installed in ${python} (torchlint.interpreter). Install it there: "${python}" -m pip install "torchlint[lsp]"`);
    assert.equal(installCommand(python), `"${python}" -m pip install "torchlint[lsp]"`);
  });

  test("torchlint without pygls: the lsp extra is what is missing", async () => {
    const real = testLaunch().command;
    // torchlint from the source tree, site-packages (where pygls is) left out
    const python = fakePython(`PYTHONPATH="${path.join(REPO, "src")}" exec "${real}" -S "$@"`);
    const found = await probe(chooseLaunch({ path: "", interpreter: python }, undefined));
    assert.match(found.problem ?? "", /lacks the language server's dependency pygls\. Install it there: .* -m pip install "torchlint\[lsp\]"$/);
  });

  test("a Python that does not exist, and a torchlint.path that does not", async () => {
    const missing = path.join(os.tmpdir(), "no-such-dir", "python");
    assert.match((await probe(chooseLaunch({ path: "", interpreter: missing }))).problem ?? "", /^torchlint: no Python at /);
    const noTool = path.join(os.tmpdir(), "no-such-dir", "torchlint");
    assert.match((await probe(chooseLaunch({ path: noTool, interpreter: "" }))).problem ?? "", /\(torchlint\.path\) does not exist\./);
  });

  test("torchlint.path naming the torchlint executable next to the Python", async () => {
    // where pip put the console script of the Python the tests use
    const scripts = execFileSync(testLaunch().command, ["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]).toString().trim();
    const executable = path.join(scripts, "torchlint");
    const found = await probe(chooseLaunch({ path: executable, interpreter: "" }), 60000);
    assert.equal(found.problem, undefined, found.problem);
    assert.match(found.version ?? "", /^\d+\.\d+/);
  });
});
