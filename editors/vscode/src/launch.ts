// How the extension starts `torchlint server`, and what it tells the user when it
// cannot. Nothing here imports `vscode`, so the tests run it in plain Node against
// real interpreters.
import { execFile } from "node:child_process";

export interface LaunchSettings {
  /** `torchlint.path`: a torchlint executable; empty when unset. */
  path: string;
  /** `torchlint.interpreter`: a Python; empty when unset. */
  interpreter: string;
}

export interface Launch {
  command: string;
  args: string[];
  /** The Python that runs the server, when the extension knows it (not with torchlint.path). */
  python?: string;
  /** Where the choice came from, for messages. */
  origin: string;
}

/** Python on PATH where nothing else names one: what a terminal's `python3` would be. */
export const PATH_PYTHON = process.platform === "win32" ? "python" : "python3";

/**
 * The settings first (the user named a program on purpose), then the interpreter
 * the Python extension has selected for the workspace, then Python on PATH.
 */
export function chooseLaunch(settings: LaunchSettings, selectedPython?: string): Launch {
  if (settings.path) {
    return { command: settings.path, args: ["server"], origin: "torchlint.path" };
  }
  const [python, origin] = settings.interpreter
    ? [settings.interpreter, "torchlint.interpreter"]
    : selectedPython
      ? [selectedPython, "the Python extension's selected interpreter"]
      : [PATH_PYTHON, "PATH"];
  return { command: python, args: ["-m", "torchlint", "server"], python, origin };
}

/** What a probe of the launch found; `problem` is the message to show when it cannot start. */
export interface Probe {
  version?: string;
  problem?: string;
}

// Asks the Python for torchlint's version and whether pygls (the `lsp` extra) imports,
// without importing torchlint's linter: a quick answer even on a cold disk.
const PROBE = [
  "import importlib.util as u, json",
  "v = None",
  "if u.find_spec('torchlint') is not None:",
  "    from importlib.metadata import version, PackageNotFoundError",
  "    try: v = version('torchlint')",
  "    except PackageNotFoundError: v = 'unknown'",
  "print(json.dumps({'torchlint': v, 'pygls': u.find_spec('pygls') is not None}))",
].join("\n");

export const INSTALL_ARGUMENT = "torchlint[lsp]";

/** The command that installs the server into `python`, quoted for any shell VS Code opens. */
export function installCommand(python: string): string {
  return `"${python}" -m pip install "${INSTALL_ARGUMENT}"`;
}

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      const code = error ? ((error as NodeJS.ErrnoException).code ?? 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Whether `launch` can start a server, and if not, one message saying why and what to do. */
export async function probe(launch: Launch, timeoutMs = 30000): Promise<Probe> {
  if (launch.python === undefined) {
    const result = await run(launch.command, ["--version"], timeoutMs);
    const version = /^torchlint (\S+)/.exec(result.stdout.trim())?.[1];
    if (result.code === 0 && version) {
      return { version };
    }
    const why = result.code === "ENOENT" ? "does not exist" : "is not a working torchlint";
    return { problem: `torchlint: ${launch.command} (${launch.origin}) ${why}. Set torchlint.path to a torchlint executable, or clear it to use the selected Python.` };
  }
  const python = launch.python;
  const result = await run(python, ["-c", PROBE], timeoutMs);
  if (result.code === "ENOENT") {
    return { problem: `torchlint: no Python at ${python} (${launch.origin}). Select an interpreter, or set torchlint.interpreter.` };
  }
  let found: { torchlint: string | null; pygls: boolean };
  try {
    found = JSON.parse(result.stdout.trim().split("\n").pop() ?? "");
  } catch {
    return { problem: `torchlint: ${python} (${launch.origin}) did not run: ${result.stderr.trim() || `exit ${result.code}`}` };
  }
  if (found.torchlint === null) {
    return { problem: `torchlint is not installed in ${python} (${launch.origin}). Install it there: ${installCommand(python)}` };
  }
  if (!found.pygls) {
    return {
      version: found.torchlint,
      problem: `torchlint ${found.torchlint} in ${python} (${launch.origin}) lacks the language server's dependency pygls. Install it there: ${installCommand(python)}`,
    };
  }
  return { version: found.torchlint };
}
