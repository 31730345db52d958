"""``torchlint server`` in a real editor: headless Neovim's built-in LSP client
attaches it to a Python buffer, waits for the TL301 finding, applies its fix
action and sees the finding clear. Neovim writes what it saw to a file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import STORED_LOSS

pytest.importorskip("pygls")

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install -y neovim)")

# Neovim 0.7's API: vim.lsp.start_client + buf_attach_client (vim.lsp.start is 0.8+).
DRIVE = r"""
local out = vim.env.TORCHLINT_NVIM_OUT
local seen = {}
local function say(record)
  table.insert(seen, vim.fn.json_encode(record))
  vim.fn.writefile(seen, out)
end
local function finish()
  vim.cmd("qall!")
end

local published = {}
local client_id = vim.lsp.start_client({
  cmd = vim.fn.json_decode(vim.env.TORCHLINT_NVIM_CMD),
  root_dir = vim.fn.expand("%:p:h"),
  get_language_id = function() return "python" end,
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      published = result.diagnostics
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
    end,
  },
})
vim.lsp.buf_attach_client(0, client_id)

if not vim.wait(120000, function() return #published > 0 end, 50) then
  say({ step = "diagnostics", error = "none published" })
  return finish()
end
local diagnostic = published[1]
say({ step = "diagnostics", codes = vim.tbl_map(function(d) return d.code end, published),
      shown = #vim.diagnostic.get(0) })

local params = {
  textDocument = { uri = vim.uri_from_bufnr(0) },
  range = diagnostic.range,
  context = { diagnostics = { diagnostic } },
}
local replies = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 120000) or {}
local actions = (replies[client_id] or {}).result or {}
local fix
for _, action in ipairs(actions) do
  if not vim.startswith(action.title, "Suppress") then fix = action end
end
say({ step = "actions", titles = vim.tbl_map(function(a) return a.title end, actions) })
if fix == nil then return finish() end
if fix.edit == nil then  -- Neovim resolves edits lazily
  local resolved = vim.lsp.buf_request_sync(0, "codeAction/resolve", fix, 120000) or {}
  fix = (resolved[client_id] or {}).result or fix
end
vim.lsp.util.apply_workspace_edit(fix.edit, "utf-16")

local cleared = vim.wait(120000, function() return #published == 0 end, 50)
say({ step = "after fix", cleared = cleared, shown = #vim.diagnostic.get(0),
      line = vim.api.nvim_buf_get_lines(0, 9, 10, false)[1] })
vim.lsp.stop_client(client_id)
finish()
"""


def test_neovim_shows_the_finding_applies_its_fix_and_sees_it_clear(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(STORED_LOSS.format(suffix=""))
    drive = tmp_path / "drive.lua"
    drive.write_text(DRIVE)
    out = tmp_path / "seen.jsonl"
    env = dict(os.environ, TORCHLINT_NVIM_OUT=str(out),
               TORCHLINT_NVIM_CMD=json.dumps([sys.executable, "-m", "torchlint", "server"]),
               XDG_CONFIG_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path))
    subprocess.run([NVIM, "--headless", "--clean", "-n", str(source), "-c", f"luafile {drive}"],
                   env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    seen = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    steps = {record["step"]: record for record in seen}
    assert steps["diagnostics"].get("codes") == ["TL301"], seen
    assert steps["diagnostics"]["shown"] == 1  # Neovim's own diagnostic list has it too
    assert "Suppress TL301 on this line (# noqa: TL301)" in steps["actions"]["titles"]
    after = steps["after fix"]
    assert after["cleared"] is True and after["shown"] == 0, seen
    assert after["line"] == "        losses.append(loss.detach())"
