// End to end: the kit's agent (agent.ts, on @a2a-js/sdk) against `a2a-watcher serve`, driven by
// the SDK's client, checked through the kit's WatcherClient. The agent raises through the kit and
// receives its lapse tasks through the kit. `A2A_WATCHER_BIN` names the a2a-watcher binary
// (tests/kits_typescript.rs sets it); without it the test is skipped, saying why.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';

import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, withA2AExtensions, ServiceParameters } from '@a2a-js/sdk/client';

import { EXPECTATIONS_URI, type ExpectationRecord, WatcherClient, WatcherError, watcherPushUrl } from '../src/index.js';
import { type RunningAgent, startAgent } from './agent.js';

const BIN = process.env.A2A_WATCHER_BIN;
const PATIENCE_MS = 30_000;
const PUSH_TOKEN = 'push-token-kit';
const SOURCE_TOKEN = 'src-token-kit';
const OPERATOR_TOKEN = 'ops-token-kit';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** An RFC 3339 instant `ms` from now, to the second. */
function inMs(ms: number): string {
  return new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

async function until<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not within ${PATIENCE_MS} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the kit against a2a-watcher serve', { skip: BIN ? false : 'A2A_WATCHER_BIN is not set (tests/kits_typescript.rs sets it)' }, () => {
  let dir: string;
  let watcher: ChildProcess;
  let log = '';
  let agent: RunningAgent;
  let base: string;
  let client: Client;
  let ops: WatcherClient;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    agent = await startAgent({ url: watcherPushUrl(base, 'kit'), token: PUSH_TOKEN });
    dir = mkdtempSync(join(tmpdir(), 'a2a-watcher-kit-ts-'));
    writeFileSync(join(dir, 'watcher.toml'), `listen = "127.0.0.1:${port}"
database = "watcher.db"
allow_private_endpoints = true
public_url = "${base}"

[[sources]]
id = "carrier-feed"
token = "${SOURCE_TOKEN}"

[[agents]]
id = "kit"
card = "${agent.url}"
push_token = "${PUSH_TOKEN}"

[[operators]]
id = "ops-desk"
token = "${OPERATOR_TOKEN}"
`);
    watcher = spawn(BIN!, ['serve', '--config', join(dir, 'watcher.toml')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RUST_LOG: process.env.A2A_TEST_SERVE_LOG ?? 'info,tower_http=warn' },
    });
    watcher.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const lines = createInterface({ input: watcher.stdout! });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not print "listening on" within ${PATIENCE_MS} ms:\n${log}`)), PATIENCE_MS);
      watcher.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${log}`)));
      watcher.on('error', (e) => reject(new Error(`cannot start ${BIN}: ${e.message}`)));
      lines.on('line', (line) => {
        if (line.startsWith('listening on ')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    client = await new ClientFactory().createFromUrl(agent.url);
    ops = new WatcherClient({ url: base, token: OPERATOR_TOKEN });
  });

  after(async () => {
    await agent?.close();
    watcher?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A subject's record, or `undefined` while the watcher has nothing on it (404). */
  async function subject(type: string, id: string) {
    try {
      return await ops.subject(type, id);
    } catch (e) {
      if (e instanceof WatcherError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** SendMessage through the SDK's client, the extension activated; the Task it answers. */
  async function send(words: string): Promise<Task> {
    const message: Message = {
      messageId: `m-${Date.now()}-${Math.random()}`, contextId: '', taskId: '', role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: words }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    };
    const answer = await client.sendMessage(
      { tenant: '', message, configuration: undefined, metadata: undefined },
      { serviceParameters: ServiceParameters.create(withA2AExtensions(EXPECTATIONS_URI)) },
    );
    assert.ok('id' in answer && 'status' in answer, `a Task, not ${JSON.stringify(answer)}`);
    return answer;
  }

  it('raises through the kit, receives both lapse tasks through the kit, and the watcher records what the agent did', async () => {
    const due = inMs(1_000);
    const booking = await send(`book shipment=PA-KIT-1 due=${due} grace=PT1S`);
    assert.equal(booking.status?.state, TaskState.TASK_STATE_COMPLETED);
    const asked = await send(`ask due=${due} grace=PT1S`);
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const manifestId = `exp-${booking.id}-manifest`;
    const answerId = `exp-${asked.id}-answer`;

    // The watcher recorded both (the agent pushed through the kit's push config).
    const raised = await until('both expectations recorded', async () => {
      const s = await subject('shipment', 'PA-KIT-1');
      return s && s.expectations.length > 0 ? s : undefined;
    });
    assert.equal(raised.expectations[0]?.expectationId, manifestId);
    assert.equal(raised.expectations[0]?.basis, 'observed');
    assert.equal(raised.expectations[0]?.raisedBy.taskId, booking.id);

    // Both lapse (§9.1 overdue) and the agent reads each lapse block through readLapse (§10.1).
    const lapses = await agent.waitForLapses(2, PATIENCE_MS).catch((e: Error) => {
      throw new Error(`${e.message}\n${log}`);
    });
    const m = lapses.find((l) => l.expectationId === manifestId);
    const q = lapses.find((l) => l.expectationId === answerId);
    assert.ok(m && q, JSON.stringify(lapses));
    assert.equal(m.kind, 'shipment.manifest');
    assert.deepEqual(m.subject, { type: 'shipment', id: 'PA-KIT-1' });
    assert.equal(m.expects, 'the airline manifest for PA-KIT-1');
    assert.deepEqual(m.originTaskIds, [booking.id]);
    assert.equal(m.contextId, booking.contextId);
    assert.equal(q.kind, 'question.answer');
    assert.deepEqual(q.subject, { type: 'task', id: asked.id });
    assert.deepEqual(q.originTaskIds, [asked.id]);
    for (const l of [m, q]) {
      assert.equal(l.lapse, 'overdue');
      assert.equal(l.dueAt.getTime(), new Date(due).getTime());
      assert.equal(l.projectedDueAt.getTime(), new Date(due).getTime());
      assert.ok(l.lapsedAt.getTime() >= new Date(due).getTime() + 1_000, `lapsed at ${l.lapsedAt.toISOString()}, due ${due} + PT1S`);
      assert.equal(l.lineage, 0);
      assert.ok(l.text.length > 0, 'the lapse in a person\'s words');
    }

    // The manifest's successor (§10.3): recorded with lineage 1, superseding the lapsed one.
    const shipment = await until('the successor recorded', async () => {
      const s = await subject('shipment', 'PA-KIT-1');
      return s?.expectations.length === 2 ? s : undefined;
    });
    const [first, next] = shipment.expectations as [ExpectationRecord, ExpectationRecord];
    assert.equal(next.expectationId, `${manifestId}-2`);
    assert.equal(next.supersedes, manifestId);
    assert.equal(next.lineage, 1);
    assert.equal(next.status, 'open');
    assert.equal(first.supersededBy, `${manifestId}-2`);
    assert.equal(first.lapses[0]?.lapse, 'overdue');

    // The unanswered question: its task canceled, so the watcher withdrew it (§8.1).
    const question = await until('the question withdrawn', async () => {
      const r = (await subject('task', asked.id))?.expectations[0];
      return r?.withdrawal ? r : undefined;
    });
    assert.equal(question.status, 'withdrawn');
    assert.match(question.withdrawal?.reason ?? '', /TASK_STATE_CANCELED/);

    // The lapse list: both lapse tasks sent, with their deterministic messageIds (§10.1).
    const views = await until('both lapse tasks sent', async () => {
      const page = await ops.lapses({ agent: 'kit' });
      return page.lapses.length === 2 && page.lapses.every((v) => v.delivery === 'sent') ? page.lapses : undefined;
    });
    assert.deepEqual(
      views.map((v) => v.messageId).sort(),
      [`lapse:${answerId}:overdue:${q.block.dueAt}`, `lapse:${manifestId}:overdue:${m.block.dueAt}`].sort(),
    );
    const all: string[] = [];
    for await (const v of ops.allLapses({ agent: 'kit', limit: 1 })) all.push(v.messageId);
    assert.deepEqual(all.sort(), views.map((v) => v.messageId).sort());

    // Retry: nothing failed, and an unknown messageId is skipped, saying why.
    const retry = await ops.retry('kit', ['lapse:nope']);
    assert.deepEqual(retry, { requeued: 0, messageIds: [], skipped: [{ messageId: 'lapse:nope', reason: 'not found' }], more: false });
  });

  it('reports a fact that satisfies an expectation, and refuses a wrong token with problem+json', async () => {
    const booking = await send(`book shipment=PA-KIT-2 due=${inMs(3_600_000)} grace=PT1H`);
    const id = `exp-${booking.id}-manifest`;
    await until('the booking recorded', async () => {
      const s = await subject('shipment', 'PA-KIT-2');
      return s && s.expectations.length > 0 ? s : undefined;
    });
    const feed = new WatcherClient({ url: base, token: SOURCE_TOKEN });
    const out = await feed.reportFacts([{ factKey: 'shipment.manifest.received:PA-KIT-2', observedAt: new Date(), subject: { type: 'shipment', id: 'PA-KIT-2' } }]);
    assert.deepEqual(out.results, [{ factKey: 'shipment.manifest.received:PA-KIT-2', satisfied: [id] }]);
    const s = await ops.subject('shipment', 'PA-KIT-2');
    assert.equal(s.expectations[0]?.status, 'satisfied');
    assert.equal(s.expectations[0]?.satisfaction?.source, 'carrier-feed');
    assert.equal(s.facts[0]?.factKey, 'shipment.manifest.received:PA-KIT-2');

    const stranger = new WatcherClient({ url: base, token: 'not-a-token' });
    await assert.rejects(stranger.lapses(), (e: unknown) => {
      assert.ok(e instanceof WatcherError, String(e));
      assert.equal(e.status, 401);
      assert.ok(e.problem, 'problem+json');
      return true;
    });
  });
});
