#!/usr/bin/env bash
# The official A2A JavaScript SDK (@a2a-js/sdk, pinned in examples/typescript-agent/package.json and
# its package-lock.json) for the TypeScript example agent, which tests/interop_sdk.rs runs against
# `serve`.
#
#   bash infra/a2a-js.sh        # `npm ci --omit=dev` into examples/typescript-agent/node_modules
#
# Idempotent (infra/npm-ci.sh does the work: once per lock file). The development dependencies
# (TypeScript and the type packages, for `npm run check`) are not installed: the agent runs on tsx,
# which does not type-check. Needs Node.js 20 or later, npm and the npm registry. Exit 3, after
# saying why, when one is missing or `npm ci` fails: infra/test-all.sh then sets A2A_SKIP_NODE, so
# the TypeScript tests skip, and says so in its summary.
exec bash "$(dirname "$0")/npm-ci.sh" a2a-js examples/typescript-agent @a2a-js/sdk
