"""Unit tests of the local stack's pieces against the real template.yaml (run by
tests/aws_local.rs: `.venv/bin/python -m unittest aws_local.test_units` from infra/)."""

import base64
import json
import os
import unittest

from .gateway import Route, event_for, response_of, routes_of
from .template import Stack, load
from .triggers import parse_expression

TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "template.yaml")


def stack():
    s = Stack(load(TEMPLATE), "st", "us-east-1", {"WatcherConfigSecret": "st-config"})
    for lid, _ in s.of_type("AWS::SQS::Queue"):
        s.queue_urls[lid] = f"http://q/{s.physical_name(lid)}"
    return s


def route_for(routes, method, path):
    for r in routes:
        params = r.match(method, path)
        if params is not None:
            return r, params
    return None, None


class TemplateTest(unittest.TestCase):
    def test_short_tags_become_long_forms(self):
        t = load(TEMPLATE)
        mapping = t["Resources"]["SubmitterLapseQueueSource"]["Properties"]
        self.assertEqual(mapping["EventSourceArn"], {"Fn::GetAtt": ["LapseQueue", "Arn"]})
        self.assertEqual(mapping["FunctionName"], {"Ref": "SubmitterFunction"})

    def test_globals_environment_resolves_to_local_names(self):
        s = stack()
        env = s.resolve(s.template["Globals"]["Function"]["Environment"]["Variables"])
        self.assertEqual(env["TABLE_NAME"], "st-WatcherTable")
        self.assertEqual(env["QUEUE_URL"], "http://q/st-LapseQueue.fifo")
        self.assertEqual(env["SCHEDULE_GROUP"], "st-timers")
        self.assertEqual(
            env["TIMER_FUNCTION_ARN"], "arn:aws:lambda:us-east-1:123456789012:function:st-timer"
        )
        self.assertEqual(env["SCHEDULER_ROLE_ARN"], "arn:aws:iam::123456789012:role/st-SchedulerRole")
        self.assertEqual(
            env["SCHEDULER_DLQ_ARN"], "arn:aws:sqs:us-east-1:123456789012:st-SchedulerDeadLetterQueue"
        )
        self.assertEqual(env["WATCHER_CONFIG_SECRET_ID"], "st-config")
        self.assertEqual(env["RETENTION_DAYS"], "30")
        # The timer's ARN the schedules target is the one its own FunctionName gives.
        self.assertEqual(s.arn("TimerFunction"), env["TIMER_FUNCTION_ARN"])

    def test_conditions_evaluate(self):
        s = stack()
        self.assertFalse(s.condition("ConfigSecretIsArn"))
        s2 = Stack(load(TEMPLATE), "st", "us-east-1",
                   {"WatcherConfigSecret": "arn:aws:secretsmanager:us-east-1:1:secret:x"})
        self.assertTrue(s2.condition("ConfigSecretIsArn"))

    def test_a_queue_arn_waits_for_the_queue(self):
        s = Stack(load(TEMPLATE), "st", "us-east-1", {"WatcherConfigSecret": "c"})
        with self.assertRaises(ValueError):
            s.resolve({"Fn::GetAtt": ["LapseDeadLetterQueue", "Arn"]})


class GatewayTest(unittest.TestCase):
    def setUp(self):
        self.routes = routes_of(stack())

    def test_the_most_specific_route_wins(self):
        r, p = route_for(self.routes, "GET", "/v1/subjects/shipment/S1/timeline.svg")
        self.assertEqual(r.key, "GET /v1/subjects/{type}/{id}/timeline.svg")
        self.assertEqual(p, {"type": "shipment", "id": "S1"})
        r, p = route_for(self.routes, "GET", "/v1/subjects/shipment/PA-1/leg-2")
        self.assertEqual(r.key, "GET /v1/subjects/{type}/{id+}")
        self.assertEqual(p, {"type": "shipment", "id": "PA-1/leg-2"})

    def test_methods_and_any(self):
        r, _ = route_for(self.routes, "POST", "/ui")
        self.assertEqual((r.key, r.function), ("ANY /ui", "ApiFunction"))
        r, p = route_for(self.routes, "PUT", "/v1/definitions/d1/versions/2")
        self.assertEqual(r.function, "LessonWriteFunction")
        self.assertEqual(p, {"proxy": "d1/versions/2"})
        self.assertEqual(route_for(self.routes, "DELETE", "/v1/facts"), (None, None))

    def test_event_carries_route_parameters_and_binary_bodies(self):
        route = Route("POST", "/v1/agents/{agentId}/push", "ApiFunction")
        e = event_for(route, {"agentId": "a b"}, "POST", "/v1/agents/a b/push", "x=1&x=2",
                      {"Content-Type": "application/json", "Cookie": "a=1; b=2"},
                      b"\xff\x00", "127.0.0.1")
        self.assertEqual(e["routeKey"], "POST /v1/agents/{agentId}/push")
        self.assertEqual(e["pathParameters"], {"agentId": "a b"})
        self.assertEqual(e["queryStringParameters"], {"x": "1,2"})
        self.assertEqual(e["cookies"], ["a=1", "b=2"])
        self.assertTrue(e["isBase64Encoded"])
        self.assertEqual(base64.b64decode(e["body"]), b"\xff\x00")
        self.assertEqual(e["requestContext"]["http"]["method"], "POST")

    def test_response_turns_back_into_http(self):
        status, headers, body = response_of(json.dumps({
            "statusCode": 201, "headers": {"content-type": "image/png"},
            "body": base64.b64encode(b"\x89PNG").decode(), "isBase64Encoded": True,
            "cookies": ["s=1; Path=/"],
        }).encode())
        self.assertEqual(status, 201)
        self.assertEqual(body, b"\x89PNG")
        self.assertIn(("Set-Cookie", "s=1; Path=/"), headers)
        self.assertEqual(response_of(b'{"a": 1}')[0], 200)


class ScheduleTest(unittest.TestCase):
    def test_expressions(self):
        self.assertEqual(parse_expression("at(2026-09-10T20:15:00)"), ("at", 1789071300.0))
        self.assertEqual(parse_expression("rate(5 minutes)"), ("rate", 300))
        with self.assertRaises(ValueError):
            parse_expression("cron(0 12 * * ? *)")
        with self.assertRaises(ValueError):
            parse_expression("at(2026-09-10T20:15:00)", "Europe/Paris")


if __name__ == "__main__":
    unittest.main()
