/**
 * A small client for the watcher's HTTP API (docs/openapi.json) over the global `fetch`:
 * report facts (a source's token), read lapse tasks and a subject's record, and re-queue failed
 * lapse tasks (an operator's token). Every error answer is problem+json (RFC 9457), thrown as a
 * {@link WatcherError}.
 */

import { checkFacts, type Instant, KitError } from './expectations.js';
import type {
  DeliveryState,
  ExpectationRecord,
  Fact,
  FactsOutcome,
  LapsesPage,
  LapseView,
  Problem,
  RejectionsPage,
  RetryAnswer,
  RetryRequest,
  SubjectView,
} from './models.js';

/** A non-2xx answer: `status`, and the problem+json body when there was one. */
export class WatcherError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
    readonly url: string,
  ) {
    super(
      `${url}: ${status}${problem ? ` ${problem.title}: ${problem.detail}` : ''}`,
    );
    this.name = 'WatcherError';
  }
}

/** How to reach the watcher. */
export interface WatcherClientOptions {
  /** The watcher's base URL (`http://127.0.0.1:8080`, its `public_url`). */
  url: string;
  /** A bearer token: a `[[sources]]` token for facts, an `[[operators]]` token for the rest. */
  token: string;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
  /** Give up on one request after this many milliseconds; default 30,000. */
  timeoutMs?: number;
}

/** `GET /v1/lapses` filters. */
export interface LapsesQuery {
  /** Only this agent's lapse tasks. */
  agent?: string;
  /** Only lapse tasks in this delivery state. */
  delivery?: DeliveryState;
  /** Only lapse tasks lapsed at or after this instant. */
  since?: Instant;
  /** Entries per page, 1 to 1,000 (the watcher's default: 100). */
  limit?: number;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

/** `GET /v1/subjects/{type}/{id}`, its expectations typed as the records they are. */
export type SubjectRecord = Omit<SubjectView, 'expectations'> & { expectations: ExpectationRecord[] };

/** The watcher's HTTP API. */
export class WatcherClient {
  private readonly base: string;
  private readonly token: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;

  /** @throws KitError when `url` is not an http(s) URL or `token` is empty. */
  constructor(options: WatcherClientOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new KitError('url', `${JSON.stringify(options.url)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KitError('url', 'must be an http(s) URL');
    if (typeof options.token !== 'string' || options.token === '') throw new KitError('token', 'must not be empty');
    this.base = url.href.replace(/\/+$/, '');
    this.token = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const url = `${this.base}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    const init: RequestInit = { method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const answer = await this.fetch(url, init);
    const text = await answer.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!answer.ok) {
      const p = json as Partial<Problem> | undefined;
      const problem =
        p && typeof p.title === 'string' && typeof p.detail === 'string'
          ? ({ ...p, status: answer.status } as Problem)
          : undefined;
      throw new WatcherError(answer.status, problem, `${method} ${url}`);
    }
    if (json === undefined) {
      throw new WatcherError(answer.status, { title: 'not JSON', status: answer.status, detail: text.slice(0, 200) }, `${method} ${url}`);
    }
    return json as T;
  }

  /**
   * `POST /v1/facts` (a source's token): reports facts, all or nothing. The watcher takes the
   * source from the token (§13.5). `observedAt` may be a `Date`.
   *
   * @returns which expectations each fact satisfied.
   * @throws KitError on a malformed fact (nothing is sent); WatcherError on a refusal.
   */
  async reportFacts(facts: readonly (Omit<Fact, 'observedAt'> & { observedAt: Instant })[]): Promise<FactsOutcome> {
    return this.call<FactsOutcome>('POST', '/v1/facts', { facts: checkFacts(facts) });
  }

  /** `GET /v1/lapses` (an operator's token): one page of lapse tasks, in lapse order. */
  async lapses(query: LapsesQuery = {}): Promise<LapsesPage> {
    const q = new URLSearchParams();
    if (query.agent !== undefined) q.set('agent', query.agent);
    if (query.delivery !== undefined) q.set('delivery', query.delivery);
    if (query.since !== undefined) q.set('since', query.since instanceof Date ? query.since.toISOString() : query.since);
    if (query.limit !== undefined) q.set('limit', String(query.limit));
    if (query.cursor !== undefined) q.set('cursor', query.cursor);
    const qs = q.toString();
    return this.call<LapsesPage>('GET', `/v1/lapses${qs ? `?${qs}` : ''}`);
  }

  /** Every lapse task matching `query`, page after page. */
  async *allLapses(query: Omit<LapsesQuery, 'cursor'> = {}): AsyncGenerator<LapseView> {
    let cursor: string | undefined;
    do {
      const page = await this.lapses(cursor === undefined ? query : { ...query, cursor });
      yield* page.lapses;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** `GET /v1/subjects/{type}/{id}` (an operator's token): its expectations and facts. */
  async subject(type: string, id: string): Promise<SubjectRecord> {
    return this.call<SubjectRecord>('GET', `/v1/subjects/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
  }

  /**
   * `POST /v1/lapses/retry` (an operator's token): puts failed lapse tasks of `agent` back in
   * the queue: those of `messageIds`, or every failed one (`more` says when to call again).
   */
  async retry(agent: string, messageIds?: readonly string[]): Promise<RetryAnswer> {
    const body: RetryRequest = { agent };
    if (messageIds !== undefined) body.messageIds = [...messageIds];
    return this.call<RetryAnswer>('POST', '/v1/lapses/retry', body);
  }

  /** `GET /v1/agents/{agentId}/rejections` (the agent's push token): what it refused, and why. */
  async rejections(agentId: string, query: { limit?: number; cursor?: string } = {}): Promise<RejectionsPage> {
    const q = new URLSearchParams();
    if (query.limit !== undefined) q.set('limit', String(query.limit));
    if (query.cursor !== undefined) q.set('cursor', query.cursor);
    const qs = q.toString();
    return this.call<RejectionsPage>('GET', `/v1/agents/${encodeURIComponent(agentId)}/rejections${qs ? `?${qs}` : ''}`);
  }
}
