#!/usr/bin/env bash
# torchlint in a real JupyterLab with jupyterlab-lsp, headless:
#   bash editors/jupyterlab/run.sh        (Linux; as root, apt installs chromium)
# Makes a virtualenv in $E2E_HOME with jupyterlab, jupyterlab-lsp and this checkout's
# torchlint[lsp], starts JupyterLab on a notebook whose third cell holds a TL402,
# and checks with Chromium (playwright-core) that the cell shows it. Not in CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
home="${E2E_HOME:-$HOME/.cache/torchlint-jupyterlab-e2e}"
out="${E2E_OUT:-$here/e2e-out}"
mkdir -p "$home"

if command -v apt-get > /dev/null && [ "$(id -u)" = 0 ] && ! command -v chromium > /dev/null; then
    apt-get install -y -qq chromium > /dev/null
fi
if [ ! -x "$home/venv/bin/jupyter-lab" ]; then
    python3 -m venv "$home/venv"
    "$home/venv/bin/pip" install -q jupyterlab jupyterlab-lsp
fi
"$home/venv/bin/pip" install -q "$repo[lsp]"
if [ ! -d "$home/node_modules/playwright-core" ]; then
    (cd "$home" && npm install --no-save playwright-core@1.64.1)
fi

notebooks="$(mktemp -d)"
"$home/venv/bin/python" - "$notebooks/analysis.ipynb" <<'PY'
import json, sys
def cell(kind, source):
    extra = {"outputs": [], "execution_count": None} if kind == "code" else {}
    return {"cell_type": kind, "metadata": {}, "source": source, **extra}
json.dump({"cells": [cell("code", "%matplotlib inline\nimport torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.randn(8, 4)"),
                     cell("markdown", "The output:"),
                     cell("code", "out = model(x)\nprint(out.numpy())")],
           "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                        "language_info": {"name": "python"}},
           "nbformat": 4, "nbformat_minor": 5}, open(sys.argv[1], "w"), indent=1)
PY
port="$("$home/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$home/venv/bin/jupyter-lab" --no-browser --allow-root --port "$port" --ip 127.0.0.1 --ServerApp.token= \
    --ServerApp.password= --ServerApp.root_dir="$notebooks" > "$notebooks/jupyterlab.log" 2>&1 &
lab=$!
trap 'kill "$lab"' EXIT
# JupyterLab is up when its API answers
for _ in $(seq 120); do
    curl -fs "http://127.0.0.1:$port/api" > /dev/null && break
    sleep 0.5
done
PLAYWRIGHT_CORE="$home/node_modules/playwright-core" LAB_URL="http://127.0.0.1:$port" E2E_OUT="$out" \
    node "$here/jupyterlab.mjs"
