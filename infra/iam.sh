#!/usr/bin/env bash
# The IAM evaluator of the local AWS stack (infra/iam/evaluate.mjs, over
# @cloud-copilot/iam-simulate pinned in infra/iam/package.json and its package-lock.json):
# infra/aws_local evaluates every call a function makes against its role in template.yaml with
# it (docs/howto/aws-local.md, "IAM on the local stack").
#
#   bash infra/iam.sh        # `npm ci --omit=dev` into infra/iam/node_modules
#
# Idempotent: node_modules installed from the current package-lock.json is left as it is (a stamp
# in node_modules holds the lock file's hash). Needs Node.js 20 or later, npm and the npm
# registry. Exit 3, after saying why, when one is missing or `npm ci` fails: the local stack then
# runs without IAM and says so (its `--iam` is off), and its tests record the skip of the IAM
# checks with that reason (A2A_SKIPPED_LOG; infra/skipped.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/infra/iam"
STAMP="$DIR/node_modules/.iam-installed"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "iam: node and npm are needed (Node.js 20 or later; Debian: apt-get install nodejs npm)" >&2
    exit 3
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
    echo "iam: Node.js $(node --version) is too old: @cloud-copilot/iam-simulate needs 20 or later" >&2
    exit 3
fi

want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]]; then
    echo "iam: npm ci --omit=dev in $DIR"
    if ! (cd "$DIR" && npm ci --omit=dev --no-audit --no-fund --loglevel=error); then
        echo "iam: npm ci failed (is the npm registry reachable?)" >&2
        exit 3
    fi
    echo "$want" >"$STAMP"
fi
echo "iam: ready in $DIR/node_modules (@cloud-copilot/iam-simulate $(node -p "require('$DIR/node_modules/@cloud-copilot/iam-simulate/package.json').version"))"
