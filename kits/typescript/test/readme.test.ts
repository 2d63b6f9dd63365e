// The README's quick start compiles under `tsc --strict` against the kit and the SDK: its lines,
// as written, in an executor with the names the README says the reader has (myCard, pushStore,
// ctx, artifact).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';

// build-test/test/readme.test.js -> the kit's folder.
const KIT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The lines of the first ```ts block under "## Quick start". */
function quickStart(): string[] {
  const readme = readFileSync(join(KIT, 'README.md'), 'utf8').split('\n');
  const from = readme.indexOf('## Quick start');
  assert.ok(from >= 0, 'README.md has a "Quick start" section');
  const open = readme.indexOf('```ts', from);
  const close = readme.indexOf('```', open + 1);
  assert.ok(open > from && close > open, 'a ```ts block in it');
  return readme.slice(open + 1, close);
}

it('the quick start is ten lines', () => {
  assert.equal(quickStart().length, 10);
});

it('the quick start type-checks under tsc --strict', () => {
  const lines = quickStart();
  const end = lines.findIndex((l) => l.includes("from '@a2a-watcher/kit';"));
  assert.ok(end >= 0, 'it imports @a2a-watcher/kit');
  const imports = lines.slice(0, end + 1).join('\n').replace("'@a2a-watcher/kit'", "'../../src/index.js'");
  const body = lines.slice(end + 1).join('\n');
  const source = `${imports}
import type { AgentCard, Artifact } from '@a2a-js/sdk';
import { DefaultPushNotificationSender, type InMemoryPushNotificationStore, type RequestContext } from '@a2a-js/sdk/server';
declare const myCard: AgentCard;
declare const pushStore: InMemoryPushNotificationStore;
declare const ctx: RequestContext;
declare let artifact: Artifact;
export async function execute(): Promise<unknown> {
${body}
return [card, sender, artifact];
}
`;
  const dir = join(KIT, 'build-test', 'readme');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'quickstart.ts');
  writeFileSync(file, source);
  const tsc = join(KIT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [
      tsc, '--strict', '--noEmit', '--skipLibCheck', '--target', 'ES2022', '--module', 'NodeNext',
      '--moduleResolution', 'NodeNext', '--types', 'node', file,
    ], { cwd: KIT, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    const out = e as { stdout?: string; stderr?: string };
    assert.fail(`the quick start does not compile:\n${out.stdout ?? ''}${out.stderr ?? ''}\n${source}`);
  }
});
