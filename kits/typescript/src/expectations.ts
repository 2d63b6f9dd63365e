/**
 * The Expectations extension (https://rsaxb.com/a2a/expectations/v1, specified in
 * docs/specs/expectations-v1.md) over the types of `@a2a-js/sdk`: declare it on an AgentCard
 * (§6), see whether a caller activated it (§7), raise expectations on an Artifact or a status
 * Message (§8, §11), withdraw them (§8.1), carry facts (§9.2), and read the lapse task the watcher
 * sends (§10.1). Every function returns a new object and leaves its argument as it was; bad input
 * throws a {@link KitError} naming the field and the rule.
 */

import type { AgentCard, Artifact, Message, Task } from '@a2a-js/sdk';

import type { Expectation, ExpectationKind, ExpectationsParams, Fact, Lapse, LapseKind, Subject } from './models.js';

/** The extension's URI: its key in `metadata`, its entry in `extensions` and `A2A-Extensions`. */
export const EXPECTATIONS_URI = 'https://rsaxb.com/a2a/expectations/v1';

/** Where due times come from (§6.2, §13.3). */
export type Basis = 'observed' | 'contract' | 'declared';

const BASES: readonly string[] = ['observed', 'contract', 'declared'];
const LAPSE_KINDS: readonly string[] = ['overdue', 'skipped', 'stalled'];
/** RFC 3339 with an offset, as docs/schemas/Expectation.json has it for `dueAt`. */
const INSTANT = /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$/;
/** An ISO 8601 duration, as docs/schemas/Expectation.json has it for `grace`. */
const DURATION =
  /^P(?:[0-9]+(?:[.,][0-9]{1,9})?W|(?=[0-9]|T[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?H)?(?:[0-9]+(?:[.,][0-9]{1,9})?M)?(?:[0-9]+(?:[.,][0-9]{1,9})?S)?)?)$/;
/** Non-blank, no control characters (the schemas' pattern for ids and fact keys). */
const ID = /^[^\u0000-\u001f\u007f]*\S[^\u0000-\u001f\u007f]*$/;

/** Bad input to a kit function: `field` is where (`expectations[0].dueAt`), `message` says why. */
export class KitError extends Error {
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(`${field}: ${reason}`);
    this.name = 'KitError';
  }
}

/** An instant: a `Date` (written in UTC) or RFC 3339 text with an offset. */
export type Instant = Date | string;

/**
 * An expectation as an agent writes it (§8): {@link Expectation} with `basis` one of the three
 * values and `dueAt`/`horizon` also as `Date`.
 */
export type ExpectationInput = Omit<Expectation, 'basis' | 'dueAt' | 'horizon'> & {
  basis: Basis;
  dueAt: Instant;
  horizon?: Instant | null;
};

/** One kind on the card (§6.2), `basis` one of the three values. */
export type ExpectationKindInput = Omit<ExpectationKind, 'basis'> & { basis: Basis };

/** The declaration's params (§6.1), kinds as {@link ExpectationKindInput}. */
export type ExpectationsParamsInput = Omit<ExpectationsParams, 'kinds'> & { kinds: ExpectationKindInput[] };

/** What the extension carries under its URI in an Artifact's or a Message's `metadata`. */
export interface ExpectationsMetadata {
  /** Raised expectations (§8). */
  expectations?: Expectation[];
  /** Expectations withdrawn by the agent (§8.1). */
  withdraw?: string[];
  /** Why they were withdrawn. */
  reason?: string;
  /** Facts the agent or a client reports in band (§9.2). */
  facts?: Fact[];
  /** The lapse block of a lapse task (§10.1). */
  lapse?: Lapse;
}

/** An Artifact or a Message: what can carry the extension's metadata. */
export type Carrier = Pick<Artifact | Message, 'metadata' | 'extensions'>;

function text(v: unknown, field: string, pattern?: RegExp, what?: string): string {
  if (typeof v !== 'string') throw new KitError(field, `must be text, got ${v === undefined ? 'nothing' : typeof v}`);
  if (pattern && !pattern.test(v)) throw new KitError(field, `${JSON.stringify(v)} is not ${what}`);
  if (!pattern && v.trim() === '') throw new KitError(field, 'must not be blank');
  return v;
}

function instant(v: unknown, field: string): string {
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) throw new KitError(field, 'is an invalid Date');
    return v.toISOString();
  }
  return text(v, field, INSTANT, 'an RFC 3339 instant with an offset (2026-09-10T20:15:00Z)');
}

function subject(v: unknown, field: string): Subject {
  if (typeof v !== 'object' || v === null) throw new KitError(field, 'must be { type, id }');
  const s = v as Record<string, unknown>;
  return { type: text(s.type, `${field}.type`), id: text(s.id, `${field}.id`) };
}

const ID_RULE = 'non-blank text without control characters';

/**
 * One expectation checked against §8 and written in its wire form (instants as RFC 3339 text,
 * absent members left out).
 *
 * @throws KitError naming the field: a required member missing or blank, an id with control
 *   characters, `dueAt`/`horizon` not an instant, `grace`/`anchor.offset` not an ISO 8601
 *   duration, `basis` not `observed`, `contract` or `declared`.
 */
export function expectation(e: ExpectationInput, field = 'expectation'): Expectation {
  if (typeof e !== 'object' || e === null) throw new KitError(field, 'must be an object');
  const out: Expectation = {
    expectationId: text(e.expectationId, `${field}.expectationId`, ID, ID_RULE),
    kind: text(e.kind, `${field}.kind`),
    subject: subject(e.subject, `${field}.subject`),
    expects: text(e.expects, `${field}.expects`),
    satisfiedBy: { factKey: text(e.satisfiedBy?.factKey, `${field}.satisfiedBy.factKey`, ID, ID_RULE) },
    dueAt: instant(e.dueAt, `${field}.dueAt`),
    basis: text(e.basis, `${field}.basis`),
  };
  if (!BASES.includes(out.basis)) {
    throw new KitError(`${field}.basis`, `${JSON.stringify(out.basis)} is not observed, contract or declared`);
  }
  if (e.grace != null) out.grace = text(e.grace, `${field}.grace`, DURATION, 'an ISO 8601 duration (PT2H)');
  if (e.anchor != null) {
    out.anchor = {
      expectationId: text(e.anchor.expectationId, `${field}.anchor.expectationId`, ID, ID_RULE),
      offset: text(e.anchor.offset, `${field}.anchor.offset`, DURATION, 'an ISO 8601 duration (PT1H45M)'),
    };
  }
  if (e.after != null) out.after = e.after.map((id, i) => text(id, `${field}.after[${i}]`, ID, ID_RULE));
  if (e.horizon != null) out.horizon = instant(e.horizon, `${field}.horizon`);
  if (e.supersedes != null) out.supersedes = text(e.supersedes, `${field}.supersedes`, ID, ID_RULE);
  return out;
}

/** `carrier`'s metadata under the URI, merged with `add`, and the URI in its `extensions`. */
function carry<T extends Carrier>(carrier: T, add: (block: ExpectationsMetadata) => ExpectationsMetadata): T {
  const metadata = { ...(carrier.metadata ?? {}) };
  const block = (metadata[EXPECTATIONS_URI] ?? {}) as ExpectationsMetadata;
  metadata[EXPECTATIONS_URI] = add({ ...block });
  const extensions = carrier.extensions.includes(EXPECTATIONS_URI)
    ? [...carrier.extensions]
    : [...carrier.extensions, EXPECTATIONS_URI];
  return { ...carrier, metadata, extensions };
}

/**
 * Raises `expectations` on an Artifact (§8) or on the status Message that moves a task to
 * input-required (§11): in `metadata[EXPECTATIONS_URI].expectations` (after any already there),
 * with the URI in `extensions`. Raise only for a caller that activated the extension (§7,
 * {@link activated}).
 *
 * @throws KitError when `expectations` is empty, one of them is malformed ({@link expectation}),
 *   or two share an `expectationId`.
 */
export function raiseExpectations<T extends Carrier>(carrier: T, expectations: readonly ExpectationInput[]): T {
  if (!Array.isArray(expectations) || expectations.length === 0) {
    throw new KitError('expectations', 'give at least one expectation');
  }
  const checked = expectations.map((e, i) => expectation(e, `expectations[${i}]`));
  return carry(carrier, (block) => {
    const all = [...(block.expectations ?? []), ...checked];
    const seen = new Set<string>();
    all.forEach((e, i) => {
      if (seen.has(e.expectationId)) {
        throw new KitError(`expectations[${i}].expectationId`, `${e.expectationId} is raised twice (§8: never reused)`);
      }
      seen.add(e.expectationId);
    });
    return { ...block, expectations: all };
  });
}

/**
 * Withdraws open expectations the agent raised (§8.1): `{ withdraw: [ids], reason }` under the
 * URI in a later artifact's metadata.
 *
 * @throws KitError when `ids` is empty, an id is malformed, or `reason` is blank.
 */
export function withdrawExpectations<T extends Carrier>(carrier: T, ids: readonly string[], reason: string): T {
  if (!Array.isArray(ids) || ids.length === 0) throw new KitError('ids', 'give at least one expectationId');
  const checked = ids.map((id, i) => text(id, `ids[${i}]`, ID, ID_RULE));
  const why = text(reason, 'reason');
  return carry(carrier, (block) => ({ ...block, withdraw: [...(block.withdraw ?? []), ...checked], reason: why }));
}

/**
 * Reports facts in band (§9.2): in `metadata[EXPECTATIONS_URI].facts` of an Artifact (the agent)
 * or a Message (a client). `observedAt` may be a `Date`.
 *
 * @throws KitError when `facts` is empty or a fact has no `factKey` or a bad `observedAt`.
 */
export function attachFacts<T extends Carrier>(
  carrier: T,
  facts: readonly (Omit<Fact, 'observedAt'> & { observedAt: Instant })[],
): T {
  const checked = checkFacts(facts);
  return carry(carrier, (block) => ({ ...block, facts: [...(block.facts ?? []), ...checked] }));
}

/** `facts` checked and in wire form (see {@link attachFacts}). */
export function checkFacts(facts: readonly (Omit<Fact, 'observedAt'> & { observedAt: Instant })[]): Fact[] {
  if (!Array.isArray(facts) || facts.length === 0) throw new KitError('facts', 'give at least one fact');
  return facts.map((f, i) => {
    const out: Fact = {
      factKey: text(f.factKey, `facts[${i}].factKey`, ID, ID_RULE),
      observedAt: instant(f.observedAt, `facts[${i}].observedAt`),
    };
    if (f.subject != null) out.subject = subject(f.subject, `facts[${i}].subject`);
    if (f.source != null) out.source = text(f.source, `facts[${i}].source`);
    return out;
  });
}

/** The expectations raised on an Artifact or a Message, as given (no checks); `[]` for none. */
export function expectationsOf(carrier: Carrier): Expectation[] {
  const block = carrier.metadata?.[EXPECTATIONS_URI] as ExpectationsMetadata | undefined;
  return Array.isArray(block?.expectations) ? block.expectations : [];
}

/**
 * Declares the extension on `card` (§6.1): one entry in `capabilities.extensions` with
 * `required: false` and `params`, replacing an earlier entry for the URI.
 *
 * @throws KitError when `lapseSkill` names no skill on the card, a kind is repeated or has a
 *   blank member, or a kind's `basis` or `skills` is wrong.
 */
export function declareExpectations(
  card: AgentCard,
  params: ExpectationsParamsInput,
  description = 'States what this agent expects to happen next, and by when.',
): AgentCard {
  const skills = new Set(card.skills.map((s) => s.id));
  const lapseSkill = text(params.lapseSkill, 'params.lapseSkill');
  if (!skills.has(lapseSkill)) {
    throw new KitError('params.lapseSkill', `${lapseSkill} is not a skill on the card (skills: ${[...skills].join(', ') || 'none'})`);
  }
  if (typeof params.keepsTime !== 'boolean') throw new KitError('params.keepsTime', 'must be true or false');
  const seen = new Set<string>();
  const kinds: ExpectationKind[] = params.kinds.map((k, i) => {
    const at = `params.kinds[${i}]`;
    const kind: ExpectationKind = {
      kind: text(k.kind, `${at}.kind`),
      subjectType: text(k.subjectType, `${at}.subjectType`),
      describes: text(k.describes, `${at}.describes`),
      basis: text(k.basis, `${at}.basis`),
    };
    if (!BASES.includes(kind.basis)) throw new KitError(`${at}.basis`, `${JSON.stringify(kind.basis)} is not observed, contract or declared`);
    if (seen.has(kind.kind)) throw new KitError(`${at}.kind`, `${kind.kind} is declared twice (§6.2: unique)`);
    seen.add(kind.kind);
    if (k.skills != null) {
      kind.skills = k.skills.map((s, j) => {
        const id = text(s, `${at}.skills[${j}]`);
        if (!skills.has(id)) throw new KitError(`${at}.skills[${j}]`, `${id} is not a skill on the card`);
        return id;
      });
    }
    return kind;
  });
  const declared: ExpectationsParams = { keepsTime: params.keepsTime, lapseSkill, kinds };
  const capabilities = card.capabilities ?? { extensions: [] };
  const extensions = capabilities.extensions.filter((e) => e.uri !== EXPECTATIONS_URI);
  extensions.push({ uri: EXPECTATIONS_URI, description, required: false, params: { ...declared } });
  return { ...card, capabilities: { ...capabilities, extensions } };
}

/** The extension's params on `card`, as given, or `undefined` when it does not declare them. */
export function declaredParams(card: AgentCard): ExpectationsParams | undefined {
  const entry = card.capabilities?.extensions.find((e) => e.uri === EXPECTATIONS_URI);
  return entry?.params as ExpectationsParams | undefined;
}

/**
 * Whether the caller activated the extension (§7: `A2A-Extensions` names the URI). When it did,
 * the URI is marked activated on the call, so the SDK echoes it in the answer's header, as §7
 * requires. Pass `RequestContext.context` (a `ServerCallContext`).
 */
export function activated(context: {
  readonly requestedExtensions?: readonly string[] | undefined;
  addActivatedExtension?(uri: string): void;
}): boolean {
  const yes = context.requestedExtensions?.includes(EXPECTATIONS_URI) ?? false;
  if (yes) context.addActivatedExtension?.(EXPECTATIONS_URI);
  return yes;
}

/** A lapse task as the agent reads it (§10.1): the block, with its instants as `Date`s. */
export interface LapseTask {
  /** The expectation that lapsed. */
  expectationId: string;
  /** Its kind (a kind on the card). */
  kind: string;
  /** What it was about. */
  subject: Subject;
  /** What was expected, in a person's words: what did not happen. */
  expects: string;
  /** How it lapsed: `overdue`, `skipped` or `stalled` (§9.1). */
  lapse: LapseKind;
  /** The current due time when it lapsed. */
  dueAt: Date;
  /** The due time as raised. */
  projectedDueAt: Date;
  /** When the watcher determined the lapse. */
  lapsedAt: Date;
  /** The most recent fact on the subject, if any since the expectation was raised. */
  lastFactAt?: Date;
  /** For `skipped`: the later expectations whose satisfaction showed the gap. */
  satisfiedAfter: string[];
  /** How many superseded ancestors it has (§10.3): more time is given by a successor. */
  lineage: number;
  /** The origin task (the message's `referenceTaskIds`): the task to cancel or complete. */
  originTaskIds: string[];
  /** The origin's context, where the lapse task runs. */
  contextId: string;
  /** The message's text: the lapse in a person's words (§10.1). */
  text: string;
  /** The lapse block exactly as it came (to log, or to keep on the record). */
  block: Lapse;
}

function date(v: unknown, field: string): Date {
  const t = instant(v, field);
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) throw new KitError(field, `${t} is not a valid instant`);
  return d;
}

function lapseOfMessage(m: Message): LapseTask | undefined {
  const block = (m.metadata?.[EXPECTATIONS_URI] as ExpectationsMetadata | undefined)?.lapse as unknown;
  if (block === undefined || block === null) return undefined;
  if (typeof block !== 'object') throw new KitError('metadata[URI].lapse', 'must be an object');
  const b = block as Record<string, unknown>;
  const at = (f: string) => `metadata[URI].lapse.${f}`;
  const lapse = text(b.lapse, at('lapse'));
  if (!LAPSE_KINDS.includes(lapse)) throw new KitError(at('lapse'), `${JSON.stringify(lapse)} is not overdue, skipped or stalled`);
  const lineage = b.lineage;
  if (typeof lineage !== 'number' || !Number.isInteger(lineage) || lineage < 0) {
    throw new KitError(at('lineage'), 'must be a whole number, 0 or more');
  }
  const after = b.satisfiedAfter ?? [];
  if (!Array.isArray(after)) throw new KitError(at('satisfiedAfter'), 'must be a list of expectationIds');
  const task: LapseTask = {
    expectationId: text(b.expectationId, at('expectationId'), ID, ID_RULE),
    kind: text(b.kind, at('kind')),
    subject: subject(b.subject, at('subject')),
    expects: text(b.expects, at('expects')),
    lapse: lapse as LapseKind,
    dueAt: date(b.dueAt, at('dueAt')),
    projectedDueAt: date(b.projectedDueAt, at('projectedDueAt')),
    lapsedAt: date(b.lapsedAt, at('lapsedAt')),
    satisfiedAfter: after.map((id, i) => text(id, `${at('satisfiedAfter')}[${i}]`, ID, ID_RULE)),
    lineage,
    originTaskIds: [...m.referenceTaskIds],
    contextId: m.contextId,
    text: m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).filter(Boolean).join('\n'),
    block: block as Lapse,
  };
  if (b.lastFactAt != null) task.lastFactAt = date(b.lastFactAt, at('lastFactAt'));
  return task;
}

/**
 * The lapse task an incoming Message carries (§10.1), or the one a Task was started with (the
 * newest message in its history that carries one); `undefined` when there is none: an ordinary
 * request.
 *
 * @throws KitError naming the member when a lapse block is there but malformed (a required
 *   member missing, an unknown `lapse`, an instant that is not RFC 3339).
 */
export function readLapse(incoming: Message | Task): LapseTask | undefined {
  if ('messageId' in incoming) return lapseOfMessage(incoming);
  for (let i = incoming.history.length - 1; i >= 0; i--) {
    const found = lapseOfMessage(incoming.history[i]!);
    if (found) return found;
  }
  return undefined;
}

/**
 * A successor to a lapsed expectation (§10.3, more time): the same kind, subject and `expects`,
 * with `supersedes` naming the lapsed one. The watcher records it with `lineage + 1` and refuses
 * it past its bound; it must differ from its ancestors in `satisfiedBy` or `dueAt`.
 *
 * @throws KitError when `expectationId` is the lapsed one's (ids are never reused, §8).
 */
export function successor(
  lapse: LapseTask,
  next: Pick<ExpectationInput, 'expectationId' | 'satisfiedBy' | 'dueAt' | 'basis'> & Partial<ExpectationInput>,
): ExpectationInput {
  if (next.expectationId === lapse.expectationId) {
    throw new KitError('expectationId', `${next.expectationId} is the lapsed expectation's id (§8: never reused)`);
  }
  return { kind: lapse.kind, subject: lapse.subject, expects: lapse.expects, ...next, supersedes: lapse.expectationId };
}
