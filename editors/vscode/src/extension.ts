// The VS Code side: find the Python to run, start `torchlint server` on it through
// vscode-languageclient, keep its settings current, fix on save when asked, restart
// on request or when the interpreter changes. The decisions live in launch.ts,
// settings.ts and fixAll.ts, which the tests run against a real server.
import { PythonExtension } from "@vscode/python-extension";
import * as vscode from "vscode";
import { DidChangeConfigurationNotification, LanguageClient, State } from "vscode-languageclient/node";
import type { LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

import { fixAllEdits } from "./fixAll";
import { chooseLaunch, installCommand, probe } from "./launch";
import type { Launch } from "./launch";
import {
  changedSettings,
  DOCUMENT_SELECTOR,
  RESTART_SETTINGS,
  RULE_SETTINGS,
  serverSettings,
} from "./settings";
import type { RuleSettings } from "./settings";

const PYTHON_EXTENSION = "ms-python.python";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
// Launches already reported as unusable: the message is shown once per program per session.
const reported = new Set<string>();
// Restarts are serialised: a settings change during a start waits for it.
let starting: Promise<void> = Promise.resolve();

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("torchlint");
}

function ruleSettings(): RuleSettings {
  const settings = config();
  return {
    select: settings.get<string[] | null>("select", null),
    extendSelect: settings.get<string[]>("extendSelect", []),
    ignore: settings.get<string[]>("ignore", []),
    unsafeFixes: settings.get<boolean>("unsafeFixes", false),
  };
}

/** The interpreter the Python extension has selected for the first workspace folder, if it is installed. */
async function selectedPython(): Promise<string | undefined> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION) === undefined) {
    return undefined;
  }
  try {
    const environments = (await PythonExtension.api()).environments;
    const active = environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch (error) {
    output.warn(`could not ask the Python extension for its interpreter: ${String(error)}`);
    return undefined;
  }
}

function launchSettings(): { path: string; interpreter: string } {
  const settings = config();
  // In an untrusted workspace VS Code hides the workspace's values of these two
  // (package.json: restrictedConfigurations), so only the user's own apply.
  return { path: resolveVariables(settings.get<string>("path", "")), interpreter: resolveVariables(settings.get<string>("interpreter", "")) };
}

/** `${workspaceFolder}` in a path setting, as users write it in tasks and launch configs. */
function resolveVariables(value: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return folder ? value.replace(/\$\{workspaceFolder\}/g, folder) : value;
}

async function start(): Promise<void> {
  const launch = chooseLaunch(launchSettings(), await selectedPython());
  output.info(`starting: ${[launch.command, ...launch.args].join(" ")} (from ${launch.origin})`);
  const found = await probe(launch);
  if (found.problem !== undefined) {
    output.error(found.problem);
    reportOnce(launch, found.problem);
    return;
  }
  output.info(`torchlint ${found.version}`);
  const serverOptions: ServerOptions = { command: launch.command, args: launch.args, options: { env: process.env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    initializationOptions: serverSettings(ruleSettings()),
    outputChannel: output,
    diagnosticCollectionName: "torchlint",
  };
  client = new LanguageClient("torchlint", "torchlint", serverOptions, clientOptions);
  await client.start();
}

function reportOnce(launch: Launch, problem: string): void {
  const key = `${launch.command}\u0000${problem}`;
  if (reported.has(key)) {
    return;
  }
  reported.add(key);
  const copy = launch.python !== undefined ? "Copy install command" : undefined;
  const actions = [copy, "Open settings"].filter((action): action is string => action !== undefined);
  void vscode.window.showErrorMessage(problem, ...actions).then(async (picked) => {
    if (picked === copy && launch.python !== undefined) {
      await vscode.env.clipboard.writeText(installCommand(launch.python));
    } else if (picked === "Open settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "torchlint.");
    }
  });
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  if (running !== undefined) {
    await running.stop().catch((error) => output.warn(`stopping the server: ${String(error)}`));
  }
}

function restart(): Promise<void> {
  starting = starting.then(async () => {
    await stop();
    await start();
  }).catch((error) => {
    output.error(`could not start torchlint: ${String(error)}`);
  });
  return starting;
}

async function fixOnSave(event: vscode.TextDocumentWillSaveEvent): Promise<vscode.TextEdit[]> {
  const running = client;
  if (running === undefined || running.state !== State.Running) {
    return [];
  }
  const uri = running.code2ProtocolConverter.asUri(event.document.uri);
  const edits = await fixAllEdits((method, params) => running.sendRequest(method, params), uri);
  return running.protocol2CodeConverter.asTextEdits(edits) ?? [];
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("torchlint", { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("torchlint.restart", () => {
      reported.clear(); // asked for by hand: say again what is wrong, if it still is
      return restart();
    }),
    vscode.commands.registerCommand("torchlint.showOutput", () => output.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (RESTART_SETTINGS.some((name) => event.affectsConfiguration(name))) {
        void restart();
      } else if (RULE_SETTINGS.some((name) => event.affectsConfiguration(name)) && client?.state === State.Running) {
        const changed = changedSettings(ruleSettings());
        output.info(`settings: ${JSON.stringify(changed.settings.torchlint)}`);
        void client.sendNotification(DidChangeConfigurationNotification.type, changed);
      }
    }),
    vscode.workspace.onWillSaveTextDocument((event) => {
      if (event.document.languageId === "python" && config().get<boolean>("fixOnSave", false)) {
        event.waitUntil(fixOnSave(event));
      }
    }),
    { dispose: () => void stop() },
  );
  await watchSelectedInterpreter(context);
  await restart();
}

/** A new interpreter selected in the Python extension: run the server from it. */
async function watchSelectedInterpreter(context: vscode.ExtensionContext): Promise<void> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION) === undefined) {
    return;
  }
  try {
    const api = await PythonExtension.api();
    context.subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => {
      if (!launchSettings().path && !launchSettings().interpreter) {
        void restart();
      }
    }));
  } catch (error) {
    output.warn(`not following the Python extension's interpreter: ${String(error)}`);
  }
}

export function deactivate(): Promise<void> {
  return stop();
}
