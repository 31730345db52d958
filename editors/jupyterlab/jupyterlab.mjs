// torchlint in a real JupyterLab: jupyterlab-lsp finds `torchlint server` through
// torchlint's jupyter_lsp_spec_v1 entry point (no configuration), and the finding
// shows as a squiggle on the notebook's cell, with torchlint's message on hover.
// Driven headless from Chromium by playwright-core; see run.sh. Exits 1 on failure.
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";

const { chromium } = createRequire(import.meta.url)(process.env.PLAYWRIGHT_CORE);
const LAB = process.env.LAB_URL; // e.g. http://127.0.0.1:8899
const OUT = path.resolve(process.env.E2E_OUT ?? "e2e-out");
fs.mkdirSync(OUT, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const results = [];
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${LAB}/lab/tree/analysis.ipynb`);
  // jupyterlab-lsp hands the server's diagnostics to CodeMirror's lint layer
  const squiggle = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-lintRange-warning").first();
  const shown = await squiggle.waitFor({ timeout: 90000 }).then(() => true, () => false);
  const flagged = shown ? await squiggle.innerText() : "";
  results.push({ step: "the third cell's out.numpy() is flagged", ok: flagged === "out.numpy()", detail: flagged });
  if (shown) {
    await squiggle.hover();
    const tip = page.locator(".cm-tooltip", { hasText: "torchlint" }).first();
    await tip.waitFor({ timeout: 30000 }).catch(() => undefined);
    const text = (await page.locator(".cm-tooltip").allInnerTexts()).join(" | ");
    results.push({ step: "hover: TL402's message from torchlint", ok: /\.numpy\(\) on a tensor that requires grad/.test(text) && /torchlint/.test(text), detail: text });
  }
  await page.screenshot({ path: path.join(OUT, "jupyterlab.png") });
} catch (error) {
  results.push({ step: "the run", ok: false, detail: String(error?.stack ?? error) });
} finally {
  await browser.close();
}
for (const r of results) {
  console.log(`${r.ok ? "ok  " : "FAIL"} ${r.step}: ${r.detail}`);
}
fs.writeFileSync(path.join(OUT, "results.json"), JSON.stringify(results, null, 2));
process.exit(results.length > 1 && results.every((r) => r.ok) ? 0 : 1);
