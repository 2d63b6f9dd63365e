"""The kit over the official A2A Python SDK (`a2a-sdk` 1.x, protobuf types): declare the
extension on an `AgentCard`, raise expectations on an `Artifact`, read a lapse task from an
incoming `Message` or `Task`, and register the watcher as a task's push target.

Needs `a2a-sdk` (`pip install "a2a-watcher-kit[sdk]"`); the rest of the kit does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from a2a.server.agent_execution import RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore
from a2a.types import AgentCard, AgentExtension, Artifact, Message, Task, TaskPushNotificationConfig
from google.protobuf import json_format

from .metadata import URI, expectations_metadata, lapse_from_metadata, parse_instant
from .models import Expectation, ExpectationsParams, Lapse, LapseKind, Matcher, Subject

__all__ = [
    "LapseTask",
    "declare_expectations",
    "expectations_extension",
    "is_activated",
    "raise_expectations",
    "read_lapse_task",
    "register_watcher_push",
    "watcher_push_config",
]

WATCHER_PUSH_ID = "watcher"
"""The id of the push config [`register_watcher_push`] adds: its own, so that it neither replaces
nor is replaced by a push config the caller gave."""


def expectations_extension(params: ExpectationsParams, description: str) -> AgentExtension:
    """The card's `AgentExtension` entry for this extension (§6.1): `uri` the extension's URI,
    `required` false, `params` the declaration. `description` says, in a person's words, what the
    agent states about the future."""
    return AgentExtension(uri=URI, description=description, required=False,
                          params=params.to_dict())


def declare_expectations(card: AgentCard, params: ExpectationsParams, description: str) -> AgentCard:
    """Declares the extension on `card` (in place, and returns it): replaces an entry with the
    same URI, or adds one to `capabilities.extensions`.

    Raises `ValueError` when the watcher would refuse the card (`a2a-watcher validate card`):
    `lapse_skill` names no skill on the card, a kind is declared twice, or a kind's `skills`
    names a skill the card does not have. Declare after the card's skills are set.
    """
    skills = {s.id for s in card.skills}
    if params.lapse_skill not in skills:
        raise ValueError(f"lapseSkill {params.lapse_skill!r} is not a skill on the card "
                         f"(skills: {', '.join(sorted(skills)) or 'none'})")
    kinds = [k.kind for k in params.kinds]
    twice = sorted({k for k in kinds if kinds.count(k) > 1})
    if twice:
        raise ValueError(f"kind {', '.join(twice)} is declared twice")
    for k in params.kinds:
        unknown = sorted(set(k.skills or []) - skills)
        if unknown:
            raise ValueError(f"kind {k.kind!r} names skills the card does not have: "
                             f"{', '.join(unknown)}")
    entry = expectations_extension(params, description)
    kept = [e for e in card.capabilities.extensions if e.uri != URI]
    del card.capabilities.extensions[:]
    card.capabilities.extensions.extend([*kept, entry])
    return card


def is_activated(ctx: RequestContext) -> bool:
    """Whether the caller activated the extension (`A2A-Extensions`, §7): an agent raises
    expectations only then."""
    return URI in ctx.requested_extensions


def raise_expectations(artifact: Artifact, expectations: Iterable[Expectation]) -> Artifact:
    """Puts `expectations` in `artifact.metadata[URI].expectations` and the URI in its
    `extensions` (§8), in place; returns `artifact`. Raises `ValueError` for none, or for an
    `expectationId` given twice. With `TaskUpdater.add_artifact`, pass
    `metadata=expectations_metadata(...)` and `extensions=[URI]` instead."""
    artifact.metadata.update(expectations_metadata(expectations))
    if URI not in artifact.extensions:
        artifact.extensions.append(URI)
    return artifact


@dataclass(frozen=True)
class LapseTask:
    """What a lapse task asks of the agent (§10.1): the lapse block, and where it came from.

    The agent's `lapse_skill` decides what the lapse means (§10.2): cancel or fail the origin
    task, propose an action, ask a person, extend it (a new expectation with `supersedes`, see
    [`successor`]) or complete saying why nothing is needed.
    """

    lapse: Lapse
    """The lapse block, as the watcher sent it."""
    origin_task_ids: tuple[str, ...]
    """`referenceTaskIds`: the task that raised the expectation first."""
    context_id: str
    """The origin task's context, which the lapse task shares."""
    message_id: str
    """`lapse:{expectationId}:{lapse}:{dueAt}`: the same for a repeat of the same lapse."""
    text: str
    """The watcher's statement of the lapse, in a person's words."""

    @property
    def expectation_id(self) -> str:
        """The lapsed expectation."""
        return self.lapse.expectation_id

    @property
    def kind(self) -> str:
        """The expectation's kind, as declared on the card."""
        return self.lapse.kind

    @property
    def subject(self) -> Subject:
        """What the expectation is about."""
        return self.lapse.subject

    @property
    def how(self) -> LapseKind:
        """`overdue`, `skipped` or `stalled` (§9.1)."""
        return self.lapse.lapse

    @property
    def expects(self) -> str:
        """What was expected, in the agent's own words when it raised it."""
        return self.lapse.expects

    @property
    def due_at(self) -> datetime:
        """The due time at the moment of lapse (UTC): the current one, re-anchored or not."""
        return parse_instant(self.lapse.due_at)

    @property
    def lapsed_at(self) -> datetime:
        """When the watcher determined the lapse (UTC)."""
        return parse_instant(self.lapse.lapsed_at)

    @property
    def origin_task_id(self) -> str | None:
        """The task that raised the expectation (the first reference), if the message names one."""
        return self.origin_task_ids[0] if self.origin_task_ids else None

    def successor(self, *, expectation_id: str | None = None, due_at: str, grace: str | None = None,
                  fact_key: str, basis: str, expects: str | None = None) -> Expectation:
        """A new expectation that gives the lapsed one more time (§10.3): same kind and subject,
        `supersedes` the lapsed one; its id defaults to `{expectationId}.r{lineage + 1}`. The
        watcher refuses one beyond its lineage bound (three by default)."""
        return Expectation(
            expectation_id=expectation_id or f"{self.expectation_id}.r{self.lapse.lineage + 1}",
            kind=self.kind, subject=self.subject, expects=expects or self.expects,
            satisfied_by=Matcher(fact_key=fact_key), due_at=due_at, grace=grace, basis=basis,
            supersedes=self.expectation_id,
        )


def read_lapse_task(incoming: Message | Task | None) -> LapseTask | None:
    """The lapse task in an incoming `Message` (a `RequestContext.message`) or a `Task` (the
    first message of its history that carries one), or `None` when it is not a lapse task.

    Raises `ModelError` naming the member when a lapse block is there but breaks the schema.
    """
    if incoming is None:
        return None
    messages = list(incoming.history) if isinstance(incoming, Task) else [incoming]
    for message in messages:
        metadata = json_format.MessageToDict(message.metadata) if message.HasField("metadata") else {}
        lapse = lapse_from_metadata(metadata)
        if lapse is None:
            continue
        text = " ".join(p.text for p in message.parts if p.HasField("text"))
        return LapseTask(lapse=lapse, origin_task_ids=tuple(message.reference_task_ids),
                         context_id=message.context_id, message_id=message.message_id, text=text)
    return None


def watcher_push_config(push_url: str, token: str, *, config_id: str = WATCHER_PUSH_ID) -> TaskPushNotificationConfig:
    """A push config naming the watcher's push route for this agent
    (`{watcher}/v1/agents/{agentId}/push`) with the agent's `push_token` from the watcher's
    configuration (sent as `X-A2A-Notification-Token`). Raises `ValueError` for a URL that is not
    http(s) or an empty token."""
    if not push_url.startswith(("http://", "https://")):
        raise ValueError(f"push URL {push_url!r} is not an http(s) URL")
    if not token:
        raise ValueError("the watcher refuses a push without its push_token")
    return TaskPushNotificationConfig(id=config_id, url=push_url, token=token)


async def register_watcher_push(store: PushNotificationConfigStore, task_id: str,
                                context: ServerCallContext, push_url: str, token: str) -> bool:
    """Makes the task `task_id` push its events to the watcher as well as to whatever push
    config its caller gave (call it when a task starts, from `AgentExecutor.execute`, with
    `ctx.task_id` and `ctx.call_context`). `False`, changing nothing, when the task already
    pushes to `push_url` (a lapse task from a watcher that names itself, for instance), so the
    watcher is not sent every event twice."""
    given = await store.get_info(task_id, context) or []
    if any(c.url == push_url for c in given):
        return False
    await store.set_info(task_id, watcher_push_config(push_url, token), context)
    return True
