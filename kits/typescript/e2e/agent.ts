/**
 * An agent on @a2a-js/sdk whose every contact with the Expectations extension goes through the
 * kit: its card declares the extension (declareExpectations), each new task pushes to the
 * watcher (registerWatcherPush), it raises only for a caller that activated the extension
 * (activated, raiseExpectations), and reads its lapse tasks with readLapse. The end-to-end test
 * (serve.test.ts) runs it in process against `a2a-watcher serve`.
 *
 * Requests, by the first word of the text (`key=value` words after it):
 * - `book shipment=ID due=INSTANT grace=DURATION`: a `shipment.manifest` expectation in the
 *   booking artifact (§8);
 * - `ask due=INSTANT grace=DURATION`: input-required, a `question.answer` expectation on the
 *   status message (§11).
 * A lapse task (§10): a lapsed manifest gets a successor due an hour later (§10.3); an unanswered
 * question cancels the task that asked it (§10.2).
 */

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import express from 'express';
import { AGENT_CARD_PATH, type AgentCard, type Artifact, type Message, type Part, Role, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

import {
  activated,
  declareExpectations,
  type LapseTask,
  raiseExpectations,
  readLapse,
  registerWatcherPush,
  successor,
  WATCHER_PUSH_SENDER_OPTIONS,
} from '../src/index.js';

const RPC_PATH = '/a2a/jsonrpc';

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function words(input: string): [string, Record<string, string>] {
  const [command = '', ...rest] = input.split(/\s+/).filter(Boolean);
  const args: Record<string, string> = {};
  for (const w of rest) {
    const at = w.indexOf('=');
    if (at > 0) args[w.slice(0, at)] = w.slice(at + 1);
  }
  return [command, args];
}

function card(base: string): AgentCard {
  const skill = (id: string, description: string) => ({
    id, name: id, description, tags: ['logistics'], examples: [], inputModes: [], outputModes: [], securityRequirements: [],
  });
  const plain: AgentCard = {
    name: 'Kit end-to-end agent',
    description: 'Books air freight through @a2a-watcher/kit.',
    version: '1.0.0',
    supportedInterfaces: [{ url: base + RPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined,
    capabilities: { streaming: false, pushNotifications: true, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [skill('book_shipment', 'Books a shipment.'), skill('handle_lapse', 'Decides what a lapse means.')],
    signatures: [],
  };
  return declareExpectations(plain, {
    keepsTime: false,
    lapseSkill: 'handle_lapse',
    kinds: [
      { kind: 'shipment.manifest', subjectType: 'shipment', describes: 'the airline manifest for a booked shipment', basis: 'observed', skills: ['book_shipment', 'handle_lapse'] },
      { kind: 'question.answer', subjectType: 'task', describes: "a person's answer to a question this agent asked", basis: 'declared' },
    ],
  });
}

/** The agent, running: its base URL, the lapse tasks it read, and how to stop it. */
export interface RunningAgent {
  url: string;
  /** Every lapse task the agent read, in arrival order. */
  lapses: LapseTask[];
  /** Resolves once `n` lapse tasks have arrived, or rejects after `ms`. */
  waitForLapses(n: number, ms: number): Promise<LapseTask[]>;
  close(): Promise<void>;
}

class Executor implements AgentExecutor {
  handler?: DefaultRequestHandler;
  readonly lapses: LapseTask[] = [];
  readonly waiters: (() => void)[] = [];
  private readonly contexts = new Map<string, string>();

  constructor(
    private readonly store: InMemoryPushNotificationStore,
    private readonly push: { url: string; token: string },
  ) {}

  private status(bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, message?: Message): void {
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined,
    }));
  }

  private message(taskId: string, contextId: string, value: string): Message {
    return {
      messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text(value)],
      metadata: undefined, extensions: [], referenceTaskIds: [],
    };
  }

  private artifact(bus: ExecutionEventBus, taskId: string, contextId: string, artifact: Artifact): void {
    bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact, append: false, lastChunk: true, metadata: undefined }));
  }

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    this.contexts.set(taskId, contextId);
    if (ctx.task) {
      bus.publish(AgentEvent.task(ctx.task));
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, this.message(taskId, contextId, 'Thanks, noted.'));
      return;
    }
    await registerWatcherPush(this.store, ctx.context, taskId, this.push);
    bus.publish(AgentEvent.task({
      id: taskId, contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [], history: [ctx.userMessage], metadata: undefined,
    }));
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
    const on = activated(ctx.context);
    const lapse = readLapse(ctx.userMessage);
    if (lapse) {
      await this.handleLapse(bus, taskId, contextId, lapse, ctx);
      return;
    }
    const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    const [command, args] = words(input);
    if (command === 'book' && args.shipment && args.due) {
      const shipment = args.shipment;
      let a: Artifact = {
        artifactId: randomUUID(), name: 'Booking confirmation', description: '', parts: [text(`Booked ${shipment}.`)],
        metadata: undefined, extensions: [],
      };
      if (on) {
        a = raiseExpectations(a, [{
          expectationId: `exp-${taskId}-manifest`,
          kind: 'shipment.manifest',
          subject: { type: 'shipment', id: shipment },
          expects: `the airline manifest for ${shipment}`,
          satisfiedBy: { factKey: `shipment.manifest.received:${shipment}` },
          dueAt: args.due,
          grace: args.grace ?? 'PT2H',
          basis: 'observed',
        }]);
      }
      this.artifact(bus, taskId, contextId, a);
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
    } else if (command === 'ask' && args.due) {
      let question = this.message(taskId, contextId, 'Which warehouse receives it?');
      if (on) {
        question = raiseExpectations(question, [{
          expectationId: `exp-${taskId}-answer`,
          kind: 'question.answer',
          subject: { type: 'task', id: taskId },
          expects: 'someone to say which warehouse receives the shipment',
          satisfiedBy: { factKey: `task.answered:${taskId}` },
          dueAt: args.due,
          grace: args.grace ?? 'PT1H',
          basis: 'declared',
        }]);
      }
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, question);
    } else {
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_REJECTED, this.message(taskId, contextId, `cannot ${command}`));
    }
  };

  private async handleLapse(bus: ExecutionEventBus, taskId: string, contextId: string, lapse: LapseTask, ctx: RequestContext): Promise<void> {
    this.lapses.push(lapse);
    for (const w of this.waiters.splice(0)) w();
    const origin = lapse.originTaskIds[0];
    if (lapse.kind === 'question.answer' && origin) {
      await this.handler!.cancelTask({ tenant: '', id: origin, metadata: undefined }, ctx.context);
      this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, this.message(taskId, contextId, `canceled ${origin}`));
      return;
    }
    // More time for the manifest: a successor due an hour after the lapse (§10.3).
    const more = raiseExpectations(
      { artifactId: randomUUID(), name: 'More time', description: '', parts: [text('Chasing the airline.')], metadata: undefined, extensions: [] },
      [successor(lapse, {
        expectationId: `${lapse.expectationId}-2`,
        satisfiedBy: { factKey: `shipment.manifest.received:${lapse.subject.id}` },
        dueAt: new Date(lapse.lapsedAt.getTime() + 3_600_000),
        basis: 'declared',
      })],
    );
    this.artifact(bus, taskId, contextId, more);
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED, this.message(taskId, contextId, `${lapse.expects} is ${lapse.lapse}: asked for an hour more`));
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const contextId = this.contexts.get(taskId) ?? '';
    this.status(bus, taskId, contextId, TaskState.TASK_STATE_CANCELED, this.message(taskId, contextId, 'Canceled: no answer came.'));
  };
}

/** Starts the agent on 127.0.0.1 (any free port), pushing to `push.url` with `push.token`. */
export async function startAgent(push: { url: string; token: string }): Promise<RunningAgent> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new InMemoryPushNotificationStore();
  const executor = new Executor(store, push);
  const handler = new DefaultRequestHandler(
    card(url),
    new InMemoryTaskStore(),
    executor,
    undefined,
    store,
    new DefaultPushNotificationSender(store, WATCHER_PUSH_SENDER_OPTIONS),
  );
  executor.handler = handler;
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(RPC_PATH, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  server.on('request', app);
  return {
    url,
    lapses: executor.lapses,
    waitForLapses(n, ms) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${executor.lapses.length} of ${n} lapse tasks within ${ms} ms`)), ms);
        const check = () => {
          if (executor.lapses.length >= n) {
            clearTimeout(timer);
            resolve([...executor.lapses]);
          } else executor.waiters.push(check);
        };
        check();
      });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
