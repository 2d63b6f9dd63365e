#!/usr/bin/env bash
# Installs one pinned Node.js package folder of this repository with `npm ci --omit=dev`, once per
# lock file: the shared step of infra/iam.sh (the local stack's IAM evaluator) and infra/a2a-js.sh
# (the TypeScript example agent's A2A SDK).
#
#   bash infra/npm-ci.sh NAME DIR PACKAGE
#
# NAME prefixes every line it prints; DIR is the folder (relative to the repository root) holding
# package.json and package-lock.json; PACKAGE is the dependency whose installed version the last
# line reports. Idempotent: node_modules installed from the current package-lock.json is left as it
# is (a stamp in node_modules holds the lock file's hash). Needs Node.js 20 or later, npm and the
# npm registry. Exit 3, after saying why, when one is missing or `npm ci` fails; exit 2 on a wrong
# call.
set -euo pipefail

if (($# != 3)); then
    echo "usage: bash infra/npm-ci.sh NAME DIR PACKAGE" >&2
    exit 2
fi
NAME="$1"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/$2"
PACKAGE="$3"
STAMP="$DIR/node_modules/.$NAME-installed"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "$NAME: node and npm are needed (Node.js 20 or later; Debian: apt-get install nodejs npm)" >&2
    exit 3
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
    echo "$NAME: Node.js $(node --version) is too old: $PACKAGE needs 20 or later" >&2
    exit 3
fi

want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]]; then
    echo "$NAME: npm ci --omit=dev in $DIR"
    if ! (cd "$DIR" && npm ci --omit=dev --no-audit --no-fund --loglevel=error); then
        echo "$NAME: npm ci failed (is the npm registry reachable?)" >&2
        exit 3
    fi
    echo "$want" >"$STAMP"
fi
echo "$NAME: ready in $DIR/node_modules ($PACKAGE $(node -p "require('$DIR/node_modules/$PACKAGE/package.json').version"))"
