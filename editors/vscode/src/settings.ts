// The extension's settings as the server takes them: the command line's option
// names (`select`, `extend-select`, `ignore`, `unsafe-fixes`), sent as
// initializationOptions and, when they change, in workspace/didChangeConfiguration
// under "torchlint" (src/torchlint/server.py, editor_settings).

export interface RuleSettings {
  select: string[] | null;
  extendSelect: string[];
  ignore: string[];
  unsafeFixes: boolean;
}

export type ServerSettings = {
  "select": string[] | null;
  "extend-select": string[];
  "ignore": string[];
  "unsafe-fixes": boolean;
};

export function serverSettings(rules: RuleSettings): ServerSettings {
  return {
    "select": rules.select,
    "extend-select": rules.extendSelect,
    "ignore": rules.ignore,
    "unsafe-fixes": rules.unsafeFixes,
  };
}

/** The didChangeConfiguration payload for new settings. */
export function changedSettings(rules: RuleSettings): { settings: { torchlint: ServerSettings } } {
  return { settings: { torchlint: serverSettings(rules) } };
}

/** Settings that need a new server process (the program to run), not just new options. */
export const RESTART_SETTINGS = ["torchlint.path", "torchlint.interpreter"];
/** Settings the running server takes as they change. */
export const RULE_SETTINGS = ["torchlint.select", "torchlint.extendSelect", "torchlint.ignore", "torchlint.unsafeFixes"];

/**
 * Documents the client hands the server: Python files on disk and unsaved, and
 * notebook cells (their text goes over LSP 3.17 notebook sync, which the server
 * announces; listing the cells here gives them hovers and code actions).
 */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  { scheme: "vscode-notebook-cell", language: "python" },
];

/** The code action kind the server gives its fix-all (server.FIX_ALL). */
export const FIX_ALL_KIND = "source.fixAll.torchlint";
