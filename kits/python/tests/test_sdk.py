"""The helpers over a2a-sdk's own types (protobuf): what they put on the card and the artifact is
what the spec shows (expectations-v1 §6.1, §8), and a lapse task is read from the Message the
spec shows (§10.1)."""

from __future__ import annotations

import asyncio
import unittest
from datetime import datetime, timezone
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryPushNotificationConfigStore
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Artifact, Message, Part, Task
from google.protobuf import json_format

from a2a_watcher_kit import URI, ExpectationKind, ExpectationsParams
from a2a_watcher_kit.sdk import (
    declare_expectations,
    raise_expectations,
    read_lapse_task,
    register_watcher_push,
    watcher_push_config,
)
from tests.test_models import SPEC_LAPSE, booking_expectations, manifest

# The declaration of expectations-v1 §6.1.
SPEC_PARAMS: dict[str, Any] = {
    "keepsTime": False,
    "lapseSkill": "handle_lapse",
    "kinds": [
        {"kind": "shipment.manifest", "subjectType": "shipment",
         "describes": "the airline manifest for a booked shipment", "basis": "observed",
         "skills": ["book_shipment", "recheck_booking"]},
        {"kind": "question.answer", "subjectType": "task",
         "describes": "a person's answer to a question this agent asked", "basis": "declared"},
    ],
}

# The lapse task's Message of expectations-v1 §10.1.
SPEC_MESSAGE: dict[str, Any] = {
    "role": "ROLE_USER",
    "contextId": "ctx-northgate-sep",
    "referenceTaskIds": ["task-booking-7f3a"],
    "messageId": "lapse:exp-01J8Q0MANIFEST:skipped:2026-09-10T20:15:00Z",
    "parts": [{"text": "PA-2026-0901 departed on EK203 at 02:41Z but no manifest was ever received."}],
    "extensions": [URI],
    "metadata": {URI: {"lapse": SPEC_LAPSE}},
}


def card(*skills: str) -> AgentCard:
    return AgentCard(
        name="booking", description="Books air freight.", version="1.0.0",
        capabilities=AgentCapabilities(push_notifications=True),
        skills=[AgentSkill(id=s, name=s, description=s, tags=["t"]) for s in skills],
    )


class CardTests(unittest.TestCase):
    def test_the_declaration_is_the_spec_entry(self) -> None:
        c = declare_expectations(card("book_shipment", "recheck_booking", "handle_lapse"),
                                 ExpectationsParams.from_dict(SPEC_PARAMS), "States what it expects.")
        wire = json_format.MessageToDict(c)["capabilities"]["extensions"]
        self.assertEqual(wire, [{"uri": URI, "description": "States what it expects.",
                                 "params": SPEC_PARAMS}])
        # Declaring again replaces the entry.
        declare_expectations(c, ExpectationsParams.from_dict(SPEC_PARAMS), "Again.")
        self.assertEqual([e.description for e in c.capabilities.extensions], ["Again."])

    def test_what_the_watcher_would_refuse_is_refused_here(self) -> None:
        params = ExpectationsParams.from_dict(SPEC_PARAMS)
        with self.assertRaises(ValueError) as e:
            declare_expectations(card("book_shipment", "recheck_booking"), params, "d")
        self.assertIn("lapseSkill 'handle_lapse' is not a skill on the card", str(e.exception))
        with self.assertRaises(ValueError) as e:
            declare_expectations(card("book_shipment", "handle_lapse"), params, "d")
        self.assertIn("recheck_booking", str(e.exception))
        twice = ExpectationsParams(keeps_time=False, lapse_skill="handle_lapse", kinds=[
            ExpectationKind(kind="k", subject_type="s", describes="d", basis="declared")] * 2)
        with self.assertRaises(ValueError):
            declare_expectations(card("handle_lapse"), twice, "d")


class ArtifactTests(unittest.TestCase):
    def test_raised_expectations_are_the_spec_artifact_metadata(self) -> None:
        artifact = Artifact(artifact_id="booking-7f3a", name="Booking confirmation",
                            parts=[Part(text="Booked.")])
        raise_expectations(artifact, [manifest()])
        wire = json_format.MessageToDict(artifact)
        self.assertEqual(wire["extensions"], [URI])
        self.assertEqual(wire["metadata"], {URI: {"expectations": [booking_expectations()[0]]}})


class LapseTaskTests(unittest.TestCase):
    def test_the_spec_lapse_message_reads_as_a_lapse_task(self) -> None:
        message = json_format.ParseDict(SPEC_MESSAGE, Message())
        task = read_lapse_task(message)
        assert task is not None
        self.assertEqual((task.kind, task.how, task.subject.id),
                         ("shipment.manifest", "skipped", "PA-2026-0901"))
        self.assertEqual(task.due_at, datetime(2026, 9, 10, 20, 15, tzinfo=timezone.utc))
        self.assertEqual(task.origin_task_id, "task-booking-7f3a")
        self.assertEqual(task.context_id, "ctx-northgate-sep")
        self.assertTrue(task.text.startswith("PA-2026-0901 departed"))
        # Through a protobuf Struct, lineage 0 came back as 0.0 and is read as 0.
        self.assertEqual(task.lapse.lineage, 0)
        successor = task.successor(due_at="2026-09-11T20:15:00Z", fact_key="m:PA-2026-0901",
                                   basis="observed")
        self.assertEqual((successor.expectation_id, successor.supersedes),
                         ("exp-01J8Q0MANIFEST.r1", "exp-01J8Q0MANIFEST"))

    def test_a_task_is_read_through_its_history_and_an_ordinary_message_is_none(self) -> None:
        plain = Message(message_id="m-1", parts=[Part(text="book shipment=PA-1")])
        self.assertIsNone(read_lapse_task(plain))
        self.assertIsNone(read_lapse_task(None))
        lapse = json_format.ParseDict(SPEC_MESSAGE, Message())
        found = read_lapse_task(Task(id="t-2", history=[lapse, plain]))
        assert found is not None
        self.assertEqual(found.expectation_id, "exp-01J8Q0MANIFEST")


class PushTests(unittest.TestCase):
    def test_the_watcher_is_added_once_beside_the_callers_push_config(self) -> None:
        async def run() -> list[tuple[str, str, str]]:
            store = InMemoryPushNotificationConfigStore()
            ctx = ServerCallContext()
            push = "http://127.0.0.1:8080/v1/agents/booking/push"
            await store.set_info("t-1", watcher_push_config("http://client/hook", "c", config_id="caller"), ctx)
            self.assertTrue(await register_watcher_push(store, "t-1", ctx, push, "push-token"))
            self.assertFalse(await register_watcher_push(store, "t-1", ctx, push, "push-token"))
            return sorted((c.id, c.url, c.token) for c in await store.get_info("t-1", ctx))

        self.assertEqual(asyncio.run(run()), [
            ("caller", "http://client/hook", "c"),
            ("watcher", "http://127.0.0.1:8080/v1/agents/booking/push", "push-token"),
        ])
        with self.assertRaises(ValueError):
            watcher_push_config("ftp://x", "t")
        with self.assertRaises(ValueError):
            watcher_push_config("http://x", "")


if __name__ == "__main__":
    unittest.main()
