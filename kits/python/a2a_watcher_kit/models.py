"""The wire types of the Expectations extension and the watcher's API, as dataclasses.

generated from docs/schemas and docs/openapi.json by kits/python/generate.py; do not edit.
"""
# ruff: noqa: E501

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ._runtime import Field, Model, Spec

__all__ = [
    "Anchor",
    "ContractRaisedBy",
    "DecidedBy",
    "DeliveryState",
    "Expectation",
    "ExpectationKind",
    "ExpectationRecord",
    "ExpectationsParams",
    "Fact",
    "FactResult",
    "FactView",
    "FactsOutcome",
    "Lapse",
    "LapseEntry",
    "LapseKind",
    "LapseView",
    "LapsesPage",
    "LearnableDescriptor",
    "Lesson",
    "LessonField",
    "LessonResult",
    "Matcher",
    "Problem",
    "RetryAnswer",
    "RetryRequest",
    "Satisfaction",
    "SkippedId",
    "Status",
    "Subject",
    "SubjectView",
    "TeachBlock",
    "Withdrawal",
    "DECIDED_BY_VALUES",
    "DELIVERY_STATE_VALUES",
    "LAPSE_KIND_VALUES",
    "STATUS_VALUES",
]


@dataclass(kw_only=True)
class Anchor(Model):
    """
    `{ "expectationId", "offset" }`: the current due time is the anchor's satisfaction
    `observedAt` plus `offset` (expectations-v1 §9.3).

    From docs/schemas/Expectation.json.
    """

    expectation_id: str
    """The expectation whose satisfaction fixes this one's due time."""
    offset: str
    """Added to the anchor's `observedAt`."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('expectation_id', 'expectationId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('offset', 'offset', True, Spec("str", pattern='^P(?:[0-9]+(?:[.,][0-9]{1,9})?W|(?=[0-9]|T[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?H)?(?:[0-9]+(?:[.,][0-9]{1,9})?M)?(?:[0-9]+(?:[.,][0-9]{1,9})?S)?)?)\\Z', hint='an ISO 8601 duration, such as PT2H or P1DT12H')),
    )


@dataclass(kw_only=True)
class Matcher(Model):
    """
    `satisfiedBy`: `{ "factKey": string }`, matched exactly (expectations-v1 §8, §9.2).

    From docs/schemas/Expectation.json.
    """

    fact_key: str
    """The key a fact must carry to satisfy the expectation."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('fact_key', 'factKey', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
    )


@dataclass(kw_only=True)
class Subject(Model):
    """
    A subject: `{ "type": string, "id": string }`, opaque to the watcher (expectations-v1 §5).

    From docs/schemas/Expectation.json.
    """

    type: str
    """The kind of thing, e.g. `shipment`."""
    id: str
    """Its identifier, e.g. `PA-2026-0901`."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('type', 'type', True, Spec("str")),
        Field('id', 'id', True, Spec("str")),
    )


@dataclass(kw_only=True)
class Expectation(Model):
    """
    An expectation as an agent raises it in metadata[URI].expectations (expectations-v1 §8). The watcher also refuses a horizon earlier than dueAt and a dueAt + grace beyond 9999-12-31T23:59:59.999999999Z.

    From docs/schemas/Expectation.json.
    """

    expectation_id: str
    """Agent-generated, unique among everything the agent ever raised."""
    kind: str
    """A kind declared on the agent's card (§6.2)."""
    subject: Subject
    """What the expectation is about."""
    expects: str
    """What is expected, in a person's words."""
    satisfied_by: Matcher
    """The fact key that satisfies it."""
    due_at: str
    """The due time as raised (UTC); for an anchored expectation, the projection."""
    grace: str | None = None
    """Wait after `dueAt` before an overdue lapse; absent means zero."""
    anchor: Anchor | None = None
    """Re-anchoring (§9.3)."""
    after: list[str] | None = None
    """Expectations on the same subject expected to be satisfied before this one (§9.1)."""
    horizon: str | None = None
    """After this instant, silence on the subject is a `stalled` lapse."""
    basis: str
    """`observed`, `contract`, `declared`, or an unknown value kept as given (§15)."""
    supersedes: str | None = None
    """An open expectation this one replaces (§10.3)."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('expectation_id', 'expectationId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('kind', 'kind', True, Spec("str")),
        Field('subject', 'subject', True, Spec("model", model=Subject)),
        Field('expects', 'expects', True, Spec("str")),
        Field('satisfied_by', 'satisfiedBy', True, Spec("model", model=Matcher)),
        Field('due_at', 'dueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('grace', 'grace', False, Spec("str", nullable=True, pattern='^P(?:[0-9]+(?:[.,][0-9]{1,9})?W|(?=[0-9]|T[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?H)?(?:[0-9]+(?:[.,][0-9]{1,9})?M)?(?:[0-9]+(?:[.,][0-9]{1,9})?S)?)?)\\Z', hint='an ISO 8601 duration, such as PT2H or P1DT12H')),
        Field('anchor', 'anchor', False, Spec("model", model=Anchor, nullable=True)),
        Field('after', 'after', False, Spec("list", items=Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z'))),
        Field('horizon', 'horizon', False, Spec("str", nullable=True, pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('basis', 'basis', True, Spec("str")),
        Field('supersedes', 'supersedes', False, Spec("str", nullable=True, min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
    )


@dataclass(kw_only=True)
class ExpectationKind(Model):
    """
    One class of expectation an agent declares on its card (expectations-v1 §6.2).

    From docs/schemas/ExpectationKind.json.
    """

    kind: str
    """Identifier of the class of expectation, unique within the declaration."""
    subject_type: str
    """What kind of thing it is about."""
    describes: str
    """What is expected, in a person's words."""
    basis: str
    """`observed`, `contract`, `declared`, or an unknown value kept as given (§15)."""
    skills: list[str] | None = None
    """Skill ids whose tasks may raise it; `None` means any."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('kind', 'kind', True, Spec("str")),
        Field('subject_type', 'subjectType', True, Spec("str")),
        Field('describes', 'describes', True, Spec("str")),
        Field('basis', 'basis', True, Spec("str")),
        Field('skills', 'skills', False, Spec("list", nullable=True, items=Spec("str"))),
    )


@dataclass(kw_only=True)
class ContractRaisedBy(Model):
    """
    `raisedBy` in the contract form: `{ "taskId", "contextId"? }`.

    From docs/schemas/ExpectationRecord.json.
    """

    task_id: str
    """The task that raised the expectation."""
    context_id: str | None = None
    """That task's contextId; absent when the agent gave none."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('task_id', 'taskId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('context_id', 'contextId', False, Spec("str", nullable=True, min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
    )


LapseKind = Literal["overdue", "skipped", "stalled"]
"""The three ways an expectation lapses (expectations-v1 §9.1)."""
#: - `overdue`: `dueAt + grace` passed with no matching fact.
#: - `skipped`: A later step in `after` order was satisfied while this one was open.
#: - `stalled`: The horizon passed with silence on the subject.
LAPSE_KIND_VALUES: tuple[LapseKind, ...] = ('overdue', 'skipped', 'stalled')


@dataclass(kw_only=True)
class LapseEntry(Model):
    """
    One lapse of an expectation: at most one per kind (semantics.md, "States").

    From docs/schemas/ExpectationRecord.json.
    """

    lapse: LapseKind
    """Which lapse."""
    lapsed_at: str
    """The watcher's clock when it determined the lapse."""
    message_id: str
    """`lapse:{expectationId}:{lapse}:{dueAt}` (semantics.md, "The lapse task")."""
    due_at: str
    """The current due time at the moment of lapse."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('lapse', 'lapse', True, Spec("enum", values=('overdue', 'skipped', 'stalled'))),
        Field('lapsed_at', 'lapsedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('message_id', 'messageId', True, Spec("str")),
        Field('due_at', 'dueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
    )


@dataclass(kw_only=True)
class Satisfaction(Model):
    """
    How the expectation was satisfied (expectations-v1 §9.2; replay.md).

    From docs/schemas/ExpectationRecord.json.
    """

    fact_key: str
    """The fact's key."""
    source: str
    """The authenticated reporter (§13.5)."""
    satisfied_at: str
    """Receipt instant on the watcher's clock."""
    observed_at: str
    """The effective `observedAt`: the claimed one, or the receipt time if it claimed later."""
    claimed_observed_at: str | None = None
    """
    `observedAt` exactly as the fact gave it, whenever that differs from the effective one:
    a claim later than receipt, a zero-value timestamp read as absent, a leap second
    (semantics.md "Time"; replay.md).
    """
    late: bool
    """`observedAt` after the current `dueAt`."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('fact_key', 'factKey', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('source', 'source', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('satisfied_at', 'satisfiedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('observed_at', 'observedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('claimed_observed_at', 'claimedObservedAt', False, Spec("str", nullable=True)),
        Field('late', 'late', True, Spec("bool")),
    )


Status = Literal["open", "satisfied", "withdrawn"]
"""
`open`, `satisfied` or `withdrawn` (semantics.md, "States"). A lapse does not close an
expectation; satisfaction and withdrawal are final.
"""
#: - `open`: Neither satisfied nor withdrawn (it may have lapsed).
#: - `satisfied`: A matching fact arrived.
#: - `withdrawn`: Closed without satisfaction or lapse (§8.1).
STATUS_VALUES: tuple[Status, ...] = ('open', 'satisfied', 'withdrawn')


@dataclass(kw_only=True)
class Withdrawal(Model):
    """
    `{ "withdrawnAt", "reason" }` (expectations-v1 §8.1).

    From docs/schemas/ExpectationRecord.json.
    """

    withdrawn_at: str
    """When the watcher withdrew it."""
    reason: str
    """Why, in words that name the cause."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('withdrawn_at', 'withdrawnAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('reason', 'reason', True, Spec("str")),
    )


@dataclass(kw_only=True)
class ExpectationRecord(Model):
    """
    The watcher's record of one expectation as its routes show it (expectations-v1 Appendix A; docs/contracts/replay.md "record").

    From docs/schemas/ExpectationRecord.json.
    """

    expectation_id: str
    """Agent-generated id, unique among everything the agent raised."""
    agent: str
    """The raising agent (its id in the watcher's configuration)."""
    tenant: str
    """The agent's tenant."""
    kind: str
    """A kind declared on the agent's card (§6.2)."""
    subject: Subject
    """What the expectation is about."""
    expects: str
    """What is expected, in a person's words."""
    satisfied_by: Matcher
    """The fact key that satisfies it."""
    status: Status
    """`open`, `satisfied` or `withdrawn`; a lapse does not close an expectation."""
    projected_due_at: str
    """`dueAt` as raised (UTC)."""
    due_at: str
    """The current due time (UTC); differs from `projectedDueAt` once re-anchored (§9.3)."""
    grace: str | None = None
    """Wait after `dueAt` before an overdue lapse."""
    anchor: Anchor | None = None
    """Re-anchoring (§9.3)."""
    after: list[str] | None = None
    """Expectations on the subject expected to be satisfied before this one (§9.1)."""
    horizon: str | None = None
    """After this instant, silence on the subject is a `stalled` lapse."""
    basis: str
    """`observed`, `contract`, `declared`, or another value kept as given (§13.3, §15)."""
    supersedes: str | None = None
    """The expectation this one replaced (§10.3)."""
    lineage: int
    """How many superseded ancestors it has (§10.3)."""
    raised_at: str
    """When the watcher recorded it (UTC)."""
    raised_by: ContractRaisedBy
    """The origin task."""
    satisfaction: Satisfaction | None = None
    """How it was satisfied; `null` until then."""
    lapses: list[LapseEntry]
    """Its lapses in the order they happened, at most one per kind."""
    withdrawal: Withdrawal | None = None
    """`{ withdrawnAt, reason }` once withdrawn (§8.1)."""
    superseded_by: str | None = None
    """The expectation that superseded this one."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('expectation_id', 'expectationId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('agent', 'agent', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('tenant', 'tenant', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('kind', 'kind', True, Spec("str")),
        Field('subject', 'subject', True, Spec("model", model=Subject)),
        Field('expects', 'expects', True, Spec("str")),
        Field('satisfied_by', 'satisfiedBy', True, Spec("model", model=Matcher)),
        Field('status', 'status', True, Spec("enum", values=('open', 'satisfied', 'withdrawn'))),
        Field('projected_due_at', 'projectedDueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('due_at', 'dueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('grace', 'grace', False, Spec("str", nullable=True, pattern='^P(?:[0-9]+(?:[.,][0-9]{1,9})?W|(?=[0-9]|T[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?H)?(?:[0-9]+(?:[.,][0-9]{1,9})?M)?(?:[0-9]+(?:[.,][0-9]{1,9})?S)?)?)\\Z', hint='an ISO 8601 duration, such as PT2H or P1DT12H')),
        Field('anchor', 'anchor', False, Spec("model", model=Anchor, nullable=True)),
        Field('after', 'after', False, Spec("list", nullable=True, items=Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z'))),
        Field('horizon', 'horizon', False, Spec("str", nullable=True, pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('basis', 'basis', True, Spec("str")),
        Field('supersedes', 'supersedes', False, Spec("str", nullable=True, min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('lineage', 'lineage', True, Spec("int", minimum=0)),
        Field('raised_at', 'raisedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('raised_by', 'raisedBy', True, Spec("model", model=ContractRaisedBy)),
        Field('satisfaction', 'satisfaction', False, Spec("model", model=Satisfaction, nullable=True)),
        Field('lapses', 'lapses', True, Spec("list", items=Spec("model", model=LapseEntry))),
        Field('withdrawal', 'withdrawal', False, Spec("model", model=Withdrawal, nullable=True)),
        Field('superseded_by', 'supersededBy', False, Spec("str", nullable=True, min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
    )


@dataclass(kw_only=True)
class ExpectationsParams(Model):
    """
    The extension's params on an Agent Card (expectations-v1 §6.1); lapseSkill must also name a skill on the card and kinds must be unique, which `a2a-watcher validate card` checks.

    From docs/schemas/ExpectationsParams.json.
    """

    keeps_time: bool
    """Whether the agent runs its own clock (§12.2)."""
    lapse_skill: str
    """The skill a lapse task invokes; names a skill on the card."""
    kinds: list[ExpectationKind]
    """What the agent expects, by kind."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('keeps_time', 'keepsTime', True, Spec("bool")),
        Field('lapse_skill', 'lapseSkill', True, Spec("str")),
        Field('kinds', 'kinds', True, Spec("list", items=Spec("model", model=ExpectationKind))),
    )


@dataclass(kw_only=True)
class Fact(Model):
    """
    A fact as a reporter posts it (expectations-v1 §9.2); the watcher records the authenticated reporter as its source (§13.5).

    From docs/schemas/Fact.json.
    """

    fact_key: str
    """Matched exactly against an expectation's `satisfiedBy.factKey`."""
    observed_at: str
    """
    When the event happened (RFC 3339 with an offset); a time later than receipt is read as
    the receipt time.
    """
    source: str | None = None
    """Who reports it; informative only, the watcher records the authenticated reporter."""
    subject: Subject | None = None
    """The subject it concerns, when the reporter says."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('fact_key', 'factKey', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('observed_at', 'observedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('source', 'source', False, Spec("str", nullable=True)),
        Field('subject', 'subject', False, Spec("model", model=Subject, nullable=True)),
    )


@dataclass(kw_only=True)
class Lapse(Model):
    """
    The lapse block in a lapse task's message.metadata[URI].lapse (expectations-v1 §10.1).

    From docs/schemas/Lapse.json.
    """

    expectation_id: str
    """Copied from the expectation."""
    kind: str
    """Copied from the expectation."""
    subject: Subject
    """Copied from the expectation."""
    expects: str
    """Copied from the expectation."""
    lapse: LapseKind
    """`overdue`, `skipped` or `stalled`."""
    projected_due_at: str
    """`dueAt` as raised."""
    due_at: str
    """The current due time at the moment of lapse."""
    lapsed_at: str
    """The watcher's clock when it determined the lapse."""
    last_fact_at: str | None = None
    """Greatest `observedAt` of facts on the subject received since raising; absent if none."""
    satisfied_after: list[str] | None = None
    """For `skipped`: the later expectations whose satisfaction revealed the gap."""
    lineage: int
    """Superseded ancestors."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('expectation_id', 'expectationId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('kind', 'kind', True, Spec("str")),
        Field('subject', 'subject', True, Spec("model", model=Subject)),
        Field('expects', 'expects', True, Spec("str")),
        Field('lapse', 'lapse', True, Spec("enum", values=('overdue', 'skipped', 'stalled'))),
        Field('projected_due_at', 'projectedDueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('due_at', 'dueAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('lapsed_at', 'lapsedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('last_fact_at', 'lastFactAt', False, Spec("str", nullable=True, pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('satisfied_after', 'satisfiedAfter', False, Spec("list", items=Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z'))),
        Field('lineage', 'lineage', True, Spec("int", minimum=0)),
    )


DecidedBy = Literal["rules", "model", "hybrid"]
"""How a learnable decides (§6.2 `decidedBy`)."""
#: - `rules`: Deterministic rules: a taught value takes effect exactly.
#: - `model`: A model: a taught value is one example among many.
#: - `hybrid`: Both.
DECIDED_BY_VALUES: tuple[DecidedBy, ...] = ('rules', 'model', 'hybrid')


@dataclass(kw_only=True)
class LessonField(Model):
    """
    LessonField

    From docs/schemas/LearnableDescriptor.json.
    """

    name: str
    label: str
    kind: str
    choices: list[str] | None = None
    default: str | None = None
    help: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('name', 'name', True, Spec("str")),
        Field('label', 'label', True, Spec("str")),
        Field('kind', 'kind', True, Spec("str")),
        Field('choices', 'choices', False, Spec("list", nullable=True, items=Spec("str"))),
        Field('default', 'default', False, Spec("str", nullable=True)),
        Field('help', 'help', False, Spec("str", nullable=True)),
    )


@dataclass(kw_only=True)
class LearnableDescriptor(Model):
    """
    One entry of an Agent Card's params.learnables: what a person can teach and how (learnables-v1 §6.2).

    From docs/schemas/LearnableDescriptor.json.
    """

    collection: str
    """The collection's name."""
    entry: str
    """Singular noun for one entry."""
    skills: list[str] | None = None
    """Skill ids affected; absent means all."""
    teaches: str
    """What a person is deciding."""
    how: str
    """How the agent decides today, from the learnable."""
    decided_by: DecidedBy
    """From the learnable."""
    lesson_fields: list[LessonField]
    """From the learnable."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('collection', 'collection', True, Spec("str")),
        Field('entry', 'entry', True, Spec("str")),
        Field('skills', 'skills', False, Spec("list", nullable=True, items=Spec("str"))),
        Field('teaches', 'teaches', True, Spec("str")),
        Field('how', 'how', True, Spec("str")),
        Field('decided_by', 'decidedBy', True, Spec("enum", values=('rules', 'model', 'hybrid'))),
        Field('lesson_fields', 'lessonFields', True, Spec("list", items=Spec("model", model=LessonField))),
    )


@dataclass(kw_only=True)
class Lesson(Model):
    """
    One human-supplied value addressed to one entry, with its author (learnables-v1 §9); the value is judged by the learnable.

    From docs/schemas/Lesson.json.
    """

    collection: str
    """The collection to write into, e.g. `customers`."""
    entry: str
    """The entry to write into, e.g. `northgate`."""
    value: Any
    """The lesson value: opaque to everything but the learnable (§9)."""
    taught_by: str
    """Who taught it: an identified human (§9, §13.4)."""
    reason: str | None = None
    """Why, in the person's words."""
    expires_at: str | None = None
    """
    When the knowledge should be looked at again: an RFC 3339 instant with an offset
    (`2027-03-01T00:00:00Z`), later than the time the lesson is taught, read as every instant
    the watcher reads (semantics.md "Time": up to `9999-12-31T23:59:59.999999999Z`, a leap
    second the last nanosecond of its minute). Optional (an optional field is not breaking,
    §15); recorded on the version, and the watcher raises a `lesson.review` expectation due
    then (expectations-v1 §16).
    """
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('collection', 'collection', True, Spec("str")),
        Field('entry', 'entry', True, Spec("str")),
        Field('value', 'value', True, Spec("any")),
        Field('taught_by', 'taughtBy', True, Spec("str")),
        Field('reason', 'reason', False, Spec("str", nullable=True)),
        Field('expires_at', 'expiresAt', False, Spec("str", nullable=True, pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
    )


@dataclass(kw_only=True)
class LessonResult(Model):
    """
    What writing a lesson answers (learnables-v1 §10.4).

    From docs/schemas/LessonResult.json.
    """

    learned: bool
    """Whether anything changed."""
    describes: str
    """What was learned, phrased by the learnable."""
    definition_version: int
    """The version after the write (the active one when nothing changed)."""
    version_id: str | None = None
    """Content address of that version."""
    previous_version_id: str | None = None
    """Content address of the version it replaced."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('learned', 'learned', True, Spec("bool")),
        Field('describes', 'describes', True, Spec("str")),
        Field('definition_version', 'definitionVersion', True, Spec("int", minimum=0)),
        Field('version_id', 'versionId', False, Spec("str", nullable=True, min_length=1)),
        Field('previous_version_id', 'previousVersionId', False, Spec("str", nullable=True, min_length=1)),
    )


@dataclass(kw_only=True)
class TeachBlock(Model):
    """
    The teach block in an input-required question's metadata[URI].teach (learnables-v1 §8); suggested keys must be lesson field names.

    From docs/schemas/TeachBlock.json.
    """

    collection: str
    entries: list[str]
    suggested: dict[str, Any] | None = None
    suggestion_label: str | None = None
    lesson_fields: list[LessonField] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('collection', 'collection', True, Spec("str")),
        Field('entries', 'entries', True, Spec("list", items=Spec("str"))),
        Field('suggested', 'suggested', False, Spec("map", nullable=True)),
        Field('suggestion_label', 'suggestionLabel', False, Spec("str", nullable=True)),
        Field('lesson_fields', 'lessonFields', False, Spec("list", nullable=True, items=Spec("model", model=LessonField))),
    )


@dataclass(kw_only=True)
class FactResult(Model):
    """
    One fact's result: `{ "factKey", "satisfied": [expectationId] }`.

    From docs/openapi.json.
    """

    fact_key: str
    """The fact's key."""
    satisfied: list[str]
    """The expectations it satisfied."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('fact_key', 'factKey', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('satisfied', 'satisfied', True, Spec("list", items=Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z'))),
    )


@dataclass(kw_only=True)
class FactsOutcome(Model):
    """
    What reported facts did, as `POST /v1/facts` answers it:
    `{ "results": [{ "factKey", "satisfied" }], "alreadyRecorded"?, "warnings"? }`.

    From docs/openapi.json.
    """

    results: list[FactResult]
    """One per fact recorded, in order."""
    already_recorded: list[str] | None = None
    """
    Keys of facts received before exactly (key, source, `observedAt`: fact identity, §9.1),
    recorded once, so these changed nothing; sorted, each once.
    """
    warnings: list[str] | None = None
    """
    What the request ignored (members a fact does not define), kept on the record under the
    source ([`source_key`]).
    """
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('results', 'results', True, Spec("list", items=Spec("model", model=FactResult))),
        Field('already_recorded', 'alreadyRecorded', False, Spec("list", items=Spec("str"))),
        Field('warnings', 'warnings', False, Spec("list", items=Spec("str"))),
    )


DeliveryState = Literal["queued", "sent", "failed", "withdrawn", "unaddressed"]
"""
Delivery state of a lapse task (serve.md, `GET /v1/lapses`): `queued`, `sent`, `failed`,
`withdrawn` or `unaddressed`.

The one list of the states the lapse list shows: the answer's `delivery` member, the values
`GET /v1/lapses?delivery=` accepts, their schema in `docs/openapi.json` (generated from this
type) and the values of `a2a-watcher lapses --delivery` all come from it.
"""
#: - `queued`: Waiting to be (re)sent.
#: - `sent`: The agent answered with a JSON-RPC `result`; never sent again.
#: - `failed`: A permanent error or the attempts ran out.
#: - `withdrawn`: Never sent, and never will be: before it was sent, the origin task was found ended
#: - `unaddressed`: Never sent: no agent receives it. A lapse of an expectation the Learnables authority
DELIVERY_STATE_VALUES: tuple[DeliveryState, ...] = ('queued', 'sent', 'failed', 'withdrawn', 'unaddressed')


@dataclass(kw_only=True)
class LapseView(Model):
    """
    One lapse task as operators read it (`GET /v1/lapses`, `a2a-watcher lapses`, with or without
    `--url`): `{ "messageId", "expectationId", "lapse", "lapsedAt", "agent", "delivery",
    "attempts", "taskId"?, "taskState"?, "answeredWithMessage"?, "needsPerson"?,
    "retryingSince"?, "lastError"? }` (UTC instants). One type, so the route and the command
    answer alike.

    From docs/openapi.json.
    """

    message_id: str
    """The lapse task's deterministic `messageId`."""
    expectation_id: str
    """The expectation that lapsed."""
    lapse: LapseKind
    """`overdue`, `skipped` or `stalled`."""
    lapsed_at: str
    """When the watcher determined the lapse."""
    agent: str
    """The agent the lapse task is for."""
    delivery: DeliveryState
    """
    `queued`, `sent`, `failed`, `withdrawn` or `unaddressed`: every value
    `GET /v1/lapses?delivery=` filters by.
    """
    attempts: int
    """Send attempts so far."""
    task_id: str | None = None
    """The agent's task for it, once known."""
    task_state: str | None = None
    """That task's last known state (a `TaskState` name)."""
    answered_with_message: bool | None = None
    """The agent answered with a Message rather than a Task."""
    needs_person: bool | None = None
    """
    expectations-v1 §13.1: the lapse task waits on a person at the agent
    (`TASK_STATE_INPUT_REQUIRED` or `TASK_STATE_AUTH_REQUIRED`); the watcher never answers.
    """
    retrying_since: str | None = None
    """Since when its sends fail, while they are retried."""
    last_error: str | None = None
    """The last send's error."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('message_id', 'messageId', True, Spec("str")),
        Field('expectation_id', 'expectationId', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('lapse', 'lapse', True, Spec("enum", values=('overdue', 'skipped', 'stalled'))),
        Field('lapsed_at', 'lapsedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('agent', 'agent', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('delivery', 'delivery', True, Spec("enum", values=('queued', 'sent', 'failed', 'withdrawn', 'unaddressed'))),
        Field('attempts', 'attempts', True, Spec("int", minimum=0)),
        Field('task_id', 'taskId', False, Spec("str", nullable=True)),
        Field('task_state', 'taskState', False, Spec("str", nullable=True)),
        Field('answered_with_message', 'answeredWithMessage', False, Spec("bool")),
        Field('needs_person', 'needsPerson', False, Spec("bool")),
        Field('retrying_since', 'retryingSince', False, Spec("str", nullable=True, pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('last_error', 'lastError', False, Spec("str", nullable=True)),
    )


@dataclass(kw_only=True)
class LapsesPage(Model):
    """
    A page of lapse tasks: `{ "lapses": [LapseView], "nextCursor": "…" | null }`.

    From docs/openapi.json.
    """

    lapses: list[LapseView]
    """The page's lapse tasks, in lapse order."""
    next_cursor: str | None
    """Where the next page starts; `null` on the last."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('lapses', 'lapses', True, Spec("list", items=Spec("model", model=LapseView))),
        Field('next_cursor', 'nextCursor', True, Spec("str", nullable=True)),
    )


@dataclass(kw_only=True)
class RetryRequest(Model):
    """
    The body of `POST /v1/lapses/retry`: `{ "agent": "…", "messageIds"?: ["…"] }`, the agent and
    which of its failed lapse tasks to put back in the queue.

    From docs/openapi.json.
    """

    agent: str
    """The registered agent whose failed lapse tasks are put back in the queue."""
    message_ids: list[str] | None = None
    """
    The messageIds to re-queue, 1 to 1,000, each non-empty; absent or `null`: every failed
    lapse task of the agent (as many as one call re-queues, `more` says when others remain).
    """
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('agent', 'agent', True, Spec("str", min_length=1)),
        Field('message_ids', 'messageIds', False, Spec("list", nullable=True, min_items=1, max_items=1000, items=Spec("str", min_length=1))),
    )


@dataclass(kw_only=True)
class SkippedId(Model):
    """
    A messageId that was not re-queued.

    From docs/openapi.json.
    """

    message_id: str
    """The messageId."""
    reason: str
    """Why: `not found` or `queued` / `sent` (its state)."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('message_id', 'messageId', True, Spec("str")),
        Field('reason', 'reason', True, Spec("str")),
    )


@dataclass(kw_only=True)
class RetryAnswer(Model):
    """
    What `POST /v1/lapses/retry` answers: `{ "requeued": n, "messageIds": [...], "skipped":
    [{ "messageId", "reason" }], "more": bool }`.

    From docs/openapi.json.
    """

    requeued: int
    """How many failed lapse tasks were put back in the queue."""
    message_ids: list[str]
    """Their messageIds."""
    skipped: list[SkippedId]
    """messageIds asked for that were not re-queued, with why."""
    more: bool
    """More failed lapse tasks remain than one call re-queues; call again."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('requeued', 'requeued', True, Spec("int", minimum=0)),
        Field('message_ids', 'messageIds', True, Spec("list", items=Spec("str"))),
        Field('skipped', 'skipped', True, Spec("list", items=Spec("model", model=SkippedId))),
        Field('more', 'more', True, Spec("bool")),
    )


@dataclass(kw_only=True)
class FactView(Model):
    """
    A fact on a subject as operators read it: `{ "factKey", "source", "observedAt",
    "receivedAt", "satisfied": [ids], "mapping"?, "claimedObservedAt"? }` (UTC instants).

    From docs/openapi.json.
    """

    fact_key: str
    """The fact's key."""
    source: str
    """Who reported it."""
    observed_at: str
    """When it was observed, as the watcher takes it (semantics.md "Time")."""
    received_at: str
    """When the watcher received it."""
    satisfied: list[str]
    """The expectations it satisfied."""
    mapping: str | None = None
    """The webhook mapping that yielded it, if one did."""
    claimed_observed_at: str | None = None
    """`observedAt` as given, when it differs from the one taken (semantics.md "Time")."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('fact_key', 'factKey', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('source', 'source', True, Spec("str", min_length=1, max_length=512, pattern='^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*\\Z')),
        Field('observed_at', 'observedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('received_at', 'receivedAt', True, Spec("str", pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})\\Z', hint='an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z')),
        Field('satisfied', 'satisfied', True, Spec("list", items=Spec("str"))),
        Field('mapping', 'mapping', False, Spec("str", nullable=True)),
        Field('claimed_observed_at', 'claimedObservedAt', False, Spec("str", nullable=True)),
    )


@dataclass(kw_only=True)
class SubjectView(Model):
    """
    The subject view (contracts/serve.md, `GET /v1/subjects/{type}/{id}`): the subject, every
    ExpectationRecord on it in raising order (contracts/replay.md shape) and its facts in
    receipt order.

    From docs/openapi.json.
    """

    subject: Subject
    """The subject."""
    expectations: list[Any]
    """
    Every ExpectationRecord on it, in raising order, in the contract's shape
    (`ExpectationRecord::to_contract_json`).
    """
    facts: list[FactView]
    """Its facts, in receipt order."""
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('subject', 'subject', True, Spec("model", model=Subject)),
        Field('expectations', 'expectations', True, Spec("list", items=Spec("any"))),
        Field('facts', 'facts', True, Spec("list", items=Spec("model", model=FactView))),
    )


@dataclass(kw_only=True)
class Problem(Model):
    """
    RFC 9457 problem details

    From docs/openapi.json.
    """

    type: str | None = None
    title: str
    status: int
    detail: str
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """Members the schema does not define, kept as given."""

    _fields: ClassVar[tuple[Field, ...]] = (
        Field('type', 'type', False, Spec("str")),
        Field('title', 'title', True, Spec("str")),
        Field('status', 'status', True, Spec("int")),
        Field('detail', 'detail', True, Spec("str")),
    )
