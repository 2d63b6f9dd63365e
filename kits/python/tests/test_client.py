"""WatcherClient against a stand-in watcher (http.server on 127.0.0.1): the requests it makes
(route, method, token, body) and how it reads answers and refusals (docs/openapi.json)."""

from __future__ import annotations

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a_watcher_kit import Fact, ModelError, Subject, WatcherClient, WatcherError

# What the stand-in answers, by "METHOD path?query": (status, JSON body).
Answers = dict[str, tuple[int, Any]]


class StandIn:
    """A watcher that records each request and answers from a table."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                outer.requests.append({"method": method, "path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization")})
                status, answer = outer.answers.get(f"{method} {self.path}", (404, {
                    "title": "Not Found", "status": 404, "detail": f"no route {self.path}"}))
                raw = json.dumps(answer).encode()
                self.send_response(status)
                kind = "application/json" if status < 400 else "application/problem+json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self.handle_one("GET")

            def do_POST(self) -> None:  # noqa: N802
                self.handle_one("POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


LAPSE_VIEW = {
    "messageId": "lapse:exp-1:overdue:2026-09-10T20:15:00Z", "expectationId": "exp-1",
    "lapse": "overdue", "lapsedAt": "2026-09-10T20:15:03Z", "agent": "booking",
    "delivery": "failed", "attempts": 3, "taskId": None, "taskState": None,
    "answeredWithMessage": False, "needsPerson": False,
}


class ClientTests(unittest.TestCase):
    def serve(self, answers: Answers) -> StandIn:
        stand_in = StandIn(answers)
        self.addCleanup(stand_in.close)
        return stand_in

    def test_report_facts_posts_them_with_the_token_and_reads_what_they_satisfied(self) -> None:
        w = self.serve({"POST /v1/facts": (200, {
            "results": [{"factKey": "shipment.departed:PA-1", "satisfied": ["exp-1"]}]})})
        fact = Fact(fact_key="shipment.departed:PA-1", observed_at="2026-09-11T02:41:00Z",
                    subject=Subject(type="shipment", id="PA-1"))
        outcome = WatcherClient(w.url + "/", "src-token").report_fact(fact)
        self.assertEqual(outcome.results[0].satisfied, ["exp-1"])
        self.assertIsNone(outcome.already_recorded)
        (req,) = w.requests
        self.assertEqual((req["method"], req["path"], req["auth"]),
                         ("POST", "/v1/facts", "Bearer src-token"))
        self.assertEqual(req["body"], {"facts": [fact.to_dict()]})

    def test_iter_lapses_follows_the_cursor_and_passes_the_filters(self) -> None:
        w = self.serve({
            "GET /v1/lapses?agent=booking&delivery=failed": (200, {"lapses": [], "nextCursor": "c1"}),
            "GET /v1/lapses?agent=booking&delivery=failed&cursor=c1": (200, {
                "lapses": [LAPSE_VIEW], "nextCursor": None}),
        })
        client = WatcherClient(w.url, "ops-token")
        seen = list(client.iter_lapses(agent="booking", delivery="failed"))
        self.assertEqual([lv.message_id for lv in seen], [LAPSE_VIEW["messageId"]])
        self.assertEqual(seen[0].delivery, "failed")
        # An optional member given as null is written back omitted (to_dict's rule).
        self.assertEqual(seen[0].to_dict(), {k: v for k, v in LAPSE_VIEW.items() if v is not None})
        self.assertIsNone(seen[0].task_id)
        self.assertEqual(len(w.requests), 2)

    def test_subject_encodes_the_path_and_types_the_records(self) -> None:
        record = {
            "expectationId": "exp-1", "agent": "booking", "tenant": "default",
            "kind": "shipment.manifest", "subject": {"type": "shipment", "id": "PA/1"},
            "expects": "the manifest", "satisfiedBy": {"factKey": "m:PA/1"}, "status": "open",
            "projectedDueAt": "2026-09-10T20:15:00Z", "dueAt": "2026-09-10T20:15:00Z",
            "basis": "observed", "lineage": 0, "raisedAt": "2026-09-09T10:00:00Z",
            "raisedBy": {"taskId": "t-1"}, "lapses": [],
        }
        w = self.serve({"GET /v1/subjects/shipment/PA%2F1": (200, {
            "subject": {"type": "shipment", "id": "PA/1"}, "expectations": [record], "facts": []})})
        (r,) = WatcherClient(w.url, "ops-token").expectations_on("shipment", "PA/1")
        self.assertEqual((r.status, r.raised_by.task_id), ("open", "t-1"))

    def test_retry_sends_the_agent_and_ids(self) -> None:
        w = self.serve({"POST /v1/lapses/retry": (200, {
            "requeued": 0, "messageIds": [], "more": False,
            "skipped": [{"messageId": "m-1", "reason": "not found"}]})})
        answer = WatcherClient(w.url, "ops-token").retry("booking", ["m-1"])
        self.assertEqual(answer.skipped[0].reason, "not found")
        self.assertEqual(w.requests[0]["body"], {"agent": "booking", "messageIds": ["m-1"]})
        WatcherClient(w.url, "ops-token").retry("booking")
        self.assertEqual(w.requests[1]["body"], {"agent": "booking"})

    def test_a_refusal_carries_the_problem(self) -> None:
        w = self.serve({"GET /v1/lapses": (403, {
            "title": "Forbidden", "status": 403, "detail": "a source's token cannot list lapses"})})
        with self.assertRaises(WatcherError) as e:
            WatcherClient(w.url, "src-token").lapses()
        self.assertEqual((e.exception.status, e.exception.title), (403, "Forbidden"))
        self.assertIn("a source's token cannot list lapses", str(e.exception))

    def test_an_answer_off_the_schema_is_a_model_error(self) -> None:
        w = self.serve({"GET /v1/lapses": (200, {"lapses": [{**LAPSE_VIEW, "delivery": "lost"}],
                                                 "nextCursor": None})})
        with self.assertRaises(ModelError) as e:
            WatcherClient(w.url, "ops-token").lapses()
        self.assertIn("LapsesPage.lapses[0].delivery", str(e.exception))

    def test_an_unreachable_watcher_is_a_watcher_error_without_status(self) -> None:
        w = self.serve({})
        url = w.url
        w.close()
        with self.assertRaises(WatcherError) as e:
            WatcherClient(url, "t", timeout=2).lapses()
        self.assertIsNone(e.exception.status)
        with self.assertRaises(ValueError):
            WatcherClient("127.0.0.1:8080", "t")


if __name__ == "__main__":
    unittest.main()
