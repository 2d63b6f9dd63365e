#!/usr/bin/env bash
# The official A2A JavaScript SDK (@a2a-js/sdk, pinned in examples/typescript-agent/package.json
# and its package-lock.json) for the TypeScript example agent, which tests/interop_sdk.rs runs
# against `serve`.
#
#   bash infra/a2a-js.sh        # `npm ci --omit=dev` into examples/typescript-agent/node_modules
#
# Idempotent: node_modules installed from the current package-lock.json is left as it is (a stamp
# in node_modules holds the lock file's hash). The development dependencies (TypeScript and the
# type packages, for `npm run check`) are not installed: the agent runs on tsx, which does not
# type-check. Needs Node.js 20 or later, npm and the npm registry. Exit 3, after saying why, when
# one is missing or `npm ci` fails: infra/test-all.sh then sets A2A_SKIP_NODE, so the TypeScript
# tests skip, and says so in its summary.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/examples/typescript-agent"
STAMP="$DIR/node_modules/.a2a-js-installed"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "a2a-js: node and npm are needed (Node.js 20 or later; Debian: apt-get install nodejs npm)" >&2
    exit 3
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
    echo "a2a-js: Node.js $(node --version) is too old: @a2a-js/sdk needs 20 or later" >&2
    exit 3
fi

want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]]; then
    echo "a2a-js: npm ci --omit=dev in $DIR"
    if ! (cd "$DIR" && npm ci --omit=dev --no-audit --no-fund --loglevel=error); then
        echo "a2a-js: npm ci failed (is the npm registry reachable?)" >&2
        exit 3
    fi
    echo "$want" >"$STAMP"
fi
echo "a2a-js: ready in $DIR/node_modules (@a2a-js/sdk $(node -p "require('$DIR/node_modules/@a2a-js/sdk/package.json').version"))"
