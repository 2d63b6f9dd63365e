// The HTTP client against a stand-in server on 127.0.0.1: the routes, headers and bodies
// docs/openapi.json gives, and problem+json (RFC 9457) answers as WatcherError.

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';

import { InMemoryPushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';

import {
  KitError,
  PUSH_TOKEN_HEADER,
  registerWatcherPush,
  WATCHER_PUSH_SENDER_OPTIONS,
  WatcherClient,
  WatcherError,
  watcherPushUrl,
} from '../src/index.js';

interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  type: string | undefined;
  body: unknown;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
/** What the stand-in answers next: status and body. */
let next: { status: number; type?: string; body: string } = { status: 200, body: '{}' };
/** Answers taken, one per request, before `next`. */
const queue: (typeof next)[] = [];

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

before(async () => {
  server = createServer(async (req, res) => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      auth: req.headers.authorization,
      type: req.headers['content-type'],
      body: await body(req),
    });
    const answer = queue.shift() ?? next;
    res.writeHead(answer.status, { 'content-type': answer.type ?? 'application/json' });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function last(): Seen {
  const s = seen.at(-1);
  assert.ok(s, 'a request reached the server');
  return s;
}

describe('WatcherClient', () => {
  it('reports facts as { facts: [...] } with the source token (POST /v1/facts)', async () => {
    next = { status: 200, body: JSON.stringify({ results: [{ factKey: 'k:1', satisfied: ['exp-1'] }] }) };
    const c = new WatcherClient({ url: base, token: 'src-token-1' });
    const out = await c.reportFacts([{ factKey: 'k:1', observedAt: new Date('2026-09-11T02:41:00Z'), subject: { type: 'shipment', id: 'PA-1' } }]);
    assert.deepEqual(out.results, [{ factKey: 'k:1', satisfied: ['exp-1'] }]);
    assert.deepEqual(last(), {
      method: 'POST',
      url: '/v1/facts',
      auth: 'Bearer src-token-1',
      type: 'application/json',
      body: { facts: [{ factKey: 'k:1', observedAt: '2026-09-11T02:41:00.000Z', subject: { type: 'shipment', id: 'PA-1' } }] },
    });
  });

  it('sends nothing for a malformed fact', async () => {
    const before = seen.length;
    const c = new WatcherClient({ url: base, token: 't' });
    await assert.rejects(c.reportFacts([{ factKey: '', observedAt: '2026-09-11T02:41:00Z' }]), KitError);
    assert.equal(seen.length, before);
  });

  it('reads lapses with its filters, and follows nextCursor', async () => {
    const c = new WatcherClient({ url: base, token: 'ops-token-1' });
    const view = { messageId: 'lapse:e:overdue:2026-09-10T20:15:00Z', expectationId: 'e', lapse: 'overdue', lapsedAt: '2026-09-10T20:15:01Z', agent: 'a', delivery: 'failed', attempts: 3 };
    next = { status: 200, body: JSON.stringify({ lapses: [view], nextCursor: null }) };
    const page = await c.lapses({ agent: 'a b', delivery: 'failed', since: new Date('2026-09-10T00:00:00Z'), limit: 10 });
    assert.equal(page.lapses[0]?.delivery, 'failed');
    assert.equal(last().url, '/v1/lapses?agent=a+b&delivery=failed&since=2026-09-10T00%3A00%3A00.000Z&limit=10');
    assert.equal(last().auth, 'Bearer ops-token-1');

    queue.push(
      { status: 200, body: JSON.stringify({ lapses: [view], nextCursor: 'c2' }) },
      { status: 200, body: JSON.stringify({ lapses: [{ ...view, expectationId: 'f' }], nextCursor: null }) },
    );
    const from = seen.length;
    const ids: string[] = [];
    for await (const l of c.allLapses({ agent: 'a' })) ids.push(l.expectationId);
    assert.deepEqual(ids, ['e', 'f']);
    assert.deepEqual(seen.slice(from).map((s) => s.url), ['/v1/lapses?agent=a', '/v1/lapses?agent=a&cursor=c2']);
  });
});

describe('WatcherClient (routes with bodies and path segments)', () => {
  it('reads a subject with its path segments percent-encoded', async () => {
    next = { status: 200, body: JSON.stringify({ subject: { type: 'task', id: 'a/b c' }, expectations: [], facts: [] }) };
    const c = new WatcherClient({ url: base, token: 'ops' });
    const s = await c.subject('task', 'a/b c');
    assert.deepEqual(s.subject, { type: 'task', id: 'a/b c' });
    assert.equal(last().url, '/v1/subjects/task/a%2Fb%20c');
  });

  it('re-queues failed lapse tasks (POST /v1/lapses/retry)', async () => {
    next = { status: 200, body: JSON.stringify({ requeued: 1, messageIds: ['m1'], skipped: [{ messageId: 'm2', reason: 'not found' }], more: false }) };
    const c = new WatcherClient({ url: base, token: 'ops' });
    const r = await c.retry('typescript', ['m1', 'm2']);
    assert.equal(r.requeued, 1);
    assert.deepEqual(r.skipped, [{ messageId: 'm2', reason: 'not found' }]);
    assert.deepEqual(last().body, { agent: 'typescript', messageIds: ['m1', 'm2'] });
    await c.retry('typescript');
    assert.deepEqual(last().body, { agent: 'typescript' });
  });

  it('throws a WatcherError carrying the problem+json', async () => {
    next = {
      status: 401,
      type: 'application/problem+json',
      body: JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'no such operator token' }),
    };
    const c = new WatcherClient({ url: base, token: 'wrong' });
    await assert.rejects(c.lapses(), (e: unknown) => {
      assert.ok(e instanceof WatcherError);
      assert.equal(e.status, 401);
      assert.equal(e.problem?.detail, 'no such operator token');
      assert.match(e.message, /401 Unauthorized: no such operator token/);
      return true;
    });
    next = { status: 502, type: 'text/html', body: '<html>bad gateway</html>' };
    await assert.rejects(c.lapses(), (e: unknown) => e instanceof WatcherError && e.status === 502 && e.problem === undefined);
  });

  it('refuses a base that is not an http(s) URL, and an empty token', () => {
    assert.throws(() => new WatcherClient({ url: 'ftp://x', token: 't' }), KitError);
    assert.throws(() => new WatcherClient({ url: 'nope', token: 't' }), KitError);
    assert.throws(() => new WatcherClient({ url: base, token: '' }), KitError);
  });
});

describe('push to the watcher', () => {
  it('builds the push route and the header the watcher reads the token from', () => {
    assert.equal(watcherPushUrl('http://127.0.0.1:8080/', 'typescript'), 'http://127.0.0.1:8080/v1/agents/typescript/push');
    assert.equal(watcherPushUrl('https://w.example/base', 'a b'), 'https://w.example/base/v1/agents/a%20b/push');
    assert.equal(PUSH_TOKEN_HEADER, 'X-A2A-Notification-Token');
    assert.deepEqual(WATCHER_PUSH_SENDER_OPTIONS, { tokenHeaderName: 'X-A2A-Notification-Token' });
    assert.throws(() => watcherPushUrl('mailto:x', 'a'), KitError);
  });

  it('stores one push config beside the caller\'s, and none when the task already pushes there', async () => {
    const store = new InMemoryPushNotificationStore();
    const ctx = new ServerCallContext();
    const url = 'http://127.0.0.1:8080/v1/agents/typescript/push';
    await store.save('t1', ctx, { tenant: '', id: 'client', taskId: 't1', url: 'http://client/hook', token: 'c', authentication: undefined });
    assert.equal(await registerWatcherPush(store, ctx, 't1', { url, token: 'push-token' }), true);
    assert.equal(await registerWatcherPush(store, ctx, 't1', { url, token: 'push-token' }), false);
    const configs = await store.load('t1', ctx);
    assert.deepEqual(configs.map((c) => [c.id, c.url, c.token]), [
      ['client', 'http://client/hook', 'c'],
      ['watcher', url, 'push-token'],
    ]);
    await assert.rejects(registerWatcherPush(store, ctx, 't2', { url, token: '' }), KitError);
  });
});
