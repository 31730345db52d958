// A plain Node LSP client for the tests: it starts `torchlint server` exactly as the
// extension does (launch.ts's choice), initializes it with the extension's settings
// and VS Code's relevant client capabilities, and records what the server publishes.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import * as path from "node:path";
import {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-languageserver-protocol/node";
import type { ProtocolConnection } from "vscode-languageserver-protocol/node";

import { chooseLaunch } from "../src/launch";
import type { Launch } from "../src/launch";
import type { ServerSettings } from "../src/settings";

/** The Python the tests run the server with: TORCHLINT_PYTHON, else what PATH gives (as the extension's fallback). */
export function testLaunch(): Launch {
  return chooseLaunch({ path: "", interpreter: process.env.TORCHLINT_PYTHON ?? "" });
}

export const REPO = path.resolve(__dirname, "..", "..", "..", "..");

interface Diagnostic {
  code: string;
  source: string;
  message: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  data?: unknown;
}
interface Published { uri: string; version?: number; diagnostics: Diagnostic[] }
interface ShownMessage { type: number; message: string }

export class Session {
  readonly published: Published[] = [];
  readonly messages: ShownMessage[] = [];
  private waiters: Array<() => void> = [];

  private constructor(readonly connection: ProtocolConnection, private readonly child: ChildProcess) {
    connection.onNotification("textDocument/publishDiagnostics", (params: Published) => {
      this.published.push(params);
      this.wake();
    });
    connection.onNotification("window/showMessage", (params: ShownMessage) => {
      this.messages.push(params);
      this.wake();
    });
    connection.onNotification("window/logMessage", () => undefined);
    connection.onRequest("client/registerCapability", () => null);
    connection.listen();
  }

  static async start(settings: ServerSettings, launch: Launch = testLaunch()): Promise<Session> {
    const child = spawn(launch.command, launch.args, { stdio: ["pipe", "pipe", "inherit"] });
    const connection = createProtocolConnection(
      new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    const session = new Session(connection, child);
    await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      initializationOptions: settings,
      capabilities: {
        textDocument: {
          publishDiagnostics: { versionSupport: true },
          hover: { contentFormat: ["markdown", "plaintext"] },
          // as VS Code: an action's edit is computed when the user picks it
          codeAction: { resolveSupport: { properties: ["edit"] }, dataSupport: true },
        },
        notebookDocument: { synchronization: { dynamicRegistration: true } },
      },
    });
    await connection.sendNotification("initialized", {});
    return session;
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    waiting.forEach((resolve) => resolve());
  }

  /** Resolves once `found` returns something, checked on each notification; rejects after `ms`. */
  async until<T>(found: () => T | undefined, what: string, ms = 60000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = found();
      if (value !== undefined) {
        return value;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The diagnostics published for `uri` after the `after`-th publish (its version, if given). */
  diagnosticsFor(uri: string, version?: number, after = 0): Promise<Diagnostic[]> {
    return this.until(() => {
      const found = this.published.slice(after).filter((p) => p.uri === uri && (version === undefined || p.version === version));
      return found.length ? found[found.length - 1].diagnostics : undefined;
    }, `diagnostics for ${uri}`);
  }

  open(uri: string, text: string, version = 1): void {
    void this.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "python", version, text },
    });
  }

  async close(): Promise<void> {
    await this.connection.sendRequest("shutdown");
    await this.connection.sendNotification("exit");
    await new Promise<void>((resolve) => {
      if (this.child.exitCode !== null) {
        resolve();
      } else {
        this.child.once("exit", () => resolve());
      }
    });
    this.connection.dispose();
  }
}

// A training loop that keeps every loss's graph: TL301 on line 10 (0-based 9), whose fix is unsafe.
export const STORED_LOSS = [
  "import torch",
  "",
  "def train(model, loader, optimizer, criterion):",
  "    losses = []",
  "    for x, y in loader:",
  "        optimizer.zero_grad()",
  "        loss = criterion(model(x), y)",
  "        loss.backward()",
  "        optimizer.step()",
  "        losses.append(loss)",
  "    return losses",
  "",
].join("\n");

// .numpy() on a model output: TL402 on line 6, with a safe fix.
export const NUMPY_ON_OUTPUT = [
  "import torch",
  "",
  "model = torch.nn.Linear(4, 2)",
  "x = torch.randn(8, 4)",
  "out = model(x)",
  "print(out.numpy())",
  "",
].join("\n");
