#!/usr/bin/env bash
# The packaged extension in a real VS Code (code-server, headless Chromium):
#   bash e2e/run.sh [python-with-torchlint]      (from editors/vscode; Linux, as root or with sudo for apt)
# Installs code-server 4.100.3 (VS Code 1.100.3, the last that runs on Node 20)
# and playwright-core into $E2E_HOME, packages the .vsix, runs e2e/code-server.mjs.
# Screenshots and results.json go to $E2E_OUT. Not in CI: the install compiles
# native modules for a minute or more.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-$(command -v python3)}"
home="${E2E_HOME:-$HOME/.cache/torchlint-vscode-e2e}"
CODE_SERVER_VERSION=4.100.3

# code-server's native modules: kerberos needs the GSS-API headers; chromium drives it.
if command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq libkrb5-dev ripgrep chromium > /dev/null
fi

if [ ! -x "$home/node_modules/.bin/code-server" ]; then
    mkdir -p "$home"
    # VS Code's @vscode/ripgrep fetches rg from GitHub's releases at install time; where
    # only the package registry is reachable, hand it the system's rg through the cache
    # folder it looks in first (named for its version and the release it wants).
    if command -v rg > /dev/null; then
        # 1.15.11: the @vscode/ripgrep that code-server 4.100.3's shrinkwrap pins (x86_64 Linux)
        cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
        mkdir -p "$cache"
        tar czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
    fi
    (cd "$home" && [ -f package.json ] || echo '{"private": true}' > package.json)
    # code-server's postinstall refuses root without unsafe-perm, and runs npx (needs yes).
    (cd "$home" && npm_config_unsafe_perm=true npm_config_yes=true \
        npm install --no-save "code-server@$CODE_SERVER_VERSION" playwright-core@1.64.1)
fi

npm run package
CODE_SERVER="$home/node_modules/.bin/code-server" PLAYWRIGHT_CORE="$home/node_modules/playwright-core" \
    TORCHLINT_PYTHON="$python" E2E_OUT="${E2E_OUT:-$PWD/e2e-out}" node e2e/code-server.mjs
