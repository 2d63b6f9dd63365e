"""The extension's places in A2A metadata, as plain JSON (no A2A SDK needed): what an agent puts
in an Artifact's or a status Message's `metadata`, and how a lapse block is read back out of a
lapse task's Message (expectations-v1 §8, §8.1, §9.2, §10.1).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from ._runtime import ModelError
from .models import Expectation, Fact, Lapse

__all__ = [
    "URI",
    "expectations_metadata",
    "facts_metadata",
    "lapse_from_metadata",
    "parse_instant",
    "utc",
    "withdraw_metadata",
]

URI = "https://rsaxb.com/a2a/expectations/v1"
"""The extension's URI: the key of its metadata, the `A2A-Extensions` header value that activates
it (§7) and the `uri` of its card declaration (§6.1)."""


def expectations_metadata(expectations: Iterable[Expectation]) -> dict[str, Any]:
    """`{URI: {"expectations": [...]}}`: the `metadata` of an Artifact (or of the status Message
    that moves a task to input-required, §11) that raises `expectations` (§8).

    Pass it as `metadata=` to a2a-sdk's `TaskUpdater.add_artifact` with `extensions=[URI]`, or
    use `a2a_watcher_kit.sdk.raise_expectations` on an `Artifact`. Raises `ValueError` for an
    empty list or two expectations with one `expectationId` (the watcher refuses both).
    """
    items = list(expectations)
    if not items:
        raise ValueError("no expectations to raise: leave the metadata out instead")
    ids = [e.expectation_id for e in items]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"expectationId {', '.join(twice)} appears twice")
    return {URI: {"expectations": [e.to_dict() for e in items]}}


def withdraw_metadata(expectation_ids: Iterable[str], reason: str) -> dict[str, Any]:
    """`{URI: {"withdraw": [...], "reason": ...}}`: the `metadata` of a later Artifact that
    withdraws expectations this agent raised (§8.1). Raises `ValueError` when `expectation_ids`
    is empty or `reason` is blank."""
    ids = list(expectation_ids)
    if not ids:
        raise ValueError("no expectationId to withdraw")
    if not reason.strip():
        raise ValueError("a withdrawal states its reason")
    return {URI: {"withdraw": ids, "reason": reason}}


def facts_metadata(facts: Iterable[Fact]) -> dict[str, Any]:
    """`{URI: {"facts": [...]}}`: facts an agent reports in an Artifact's metadata (§9.2); the
    watcher records them with the agent as their source."""
    items = list(facts)
    if not items:
        raise ValueError("no facts to report")
    return {URI: {"facts": [f.to_dict() for f in items]}}


def lapse_from_metadata(metadata: Mapping[str, Any] | None) -> Lapse | None:
    """The lapse block of a lapse task's Message `metadata` (`metadata[URI].lapse`, §10.1), or
    `None` when the message carries none (it is not a lapse task).

    Numbers may be floats (a protobuf Struct holds them so); integral ones are read as integers.
    Raises `ModelError` naming the member when the block is there but breaks the schema.
    """
    if not metadata:
        return None
    ours = metadata.get(URI)
    if ours is None:
        return None
    if not isinstance(ours, Mapping):
        raise ModelError(f"metadata[{URI}]: expected an object, got {type(ours).__name__}")
    block = ours.get("lapse")
    if block is None:
        return None
    return Lapse.from_dict(block, path=f"metadata[{URI}].lapse")


def utc(t: datetime) -> str:
    """`t` as the extension writes an instant: UTC, `Z`, whole seconds unless `t` has a fraction
    (then microseconds). Raises `ValueError` for a naive datetime (its zone is unknown)."""
    if t.tzinfo is None:
        raise ValueError("a naive datetime has no zone: give it tzinfo (e.g. timezone.utc)")
    t = t.astimezone(timezone.utc)
    spec = "%Y-%m-%dT%H:%M:%S.%fZ" if t.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return t.strftime(spec)


def parse_instant(text: str) -> datetime:
    """An RFC 3339 instant (`2026-09-10T20:15:00Z`, any offset, up to nine fractional digits) as
    an aware datetime in UTC; digits past microseconds are dropped. Raises `ValueError` naming the
    text when it is not one."""
    m = re.fullmatch(
        r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})", text
    )
    if m is None:
        raise ValueError(f"{text!r} is not an RFC 3339 instant such as 2026-09-10T20:15:00Z")
    date, clock, fraction, offset = m.groups()
    micro = (fraction or "").ljust(6, "0")[:6]
    zone = "+00:00" if offset in ("Z", "z") else offset
    # A leap second (…:60) is read as the last microsecond of its minute, as the watcher reads it
    # as the last instant of that minute (semantics.md "Time").
    leap = clock.endswith(":60")
    if leap:
        clock, micro = clock[:-2] + "59", "999999"
    try:
        return datetime.fromisoformat(f"{date}T{clock}.{micro}{zone}").astimezone(timezone.utc)
    except ValueError as e:
        raise ValueError(f"{text!r} is not an RFC 3339 instant: {e}") from None
