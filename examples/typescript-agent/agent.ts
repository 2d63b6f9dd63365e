/**
 * An A2A agent on the official TypeScript SDK (@a2a-js/sdk 1.3.0) that speaks the Expectations
 * extension (https://rsaxb.com/a2a/expectations/v1) through the kit, `@a2a-watcher/kit`
 * (kits/typescript): the tutorial's TypeScript example (README.md beside this file), run against
 * `a2a-watcher serve` by tests/interop_sdk.rs. In this repository tsconfig.json maps the kit to its
 * source; an agent of your own installs the package.
 *
 *     cd examples/typescript-agent && npm ci
 *     npx tsx agent.ts --port 9997 \
 *         --watcher http://127.0.0.1:8080/v1/agents/typescript/push --push-token push-token-typescript
 *
 * Prints `listening on http://127.0.0.1:PORT` once it serves (port 0: any free port); its card is
 * at `/.well-known/agent-card.json`, its JSON-RPC endpoint at `/a2a/jsonrpc`. Every task it runs
 * pushes its events to `--watcher` (with `--push-token`). What it does, by the first word of the
 * request's text (`key=value` words after it):
 *
 * - `book shipment=ID due=INSTANT [grace=DURATION]`: books the shipment and raises a
 *   `shipment.manifest` expectation in the booking artifact (expectations-v1 §8).
 * - `ask due=INSTANT [grace=DURATION]`: asks which warehouse receives the shipment
 *   (`TASK_STATE_INPUT_REQUIRED`) with a `question.answer` expectation that expires at `due`
 *   (§11). A reply on that task answers it.
 * - a lapse task from the watcher (§10.1) runs the `handle_lapse` skill: it prints
 *   `handle_lapse {lapse block as JSON}`, then decides (§10.2): an unanswered question cancels
 *   the task that asked it; a lapsed manifest completes stating what happens next.
 * - `probe`: working for half a second, then completed (what `a2a-watcher probe` sends).
 *
 * CancelTask cancels a task that is still open (a question nobody answered yet).
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

import express from 'express';
import {
  AGENT_CARD_PATH,
  type AgentCard,
  type Artifact,
  type Message,
  type Part,
  Role,
  TaskState,
} from '@a2a-js/sdk';
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
  type ExpectationInput,
  type ExpectationsParamsInput,
  KitError,
  type LapseTask,
  raiseExpectations,
  readLapse,
  registerWatcherPush,
  WATCHER_PUSH_SENDER_OPTIONS,
} from '@a2a-watcher/kit';

const RPC_PATH = '/a2a/jsonrpc';

// 1. The extension's declaration (§6): every kind this agent raises, and the skill a lapse task
//    invokes (it must be a skill on the card: declareExpectations checks).
const DECLARATION: ExpectationsParamsInput = {
  keepsTime: false,
  lapseSkill: 'handle_lapse',
  kinds: [
    {
      kind: 'shipment.manifest',
      subjectType: 'shipment',
      describes: 'the airline manifest for a booked shipment',
      basis: 'observed',
      skills: ['book_shipment'],
    },
    {
      kind: 'question.answer',
      subjectType: 'task',
      describes: "a person's answer to a question this agent asked",
      basis: 'declared',
    },
  ],
};

function card(base: string): AgentCard {
  const skill = (id: string, name: string, description: string, tags: string[]) => ({
    id, name, description, tags, examples: [], inputModes: [], outputModes: [],
    securityRequirements: [],
  });
  const plain: AgentCard = {
    name: 'TypeScript example agent',
    description: 'Books air freight and says what it expects to happen next, and by when.',
    version: '1.0.0',
    supportedInterfaces: [
      { url: base + RPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    ],
    provider: undefined,
    capabilities: {
      streaming: false,
      // True because it does push: every task's events go to the watcher (see execute).
      pushNotifications: true,
      extensions: [],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      skill('book_shipment', 'Book shipment', 'Books a shipment on a flight.', ['logistics']),
      skill('handle_lapse', 'Handle lapse', 'Decides what a lapsed expectation means.',
            ['expectations']),
    ],
    signatures: [],
  };
  return declareExpectations(plain, DECLARATION, 'States what this agent expects to happen next, and by when.');
}

const now = () => new Date().toISOString();

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** `book shipment=X due=Y` -> ["book", {shipment: "X", due: "Y"}]. */
function words(input: string): [string, Record<string, string>] {
  const [command = '', ...rest] = input.split(/\s+/).filter(Boolean);
  const args: Record<string, string> = {};
  for (const w of rest) {
    const at = w.indexOf('=');
    if (at < 0) args[w] = '';
    else args[w.slice(0, at)] = w.slice(at + 1);
  }
  return [command.toLowerCase(), args];
}

/** Publishes one task's events, like the Python SDK's TaskUpdater. */
class Updater {
  constructor(
    private readonly bus: ExecutionEventBus,
    readonly taskId: string,
    readonly contextId: string,
  ) {}

  /** A message of the agent's, carrying `expectations` when given (§11). */
  message(parts: Part[], expectations?: ExpectationInput[]): Message {
    const message: Message = {
      messageId: randomUUID(), contextId: this.contextId, taskId: this.taskId,
      role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [],
    };
    return expectations ? raiseExpectations(message, expectations) : message;
  }

  status(state: TaskState, message?: Message): void {
    this.bus.publish(AgentEvent.statusUpdate({
      taskId: this.taskId, contextId: this.contextId,
      status: { state, message, timestamp: now() }, metadata: undefined,
    }));
  }

  /** Publishes an artifact, carrying `expectations` when given (§8). */
  artifact(name: string, parts: Part[], expectations?: ExpectationInput[]): void {
    const artifact: Artifact = {
      artifactId: randomUUID(), name, description: '', parts, metadata: undefined, extensions: [],
    };
    this.bus.publish(AgentEvent.artifactUpdate({
      taskId: this.taskId, contextId: this.contextId,
      artifact: expectations ? raiseExpectations(artifact, expectations) : artifact,
      append: false, lastChunk: true, metadata: undefined,
    }));
  }
}

class ExampleExecutor implements AgentExecutor {
  handler?: DefaultRequestHandler; // set in main(), for handleLapse
  private readonly canceled = new Set<string>();
  private readonly contexts = new Map<string, string>(); // task id -> context id, for cancelTask

  constructor(
    private readonly pushStore: InMemoryPushNotificationStore,
    private readonly watcher?: string,
    private readonly pushToken?: string,
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const up = new Updater(bus, ctx.taskId, ctx.contextId);
    this.contexts.set(ctx.taskId, ctx.contextId);
    const message = ctx.userMessage;
    // Expectations only for a caller that activated the extension (§7).
    const on = activated(ctx.context);
    if (ctx.task) {
      // Every turn starts with the Task. A reply to our question: leaving input-required
      // satisfies it (§11).
      bus.publish(AgentEvent.task(ctx.task));
      if (ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        up.status(TaskState.TASK_STATE_WORKING);
        up.status(TaskState.TASK_STATE_COMPLETED, up.message([text('Thanks, noted.')]));
        return;
      }
    } else {
      // 4. Push config to the watcher: every new task reports to it, whoever sent it, beside
      //    any push config the caller gave (its own id, so neither replaces the other); not
      //    twice when the caller is the watcher itself (a lapse task).
      if (this.watcher && this.pushToken) {
        await registerWatcherPush(this.pushStore, ctx.context, ctx.taskId,
                                  { url: this.watcher, token: this.pushToken });
      }
      bus.publish(AgentEvent.task({
        id: ctx.taskId, contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
        artifacts: [], history: [message], metadata: undefined,
      }));
    }
    let lapse: LapseTask | undefined;
    try {
      lapse = readLapse(message);
    } catch (e) {
      if (!(e instanceof KitError)) throw e;
      up.status(TaskState.TASK_STATE_REJECTED, up.message([text(`not a lapse task I can read: ${e.message}`)]));
      return;
    }
    if (lapse) {
      await this.handleLapse(up, lapse, ctx);
      return;
    }
    const input = message.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join(' ');
    const [command, args] = words(input);
    if (command === 'book' || command === 'ask') {
      try {
        if (command === 'book') this.book(up, args, on);
        else this.ask(up, args, on);
      } catch (e) {
        // The kit refused the expectation (a missing or malformed `due`, say): say which field.
        if (!(e instanceof KitError)) throw e;
        up.status(TaskState.TASK_STATE_REJECTED, up.message([text(`cannot ${command}: ${e.message}`)]));
      }
    } else if (command === 'probe') {
      up.status(TaskState.TASK_STATE_WORKING);
      // Half a second, so that the probe's CancelTask can catch the task.
      await new Promise((resolve) => setTimeout(resolve, 500));
      if (!this.canceled.delete(ctx.taskId)) {
        up.status(TaskState.TASK_STATE_COMPLETED, up.message([text('probe done')]));
      }
    } else {
      up.status(TaskState.TASK_STATE_REJECTED, up.message([text(`unknown command ${command}`)]));
    }
  };

  /** 2. Expectations raised in an artifact (§8): in its metadata under the URI, and the URI in
   *  its `extensions`. */
  book(up: Updater, args: Record<string, string>, on: boolean): void {
    const shipment = args.shipment;
    up.status(TaskState.TASK_STATE_WORKING);
    const expectation: ExpectationInput = {
      expectationId: `exp-${up.taskId}-manifest`,
      kind: 'shipment.manifest',
      subject: { type: 'shipment', id: shipment },
      expects: `the airline manifest for ${shipment}`,
      satisfiedBy: { factKey: `shipment.manifest.received:${shipment}` },
      dueAt: args.due,
      grace: args.grace ?? 'PT2H',
      basis: 'observed',
    };
    up.artifact('Booking confirmation', [text(`Booked ${shipment}.`)], on ? [expectation] : undefined);
    up.status(TaskState.TASK_STATE_COMPLETED);
  }

  /** 3. A question that expires (§11): the expectation rides in the status message that moves
   *  the task to input-required; its subject is the task itself. */
  ask(up: Updater, args: Record<string, string>, on: boolean): void {
    up.status(TaskState.TASK_STATE_WORKING);
    const question: ExpectationInput = {
      expectationId: `exp-${up.taskId}-answer`,
      kind: 'question.answer',
      subject: { type: 'task', id: up.taskId },
      expects: 'someone to say which warehouse receives the shipment',
      satisfiedBy: { factKey: `task.answered:${up.taskId}` },
      dueAt: args.due,
      grace: args.grace ?? 'PT1H',
      basis: 'declared',
    };
    up.status(TaskState.TASK_STATE_INPUT_REQUIRED,
              up.message([text('Which warehouse receives it?')], on ? [question] : undefined));
  }

  /** 5. The `handle_lapse` skill (§10.2): the lapse task as readLapse read it; decide, say why. */
  async handleLapse(up: Updater, lapse: LapseTask, ctx: RequestContext): Promise<void> {
    console.log(`handle_lapse ${JSON.stringify(lapse.block)}`);
    const refs = lapse.originTaskIds;
    up.status(TaskState.TASK_STATE_WORKING);
    const what = `${lapse.expects} (${lapse.expectationId}) is ${lapse.lapse}`;
    let decision = 'asked the desk to chase the airline; nothing more to wait for here';
    if (lapse.kind === 'question.answer' && refs.length > 0) {
      // 6. Cancel: nobody answered, so the task that asked is given up (§10.2), which
      //    withdraws anything else it still expects (§8.1).
      try {
        await this.handler!.cancelTask({ tenant: '', id: refs[0], metadata: undefined }, ctx.context);
        decision = `canceled the question's task ${refs[0]}`;
      } catch (e) {
        decision = `could not cancel ${refs[0]} (${(e as Error).message})`;
      }
    }
    up.status(TaskState.TASK_STATE_COMPLETED, up.message([text(`${what}: ${decision}.`)]));
  }

  /** CancelTask (and handleLapse's cancel): the task ends canceled, stating why. */
  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.canceled.add(taskId);
    const up = new Updater(bus, taskId, this.contexts.get(taskId) ?? '');
    up.status(TaskState.TASK_STATE_CANCELED,
              up.message([text('Canceled: no answer is needed any more.')]));
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      watcher: { type: 'string' },
      'push-token': { type: 'string' },
    },
  });
  // Listen first, so the card can name the real port.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(Number(values.port), '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agentCard = card(base);
  const pushStore = new InMemoryPushNotificationStore();
  const executor = new ExampleExecutor(pushStore, values.watcher, values['push-token']);
  const handler = new DefaultRequestHandler(
    agentCard,
    new InMemoryTaskStore(),
    executor,
    undefined, // the default event bus manager
    pushStore,
    new DefaultPushNotificationSender(pushStore, WATCHER_PUSH_SENDER_OPTIONS),
  );
  executor.handler = handler;
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(RPC_PATH, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  server.on('request', app);
  console.log(`listening on ${base}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
