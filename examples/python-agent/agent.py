"""An A2A agent on the official Python SDK (a2a-sdk 1.3.0) that speaks the Expectations extension
(https://rsaxb.com/a2a/expectations/v1) through the Python kit (kits/python, `a2a_watcher_kit`):
the tutorial's Python example (README.md beside this file), run against `a2a-watcher serve` by
tests/interop_sdk.rs.

    .venv-a2a/bin/python examples/python-agent/agent.py --port 9998 \
        --watcher http://127.0.0.1:8080/v1/agents/python/push --push-token push-token-python

Prints `listening on http://127.0.0.1:PORT` once it serves (port 0: any free port); its card is at
`/.well-known/agent-card.json`, its JSON-RPC endpoint at `/a2a/jsonrpc`. Every task it runs pushes
its events to `--watcher` (with `--push-token`). What it does, by the first word of the request's
text (`key=value` words after it):

* `book shipment=ID due=INSTANT [grace=DURATION]`: books the shipment and raises a
  `shipment.manifest` expectation in the booking artifact (expectations-v1 §8).
* `ask due=INSTANT [grace=DURATION]`: asks which warehouse receives the shipment
  (`TASK_STATE_INPUT_REQUIRED`) with a `question.answer` expectation that expires at `due` (§11).
  A reply on that task answers it.
* a lapse task from the watcher (§10.1) runs the `handle_lapse` skill: it prints
  `handle_lapse {lapse block as JSON}`, then decides (§10.2): an unanswered question cancels the
  task that asked it; a lapsed manifest completes stating what happens next.
* `probe`: working for half a second, then completed (what `a2a-watcher probe` sends).

CancelTask cancels a task that is still open (a question nobody answered yet).
"""

import argparse
import asyncio
import json
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    Part,
    Task,
    TaskState,
    TaskStatus,
)

try:
    import a2a_watcher_kit  # noqa: F401 (`pip install ./kits/python`)
except ImportError:  # run from a clone without installing it: the repository's copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kits" / "python"))
from a2a_watcher_kit import (
    URI,
    Expectation,
    ExpectationKind,
    ExpectationsParams,
    Matcher,
    Subject,
    expectations_metadata,
)
from a2a_watcher_kit.sdk import (
    LapseTask,
    declare_expectations,
    is_activated,
    read_lapse_task,
    register_watcher_push,
)

RPC_PATH = "/a2a/jsonrpc"

# 1. The extension's declaration (§6): every kind this agent raises, and the skill a lapse task
#    invokes (it must be a skill on the card, which declare_expectations checks).
DECLARATION = ExpectationsParams(
    keeps_time=False,
    lapse_skill="handle_lapse",
    kinds=[
        ExpectationKind(
            kind="shipment.manifest",
            subject_type="shipment",
            describes="the airline manifest for a booked shipment",
            basis="observed",
            skills=["book_shipment"],
        ),
        ExpectationKind(
            kind="question.answer",
            subject_type="task",
            describes="a person's answer to a question this agent asked",
            basis="declared",
        ),
    ],
)


def card(base: str) -> AgentCard:
    agent_card = AgentCard(
        name="Python example agent",
        description="Books air freight and says what it expects to happen next, and by when.",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=False,
            # True because it does push: every task's events go to the watcher (see execute).
            push_notifications=True,
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="book_shipment", name="Book shipment",
                       description="Books a shipment on a flight.", tags=["logistics"]),
            AgentSkill(id="handle_lapse", name="Handle lapse",
                       description="Decides what a lapsed expectation means.",
                       tags=["expectations"]),
        ],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=base + RPC_PATH)
        ],
    )
    return declare_expectations(
        agent_card, DECLARATION, "States what this agent expects to happen next, and by when."
    )


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def words(text: str) -> tuple[str, dict[str, str]]:
    """`book shipment=X due=Y` -> ("book", {"shipment": "X", "due": "Y"})."""
    command, *rest = text.split() or [""]
    return command.lower(), dict(w.partition("=")[::2] for w in rest)


class ExampleExecutor(AgentExecutor):
    def __init__(self, push_store, watcher: str | None, push_token: str | None) -> None:
        self.push_store = push_store
        self.watcher = watcher
        self.push_token = push_token
        self.handler: DefaultRequestHandler | None = None  # set in main(), for handle_lapse

    async def execute(self, ctx: RequestContext, q: EventQueue) -> None:
        up = TaskUpdater(q, ctx.task_id, ctx.context_id)
        # Expectations only for a caller that activated the extension (§7).
        activated = is_activated(ctx)
        current = ctx.current_task
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer to our question: leaving input-required satisfies it (§11).
            await up.start_work()
            await up.complete(up.new_agent_message([Part(text="Thanks, noted.")]))
            return
        if current is None:
            # 4. Push config to the watcher: every new task reports to it, whoever sent it,
            #    beside any push config the caller gave (its own id, so neither replaces the
            #    other); not twice when the caller is the watcher itself (a lapse task).
            if self.watcher:
                await register_watcher_push(self.push_store, ctx.task_id, ctx.call_context,
                                            self.watcher, self.push_token or "")
            # The Task first, with a timestamp: returnImmediately answers with it.
            await q.enqueue_event(
                Task(
                    id=ctx.task_id,
                    context_id=ctx.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED,
                                      timestamp=datetime.now(timezone.utc)),
                    history=[ctx.message],
                )
            )
        lapse = read_lapse_task(ctx.message)
        if lapse is not None:
            await self.handle_lapse(up, lapse, ctx)
            return
        command, args = words(ctx.get_user_input())
        if command == "book":
            await self.book(up, args, activated)
        elif command == "ask":
            await self.ask(up, args, activated)
        elif command == "probe":
            # `a2a-watcher probe`: working for half a second (so its CancelTask can catch the
            # task), then completed.
            await up.start_work()
            await asyncio.sleep(0.5)
            await up.complete(up.new_agent_message([Part(text="probe done")]))
        else:
            await up.reject(up.new_agent_message([Part(text=f"unknown command {command!r}")]))

    async def book(self, up: TaskUpdater, args: dict[str, str], activated: bool) -> None:
        """2. Expectations raised in an artifact (§8): in its metadata under the URI, and the URI
        in its `extensions`."""
        shipment = args["shipment"]
        await up.start_work()
        metadata, extensions = None, None
        if activated:
            expectation = Expectation(
                expectation_id=f"exp-{up.task_id}-manifest",
                kind="shipment.manifest",
                subject=Subject(type="shipment", id=shipment),
                expects=f"the airline manifest for {shipment}",
                satisfied_by=Matcher(fact_key=f"shipment.manifest.received:{shipment}"),
                due_at=args["due"],
                grace=args.get("grace", "PT2H"),
                basis="observed",
            )
            metadata, extensions = expectations_metadata([expectation]), [URI]
        await up.add_artifact(
            parts=[Part(text=f"Booked {shipment}.")],
            name="Booking confirmation",
            metadata=metadata,
            extensions=extensions,
            last_chunk=True,
        )
        await up.complete()

    async def ask(self, up: TaskUpdater, args: dict[str, str], activated: bool) -> None:
        """3. A question that expires (§11): the expectation rides in the status message that
        moves the task to input-required; its subject is the task itself."""
        await up.start_work()
        metadata = None
        if activated:
            question = Expectation(
                expectation_id=f"exp-{up.task_id}-answer",
                kind="question.answer",
                subject=Subject(type="task", id=up.task_id),
                expects="someone to say which warehouse receives the shipment",
                satisfied_by=Matcher(fact_key=f"task.answered:{up.task_id}"),
                due_at=args["due"],
                grace=args.get("grace", "PT1H"),
                basis="declared",
            )
            metadata = expectations_metadata([question])
        await up.requires_input(
            up.new_agent_message([Part(text="Which warehouse receives it?")], metadata=metadata)
        )

    async def handle_lapse(self, up: TaskUpdater, lapse: LapseTask, ctx: RequestContext) -> None:
        """5. The `handle_lapse` skill (§10.2): read the lapse block, decide, say why."""
        print("handle_lapse " + json.dumps(lapse.lapse.to_dict(), sort_keys=True), flush=True)
        await up.start_work()
        what = f"{lapse.expects} ({lapse.expectation_id}) is {lapse.how}"
        origin = lapse.origin_task_id
        if lapse.kind == "question.answer" and origin:
            # 6. Cancel: nobody answered, so the task that asked is given up (§10.2), which
            #    withdraws anything else it still expects (§8.1).
            try:
                await self.handler.on_cancel_task(CancelTaskRequest(id=origin), ctx.call_context)
                decision = f"canceled the question's task {origin}"
            except Exception as e:  # already answered, canceled or unknown: say so
                decision = f"could not cancel {origin} ({type(e).__name__})"
        else:
            decision = "asked the desk to chase the airline; nothing more to wait for here"
        await up.complete(up.new_agent_message([Part(text=f"{what}: {decision}.")]))

    async def cancel(self, ctx: RequestContext, q: EventQueue) -> None:
        """CancelTask (and handle_lapse's cancel): the task ends canceled, stating why."""
        up = TaskUpdater(q, ctx.task_id, ctx.context_id)
        await up.cancel(up.new_agent_message([Part(text="Canceled: no answer is needed any more.")]))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--watcher", help="the watcher's push URL for this agent")
    parser.add_argument("--push-token", help="this agent's push_token in the watcher's config")
    args = parser.parse_args()
    # Bind first, so the card can name the real port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent_card = card(base)
    push_store = InMemoryPushNotificationConfigStore()
    executor = ExampleExecutor(push_store, args.watcher, args.push_token)
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store),
    )
    executor.handler = handler
    app = Starlette(
        routes=[
            *create_agent_card_routes(agent_card=agent_card),
            *create_jsonrpc_routes(request_handler=handler, rpc_url=RPC_PATH),
        ]
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.05)
    print(f"listening on {base}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())
