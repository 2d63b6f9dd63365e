#!/usr/bin/env bash
# The TypeScript agent author's kit (kits/typescript, `@a2a-watcher/kit`): installs its pinned
# development dependencies, checks that src/models.ts follows docs/schemas, type-checks it with
# `tsc --strict`, runs its unit tests (`node --test`), and proves the package: `npm pack --offline`,
# then `npm install --offline` of the tarball into a new folder with an empty npm cache, where a
# consumer imports it with node and type-checks against its shipped types. The end-to-end test
# against `serve` is tests/kits_typescript.rs (it needs the node_modules this installs).
#
#   bash infra/kit-typescript.sh
#
# `npm ci` runs once per package-lock.json (a stamp in node_modules holds the lock file's hash).
# Needs Node.js 20 or later, npm and, for the first `npm ci`, the npm registry. Exit 3, after
# saying why, when one is missing or `npm ci` fails (infra/test-all.sh then sets A2A_SKIP_KIT_TS,
# so tests/kits_typescript.rs skips, and says so in its summary); exit 1 when a check fails.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KIT="$ROOT/kits/typescript"
STAMP="$KIT/node_modules/.kit-typescript-installed"
say() { echo "kit-typescript: $*"; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are needed (Node.js 20 or later; Debian: apt-get install nodejs npm)" >&2
    exit 3
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
    say "Node.js $(node --version) is too old: the kit needs 20 or later" >&2
    exit 3
fi

cd "$KIT"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]]; then
    say "npm ci in kits/typescript (TypeScript, @a2a-js/sdk, express: the development dependencies)"
    if ! npm ci --no-audit --no-fund --loglevel=error; then
        say "npm ci failed (is the npm registry reachable?)" >&2
        exit 3
    fi
    echo "$want" >"$STAMP"
fi

say "src/models.ts against docs/schemas and docs/openapi.json"
node scripts/generate.mjs --check
say "tsc --strict (src, unit tests, end-to-end test) and the unit tests"
npm test --silent

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
say "npm pack --offline (prepack: models check, build, LICENSE)"
tgz="$(npm pack --offline --silent --pack-destination "$tmp" | tail -n1)"
tar -tzf "$tmp/$tgz" | sort >"$tmp/contents"
for f in package/package.json package/README.md package/LICENSE package/dist/index.js package/dist/index.d.ts package/dist/models.d.ts; do
    grep -qx "$f" "$tmp/contents" || { say "$tgz lacks $f" >&2; exit 1; }
done

say "npm install --offline $tgz into a new folder (empty npm cache: nothing but the tarball)"
mkdir "$tmp/consumer"
cd "$tmp/consumer"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >package.json
# The peer (@a2a-js/sdk) is not installed from the registry: an author has it already. The kit's
# runtime imports nothing from it, which the import below shows.
npm install --offline --legacy-peer-deps --cache "$tmp/empty-cache" --no-audit --no-fund --loglevel=error "$tmp/$tgz"
node --input-type=module -e "
import * as kit from '@a2a-watcher/kit';
const a = kit.raiseExpectations({ metadata: undefined, extensions: [] }, [{
  expectationId: 'e-1', kind: 'k', subject: { type: 's', id: '1' }, expects: 'x',
  satisfiedBy: { factKey: 'f' }, dueAt: '2026-09-10T20:15:00Z', basis: 'observed' }]);
if (kit.EXPECTATIONS_URI !== 'https://rsaxb.com/a2a/expectations/v1' || a.extensions[0] !== kit.EXPECTATIONS_URI
    || a.metadata[kit.EXPECTATIONS_URI].expectations[0].expectationId !== 'e-1') process.exit(1);
"
# Type-check a consumer against the shipped types, with the author's own @a2a-js/sdk beside it.
ln -s "$KIT/node_modules/@a2a-js" node_modules/@a2a-js
cat >consumer.ts <<'EOF'
import type { Artifact } from '@a2a-js/sdk';
import { type Expectation, type LapseTask, raiseExpectations, readLapse, WatcherClient } from '@a2a-watcher/kit';
const artifact: Artifact = { artifactId: 'a', name: '', description: '', parts: [], metadata: undefined, extensions: [] };
const raised: Artifact = raiseExpectations(artifact, [{ expectationId: 'e', kind: 'k', subject: { type: 's', id: '1' },
  expects: 'x', satisfiedBy: { factKey: 'f' }, dueAt: new Date(), basis: 'observed' }]);
const e: Expectation | undefined = undefined;
const l: LapseTask | undefined = undefined;
export { raised, e, l, readLapse, WatcherClient };
EOF
echo '{ "compilerOptions": { "strict": true, "module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022", "noEmit": true, "skipLibCheck": true, "types": [] }, "files": ["consumer.ts"] }' >tsconfig.json
node "$KIT/node_modules/typescript/bin/tsc" -p tsconfig.json
say "packed, installed offline, imported and type-checked: $tgz"
