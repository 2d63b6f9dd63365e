// generated from docs/schemas; do not edit.
// `npm run generate` (scripts/generate.mjs) writes this file from docs/schemas/*.json and the
// components of docs/openapi.json the client uses; `npm run check:models` fails when it differs.
// Member names are the wire's (camelCase); a member outside the schema's `required` is optional.

/** A subject: `{ "type": string, "id": string }`, opaque to the watcher (expectations-v1 §5). */
export interface Subject {
  /** The kind of thing, e.g. `shipment`. */
  type: string;
  /** Its identifier, e.g. `PA-2026-0901`. */
  id: string;
}

/** `satisfiedBy`: `{ "factKey": string }`, matched exactly (expectations-v1 §8, §9.2). */
export interface Matcher {
  /** The key a fact must carry to satisfy the expectation. */
  factKey: string;
}

/**
 * `{ "expectationId", "offset" }`: the current due time is the anchor's satisfaction
 * `observedAt` plus `offset` (expectations-v1 §9.3).
 */
export interface Anchor {
  /** The expectation whose satisfaction fixes this one's due time. */
  expectationId: string;
  /** Added to the anchor's `observedAt`. */
  offset: string;
}

/** An expectation as an agent raises it in metadata[URI].expectations (expectations-v1 §8). The watcher also refuses a horizon earlier than dueAt and a dueAt + grace beyond 9999-12-31T23:59:59.999999999Z. */
export interface Expectation {
  /** Agent-generated, unique among everything the agent ever raised. */
  expectationId: string;
  /** A kind declared on the agent's card (§6.2). */
  kind: string;
  /** What the expectation is about. */
  subject: Subject;
  /** What is expected, in a person's words. */
  expects: string;
  /** The fact key that satisfies it. */
  satisfiedBy: Matcher;
  /** The due time as raised (UTC); for an anchored expectation, the projection. */
  dueAt: string;
  /** Wait after `dueAt` before an overdue lapse; absent means zero. */
  grace?: string | null;
  /** Re-anchoring (§9.3). */
  anchor?: Anchor | null;
  /** Expectations on the same subject expected to be satisfied before this one (§9.1). */
  after?: string[];
  /** After this instant, silence on the subject is a `stalled` lapse. */
  horizon?: string | null;
  /** `observed`, `contract`, `declared`, or an unknown value kept as given (§15). */
  basis: string;
  /** An open expectation this one replaces (§10.3). */
  supersedes?: string | null;
}

/** One class of expectation an agent declares on its card (expectations-v1 §6.2). */
export interface ExpectationKind {
  /** Identifier of the class of expectation, unique within the declaration. */
  kind: string;
  /** What kind of thing it is about. */
  subjectType: string;
  /** What is expected, in a person's words. */
  describes: string;
  /** `observed`, `contract`, `declared`, or an unknown value kept as given (§15). */
  basis: string;
  /** Skill ids whose tasks may raise it; `None` means any. */
  skills?: string[] | null;
}

/**
 * `open`, `satisfied` or `withdrawn` (semantics.md, "States"). A lapse does not close an
 * expectation; satisfaction and withdrawal are final.
 */
export type Status = "open" | "satisfied" | "withdrawn";

/** `raisedBy` in the contract form: `{ "taskId", "contextId"? }`. */
export interface ContractRaisedBy {
  /** The task that raised the expectation. */
  taskId: string;
  /** That task's contextId; absent when the agent gave none. */
  contextId?: string | null;
}

/** How the expectation was satisfied (expectations-v1 §9.2; replay.md). */
export interface Satisfaction {
  /** The fact's key. */
  factKey: string;
  /** The authenticated reporter (§13.5). */
  source: string;
  /** Receipt instant on the watcher's clock. */
  satisfiedAt: string;
  /** The effective `observedAt`: the claimed one, or the receipt time if it claimed later. */
  observedAt: string;
  /**
   * `observedAt` exactly as the fact gave it, whenever that differs from the effective one:
   * a claim later than receipt, a zero-value timestamp read as absent, a leap second
   * (semantics.md "Time"; replay.md).
   */
  claimedObservedAt?: string | null;
  /** `observedAt` after the current `dueAt`. */
  late: boolean;
}

/** The three ways an expectation lapses (expectations-v1 §9.1). */
export type LapseKind = "overdue" | "skipped" | "stalled";

/** One lapse of an expectation: at most one per kind (semantics.md, "States"). */
export interface LapseEntry {
  /** Which lapse. */
  lapse: LapseKind;
  /** The watcher's clock when it determined the lapse. */
  lapsedAt: string;
  /** `lapse:{expectationId}:{lapse}:{dueAt}` (semantics.md, "The lapse task"). */
  messageId: string;
  /** The current due time at the moment of lapse. */
  dueAt: string;
}

/** `{ "withdrawnAt", "reason" }` (expectations-v1 §8.1). */
export interface Withdrawal {
  /** When the watcher withdrew it. */
  withdrawnAt: string;
  /** Why, in words that name the cause. */
  reason: string;
}

/** The watcher's record of one expectation as its routes show it (expectations-v1 Appendix A; docs/contracts/replay.md "record"). */
export interface ExpectationRecord {
  /** Agent-generated id, unique among everything the agent raised. */
  expectationId: string;
  /** The raising agent (its id in the watcher's configuration). */
  agent: string;
  /** The agent's tenant. */
  tenant: string;
  /** A kind declared on the agent's card (§6.2). */
  kind: string;
  /** What the expectation is about. */
  subject: Subject;
  /** What is expected, in a person's words. */
  expects: string;
  /** The fact key that satisfies it. */
  satisfiedBy: Matcher;
  /** `open`, `satisfied` or `withdrawn`; a lapse does not close an expectation. */
  status: Status;
  /** `dueAt` as raised (UTC). */
  projectedDueAt: string;
  /** The current due time (UTC); differs from `projectedDueAt` once re-anchored (§9.3). */
  dueAt: string;
  /** Wait after `dueAt` before an overdue lapse. */
  grace?: string | null;
  /** Re-anchoring (§9.3). */
  anchor?: Anchor | null;
  /** Expectations on the subject expected to be satisfied before this one (§9.1). */
  after?: string[] | null;
  /** After this instant, silence on the subject is a `stalled` lapse. */
  horizon?: string | null;
  /** `observed`, `contract`, `declared`, or another value kept as given (§13.3, §15). */
  basis: string;
  /** The expectation this one replaced (§10.3). */
  supersedes?: string | null;
  /** How many superseded ancestors it has (§10.3). */
  lineage: number;
  /** When the watcher recorded it (UTC). */
  raisedAt: string;
  /** The origin task. */
  raisedBy: ContractRaisedBy;
  /** How it was satisfied; `null` until then. */
  satisfaction?: Satisfaction | null;
  /** Its lapses in the order they happened, at most one per kind. */
  lapses: LapseEntry[];
  /** `{ withdrawnAt, reason }` once withdrawn (§8.1). */
  withdrawal?: Withdrawal | null;
  /** The expectation that superseded this one. */
  supersededBy?: string | null;
}

/** The extension's params on an Agent Card (expectations-v1 §6.1); lapseSkill must also name a skill on the card and kinds must be unique, which `a2a-watcher validate card` checks. */
export interface ExpectationsParams {
  /** Whether the agent runs its own clock (§12.2). */
  keepsTime: boolean;
  /** The skill a lapse task invokes; names a skill on the card. */
  lapseSkill: string;
  /** What the agent expects, by kind. */
  kinds: ExpectationKind[];
}

/** A fact as a reporter posts it (expectations-v1 §9.2); the watcher records the authenticated reporter as its source (§13.5). */
export interface Fact {
  /** Matched exactly against an expectation's `satisfiedBy.factKey`. */
  factKey: string;
  /**
   * When the event happened (RFC 3339 with an offset); a time later than receipt is read as
   * the receipt time.
   */
  observedAt: string;
  /** Who reports it; informative only, the watcher records the authenticated reporter. */
  source?: string | null;
  /** The subject it concerns, when the reporter says. */
  subject?: Subject | null;
}

/** The lapse block in a lapse task's message.metadata[URI].lapse (expectations-v1 §10.1). */
export interface Lapse {
  /** Copied from the expectation. */
  expectationId: string;
  /** Copied from the expectation. */
  kind: string;
  /** Copied from the expectation. */
  subject: Subject;
  /** Copied from the expectation. */
  expects: string;
  /** `overdue`, `skipped` or `stalled`. */
  lapse: LapseKind;
  /** `dueAt` as raised. */
  projectedDueAt: string;
  /** The current due time at the moment of lapse. */
  dueAt: string;
  /** The watcher's clock when it determined the lapse. */
  lapsedAt: string;
  /** Greatest `observedAt` of facts on the subject received since raising; absent if none. */
  lastFactAt?: string | null;
  /** For `skipped`: the later expectations whose satisfaction revealed the gap. */
  satisfiedAfter?: string[];
  /** Superseded ancestors. */
  lineage: number;
}

/** How a learnable decides (§6.2 `decidedBy`). */
export type DecidedBy = "rules" | "model" | "hybrid";

export interface LessonField {
  name: string;
  label: string;
  kind: string;
  choices?: string[] | null;
  default?: string | null;
  help?: string | null;
}

/** One entry of an Agent Card's params.learnables: what a person can teach and how (learnables-v1 §6.2). */
export interface LearnableDescriptor {
  /** The collection's name. */
  collection: string;
  /** Singular noun for one entry. */
  entry: string;
  /** Skill ids affected; absent means all. */
  skills?: string[] | null;
  /** What a person is deciding. */
  teaches: string;
  /** How the agent decides today, from the learnable. */
  how: string;
  /** From the learnable. */
  decidedBy: DecidedBy;
  /** From the learnable. */
  lessonFields: LessonField[];
}

/** One human-supplied value addressed to one entry, with its author (learnables-v1 §9); the value is judged by the learnable. */
export interface Lesson {
  /** The collection to write into, e.g. `customers`. */
  collection: string;
  /** The entry to write into, e.g. `northgate`. */
  entry: string;
  /** The lesson value: opaque to everything but the learnable (§9). */
  value: unknown;
  /** Who taught it: an identified human (§9, §13.4). */
  taughtBy: string;
  /** Why, in the person's words. */
  reason?: string | null;
  /**
   * When the knowledge should be looked at again: an RFC 3339 instant with an offset
   * (`2027-03-01T00:00:00Z`), later than the time the lesson is taught, read as every instant
   * the watcher reads (semantics.md "Time": up to `9999-12-31T23:59:59.999999999Z`, a leap
   * second the last nanosecond of its minute). Optional (an optional field is not breaking,
   * §15); recorded on the version, and the watcher raises a `lesson.review` expectation due
   * then (expectations-v1 §16).
   */
  expiresAt?: string | null;
}

/** What writing a lesson answers (learnables-v1 §10.4). */
export interface LessonResult {
  /** Whether anything changed. */
  learned: boolean;
  /** What was learned, phrased by the learnable. */
  describes: string;
  /** The version after the write (the active one when nothing changed). */
  definitionVersion: number;
  /** Content address of that version. */
  versionId?: string | null;
  /** Content address of the version it replaced. */
  previousVersionId?: string | null;
}

/** The teach block in an input-required question's metadata[URI].teach (learnables-v1 §8); suggested keys must be lesson field names. */
export interface TeachBlock {
  collection: string;
  entries: string[];
  suggested?: Record<string, unknown> | null;
  suggestionLabel?: string | null;
  lessonFields?: LessonField[] | null;
}

// The watcher's HTTP API (docs/openapi.json, components).

/** One fact's result: `{ "factKey", "satisfied": [expectationId] }`. */
export interface FactResult {
  /** The fact's key. */
  factKey: string;
  /** The expectations it satisfied. */
  satisfied: string[];
}

/**
 * What reported facts did, as `POST /v1/facts` answers it:
 * `{ "results": [{ "factKey", "satisfied" }], "alreadyRecorded"?, "warnings"? }`.
 */
export interface FactsOutcome {
  /** One per fact recorded, in order. */
  results: FactResult[];
  /**
   * Keys of facts received before exactly (key, source, `observedAt`: fact identity, §9.1),
   * recorded once, so these changed nothing; sorted, each once.
   */
  alreadyRecorded?: string[];
  /**
   * What the request ignored (members a fact does not define), kept on the record under the
   * source ([`source_key`]).
   */
  warnings?: string[];
}

/**
 * Delivery state of a lapse task (serve.md, `GET /v1/lapses`): `queued`, `sent`, `failed`,
 * `withdrawn` or `unaddressed`.
 *
 * The one list of the states the lapse list shows: the answer's `delivery` member, the values
 * `GET /v1/lapses?delivery=` accepts, their schema in `docs/openapi.json` (generated from this
 * type) and the values of `a2a-watcher lapses --delivery` all come from it.
 */
export type DeliveryState = "queued" | "sent" | "failed" | "withdrawn" | "unaddressed";

/**
 * One lapse task as operators read it (`GET /v1/lapses`, `a2a-watcher lapses`, with or without
 * `--url`): `{ "messageId", "expectationId", "lapse", "lapsedAt", "agent", "delivery",
 * "attempts", "taskId"?, "taskState"?, "answeredWithMessage"?, "needsPerson"?,
 * "retryingSince"?, "lastError"? }` (UTC instants). One type, so the route and the command
 * answer alike.
 */
export interface LapseView {
  /** The lapse task's deterministic `messageId`. */
  messageId: string;
  /** The expectation that lapsed. */
  expectationId: string;
  /** `overdue`, `skipped` or `stalled`. */
  lapse: LapseKind;
  /** When the watcher determined the lapse. */
  lapsedAt: string;
  /** The agent the lapse task is for. */
  agent: string;
  /**
   * `queued`, `sent`, `failed`, `withdrawn` or `unaddressed`: every value
   * `GET /v1/lapses?delivery=` filters by.
   */
  delivery: DeliveryState;
  /** Send attempts so far. */
  attempts: number;
  /** The agent's task for it, once known. */
  taskId?: string | null;
  /** That task's last known state (a `TaskState` name). */
  taskState?: string | null;
  /** The agent answered with a Message rather than a Task. */
  answeredWithMessage?: boolean;
  /**
   * expectations-v1 §13.1: the lapse task waits on a person at the agent
   * (`TASK_STATE_INPUT_REQUIRED` or `TASK_STATE_AUTH_REQUIRED`); the watcher never answers.
   */
  needsPerson?: boolean;
  /** Since when its sends fail, while they are retried. */
  retryingSince?: string | null;
  /** The last send's error. */
  lastError?: string | null;
}

/** A page of lapse tasks: `{ "lapses": [LapseView], "nextCursor": "…" | null }`. */
export interface LapsesPage {
  /** The page's lapse tasks, in lapse order. */
  lapses: LapseView[];
  /** Where the next page starts; `null` on the last. */
  nextCursor: string | null;
}

/**
 * The body of `POST /v1/lapses/retry`: `{ "agent": "…", "messageIds"?: ["…"] }`, the agent and
 * which of its failed lapse tasks to put back in the queue.
 */
export interface RetryRequest {
  /** The registered agent whose failed lapse tasks are put back in the queue. */
  agent: string;
  /**
   * The messageIds to re-queue, 1 to 1,000, each non-empty; absent or `null`: every failed
   * lapse task of the agent (as many as one call re-queues, `more` says when others remain).
   */
  messageIds?: string[] | null;
}

/** A messageId that was not re-queued. */
export interface SkippedId {
  /** The messageId. */
  messageId: string;
  /** Why: `not found` or `queued` / `sent` (its state). */
  reason: string;
}

/**
 * What `POST /v1/lapses/retry` answers: `{ "requeued": n, "messageIds": [...], "skipped":
 * [{ "messageId", "reason" }], "more": bool }`.
 */
export interface RetryAnswer {
  /** How many failed lapse tasks were put back in the queue. */
  requeued: number;
  /** Their messageIds. */
  messageIds: string[];
  /** messageIds asked for that were not re-queued, with why. */
  skipped: SkippedId[];
  /** More failed lapse tasks remain than one call re-queues; call again. */
  more: boolean;
}

/**
 * `claimedObservedAt`: the text as given (kept when it was not a valid instant), or the
 * instant claimed.
 */
export type ClaimedObservedAt = string;

/**
 * A fact on a subject as operators read it: `{ "factKey", "source", "observedAt",
 * "receivedAt", "satisfied": [ids], "mapping"?, "claimedObservedAt"? }` (UTC instants).
 */
export interface FactView {
  /** The fact's key. */
  factKey: string;
  /** Who reported it. */
  source: string;
  /** When it was observed, as the watcher takes it (semantics.md "Time"). */
  observedAt: string;
  /** When the watcher received it. */
  receivedAt: string;
  /** The expectations it satisfied. */
  satisfied: string[];
  /** The webhook mapping that yielded it, if one did. */
  mapping?: string | null;
  /** `observedAt` as given, when it differs from the one taken (semantics.md "Time"). */
  claimedObservedAt?: ClaimedObservedAt | null;
}

/**
 * The subject view (contracts/serve.md, `GET /v1/subjects/{type}/{id}`): the subject, every
 * ExpectationRecord on it in raising order (contracts/replay.md shape) and its facts in
 * receipt order.
 */
export interface SubjectView {
  /** The subject. */
  subject: Subject;
  /**
   * Every ExpectationRecord on it, in raising order, in the contract's shape
   * (`ExpectationRecord::to_contract_json`).
   */
  expectations: unknown[];
  /** Its facts, in receipt order. */
  facts: FactView[];
}

/** One refused expectation: `{ "expectationId", "reason" }`. */
export interface Refused {
  /** Its `expectationId`, when one could be read (`null` otherwise). */
  expectationId: string | null;
  /** The rule and the field, in words. */
  reason: string;
}

/**
 * What a push did, as `POST /v1/agents/{agentId}/push` answers it:
 * `{ "raised", "rejected", "withdrawn", "facts", "alreadyRecorded"?, "warnings"?, "summary"? }`.
 */
export interface PushOutcome {
  /** The expectations this push raised, in order. */
  raised: string[];
  /** The expectations it refused, each with the rule and the field in words. */
  rejected: Refused[];
  /** The expectations it withdrew (its task canceled or failed, §10.4). */
  withdrawn: string[];
  /** Facts it recorded that were not recorded before. */
  facts: number;
  /**
   * Expectations it carried that were recorded before with the same content (a replay, or a
   * Task snapshot repeating its artifacts): unchanged.
   */
  alreadyRecorded?: string[];
  /**
   * What it ignored (unknown members, an invalid `status.timestamp`), kept with the agent's
   * rejections as warnings.
   */
  warnings?: string[];
  /**
   * Why nothing was raised, when every expectation the push carried was refused because its
   * `expectationId` was already recorded for this agent (an id is never reused,
   * expectations-v1 §8): how many, the rule, and how to start afresh. Absent otherwise; each
   * refusal's own reason is in `rejected`.
   */
  summary?: string | null;
}

/**
 * A kept rejection as `GET /v1/agents/{agentId}/rejections` and
 * `GET /v1/sources/{sourceId}/rejections` answer it (serve.md): `{ "expectationId", "reason",
 * "at", "taskId", "warning"? }`, `expectationId` and `taskId` `null` when unknown, `"warning":
 * true` on what was ignored rather than refused.
 */
export interface RejectionView {
  /** The refused expectation's id, when one could be read. */
  expectationId: string | null;
  /** The rule and the field, in words. */
  reason: string;
  /** When the watcher refused it (UTC). */
  at: string;
  /** The task that raised it, when known. */
  taskId: string | null;
  /** Ignored rather than refused. */
  warning?: boolean;
}

/** A page of rejections: `{ "rejections": [RejectionView], "nextCursor": "…" | null }`. */
export interface RejectionsPage {
  /** The page's rejections, oldest first. */
  rejections: RejectionView[];
  /** Where the next page starts; `null` on the last. */
  nextCursor: string | null;
}

/** RFC 9457 problem details */
export interface Problem {
  type?: string;
  title: string;
  status: number;
  detail: string;
}
