"""The official A2A Python SDK's client (a2a-sdk 1.3.0) as a command, for tests/interop_sdk.rs and
for trying examples/sdk-agent/agent.py by hand. Every call activates the Expectations extension
(`A2A-Extensions`) and prints the resulting Task (or Message) as JSON on stdout.

    client.py send AGENT_URL TEXT [--push-url URL --push-token TOKEN] [--task-id ID --context-id ID]
                                   [--return-immediately]
    client.py cancel AGENT_URL TASK_ID
    client.py get AGENT_URL TASK_ID

`--push-url`/`--push-token` put a push config in SendMessage's
`configuration.taskPushNotificationConfig`: the agent's SDK then posts every event of the task
there, with the token in `X-A2A-Notification-Token` (the watcher's push route and the agent's
`push_token`, docs/agents.md).
"""

import argparse
import asyncio
import sys
import uuid

from google.protobuf import json_format

from a2a.client import ClientConfig, create_client
from a2a.client.client import ClientCallContext
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

URI = "https://rsaxb.com/a2a/expectations/v1"


def context() -> ClientCallContext:
    return ClientCallContext(
        service_parameters=ServiceParametersFactory.create([with_a2a_extensions([URI])])
    )


def out(proto) -> None:
    print(json_format.MessageToJson(proto, indent=None), flush=True)


async def run(args: argparse.Namespace) -> None:
    client = await create_client(args.agent, ClientConfig(streaming=False))
    try:
        if args.command == "send":
            message = Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_USER,
                parts=[Part(text=args.text)],
                task_id=args.task_id or "",
                context_id=args.context_id or "",
            )
            configuration = SendMessageConfiguration(return_immediately=args.return_immediately)
            if args.push_url:
                configuration.task_push_notification_config.CopyFrom(
                    TaskPushNotificationConfig(url=args.push_url, token=args.push_token or "")
                )
            request = SendMessageRequest(message=message, configuration=configuration)
            async for event in client.send_message(request, context=context()):
                out(event.task if event.HasField("task") else event)
        elif args.command == "cancel":
            out(await client.cancel_task(CancelTaskRequest(id=args.task_id), context=context()))
        elif args.command == "get":
            out(await client.get_task(GetTaskRequest(id=args.task_id), context=context()))
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="a2a-sdk client for the example agent")
    sub = parser.add_subparsers(dest="command", required=True)
    send = sub.add_parser("send")
    send.add_argument("agent")
    send.add_argument("text")
    send.add_argument("--push-url")
    send.add_argument("--push-token")
    send.add_argument("--task-id")
    send.add_argument("--context-id")
    send.add_argument("--return-immediately", action="store_true")
    for name in ("cancel", "get"):
        p = sub.add_parser(name)
        p.add_argument("agent")
        p.add_argument("task_id")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
