"""A booking agent on the official A2A Python SDK (a2a-sdk 1.3.0) that speaks the Expectations
extension through the Python kit (kits/python, `a2a_watcher_kit`): the runnable example of
docs/agents.md, and the peer of tests/interop_sdk.rs.

    .venv-a2a/bin/python examples/sdk-agent/agent.py [--port 0]

Prints `listening on http://127.0.0.1:PORT` once it serves (port 0 = any free port). Its card is at
`/.well-known/agent-card.json`, its JSON-RPC 1.0 endpoint at `/a2a/jsonrpc`. Everything is in
memory. What it does, by the text of the request's first text part (`key=value` words after the
command):

* `book shipment=ID due=INSTANT [grace=PT1S] [hold]`: a booking task. It raises one
  `shipment.manifest` expectation about the shipment in its artifact's metadata (expectations-v1
  §8), then completes; with `hold` it stays working until canceled (or 60 s pass).
* `ask due=INSTANT [grace=PT1S]`: asks a question (`TASK_STATE_INPUT_REQUIRED`) whose status
  message carries a `question.answer` expectation about the task itself (§11). Any follow-up
  message on that task answers it and completes the task.
* `probe`: working, then completed (what `a2a-watcher probe` sends).
* a lapse task (`metadata[URI].lapse`, sent by the watcher, §10.1) runs the `handle_lapse` skill:
  for a lapsed `shipment.manifest` it raises a successor (`supersedes`, due an hour after the
  lapse, §10.3) while lineage is below 2; for anything else it completes, stating why.

Expectations are raised only when the caller activated the extension (`A2A-Extensions` header,
§7). Push notifications go wherever the caller's push config says (SendMessage
`configuration.taskPushNotificationConfig`, or CreateTaskPushNotificationConfig), sent by the
SDK's own `BasePushNotificationSender`.
"""

import argparse
import asyncio
import socket
import sys
from datetime import timedelta
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
    utc,
)
from a2a_watcher_kit.sdk import LapseTask, declare_expectations, is_activated, read_lapse_task

RPC_PATH = "/a2a/jsonrpc"
# A lapsed manifest is given more time while its lineage is below this (the watcher's own bound,
# default 3, is the hard limit; §10.3).
MAX_LINEAGE = 2

# The extension's declaration (expectations-v1 §6): every kind this agent raises, and the skill a
# lapse task invokes.
DECLARATION = ExpectationsParams(
    keeps_time=False,
    lapse_skill="handle_lapse",
    kinds=[
        ExpectationKind(
            kind="shipment.manifest",
            subject_type="shipment",
            describes="the airline manifest for a booked shipment",
            basis="observed",
            skills=["book_shipment", "handle_lapse"],
        ),
        ExpectationKind(
            kind="question.answer",
            subject_type="task",
            describes="a person's answer to a question this agent asked",
            basis="declared",
        ),
    ],
)


def words(text: str) -> tuple[str, dict[str, str]]:
    """`book shipment=X due=Y hold` -> ("book", {"shipment": "X", "due": "Y", "hold": ""})."""
    parts = text.split()
    command = parts[0].lower() if parts else ""
    args = {}
    for w in parts[1:]:
        key, _, value = w.partition("=")
        args[key] = value
    return command, args


def text_part(text: str) -> Part:
    return Part(text=text)


class BookingExecutor(AgentExecutor):
    """Books shipments, asks questions and handles lapse tasks (see the module docstring)."""

    def __init__(self) -> None:
        # Tasks held open by `hold`, released by cancel().
        self.released: dict[str, asyncio.Event] = {}

    async def execute(self, ctx: RequestContext, q: EventQueue) -> None:
        up = TaskUpdater(q, ctx.task_id, ctx.context_id)
        activated = is_activated(ctx)
        current = ctx.current_task
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer to our question: leaving input-required is what satisfies it (§11).
            await up.start_work()
            await up.complete(up.new_agent_message([text_part("Thanks, noted.")]))
            return
        if current is None:
            # Enqueue the Task first: a caller asking for returnImmediately gets it at once.
            await q.enqueue_event(
                Task(
                    id=ctx.task_id,
                    context_id=ctx.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[ctx.message],
                )
            )
        lapse = read_lapse_task(ctx.message)
        if lapse is not None:
            await self.handle_lapse(up, lapse, activated)
            return
        command, args = words(ctx.get_user_input())
        if command == "book":
            await self.book(up, args, activated)
        elif command == "ask":
            await self.ask(up, args, activated)
        elif command == "probe":
            # `a2a-watcher probe`: the plain lifecycle, nothing raised.
            await up.start_work()
            await up.complete(up.new_agent_message([text_part("probe done")]))
        else:
            await up.reject(up.new_agent_message([text_part(f"unknown command {command!r}")]))

    async def book(self, up: TaskUpdater, args: dict[str, str], activated: bool) -> None:
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
                grace=args.get("grace", "PT1S"),
                basis="observed",
            )
            metadata, extensions = expectations_metadata([expectation]), [URI]
        await up.add_artifact(
            parts=[text_part(f"Booked {shipment}.")],
            name="Booking confirmation",
            metadata=metadata,
            extensions=extensions,
            last_chunk=True,
        )
        if "hold" in args:
            released = self.released.setdefault(up.task_id, asyncio.Event())
            try:
                await asyncio.wait_for(released.wait(), timeout=60)
                return  # canceled: cancel() sent the final status
            except asyncio.TimeoutError:
                pass
        await up.complete()

    async def ask(self, up: TaskUpdater, args: dict[str, str], activated: bool) -> None:
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
                grace=args.get("grace", "PT1S"),
                basis="declared",
            )
            metadata = expectations_metadata([question])
        await up.requires_input(
            up.new_agent_message([text_part("Which warehouse receives it?")], metadata=metadata)
        )

    async def handle_lapse(self, up: TaskUpdater, lapse: LapseTask, activated: bool) -> None:
        """The `handle_lapse` skill (§10.2): extend a lapsed manifest, or explain."""
        await up.start_work()
        if activated and lapse.kind == "shipment.manifest" and lapse.lapse.lineage < MAX_LINEAGE:
            # The successor (§10.3): `{expectationId}.r{lineage + 1}`, superseding the lapsed one.
            successor = lapse.successor(
                due_at=utc(lapse.lapsed_at.replace(microsecond=0) + timedelta(hours=1)),
                grace="PT1H",
                fact_key=f"shipment.manifest.received:{lapse.subject.id}",
                basis="observed",
            )
            await up.add_artifact(
                parts=[text_part("Chased the airline; the manifest is expected within the hour.")],
                name="Chase",
                metadata=expectations_metadata([successor]),
                extensions=[URI],
                last_chunk=True,
            )
            await up.complete()
            return
        await up.complete(
            up.new_agent_message(
                [text_part(f"Lapse {lapse.how} of {lapse.expectation_id}: "
                           "proceeding under the default; nothing more to wait for.")]
            )
        )

    async def cancel(self, ctx: RequestContext, q: EventQueue) -> None:
        await TaskUpdater(q, ctx.task_id, ctx.context_id).cancel()
        released = self.released.get(ctx.task_id)
        if released is not None:
            released.set()


def card(url: str) -> AgentCard:
    agent_card = AgentCard(
        name="SDK booking agent",
        description="Books air freight and says what it expects to happen next.",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=False,
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
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url + RPC_PATH)
        ],
    )
    # The extension's entry in capabilities.extensions (§6.1); after the skills, which it checks.
    return declare_expectations(
        agent_card, DECLARATION, "States what this agent expects to happen next, and by when."
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    port = parser.parse_args().port
    # Bind first, so the card can name the real port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent_card = card(base)
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=BookingExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store),
    )
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
