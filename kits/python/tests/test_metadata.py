"""Where the extension's JSON goes in A2A metadata (expectations-v1 §8, §8.1, §9.2, §10.1)."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta, timezone

from a2a_watcher_kit import (
    URI,
    Fact,
    ModelError,
    expectations_metadata,
    facts_metadata,
    lapse_from_metadata,
    parse_instant,
    utc,
    withdraw_metadata,
)
from tests.test_models import SPEC_LAPSE, booking_expectations, manifest


class MetadataTests(unittest.TestCase):
    def test_expectations_go_under_the_uri(self) -> None:
        meta = expectations_metadata([manifest()])
        self.assertEqual(meta, {URI: {"expectations": [booking_expectations()[0]]}})
        self.assertEqual(URI, "https://rsaxb.com/a2a/expectations/v1")

    def test_none_or_a_repeated_id_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            expectations_metadata([])
        with self.assertRaises(ValueError) as e:
            expectations_metadata([manifest(), manifest()])
        self.assertIn("exp-01J8Q0MANIFEST", str(e.exception))

    def test_withdraw_and_facts(self) -> None:
        self.assertEqual(withdraw_metadata(["exp-1"], "rebooked"),
                         {URI: {"withdraw": ["exp-1"], "reason": "rebooked"}})
        with self.assertRaises(ValueError):
            withdraw_metadata(["exp-1"], " ")
        fact = Fact(fact_key="shipment.departed:PA-1", observed_at="2026-09-11T02:41:00Z")
        self.assertEqual(facts_metadata([fact]), {URI: {"facts": [
            {"factKey": "shipment.departed:PA-1", "observedAt": "2026-09-11T02:41:00Z"}]}})

    def test_the_lapse_block_is_read_from_a_lapse_tasks_metadata(self) -> None:
        lapse = lapse_from_metadata({URI: {"lapse": SPEC_LAPSE}})
        assert lapse is not None
        self.assertEqual(lapse.expectation_id, "exp-01J8Q0MANIFEST")
        self.assertIsNone(lapse_from_metadata({}))
        self.assertIsNone(lapse_from_metadata(None))
        self.assertIsNone(lapse_from_metadata({URI: {"expectations": []}}))
        with self.assertRaises(ModelError) as e:
            lapse_from_metadata({URI: {"lapse": {**SPEC_LAPSE, "dueAt": 3}}})
        self.assertIn(f"metadata[{URI}].lapse.dueAt", str(e.exception))


class InstantTests(unittest.TestCase):
    def test_utc_writes_z_and_whole_seconds(self) -> None:
        t = datetime(2026, 9, 10, 22, 15, tzinfo=timezone(timedelta(hours=2)))
        self.assertEqual(utc(t), "2026-09-10T20:15:00Z")
        self.assertEqual(utc(t.replace(microsecond=5000)), "2026-09-10T20:15:00.005000Z")
        with self.assertRaises(ValueError):
            utc(datetime(2026, 9, 10))

    def test_parse_instant_reads_offsets_nanoseconds_and_leap_seconds(self) -> None:
        self.assertEqual(parse_instant("2026-09-10T22:15:00+02:00"),
                         datetime(2026, 9, 10, 20, 15, tzinfo=timezone.utc))
        self.assertEqual(parse_instant("2026-09-10T20:15:00.123456789Z").microsecond, 123456)
        self.assertEqual(parse_instant("2016-12-31T23:59:60Z"),
                         datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc))
        for bad in ("2026-09-10", "2026-09-10T20:15:00", "2026-13-10T20:15:00Z"):
            with self.assertRaises(ValueError, msg=bad):
                parse_instant(bad)


if __name__ == "__main__":
    unittest.main()
