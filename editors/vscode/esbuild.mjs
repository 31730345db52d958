// One file for the .vsix: the extension and its runtime libraries, `vscode` left to
// the editor. tsc type-checks and builds out/ for the tests; this builds dist/.
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  target: "node18",
  minify: true,
  logLevel: "warning",
});
