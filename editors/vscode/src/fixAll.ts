// Fix-all on save: ask the server for its source.fixAll.torchlint action on the
// document being saved and return that action's edits for the document. Written
// against a bare request function, so the tests drive it with a plain LSP
// connection to a real `torchlint server`.
import { FIX_ALL_KIND } from "./settings";

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }
export interface TextEdit { range: Range; newText: string }
interface CodeAction {
  title: string;
  kind?: string;
  edit?: { changes?: Record<string, TextEdit[]>; documentChanges?: Array<{ textDocument: { uri: string }; edits: TextEdit[] }> };
  data?: unknown;
}

export type Send = (method: string, params: unknown) => Promise<unknown>;

/** The edits torchlint's fix-all makes to `uri` (none when it has nothing to fix). */
export async function fixAllEdits(send: Send, uri: string): Promise<TextEdit[]> {
  const start = { line: 0, character: 0 };
  const actions = (await send("textDocument/codeAction", {
    textDocument: { uri },
    range: { start, end: start },
    context: { diagnostics: [], only: [FIX_ALL_KIND] },
  })) as CodeAction[] | null;
  const action = (actions ?? []).find((candidate) => candidate.kind === FIX_ALL_KIND);
  if (action === undefined) {
    return [];
  }
  // VS Code resolves an action's edit lazily; the server computes it only then.
  const resolved = action.edit ? action : ((await send("codeAction/resolve", action)) as CodeAction);
  return editsFor(resolved, uri);
}

function editsFor(action: CodeAction, uri: string): TextEdit[] {
  const edit = action.edit;
  if (!edit) {
    return [];
  }
  if (edit.changes) {
    return edit.changes[uri] ?? [];
  }
  return (edit.documentChanges ?? []).filter((change) => change.textDocument.uri === uri).flatMap((change) => change.edits);
}
