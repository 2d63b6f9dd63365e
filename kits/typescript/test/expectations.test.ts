// The extension over the SDK's types: the shapes expectations-v1 gives (§6.1, §8, §8.1, §9.2,
// §10.1, §10.3), and a KitError naming the field for bad input.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type AgentCard, type Artifact, type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';

import {
  activated,
  attachFacts,
  declareExpectations,
  declaredParams,
  EXPECTATIONS_URI,
  type ExpectationInput,
  expectationsOf,
  KitError,
  raiseExpectations,
  readLapse,
  successor,
  withdrawExpectations,
} from '../src/index.js';

const URI = 'https://rsaxb.com/a2a/expectations/v1';

function artifact(): Artifact {
  return { artifactId: 'booking-7f3a', name: 'Booking confirmation', description: '', parts: [], metadata: undefined, extensions: [] };
}

function manifest(overrides: Partial<ExpectationInput> = {}): ExpectationInput {
  return {
    expectationId: 'exp-01J8Q0MANIFEST',
    kind: 'shipment.manifest',
    subject: { type: 'shipment', id: 'PA-2026-0901' },
    expects: 'the airline manifest for PA-2026-0901',
    satisfiedBy: { factKey: 'shipment.manifest.received:PA-2026-0901' },
    dueAt: '2026-09-10T20:15:00Z',
    grace: 'PT2H',
    basis: 'observed',
    ...overrides,
  };
}

function card(): AgentCard {
  const skill = (id: string) => ({
    id, name: id, description: id, tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [],
  });
  return {
    name: 'a', description: 'a', version: '1', supportedInterfaces: [], provider: undefined,
    capabilities: { streaming: false, pushNotifications: true, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: [], defaultOutputModes: [],
    skills: [skill('book_shipment'), skill('recheck_booking'), skill('handle_lapse')], signatures: [],
  };
}

/** The lapse message of §10.1's example. */
function lapseMessage(block: Record<string, unknown> | undefined): Message {
  return {
    messageId: 'lapse:exp-01J8Q0MANIFEST:skipped:2026-09-10T20:15:00Z',
    contextId: 'ctx-northgate-sep',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: 'PA-2026-0901 departed on EK203 at 02:41Z but no manifest was ever received.' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: block === undefined ? undefined : { [URI]: { lapse: block } },
    extensions: [URI],
    referenceTaskIds: ['task-booking-7f3a'],
  };
}

const SKIPPED = {
  expectationId: 'exp-01J8Q0MANIFEST',
  kind: 'shipment.manifest',
  subject: { type: 'shipment', id: 'PA-2026-0901' },
  expects: 'the airline manifest for PA-2026-0901',
  lapse: 'skipped',
  projectedDueAt: '2026-09-10T20:15:00Z',
  dueAt: '2026-09-10T20:15:00Z',
  lapsedAt: '2026-09-11T02:41:07Z',
  lastFactAt: '2026-09-11T02:41:00Z',
  satisfiedAfter: ['exp-01J8Q0DEPART'],
  lineage: 0,
};

function throwsAt(f: () => unknown, field: string, why: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof KitError, `a KitError, not ${String(e)}`);
    assert.equal(e.field, field);
    assert.match(e.message, why);
    return true;
  });
}

describe('raiseExpectations (§8)', () => {
  it('puts the expectations under the URI in metadata and the URI in extensions', () => {
    const before = artifact();
    const a = raiseExpectations(before, [manifest({ dueAt: new Date('2026-09-10T20:15:00Z') })]);
    assert.equal(EXPECTATIONS_URI, URI);
    assert.deepEqual(a.extensions, [URI]);
    assert.deepEqual(a.metadata, {
      [URI]: {
        expectations: [{
          expectationId: 'exp-01J8Q0MANIFEST',
          kind: 'shipment.manifest',
          subject: { type: 'shipment', id: 'PA-2026-0901' },
          expects: 'the airline manifest for PA-2026-0901',
          satisfiedBy: { factKey: 'shipment.manifest.received:PA-2026-0901' },
          dueAt: '2026-09-10T20:15:00.000Z',
          basis: 'observed',
          grace: 'PT2H',
        }],
      },
    });
    // The argument is left as it was.
    assert.deepEqual(before, artifact());
  });

  it('adds to what is there, keeps other metadata, and names the URI once', () => {
    const first = raiseExpectations({ ...artifact(), metadata: { other: 1 } }, [manifest()]);
    const both = raiseExpectations(first, [manifest({
      expectationId: 'exp-01J8Q0ARRIVE', kind: 'shipment.arrival', satisfiedBy: { factKey: 'shipment.arrived:PA-2026-0901' },
      anchor: { expectationId: 'exp-01J8Q0DEPART', offset: 'PT1H45M' }, after: ['exp-01J8Q0DEPART'],
      horizon: '2026-09-13T05:00:00Z',
    })]);
    assert.deepEqual(both.extensions, [URI]);
    assert.equal(both.metadata?.other, 1);
    assert.deepEqual(expectationsOf(both).map((e) => e.expectationId), ['exp-01J8Q0MANIFEST', 'exp-01J8Q0ARRIVE']);
    const arrive = expectationsOf(both)[1];
    assert.deepEqual(arrive?.anchor, { expectationId: 'exp-01J8Q0DEPART', offset: 'PT1H45M' });
    assert.equal(arrive?.horizon, '2026-09-13T05:00:00Z');
  });

  it('raises a question on the status message (§11)', () => {
    const m = raiseExpectations(lapseMessage(undefined), [manifest({ kind: 'question.answer', subject: { type: 'task', id: 't-1' }, basis: 'declared' })]);
    assert.equal(expectationsOf(m)[0]?.subject.type, 'task');
    assert.deepEqual(m.extensions, [URI]);
  });

  it('refuses malformed expectations, naming the field', () => {
    throwsAt(() => raiseExpectations(artifact(), []), 'expectations', /at least one/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ dueAt: '2026-09-10 20:15' })]), 'expectations[0].dueAt', /RFC 3339/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ dueAt: new Date('nope') })]), 'expectations[0].dueAt', /invalid Date/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ grace: '2 hours' })]), 'expectations[0].grace', /ISO 8601 duration/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ basis: 'guess' as 'observed' })]), 'expectations[0].basis', /observed, contract or declared/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ expectationId: ' ' })]), 'expectations[0].expectationId', /non-blank/);
    throwsAt(() => raiseExpectations(artifact(), [manifest({ satisfiedBy: { factKey: 'a\nb' } })]), 'expectations[0].satisfiedBy.factKey', /control/);
    throwsAt(() => raiseExpectations(artifact(), [manifest(), manifest()]), 'expectations[1].expectationId', /raised twice/);
    const { dueAt: _, ...noDue } = manifest();
    throwsAt(() => raiseExpectations(artifact(), [noDue as ExpectationInput]), 'expectations[0].dueAt', /got nothing/);
  });
});

describe('withdrawExpectations and attachFacts (§8.1, §9.2)', () => {
  it('writes { withdraw, reason } and facts under the URI', () => {
    const a = attachFacts(withdrawExpectations(artifact(), ['exp-01J8Q0DEPART'], 'booking moved'), [
      { factKey: 'shipment.departed:PA-2026-0901', observedAt: new Date('2026-09-11T02:41:00Z'), subject: { type: 'shipment', id: 'PA-2026-0901' } },
    ]);
    assert.deepEqual(a.metadata?.[URI], {
      withdraw: ['exp-01J8Q0DEPART'],
      reason: 'booking moved',
      facts: [{ factKey: 'shipment.departed:PA-2026-0901', observedAt: '2026-09-11T02:41:00.000Z', subject: { type: 'shipment', id: 'PA-2026-0901' } }],
    });
    throwsAt(() => withdrawExpectations(artifact(), ['x'], ''), 'reason', /blank/);
    throwsAt(() => attachFacts(artifact(), [{ factKey: 'k', observedAt: 'yesterday' }]), 'facts[0].observedAt', /RFC 3339/);
  });
});

describe('declareExpectations (§6.1)', () => {
  const params = {
    keepsTime: false,
    lapseSkill: 'handle_lapse',
    kinds: [
      { kind: 'shipment.manifest', subjectType: 'shipment', describes: 'the airline manifest for a booked shipment', basis: 'observed' as const, skills: ['book_shipment', 'recheck_booking'] },
      { kind: 'question.answer', subjectType: 'task', describes: "a person's answer to a question this agent asked", basis: 'declared' as const },
    ],
  };

  it('adds one entry with required false and the params, replacing an earlier one', () => {
    const once = declareExpectations(card(), params, 'States what this agent expects.');
    const twice = declareExpectations(once, params, 'States what this agent expects.');
    assert.deepEqual(twice.capabilities?.extensions, [{
      uri: URI, description: 'States what this agent expects.', required: false, params,
    }]);
    assert.deepEqual(declaredParams(twice), params);
    assert.equal(twice.capabilities?.pushNotifications, true);
    assert.equal(declaredParams(card()), undefined);
  });

  it('refuses a lapse skill or a kind skill not on the card, and a repeated kind', () => {
    throwsAt(() => declareExpectations(card(), { ...params, lapseSkill: 'handle' }), 'params.lapseSkill', /not a skill on the card/);
    throwsAt(() => declareExpectations(card(), { ...params, kinds: [{ ...params.kinds[1]!, skills: ['nope'] }] }), 'params.kinds[0].skills[0]', /not a skill/);
    throwsAt(() => declareExpectations(card(), { ...params, kinds: [params.kinds[1]!, params.kinds[1]!] }), 'params.kinds[1].kind', /declared twice/);
  });
});

describe('activated (§7)', () => {
  it('is true only when A2A-Extensions names the URI, and then echoes it', () => {
    const on = new ServerCallContext({ requestedExtensions: [URI] });
    assert.equal(activated(on), true);
    assert.deepEqual([...(on.activatedExtensions ?? [])], [URI]);
    const off = new ServerCallContext({ requestedExtensions: ['https://example.com/other'] });
    assert.equal(activated(off), false);
    assert.equal(activated(new ServerCallContext()), false);
  });
});

describe('readLapse (§10.1)', () => {
  it('reads the block of §10.1 with its instants as Dates', () => {
    const l = readLapse(lapseMessage(SKIPPED));
    assert.ok(l);
    assert.equal(l.expectationId, 'exp-01J8Q0MANIFEST');
    assert.equal(l.kind, 'shipment.manifest');
    assert.deepEqual(l.subject, { type: 'shipment', id: 'PA-2026-0901' });
    assert.equal(l.expects, 'the airline manifest for PA-2026-0901');
    assert.equal(l.lapse, 'skipped');
    assert.equal(l.dueAt.toISOString(), '2026-09-10T20:15:00.000Z');
    assert.equal(l.lapsedAt.toISOString(), '2026-09-11T02:41:07.000Z');
    assert.equal(l.lastFactAt?.toISOString(), '2026-09-11T02:41:00.000Z');
    assert.deepEqual(l.satisfiedAfter, ['exp-01J8Q0DEPART']);
    assert.equal(l.lineage, 0);
    assert.deepEqual(l.originTaskIds, ['task-booking-7f3a']);
    assert.equal(l.contextId, 'ctx-northgate-sep');
    assert.match(l.text, /no manifest was ever received/);
    assert.deepEqual(l.block, SKIPPED);
  });

  it('finds the lapse in a Task history, and none in an ordinary request', () => {
    const task: Task = {
      id: 't', contextId: 'c', artifacts: [], metadata: undefined,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
      history: [lapseMessage(SKIPPED), lapseMessage(undefined)],
    };
    assert.equal(readLapse(task)?.expectationId, 'exp-01J8Q0MANIFEST');
    assert.equal(readLapse(lapseMessage(undefined)), undefined);
    assert.equal(readLapse({ ...task, history: [] }), undefined);
  });

  it('refuses a malformed block, naming the member', () => {
    throwsAt(() => readLapse(lapseMessage({ ...SKIPPED, lapse: 'late' })), 'metadata[URI].lapse.lapse', /overdue, skipped or stalled/);
    throwsAt(() => readLapse(lapseMessage({ ...SKIPPED, lineage: -1 })), 'metadata[URI].lapse.lineage', /whole number/);
    throwsAt(() => readLapse(lapseMessage({ ...SKIPPED, dueAt: 'soon' })), 'metadata[URI].lapse.dueAt', /RFC 3339/);
    const { subject: _, ...noSubject } = SKIPPED;
    throwsAt(() => readLapse(lapseMessage(noSubject)), 'metadata[URI].lapse.subject', /type, id/);
  });
});

describe('successor (§10.3)', () => {
  it('supersedes the lapsed expectation with its kind, subject and expects', () => {
    const l = readLapse(lapseMessage(SKIPPED))!;
    const next = successor(l, {
      expectationId: 'exp-01J8Q0MANIFEST-2', satisfiedBy: { factKey: 'shipment.manifest.received:PA-2026-0901' },
      dueAt: '2026-09-11T08:00:00Z', basis: 'declared',
    });
    const a = raiseExpectations(artifact(), [next]);
    assert.deepEqual(expectationsOf(a)[0], {
      expectationId: 'exp-01J8Q0MANIFEST-2', kind: 'shipment.manifest',
      subject: { type: 'shipment', id: 'PA-2026-0901' }, expects: 'the airline manifest for PA-2026-0901',
      satisfiedBy: { factKey: 'shipment.manifest.received:PA-2026-0901' }, dueAt: '2026-09-11T08:00:00Z',
      basis: 'declared', supersedes: 'exp-01J8Q0MANIFEST',
    });
    throwsAt(() => successor(l, { ...next, expectationId: 'exp-01J8Q0MANIFEST' }), 'expectationId', /never reused/);
  });
});
