"""The generated models against the spec's own examples (expectations-v1 §8, §9.2, §10.1)."""

from __future__ import annotations

import json
import unittest
from pathlib import Path
from typing import Any

from a2a_watcher_kit import (
    URI,
    Expectation,
    ExpectationsParams,
    Fact,
    Lapse,
    LapsesPage,
    Matcher,
    ModelError,
    Subject,
)

ROOT = Path(__file__).resolve().parents[3]

# The lapse block of expectations-v1 §10.1, as the spec prints it.
SPEC_LAPSE: dict[str, Any] = {
    "expectationId": "exp-01J8Q0MANIFEST",
    "kind": "shipment.manifest",
    "subject": {"type": "shipment", "id": "PA-2026-0901"},
    "expects": "the airline manifest for PA-2026-0901",
    "lapse": "skipped",
    "projectedDueAt": "2026-09-10T20:15:00Z",
    "dueAt": "2026-09-10T20:15:00Z",
    "lapsedAt": "2026-09-11T02:41:07Z",
    "lastFactAt": "2026-09-11T02:41:00Z",
    "satisfiedAfter": ["exp-01J8Q0DEPART"],
    "lineage": 0,
}


def booking_expectations() -> list[dict[str, Any]]:
    """The three expectations of examples/booking-artifact.json (the spec's §8 example)."""
    doc = json.loads((ROOT / "examples" / "booking-artifact.json").read_text())
    found: list[dict[str, Any]] = doc["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"]
    return found


def manifest(**changes: Any) -> Expectation:
    fields: dict[str, Any] = dict(
        expectation_id="exp-01J8Q0MANIFEST", kind="shipment.manifest",
        subject=Subject(type="shipment", id="PA-2026-0901"),
        expects="the airline manifest for PA-2026-0901",
        satisfied_by=Matcher(fact_key="shipment.manifest.received:PA-2026-0901"),
        due_at="2026-09-10T20:15:00Z", grace="PT2H", basis="observed",
    )
    fields.update(changes)
    return Expectation(**fields)


class ExpectationTests(unittest.TestCase):
    def test_the_spec_examples_round_trip_exactly(self) -> None:
        for wire in booking_expectations():
            e = Expectation.from_dict(wire)
            self.assertEqual(e.to_dict(), wire)
        arrive = Expectation.from_dict(booking_expectations()[2])
        self.assertIsNotNone(arrive.anchor)
        assert arrive.anchor is not None
        self.assertEqual(arrive.anchor.offset, "PT1H45M")
        self.assertEqual(arrive.after, ["exp-01J8Q0DEPART"])
        self.assertEqual(arrive.horizon, "2026-09-13T05:00:00Z")

    def test_a_built_expectation_writes_the_wire_names_and_omits_what_was_not_given(self) -> None:
        self.assertEqual(manifest().to_dict(), booking_expectations()[0])
        self.assertNotIn("anchor", manifest().to_dict())
        self.assertNotIn("supersedes", manifest().to_dict())

    def test_a_bad_due_time_is_refused_at_construction_naming_the_member(self) -> None:
        with self.assertRaises(ModelError) as e:
            manifest(due_at="Thursday")
        self.assertIn("Expectation.dueAt", str(e.exception))
        self.assertIn("RFC 3339", str(e.exception))
        # A trailing newline is not an instant (ECMA `$` semantics, not Python's).
        with self.assertRaises(ModelError):
            manifest(due_at="2026-09-10T20:15:00Z\n")
        with self.assertRaises(ModelError) as e:
            manifest(grace="2 hours")
        self.assertIn("ISO 8601 duration", str(e.exception))

    def test_a_misspelled_member_is_a_type_error_and_a_missing_one_names_itself(self) -> None:
        fields: dict[str, Any] = {"dueat": "2026-09-10T20:15:00Z"}
        with self.assertRaises(TypeError):
            manifest(**fields)
        wire = booking_expectations()[0]
        del wire["dueAt"]
        with self.assertRaises(ModelError) as e:
            Expectation.from_dict(wire)
        self.assertEqual(str(e.exception), "Expectation.dueAt: required, and missing")

    def test_blank_and_over_long_ids_are_refused(self) -> None:
        for bad in ("", "   ", "a\tb", "x" * 513):
            with self.assertRaises(ModelError, msg=repr(bad)):
                manifest(expectation_id=bad)
        manifest(expectation_id="x" * 512)

    def test_nested_errors_carry_their_path(self) -> None:
        wire = booking_expectations()[0]
        wire["subject"] = {"type": "shipment", "id": 901}
        with self.assertRaises(ModelError) as e:
            Expectation.from_dict(wire)
        self.assertEqual(str(e.exception), "Expectation.subject.id: expected a string, got 901")

    def test_members_the_schema_does_not_define_survive_a_round_trip(self) -> None:
        wire = {**booking_expectations()[0], "confidence": "high"}
        e = Expectation.from_dict(wire)
        self.assertEqual(e.extra, {"confidence": "high"})
        self.assertEqual(e.to_dict(), wire)


class LapseTests(unittest.TestCase):
    def test_the_spec_lapse_block_reads_and_round_trips(self) -> None:
        lapse = Lapse.from_dict(SPEC_LAPSE)
        self.assertEqual(lapse.lapse, "skipped")
        self.assertEqual(lapse.subject, Subject(type="shipment", id="PA-2026-0901"))
        self.assertEqual(lapse.satisfied_after, ["exp-01J8Q0DEPART"])
        self.assertEqual(lapse.to_dict(), SPEC_LAPSE)

    def test_a_struct_number_is_read_as_an_integer_but_a_fraction_is_not(self) -> None:
        # a2a-sdk carries metadata in a protobuf Struct: lineage 1 arrives as 1.0.
        self.assertEqual(Lapse.from_dict({**SPEC_LAPSE, "lineage": 1.0}).lineage, 1)
        with self.assertRaises(ModelError):
            Lapse.from_dict({**SPEC_LAPSE, "lineage": 1.5})
        with self.assertRaises(ModelError):
            Lapse.from_dict({**SPEC_LAPSE, "lineage": -1})
        with self.assertRaises(ModelError):
            Lapse.from_dict({**SPEC_LAPSE, "lineage": True})

    def test_an_unknown_lapse_kind_is_refused_naming_the_three(self) -> None:
        with self.assertRaises(ModelError) as e:
            Lapse.from_dict({**SPEC_LAPSE, "lapse": "late"})
        self.assertIn("overdue, skipped, stalled", str(e.exception))


class OtherModelsTests(unittest.TestCase):
    def test_the_spec_fact_reads(self) -> None:
        wire = {
            "factKey": "shipment.departed:PA-2026-0901",
            "observedAt": "2026-09-11T02:41:00Z",
            "source": "carrier-feed:emirates",
            "subject": {"type": "shipment", "id": "PA-2026-0901"},
        }
        self.assertEqual(Fact.from_dict(wire).to_dict(), wire)

    def test_the_card_declaration_of_the_booking_card_reads(self) -> None:
        card = json.loads((ROOT / "examples" / "booking-card.json").read_text())
        (ext,) = [e for e in card["capabilities"]["extensions"] if e["uri"] == URI]
        params = ExpectationsParams.from_dict(ext["params"])
        self.assertEqual(params.to_dict(), ext["params"])
        self.assertFalse(params.keeps_time)

    def test_a_required_nullable_member_is_written_as_null(self) -> None:
        page = LapsesPage(lapses=[], next_cursor=None)
        self.assertEqual(page.to_dict(), {"lapses": [], "nextCursor": None})
        with self.assertRaises(ModelError):
            LapsesPage.from_dict({"lapses": []})


if __name__ == "__main__":
    unittest.main()
