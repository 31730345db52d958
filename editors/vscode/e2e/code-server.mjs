// The packaged extension in a real VS Code: code-server (VS Code in the browser)
// with torchlint.vsix installed, driven headless from Chromium by playwright-core.
// It opens a Python file and a notebook, waits for torchlint's findings in the
// Problems panel, hovers one, runs the restart command, and checks that a Python
// without torchlint gets the one message with its pip command.
//
// Not part of `npm test`: code-server is a large install with native modules
// (e2e/run.sh sets it up). Usage: see e2e/run.sh. Writes screenshots and
// results.json to $E2E_OUT and exits 1 when a check fails.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`set ${name} (see e2e/run.sh)`);
  }
  return value;
};
const CODE_SERVER = env("CODE_SERVER");
const { chromium } = createRequire(import.meta.url)(env("PLAYWRIGHT_CORE"));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const PYTHON = env("TORCHLINT_PYTHON");
const VSIX = path.resolve(process.env.VSIX ?? "torchlint.vsix");
const OUT = path.resolve(process.env.E2E_OUT ?? "e2e-out");
fs.mkdirSync(OUT, { recursive: true });

// the same programs the Node tests lint (test/harness.ts, built by `npm run package`)
const { STORED_LOSS, NUMPY_ON_OUTPUT } = createRequire(import.meta.url)("../out/test/harness.js");
const cell = (type, source) => ({
  cell_type: type, metadata: {}, source,
  ...(type === "code" ? { outputs: [], execution_count: null } : {}),
});
const NOTEBOOK = {
  cells: [
    cell("code", "import torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4)"),
    cell("markdown", "The model's output, read out:"),
    cell("code", "out = model(x)\nprint(out.numpy())"),
  ],
  metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" }, language_info: { name: "python" } },
  nbformat: 4, nbformat_minor: 5,
};

const results = [];
function record(step, ok, detail) {
  results.push({ step, ok, detail });
  console.log(`${ok ? "ok  " : "FAIL"} ${step}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
}

function workspace(name, settings) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `torchlint-e2e-${name}-`));
  const folder = path.join(root, "project");
  const data = path.join(root, "user-data");
  const extensions = path.join(root, "extensions");
  fs.mkdirSync(folder, { recursive: true });
  fs.mkdirSync(path.join(data, "User"), { recursive: true });
  fs.writeFileSync(path.join(folder, "train.py"), STORED_LOSS);
  fs.writeFileSync(path.join(folder, "infer.py"), NUMPY_ON_OUTPUT);
  fs.writeFileSync(path.join(folder, "analysis.ipynb"), JSON.stringify(NOTEBOOK, null, 1));
  writeSettings(data, settings);
  const install = spawnSync(CODE_SERVER, ["--extensions-dir", extensions, "--user-data-dir", data, "--install-extension", VSIX],
    { encoding: "utf8" });
  record(`${name}: install the .vsix`, install.status === 0 && /successfully installed/i.test(install.stdout),
    (install.stdout + install.stderr).trim().split("\n").pop());
  return { folder, data, extensions };
}

function writeSettings(data, settings) {
  fs.writeFileSync(path.join(data, "User", "settings.json"), JSON.stringify({
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "extensions.autoCheckUpdates": false,
    "telemetry.telemetryLevel": "off",
    "files.autoSave": "off",
    ...settings,
  }, null, 2));
}

async function startCodeServer({ folder, data, extensions }) {
  const child = spawn(CODE_SERVER, [
    "--auth", "none", "--bind-addr", "127.0.0.1:0", "--disable-telemetry", "--disable-update-check",
    "--disable-workspace-trust", "--user-data-dir", data, "--extensions-dir", extensions, folder,
  ], { stdio: ["ignore", "pipe", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`code-server did not start: ${seen}`)), 60000);
    const read = (chunk) => {
      seen += chunk;
      const match = /HTTP server listening on (http:\/\/\S+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
  });
  return { child, url: `${url.replace(/\/$/, "")}/?folder=${encodeURIComponent(folder)}` };
}

async function openWorkbench(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
  await page.locator(".explorer-folders-view, .explorer-viewlet").first().waitFor({ timeout: 60000 });
  return page;
}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

async function openFile(page, name) {
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: name }).waitFor({ timeout: 30000 });
}

/** The Problems panel's rows, once one of them holds `code` (or after the timeout). */
async function problems(page, code, timeout = 90000) {
  await runCommand(page, "View: Focus Problems");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: code });
  try {
    await row.first().waitFor({ timeout });
  } catch {
    // fall through: report what the panel holds
  }
  return page.locator(".markers-panel .monaco-list-row").allInnerTexts();
}

function outputLog(data) {
  // VS Code writes each output channel to a file under the user data's logs folder
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
      } else if (/torchlint\.log$/.test(entry.name)) {
        found.push(fs.readFileSync(full, "utf8"));
      }
    }
  };
  walk(path.join(data, "logs"));
  return found.join("\n");
}

async function withTorchlint(browser) {
  const settings = { "torchlint.interpreter": PYTHON, "torchlint.fixOnSave": true };
  const dirs = workspace("with-torchlint", settings);
  const { child, url } = await startCodeServer(dirs);
  try {
    const page = await openWorkbench(browser, url);
    await openFile(page, "train.py");
    const pyRows = await problems(page, "TL301");
    await page.screenshot({ path: path.join(OUT, "python-file.png") });
    record("a Python file: TL301 in the Problems panel", pyRows.some((r) => r.includes("TL301") && r.includes("torchlint")), pyRows);

    // hover the flagged code: the rule and what was measured
    await page.locator(".tab.active", { hasText: "train.py" }).click();
    const squiggle = page.locator(".monaco-editor .squiggly-warning").first();
    await squiggle.waitFor({ timeout: 30000 });
    await squiggle.hover({ force: true });
    const hover = page.locator(".monaco-hover-content", { hasText: "TL301" });
    await hover.first().waitFor({ timeout: 30000 }).catch(() => undefined);
    const hoverText = (await hover.allInnerTexts()).join("\n");
    await page.screenshot({ path: path.join(OUT, "hover.png") });
    record("hover: the rule and its measured evidence", /graph-kept-across-iterations/.test(hoverText) && /Measured/.test(hoverText),
      hoverText.slice(0, 400));

    await openFile(page, "analysis.ipynb");
    const nbRows = await problems(page, "TL402");
    await page.screenshot({ path: path.join(OUT, "notebook.png") });
    record("a notebook: TL402 on its third cell", nbRows.some((r) => r.includes("TL402")), nbRows);

    // fix on save: an edit, then Ctrl+S; the safe TL402 fix lands in the file on disk
    await openFile(page, "infer.py");
    await problems(page, "TL402");
    await page.locator(".tab.active", { hasText: "infer.py" }).click();
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("# saved\n");
    await page.keyboard.press("Control+S");
    const saved = path.join(dirs.folder, "infer.py");
    const fixed = await waitFor(() => fs.readFileSync(saved, "utf8").includes("# saved"), 30000);
    record("fix on save (torchlint.fixOnSave): the safe fix is in the saved file",
      fixed && fs.readFileSync(saved, "utf8").includes("print(out.detach().numpy())"), fs.readFileSync(saved, "utf8"));

    // a rule setting changed while running (in the workspace's settings): the server re-lints, TL301 goes
    fs.mkdirSync(path.join(dirs.folder, ".vscode"));
    fs.writeFileSync(path.join(dirs.folder, ".vscode", "settings.json"), JSON.stringify({ "torchlint.ignore": ["TL301"] }));
    const gone = await waitFor(async () => !(await problems(page, "TL301", 1000)).some((r) => r.includes("TL301")), 60000);
    record("torchlint.ignore changed while running: TL301 leaves the Problems panel", gone, await problems(page, "TL402", 1000));

    await runCommand(page, "torchlint: Restart Server");
    const restarted = await waitFor(() => (outputLog(dirs.data).match(/starting: /g) ?? []).length >= 2, 60000);
    const after = await problems(page, "TL402");
    record("torchlint: Restart Server starts a second server that publishes again", restarted && after.some((r) => r.includes("TL402")),
      { starts: (outputLog(dirs.data).match(/starting: .*/g) ?? []), problems: after });
    await page.close();
  } finally {
    child.kill();
  }
}

async function withoutTorchlint(browser) {
  // a Python that cannot see site-packages: no torchlint there
  const bare = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "torchlint-e2e-python-")), "python");
  fs.writeFileSync(bare, `#!/bin/sh\nexec "${PYTHON}" -I -S "$@"\n`, { mode: 0o755 });
  const dirs = workspace("without-torchlint", { "torchlint.interpreter": bare });
  const { child, url } = await startCodeServer(dirs);
  try {
    const page = await openWorkbench(browser, url);
    await openFile(page, "train.py");
    const toast = page.locator(".notification-toast", { hasText: "torchlint is not installed" });
    await toast.first().waitFor({ timeout: 60000 }).catch(() => undefined);
    const texts = await toast.allInnerTexts();
    await page.screenshot({ path: path.join(OUT, "not-installed.png") });
    record("a Python without torchlint: one message with the pip command", texts.length === 1 && texts[0].includes(`-m pip install "torchlint[lsp]"`), texts);
    await page.close();
  } finally {
    child.kill();
  }
}

async function waitFor(check, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return check();
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  // the machine's network is closed: no background fetches, no sandbox as root
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  await withTorchlint(browser);
  await withoutTorchlint(browser);
} catch (error) {
  record("the run", false, String(error?.stack ?? error));
} finally {
  await browser.close();
}
fs.writeFileSync(path.join(OUT, "results.json"), JSON.stringify(results, null, 2));
process.exit(results.every((r) => r.ok) ? 0 : 1);
