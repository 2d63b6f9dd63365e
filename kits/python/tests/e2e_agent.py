"""An agent on the official A2A Python SDK that speaks the Expectations extension only through
the kit: tests/kits_python.rs runs it against `a2a-watcher serve`.

    PYTHONPATH=kits/python .venv-a2a/bin/python kits/python/tests/e2e_agent.py --port 0 \
        --watcher http://127.0.0.1:8080/v1/agents/kit/push --push-token push-token-kit

Prints `listening on http://127.0.0.1:PORT` once it serves. By the first word of a request's text:

* `book shipment=ID due=INSTANT [grace=DURATION]`: raises a `shipment.manifest` expectation in the
  booking artifact (`expectations_metadata`), then completes;
* `deliver shipment=ID`: reports the manifest's fact in an artifact (`facts_metadata`);
* a lapse task (`read_lapse_task`): prints `lapse-task {json}` (the lapse block, the origin task,
  context and message ids the kit read), raises a successor the first time (`successor`, §10.3)
  and completes.
Every task pushes to `--watcher` (`register_watcher_push`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from datetime import datetime, timedelta, timezone

import httpx
import uvicorn
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
from starlette.applications import Starlette

from a2a_watcher_kit import (
    URI,
    Expectation,
    ExpectationKind,
    ExpectationsParams,
    Fact,
    Matcher,
    Subject,
    expectations_metadata,
    facts_metadata,
    utc,
)
from a2a_watcher_kit.sdk import (
    LapseTask,
    declare_expectations,
    is_activated,
    read_lapse_task,
    register_watcher_push,
)

RPC_PATH = "/a2a/jsonrpc"

PARAMS = ExpectationsParams(
    keeps_time=False,
    lapse_skill="handle_lapse",
    kinds=[ExpectationKind(kind="shipment.manifest", subject_type="shipment",
                           describes="the airline manifest for a booked shipment",
                           basis="observed", skills=["book_shipment", "handle_lapse"])],
)


def manifest_key(shipment: str) -> str:
    return f"shipment.manifest.received:{shipment}"


class KitExecutor(AgentExecutor):
    def __init__(self, store: InMemoryPushNotificationConfigStore, watcher: str | None,
                 token: str | None) -> None:
        self.store = store
        self.watcher = watcher
        self.token = token or ""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            if self.watcher:
                await register_watcher_push(self.store, context.task_id, context.call_context,
                                            self.watcher, self.token)
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED,
                                  timestamp=datetime.now(timezone.utc)),
                history=[context.message] if context.message else []))
        await up.start_work()
        lapse = read_lapse_task(context.message)
        if lapse is not None:
            await self.handle_lapse(up, lapse, is_activated(context))
            return
        command, *rest = context.get_user_input().split() or [""]
        args = dict(w.partition("=")[::2] for w in rest)
        if command == "book" and is_activated(context):
            shipment = args["shipment"]
            expectation = Expectation(
                expectation_id=f"exp-{context.task_id}-manifest", kind="shipment.manifest",
                subject=Subject(type="shipment", id=shipment),
                expects=f"the airline manifest for {shipment}",
                satisfied_by=Matcher(fact_key=manifest_key(shipment)),
                due_at=args["due"], grace=args.get("grace"), basis="observed")
            await up.add_artifact([Part(text=f"Booked {shipment}.")], name="Booking",
                                  metadata=expectations_metadata([expectation]), extensions=[URI],
                                  last_chunk=True)
        elif command == "deliver":
            shipment = args["shipment"]
            fact = Fact(fact_key=manifest_key(shipment), observed_at=utc(datetime.now(timezone.utc)),
                        subject=Subject(type="shipment", id=shipment))
            await up.add_artifact([Part(text=f"Manifest for {shipment} received.")],
                                  name="Manifest", metadata=facts_metadata([fact]),
                                  extensions=[URI], last_chunk=True)
        await up.complete()

    async def handle_lapse(self, up: TaskUpdater, task: LapseTask, activated: bool) -> None:
        seen = {"lapse": task.lapse.to_dict(), "originTaskId": task.origin_task_id,
                "contextId": task.context_id, "messageId": task.message_id,
                "dueAt": utc(task.due_at), "text": task.text}
        print("lapse-task " + json.dumps(seen, sort_keys=True), flush=True)
        if activated and task.kind == "shipment.manifest" and task.lapse.lineage == 0:
            successor = task.successor(due_at=utc(task.lapsed_at + timedelta(hours=1)),
                                       grace="PT1H", fact_key=manifest_key(task.subject.id),
                                       basis="observed")
            await up.add_artifact([Part(text="Chased the airline.")], name="Chase",
                                  metadata=expectations_metadata([successor]), extensions=[URI],
                                  last_chunk=True)
        await up.complete(up.new_agent_message(
            [Part(text=f"{task.expects} is {task.how}: handled.")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(base: str) -> AgentCard:
    c = AgentCard(
        name="Kit agent", description="Books air freight through the Python kit.",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=False, push_notifications=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="book_shipment", name="Book shipment", description="Books.",
                           tags=["logistics"]),
                AgentSkill(id="handle_lapse", name="Handle lapse",
                           description="Decides what a lapse means.", tags=["expectations"])],
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0",
                                             url=base + RPC_PATH)],
    )
    return declare_expectations(c, PARAMS, "States what this agent expects next, and by when.")


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--watcher", help="the watcher's push URL for this agent")
    parser.add_argument("--push-token", help="this agent's push_token in the watcher's config")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent_card = card(base)
    store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=KitExecutor(store, args.watcher, args.push_token),
        task_store=InMemoryTaskStore(), agent_card=agent_card, push_config_store=store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), store))
    app = Starlette(routes=[*create_agent_card_routes(agent_card=agent_card),
                            *create_jsonrpc_routes(request_handler=handler, rpc_url=RPC_PATH)])
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
