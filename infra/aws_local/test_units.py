"""Unit tests of the local stack's pieces against the real template.yaml (run by
tests/aws_local.rs: `.venv/bin/python -m unittest aws_local.test_units` from infra/)."""

import base64
import contextlib
import io
import json
import os
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock

import boto3
from moto import mock_aws

from . import resources, triggers
from .runtime import Function, InvocationError
from .gateway import Route, event_for, response_of, routes_of
from .template import Stack, load
from .triggers import QueueSource, Scheduler, async_max_age, async_retries, parse_expression

# The sweep duties' schedules (template.yaml), by name and by the duty each names.
SWEEPS = ["sweep-cards", "sweep-follow", "sweep-notify", "sweep-origins", "sweep-requeue",
          "sweep-timers"]
DUTIES = ["cards", "follow", "notify", "origins", "requeue", "timers"]

# moto's in-process mock, never a server an AWS_ENDPOINT_URL names.
for _name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL")]:
    del os.environ[_name]

TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "template.yaml")


def stack():
    s = Stack(load(TEMPLATE), "st", "us-east-1", {"WatcherConfigSecret": "st-config"})
    for lid, _ in s.of_type("AWS::SQS::Queue"):
        s.queue_urls[lid] = f"http://q/{s.physical_name(lid)}"
    return s


def wait_for(condition, seconds=5):
    """Polls `condition` every 10 ms until it holds or `seconds` pass; its last value."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


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
        self.assertEqual(mapping["FunctionName"], {"Ref": "SubmitterFunction.Alias"})

    def test_globals_environment_resolves_to_local_names(self):
        s = stack()
        env = s.resolve(s.template["Globals"]["Function"]["Environment"]["Variables"])
        self.assertEqual(env["TABLE_NAME"], "st-WatcherTable")
        self.assertEqual(env["QUEUE_URL"], "http://q/st-LapseQueue.fifo")
        self.assertEqual(env["SCHEDULE_GROUP"], "st-timers")
        self.assertEqual(
            env["TIMER_FUNCTION_ARN"],
            "arn:aws:lambda:us-east-1:123456789012:function:st-timer:live",
        )
        self.assertEqual(env["SCHEDULER_ROLE_ARN"], "arn:aws:iam::123456789012:role/st-SchedulerRole")
        self.assertEqual(
            env["SCHEDULER_DLQ_ARN"], "arn:aws:sqs:us-east-1:123456789012:st-SchedulerDeadLetterQueue"
        )
        self.assertEqual(env["WATCHER_CONFIG_SECRET_ID"], "st-config")
        self.assertEqual(env["RETENTION_DAYS"], "30")
        # The timer's ARN the schedules target is its alias's, from its own FunctionName.
        self.assertEqual(s.alias_arn("TimerFunction"), env["TIMER_FUNCTION_ARN"])
        self.assertEqual(s.lid_by_arn(env["TIMER_FUNCTION_ARN"]), "TimerFunction")

    def test_an_alias_resolves_to_its_function(self):
        s = stack()
        for lid, _ in s.of_type("AWS::Serverless::Function"):
            self.assertEqual(s.alias(lid), "live", lid)
            arn = s.resolve({"Ref": f"{lid}.Alias"})
            self.assertEqual(arn, s.arn(lid) + ":live")
            self.assertEqual(s.lid_by_arn(arn), lid)
            self.assertEqual(s.lid_by_arn(s.arn(lid)), lid, "the unqualified ARN too")
        self.assertIsNone(s.lid_by_arn(s.arn("TimerFunction") + ":blue"), "another alias")
        with self.assertRaises(ValueError):
            s.resolve({"Ref": "WatcherTable.Alias"})
        # Every schedule and event source mapping of the template invokes an alias.
        for _, props in s.of_type("AWS::Scheduler::Schedule"):
            self.assertEqual(s.resolve(props["Target"]["Arn"]), s.alias_arn("TimerFunction"))
        for lid, props in s.of_type("AWS::Lambda::EventSourceMapping"):
            name = s.resolve(props["FunctionName"])
            self.assertTrue(name.endswith(":live"), f"{lid}: {name}")
            self.assertEqual(triggers._function_lid(s, {"FunctionName": name}),
                             s.lid_by_arn(name))

    def test_qualifier_of_a_function_arn(self):
        arn = "arn:aws:lambda:us-east-1:123456789012:function:st-timer"
        self.assertEqual(triggers.qualifier_of(arn), "$LATEST")
        self.assertEqual(triggers.qualifier_of(arn + ":live"), "live")
        self.assertEqual(triggers.qualifier_of(arn + ":7"), "7")

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


class SafeDeploysTest(unittest.TestCase):
    """template.yaml after SAM's transform (what CloudFormation deploys): every invocation
    path names an alias, and CodeDeploy watches alarms that exist (docs/howto/deploy-aws.md,
    "Safe deploys")."""

    @classmethod
    def setUpClass(cls):
        from .roles import transform

        s = stack()
        cls.stack = s
        cls.out = transform(s.template, s.region, s.params)["Resources"]
        # Alias logical id -> (function logical id, alias name), as SAM made them.
        cls.aliases = {
            lid: (r["Properties"]["FunctionName"]["Ref"], r["Properties"]["Name"])
            for lid, r in cls.out.items() if r["Type"] == "AWS::Lambda::Alias"
        }

    def test_every_function_has_an_alias_moved_by_codedeploy(self):
        functions = [lid for lid, r in self.out.items() if r["Type"] == "AWS::Lambda::Function"]
        self.assertEqual(sorted(functions), sorted(lid for lid, _ in
                                                   self.stack.of_type("AWS::Serverless::Function")))
        self.assertEqual(sorted(f for f, _ in self.aliases.values()), sorted(functions))
        for lid, (function, name) in self.aliases.items():
            self.assertEqual(name, "live", lid)
            policy = self.out[lid]["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
            group = self.out[policy["DeploymentGroupName"]["Ref"]]["Properties"]
            # The parameter's default, a canary, with rollback on alarms.
            self.assertEqual(group["DeploymentConfigName"]["Fn::Sub"][1]["ConfigName"],
                             "Canary10Percent15Minutes")
            self.assertIn("DEPLOYMENT_STOP_ON_ALARM", group["AutoRollbackConfiguration"]["Events"])
            alarms = [a["Name"]["Ref"] for a in group["AlarmConfiguration"]["Alarms"]]
            self.assertTrue(group["AlarmConfiguration"]["Enabled"])
            self.assertGreaterEqual(len(alarms), 2, function)
            for alarm in alarms:
                # A metric alarm: CodeDeploy reads alarms with DescribeAlarms' default type.
                self.assertEqual(self.out[alarm]["Type"], "AWS::CloudWatch::Alarm", alarm)

    def test_every_event_source_invokes_the_alias(self):
        alias_of = {f: lid for lid, (f, _) in self.aliases.items()}
        for lid, r in self.out.items():
            props = r.get("Properties") or {}
            if r["Type"] in ("AWS::Lambda::Permission", "AWS::Lambda::EventSourceMapping"):
                self.assertIn(props["FunctionName"]["Ref"], self.aliases, lid)
            if r["Type"] == "AWS::Scheduler::Schedule":
                self.assertEqual(props["Target"]["Arn"], {"Ref": alias_of["TimerFunction"]}, lid)
            if r["Type"] == "AWS::Lambda::EventInvokeConfig":
                function = props["FunctionName"]["Ref"]
                self.assertEqual(props["Qualifier"], self.aliases[alias_of[function]][1], lid)
        # The HTTP API's integrations (SAM's HttpApi events) invoke the aliases too.
        paths = self.out["HttpApi"]["Properties"]["Body"]["paths"]
        uris = [op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
                for ops in paths.values() for op in ops.values()
                if isinstance(op, dict) and "x-amazon-apigateway-integration" in op]
        self.assertGreater(len(uris), 10)
        for uri in uris:
            self.assertRegex(uri, r"/functions/\$\{[A-Za-z]+Aliaslive\}/invocations$")
        # Schedules armed at run time target TIMER_FUNCTION_ARN, which the scheduler role may
        # invoke: the alias's ARN in both.
        env = self.stack.resolve(self.stack.template["Globals"]["Function"]["Environment"]
                                 ["Variables"])
        self.assertEqual(env["TIMER_FUNCTION_ARN"], self.stack.alias_arn("TimerFunction"))
        statements = self.stack.resolve(
            self.stack.resources["SchedulerRole"]["Properties"]["Policies"][0]["PolicyDocument"]
        )["Statement"]
        invoke = [st for st in statements if st and st["Action"] == "lambda:InvokeFunction"]
        self.assertEqual([st["Resource"] for st in invoke], [env["TIMER_FUNCTION_ARN"]])


class DeployExampleTest(unittest.TestCase):
    """The example pipeline (.github/workflows/deploy-example.yml) is a workflow GitHub can
    read, runs only when someone starts it, and runs the commands docs/howto/deploy-aws.md's
    "Safe deploys" names."""

    ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

    def test_the_example_pipeline_parses_and_runs_what_the_doc_names(self):
        import yaml

        path = os.path.join(self.ROOT, ".github", "workflows", "deploy-example.yml")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        flow = yaml.safe_load(text)
        # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
        triggers = flow.get("on", flow.get(True))
        self.assertEqual(list(triggers), ["workflow_dispatch"], "never on a push")
        jobs = flow["jobs"]
        self.assertEqual(list(jobs), ["build-and-test", "stage", "production"])
        self.assertEqual(jobs["stage"]["needs"], "build-and-test")
        self.assertEqual(jobs["production"]["needs"], "stage")
        runs = "\n".join(step.get("run", "") for job in jobs.values()
                         for step in job["steps"])
        with open(os.path.join(self.ROOT, "docs", "howto", "deploy-aws.md"),
                  encoding="utf-8") as f:
            doc = f.read()
        section = doc.split("## Safe deploys", 1)[1].split("\n## ", 1)[0]
        for command in ("bash .ci/run", "sam build", "sam deploy", "DeploymentType=AllAtOnce",
                        "DeploymentType=Canary10Percent15Minutes", "/healthz",
                        "a2a-watcher example-artifact --from now", "a2a-watcher lapses"):
            self.assertIn(command, runs, command)
            self.assertIn(command, section, command)


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


class StageThrottleTest(unittest.TestCase):
    """The HTTP API's stage throttle (gateway.TokenBucket, StageThrottle, the 429 answer) and
    the figures --scale gives it and Lambda (scale.scaled, stage_throttle, configure)."""

    def setUp(self):
        self.now = [1000.0]
        self.clock = lambda: self.now[0]

    def tearDown(self):
        from .gateway import THROTTLE
        from .runtime import CONCURRENCY

        THROTTLE.configure(rate=None)
        CONCURRENCY.configure(account=None)

    def test_a_bucket_takes_its_burst_then_its_rate(self):
        from .gateway import TokenBucket

        bucket = TokenBucket(rate=2, burst=3, clock=self.clock)
        self.assertEqual([bucket.take() for _ in range(4)], [True, True, True, False])
        self.now[0] += 0.25  # half a token
        self.assertFalse(bucket.take())
        self.now[0] += 0.25  # one token
        self.assertEqual([bucket.take(), bucket.take()], [True, False])
        self.now[0] += 60  # a quiet minute refills it to its burst, never past it
        self.assertEqual(sum(bucket.take() for _ in range(10)), 3)

    def test_each_route_has_its_own_bucket_and_off_passes_everything(self):
        from .gateway import StageThrottle

        throttle = StageThrottle(clock=self.clock)
        self.assertTrue(all(throttle.admit("POST /v1/facts") for _ in range(1000)))
        throttle.configure(rate=1, burst=2)
        push = "POST /v1/agents/{agentId}/push"
        self.assertEqual([throttle.admit(push) for _ in range(3)], [True, True, False])
        self.assertEqual([throttle.admit("POST /v1/facts") for _ in range(3)],
                         [True, True, False])
        self.now[0] += 1.0
        self.assertTrue(throttle.admit(push))
        self.assertEqual(throttle.report(), {
            "rate": 1, "burst": 2, "requests": 7, "throttled": 2,
            "by_route": {push: 1, "POST /v1/facts": 1}})

    def test_a_throttled_request_is_answered_as_api_gateway_answers_it(self):
        import http.client

        from .gateway import THROTTLE, Gateway

        api = FakeFunction(lambda payload: json.dumps(
            {"statusCode": 200, "headers": {"Content-Type": "application/json"},
             "body": "{}"}).encode())
        gateway = Gateway(0, routes_of(stack()), {"ApiFunction": api}, lambda line: None)
        gateway.start()
        self.addCleanup(gateway.server_close)
        self.addCleanup(gateway.shutdown)
        THROTTLE.configure(rate=0.001, burst=1)  # one request, then none for 1,000 s
        answers = []
        for _ in range(2):
            conn = http.client.HTTPConnection(*gateway.server_address, timeout=10)
            conn.request("POST", "/v1/facts", body=b"{}",
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            answers.append((resp.status, dict(resp.getheaders()), resp.read()))
            conn.close()
        self.assertEqual(answers[0][0], 200)
        status, headers, body = answers[1]
        self.assertEqual(status, 429)
        self.assertEqual(body, b'{"message":"Too Many Requests"}')
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertIn("apigw-requestid", headers)
        self.assertNotIn("Retry-After", headers)  # API Gateway's own 429 names no wait
        self.assertEqual(len(api.payloads), 1, "a throttled request never reaches the function")

    def test_counts_at_scale_round_up_to_at_least_one(self):
        from .scale import scaled

        self.assertEqual(scaled(1000, 100), 10)
        self.assertEqual(scaled(20, 100), 1)
        self.assertEqual(scaled(20, 3), 7)
        self.assertEqual(scaled(10, 0.1), 100)
        self.assertEqual(scaled(1, 1000), 1)
        self.assertEqual(scaled(200, 1), 200)

    def test_a_route_with_a_setting_of_its_own_has_its_own_rate_and_burst(self):
        from .gateway import StageThrottle

        throttle = StageThrottle(clock=self.clock)
        health = "GET /healthz"
        throttle.configure(rate=100, burst=200, routes={health: (1, 2)})
        self.assertEqual([throttle.admit(health) for _ in range(3)], [True, True, False])
        self.assertEqual(sum(throttle.admit("POST /v1/facts") for _ in range(201)), 200)
        self.now[0] += 1.0
        self.assertEqual([throttle.admit(health) for _ in range(2)], [True, False])

    def test_the_route_throttles_are_the_templates_route_settings_at_scale(self):
        from .scale import route_throttles

        routes = route_throttles(stack(), 1)
        # template.yaml's defaults: facts 100/200, push 100/200, operators 20/40, anonymous 10/20.
        self.assertEqual(routes["POST /v1/facts"], (100.0, 200))
        self.assertEqual(routes["POST /v1/sources/{sourceId}/webhook"], (100.0, 200))
        self.assertEqual(routes["POST /v1/agents/{agentId}/push"], (100.0, 200))
        self.assertEqual(routes["GET /v1/lapses"], (20.0, 40))
        self.assertEqual(routes["GET /healthz"], (10.0, 20))
        # The incidents list and the acknowledgement are operator routes.
        self.assertEqual(routes["GET /v1/incidents"], (20.0, 40))
        self.assertEqual(routes["POST /v1/incidents/acknowledge"], (20.0, 40))
        self.assertEqual(len(routes), 18)
        self.assertEqual(route_throttles(stack(), 100)["GET /healthz"], (1.0, 1))
        s = Stack(load(TEMPLATE), "st", "us-east-1", {
            "WatcherConfigSecret": "st-config", "PushThrottleRate": "300",
            "PushThrottleBurst": "300"})
        self.assertEqual(route_throttles(s, 100)["POST /v1/agents/{agentId}/push"], (3.0, 3))

    def test_the_stage_throttle_is_the_templates_default_route_settings_at_scale(self):
        from .scale import stage_throttle

        self.assertEqual(stage_throttle(stack(), 1), (100.0, 200))
        self.assertEqual(stage_throttle(stack(), 100), (1.0, 2))
        self.assertEqual(stage_throttle(stack(), 1000), (1.0, 1))
        s = Stack(load(TEMPLATE), "st", "us-east-1", {
            "WatcherConfigSecret": "st-config", "ApiThrottleRate": "450",
            "ApiThrottleBurst": "250"})
        self.assertEqual(stage_throttle(s, 100), (4.5, 3))

    def test_configure_divides_lambdas_concurrency_and_sets_the_throttle(self):
        from . import scale
        from .gateway import THROTTLE
        from .runtime import CONCURRENCY

        class Named:
            def __init__(self, name):
                self.name = name

        functions = {lid: Named(name) for lid, name in [
            ("ApiFunction", "api"), ("TimerFunction", "timer"),
            ("SubmitterFunction", "submitter"), ("LessonWriteFunction", "lesson-write")]}
        lines = []
        scale.configure(3, {}, stack(), functions, log=lines.append, api_throttle=True)
        self.assertEqual(CONCURRENCY.account, 334)  # 1,000 / 3, rounded up
        self.assertEqual(CONCURRENCY.reserved, {"timer": 4, "submitter": 7})
        self.assertEqual((THROTTLE.rate, THROTTLE.burst), (100 / 3, 67))
        scale.configure(100, {}, stack(), functions, log=lines.append)
        self.assertEqual(CONCURRENCY.account, 10)
        self.assertEqual(CONCURRENCY.reserved, {"timer": 1, "submitter": 1})
        self.assertIsNone(THROTTLE.rate, "off unless asked for")
        self.assertIn("8 unreserved", lines[-1])
        scale.configure(1000, {}, stack(), functions, log=lines.append)
        self.assertTrue(any(line.startswith("warning: the reserves") for line in lines), lines)


# 2026-09-10T20:15:00Z: minute 15, a multiple of 5 (epoch seconds).
T0 = 1789071300.0


class ScheduleTest(unittest.TestCase):
    def test_expressions(self):
        self.assertEqual(parse_expression("at(2026-09-10T20:15:00)"), ("at", T0))
        self.assertEqual(parse_expression("rate(5 minutes)"), ("rate", 300))
        kind, cron = parse_expression("cron(0 12 * * ? *)")
        self.assertEqual((kind, cron.starts), ("cron", [12 * 3600]))
        with self.assertRaises(ValueError):
            parse_expression("at(2026-09-10T20:15:00)", "Europe/Paris")

    def test_a_cron_fires_at_its_minutes_of_the_clock(self):
        # EventBridge's minutes field: `2/5` is 2, 7, …, 57 (Scheduler user guide, "Cron-based
        # schedules").
        _, cron = parse_expression("cron(2/5 * * * ? *)")
        self.assertEqual(cron.starts[:3], [120, 420, 720])
        self.assertEqual(len(cron.starts), 24 * 12)
        self.assertEqual((cron.period(), cron.phase()), (300, 120))
        self.assertEqual(cron.next_after(T0), T0 + 120)
        self.assertEqual(cron.next_after(T0 + 120), T0 + 420, "strictly after")
        _, every = parse_expression("cron(* * * * ? *)")
        self.assertEqual((every.period(), every.phase()), (60, 0))
        self.assertEqual(every.next_after(T0 + 1), T0 + 60)
        # The day's last start to the next day's first.
        _, daily = parse_expression("cron(30 23 * * ? *)")
        self.assertEqual(daily.period(), 86400)
        self.assertEqual(daily.next_after(T0), T0 + 3 * 3600 + 15 * 60)
        _, lists = parse_expression("cron(0,10-12 6/12 ? * * *)")
        self.assertEqual(lists.starts, [6 * 3600 + m * 60 for m in (0, 10, 11, 12)]
                         + [18 * 3600 + m * 60 for m in (0, 10, 11, 12)])

    def test_a_cron_the_stack_cannot_fire_is_refused(self):
        for expr in ["cron(0 12 ? * MON-FRI *)", "cron(0 12 1 * ? *)", "cron(0 12 * * * *)",
                     "cron(0 12 * * ?)", "cron(60 * * * ? *)", "cron(0/0 * * * ? *)",
                     "cron(5-1 * * * ? *)", "cron(0 24 * * ? *)", "cron(L * * * ? *)",
                     "cron(0 12 * * ? 2027)"]:
            with self.assertRaises(ValueError, msg=expr):
                parse_expression(expr)
        with self.assertRaises(ValueError):
            parse_expression("cron(0/5 * * * ? *)", "Europe/Paris")


class FakeFunction:
    """Stands for a `runtime.Function`: records each payload, answers `answer(payload)`."""

    def __init__(self, answer=lambda payload: b"null"):
        self.payloads = []
        self.answer = answer
        self.called = threading.Event()

    def invoke(self, payload):
        self.payloads.append(payload)
        self.called.set()
        return self.answer(payload)


@mock_aws
class TriggersTest(unittest.TestCase):
    """The Scheduler and event-source stand-ins against moto's own API (in process)."""

    def setUp(self):
        self.stack = Stack(load(TEMPLATE), "st", "us-east-1", {"WatcherConfigSecret": "c"})
        session = boto3.session.Session(
            aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
        )
        self.sqs = session.client("sqs")
        self.scheduler = session.client("scheduler")
        resources.make_queues(self.stack, self.sqs)
        resources.make_schedules(self.stack, self.scheduler)

    def test_queues_are_made_as_the_template_says(self):
        url = self.stack.queue_urls["LapseQueue"]
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        self.assertEqual(attrs["FifoQueue"], "true")
        self.assertEqual(attrs["VisibilityTimeout"], "360")
        redrive = json.loads(attrs["RedrivePolicy"])
        want = self.stack.template["Resources"]["LapseQueue"]["Properties"]["RedrivePolicy"]
        self.assertEqual(redrive["maxReceiveCount"], int(want["maxReceiveCount"]))
        self.assertEqual(redrive["deadLetterTargetArn"], self.stack.arn("LapseDeadLetterQueue"))

    def test_each_function_runs_as_many_instances_as_its_sources_run_batches(self):
        from .__main__ import max_concurrency
        from .triggers import concurrency_of

        self.assertEqual(concurrency_of({}), 5, "Lambda's first step for an SQS source")
        self.assertEqual(concurrency_of({"ScalingConfig": {"MaximumConcurrency": 20}}), 20)
        # The template: the submitter at SubmitterConcurrency (default 20), the timer at
        # TimerQueueConcurrency (default 8), a function no queue feeds at one.
        self.assertEqual(max_concurrency(self.stack, "SubmitterFunction"), 20)
        self.assertEqual(max_concurrency(self.stack, "TimerFunction"), 8)
        self.assertEqual(max_concurrency(self.stack, "ApiFunction"), 1)
        # At scale K each is divided by K, rounded up, at least 1: 20 / 100 is one poller.
        self.assertEqual(max_concurrency(self.stack, "SubmitterFunction", 100), 1)
        self.assertEqual(max_concurrency(self.stack, "TimerFunction", 3), 3)
        self.assertEqual(concurrency_of({"ScalingConfig": {"MaximumConcurrency": 20}}, 3), 7)
        self.assertEqual(concurrency_of({}, 2), 3)

    def test_a_one_time_schedule_fires_once_at_its_time_and_is_deleted(self):
        timer = FakeFunction()
        functions = {"TimerFunction": timer}
        group = "st-timers"
        target = {"Arn": self.stack.arn("TimerFunction"), "RoleArn": "arn:aws:iam::1:role/r",
                  "Input": '{"tenant": "t", "timer": "d-1"}'}
        for name, at in (("d-1", "2026-09-10T20:15:00"), ("d-2", "2026-09-10T21:15:00")):
            self.scheduler.create_schedule(
                Name=name, GroupName=group, ScheduleExpression=f"at({at})",
                FlexibleTimeWindow={"Mode": "OFF"}, Target=target,
                ActionAfterCompletion="DELETE",
            )
        s = Scheduler(self.stack, self.scheduler, self.sqs, functions, lambda line: None)
        at = parse_expression("at(2026-09-10T20:15:00)")[1]
        s.poll(at - 1)
        self.assertFalse(timer.called.wait(0.3))
        s.poll(at)
        # 20:15 is also the minute of the timers and follow duties: only the timers are looked at.
        fires = lambda: [p for p in timer.payloads if "timer" in p]
        self.assertTrue(wait_for(lambda: fires()))
        self.assertEqual(fires(), [{"tenant": "t", "timer": "d-1"}])
        names = [x["Name"] for x in self.scheduler.list_schedules(GroupName=group)["Schedules"]]
        self.assertEqual(sorted(names), sorted(["d-2"] + SWEEPS))
        s.poll(at + 1)
        time.sleep(0.3)
        self.assertEqual(len(fires()), 1)

    def test_a_schedule_is_read_once_per_version(self):
        timer = FakeFunction()
        group = "st-timers"
        target = {"Arn": self.stack.arn("TimerFunction"), "RoleArn": "arn:aws:iam::1:role/r",
                  "Input": '{"tenant": "t", "timer": "d-1"}'}
        for name in ("d-1", "d-2"):
            self.scheduler.create_schedule(
                Name=name, GroupName=group, ScheduleExpression="at(2026-09-10T20:15:00)",
                FlexibleTimeWindow={"Mode": "OFF"}, Target=target,
                ActionAfterCompletion="DELETE",
            )
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lambda line: None)
        reads = []
        real = self.scheduler.get_schedule

        def counted(**kw):
            reads.append(kw["Name"])
            return real(**kw)

        at = parse_expression("at(2026-09-10T20:15:00)")[1]
        with unittest.mock.patch.object(self.scheduler, "get_schedule", side_effect=counted):
            s.poll(at - 10)
            s.poll(at - 9)
            self.assertEqual(sorted(reads), sorted(["d-1", "d-2"] + SWEEPS),
                             "read once, not per poll")
            time.sleep(0.01)
            self.scheduler.update_schedule(
                Name="d-2", GroupName=group, ScheduleExpression="at(2026-09-10T20:14:00)",
                FlexibleTimeWindow={"Mode": "OFF"}, Target=target,
                ActionAfterCompletion="DELETE",
            )
            s.poll(at - 8)
            self.assertEqual(sorted(reads), sorted(["d-1", "d-2", "d-2"] + SWEEPS),
                             "changed: read again")
            self.assertTrue(timer.called.wait(5), "the changed time is the one kept")
        self.assertEqual(timer.payloads, [{"tenant": "t", "timer": "d-1"}])

    def test_each_sweep_duty_fires_at_its_minute_two_at_most_at_once(self):
        timer = FakeFunction()
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lambda line: None)
        s.poll(T0 - 30)  # first seen: each due at its next minute of the clock
        s.poll(T0 - 1)
        self.assertFalse(timer.called.wait(0.3))
        # template.yaml: timers, requeue, origins, cards and notify at minutes 0 to 4 of every
        # 5, follow every minute: two duties a minute, each 5-minute duty once in 5 minutes.
        fired = 0
        for minute, duty in enumerate(["timers", "requeue", "origins", "cards", "notify",
                                       "timers"]):
            s.poll(T0 + 60 * minute)
            wait_for(lambda: len(timer.payloads) >= fired + 2)
            time.sleep(0.2)
            self.assertEqual(sorted(p["sweep"] for p in timer.payloads[fired:]),
                             sorted([duty, "follow"]), f"minute {minute}")
            fired = len(timer.payloads)
            s.poll(T0 + 60 * minute + 59)
            time.sleep(0.2)
            self.assertEqual(len(timer.payloads), fired, f"nothing more in minute {minute}")

    def test_a_capped_sweep_never_runs_beside_itself(self):
        release = threading.Event()

        def slow(payload):
            release.wait(10)  # a sweep slowed by a busy machine, past the capped rate
            return b"null"

        timer = FakeFunction(slow)
        lines = []
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lines.append, rate_cap=5)
        s.poll(1000.0)  # first seen: every duty due within 5 s (each capped on its own)
        s.poll(1005.0)
        wait_for(lambda: len(timer.payloads) >= 6)
        # Three periods pass while they run: none fires a second tick of its duty beside it.
        for now in (1010.0, 1015.0, 1020.0):
            s.poll(now)
        time.sleep(0.3)
        self.assertEqual(sorted(p["sweep"] for p in timer.payloads), DUTIES)
        release.set()
        wait_for(lambda: not s.running)
        self.assertEqual(s.running, set(), "the ended ticks are no longer marked running")
        # Ended: the next poll past its time fires each duty again, once.
        s.poll(1021.0)
        wait_for(lambda: len(timer.payloads) >= 12)
        time.sleep(0.3)
        self.assertEqual(sorted(p["sweep"] for p in timer.payloads), sorted(DUTIES * 2))
        self.assertEqual(sum("fires" in line for line in lines), 12, "each duty twice")

    def test_a_capped_cron_keeps_its_place_in_the_period(self):
        timer = FakeFunction()
        lines = []
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lines.append, rate_cap=5)
        s.poll(1000.0)
        # Minute m of 5 is second m of a capped 5 s; follow (every minute) at second 0.
        order = []
        for now in (1001.0, 1002.0, 1003.0, 1004.0, 1005.0):
            s.poll(now)
            wait_for(lambda: not s.running)
            order.append(sorted(p["sweep"] for p in timer.payloads[sum(map(len, order)):]))
        self.assertEqual(order, [["requeue"], ["origins"], ["cards"], ["notify"],
                                 ["follow", "timers"]])

    def test_an_uncapped_schedule_fires_at_its_period_whatever_runs(self):
        release = threading.Event()
        timer = FakeFunction(lambda payload: release.wait(10) and b"null")
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lambda line: None)
        s.poll(1000.0)
        s.poll(1300.0)
        s.poll(1600.0)  # the first still runs: AWS fires a rate regardless
        timers = lambda: [p for p in timer.payloads if p == {"sweep": "timers"}]
        wait_for(lambda: len(timers()) >= 2)
        release.set()
        self.assertEqual(len(timers()), 2)

    def test_a_batch_keeps_only_the_failed_records(self):
        url = self.stack.queue_urls["LapseQueue"]
        for n in range(3):
            self.sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageGroupId="g",
                                  MessageDeduplicationId=f"m{n}")

        def answer(event):
            failed = [r["messageId"] for r in event["Records"] if r["body"] == "m1"]
            return json.dumps({"batchItemFailures": [{"itemIdentifier": i} for i in failed]}).encode()

        submitter = FakeFunction(answer)
        mapping = self.stack.resolve(
            self.stack.resources["SubmitterLapseQueueSource"]["Properties"]
        )
        source = QueueSource(self.stack, self.sqs, "SubmitterLapseQueueSource", mapping,
                             {"SubmitterFunction": submitter}, lambda line: None)
        self.assertEqual(source.poll_once(), 3)
        records = submitter.payloads[0]["Records"]
        self.assertEqual([r["body"] for r in records], ["m0", "m1", "m2"])
        self.assertEqual(records[0]["attributes"]["MessageGroupId"], "g")
        self.assertEqual(records[0]["eventSourceARN"], self.stack.arn("LapseQueue"))
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        # m1 is in flight until its visibility timeout; m0 and m2 are gone.
        self.assertEqual(attrs["ApproximateNumberOfMessages"], "0")
        self.assertEqual(attrs["ApproximateNumberOfMessagesNotVisible"], "1")

    def test_a_batch_wakes_the_other_pollers_before_its_invocation_ends(self):
        url = self.stack.queue_urls["LapseQueue"]
        release = threading.Event()
        started = []

        def answer(event):
            started.append(time.monotonic())
            if len(started) == 2:
                release.set()
            release.wait(10)  # the first batch's invocation holds until the second has begun
            return b"null"

        submitter = FakeFunction(answer)
        mapping = self.stack.resolve(
            self.stack.resources["SubmitterLapseQueueSource"]["Properties"]
        )
        source = QueueSource(self.stack, self.sqs, "SubmitterLapseQueueSource", mapping,
                             {"SubmitterFunction": submitter}, lambda line: None)
        source.IDLE_OTHERS = 30.0  # a poller that is not woken would not poll again in time
        source.start()
        try:
            time.sleep(0.5)  # every poller has found the queue empty and waits
            # Eleven of group a, then one of b: the first batch takes ten of a; b waits
            # behind it for a poller.
            bodies = [f"a{n}" for n in range(11)] + ["b"]
            self.sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": body, "MessageGroupId": body[0],
                 "MessageDeduplicationId": body} for i, body in enumerate(bodies[:10])])
            self.sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": body, "MessageGroupId": body[0],
                 "MessageDeduplicationId": body} for i, body in enumerate(bodies[10:])])
            self.assertTrue(release.wait(5), "the second batch began while the first ran")
            self.assertEqual([r["body"] for r in submitter.payloads[1]["Records"]], ["b"])
            self.assertLess(started[1] - started[0], 2.0)
        finally:
            release.set()
            source.stop()

    def _failing_schedule(self, retries):
        self.scheduler.create_schedule(
            Name="d-9", GroupName="st-timers", ScheduleExpression="at(2026-09-10T20:15:00)",
            FlexibleTimeWindow={"Mode": "OFF"}, ActionAfterCompletion="DELETE",
            Target={"Arn": self.stack.alias_arn("TimerFunction"),
                    "RoleArn": "arn:aws:iam::1:role/r",
                    "Input": '{"tenant": "t", "timer": "d-9"}',
                    "RetryPolicy": {"MaximumRetryAttempts": retries},
                    "DeadLetterConfig": {"Arn": self.stack.arn("SchedulerDeadLetterQueue")}},
        )

    def _dead_lettered(self, wait=5.0):
        url = self.stack.queue_urls["SchedulerDeadLetterQueue"]
        got, until = [], time.monotonic() + wait
        while not got and time.monotonic() < until:
            got = self.sqs.receive_message(QueueUrl=url).get("Messages", [])
            if not got:
                time.sleep(0.1)
        return [json.loads(m["Body"]) for m in got]

    def test_a_schedule_scheduler_may_not_invoke_goes_to_its_dead_letter_queue(self):
        timer = FakeFunction()
        self._failing_schedule(1)
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lambda line: None)
        s.as_role = lambda role: (lambda action, arn: (False, "not authorized"), self.sqs)
        s.poll(parse_expression("at(2026-09-10T20:15:00)")[1])
        self.assertEqual(self._dead_lettered(), [{"tenant": "t", "timer": "d-9"}])
        self.assertEqual(timer.payloads, [], "never invoked")

    def test_a_schedule_under_the_customer_key_is_decrypted_as_its_role_before_it_invokes(self):
        # EventBridge Scheduler user guide, "Encryption at rest": the execution role needs
        # kms:Decrypt on the key; the stand-in asks it first, with the schedule's ARN as the
        # encryption context, and a denial fails the attempt as an invoke's denial does.
        key = "arn:aws:kms:us-east-1:123456789012:key/k-1"
        for decrypt, invoked in ((True, [{"tenant": "t", "timer": "d-8"}]), (False, [])):
            timer, asked = FakeFunction(), []
            self.scheduler.create_schedule(
                Name="d-8", GroupName="st-timers", ScheduleExpression="at(2026-09-10T20:15:00)",
                FlexibleTimeWindow={"Mode": "OFF"}, ActionAfterCompletion="DELETE",
                KmsKeyArn=key,
                Target={"Arn": self.stack.alias_arn("TimerFunction"),
                        "RoleArn": "arn:aws:iam::1:role/r",
                        "Input": '{"tenant": "t", "timer": "d-8"}',
                        "RetryPolicy": {"MaximumRetryAttempts": 0},
                        "DeadLetterConfig": {"Arn": self.stack.arn("SchedulerDeadLetterQueue")}})
            arn = self.scheduler.get_schedule(GroupName="st-timers", Name="d-8")["Arn"]

            def may(action, resource, context=None, decrypt=decrypt, asked=asked):
                asked.append((action, resource, context))
                return (decrypt or action != "kms:Decrypt"), "not authorized"

            s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                          lambda line: None)
            s.as_role = lambda role, may=may: (may, self.sqs)
            s.poll(parse_expression("at(2026-09-10T20:15:00)")[1])
            wait_for(lambda: asked)
            self.assertEqual(asked[0], ("kms:Decrypt", key, {
                "kms:EncryptionContext:aws:scheduler:schedule:arn": arn}))
            if decrypt:
                wait_for(lambda: timer.payloads)
                self.assertEqual(timer.payloads, invoked)
            else:
                self.assertEqual(self._dead_lettered(), [{"tenant": "t", "timer": "d-8"}])
                self.assertEqual(timer.payloads, [], "never invoked")

    def test_a_timer_function_error_is_not_retried_by_lambda(self):
        # TimerAsyncRetries (template.yaml): MaximumRetryAttempts 0 for the timer function, so
        # a failed fire runs once; Lambda, not Scheduler, handles a function error, and sends
        # nothing to the schedule's dead-letter queue.
        # Set on the alias the schedules invoke (`live`); $LATEST keeps Lambda's defaults.
        self.assertEqual(async_retries(self.stack, "TimerFunction", "live"), 0)
        self.assertEqual(async_retries(self.stack, "TimerFunction", "$LATEST"), 2)
        self.assertEqual(async_retries(self.stack, "SubmitterFunction", "live"), 2,
                         "Lambda's default")
        self.assertEqual(async_max_age(self.stack, "TimerFunction", "live"), 120)
        self.assertIsNone(async_max_age(self.stack, "TimerFunction", "$LATEST"))
        done = threading.Event()
        lines = []

        def fail(payload):
            raise InvocationError("boom")

        timer = FakeFunction(fail)
        self._failing_schedule(2)
        s = Scheduler(self.stack, self.scheduler, self.sqs, {"TimerFunction": timer},
                      lambda line: (lines.append(line), done.set()))
        s.poll(parse_expression("at(2026-09-10T20:15:00)")[1])
        wait_for(lambda: any("invocation failed" in l for l in lines))
        time.sleep(1.5)
        self.assertEqual(len(timer.payloads), 1, "no retry")
        self.assertEqual(self._dead_lettered(0.5), [])


# A stand-in function binary speaking the Runtime API: echoes its event, answers
# {"fail": true} with an error, and exits on {"exit": true}.
FAKE_FUNCTION = """#!%s
import json, os, sys, urllib.request
api = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime/invocation/"
while True:
    with urllib.request.urlopen(api + "next") as r:
        rid, event = r.headers["Lambda-Runtime-Aws-Request-Id"], json.loads(r.read())
    if event.get("exit"):
        sys.exit(3)
    if event.get("sleep"):
        import time; time.sleep(event["sleep"])
    kind = "error" if event.get("fail") else "response"
    body = json.dumps({"errorMessage": "failed"} if event.get("fail") else event).encode()
    urllib.request.urlopen(urllib.request.Request(api + rid + "/" + kind, data=body)).read()
"""


class RuntimeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "fn")
        with open(path, "w") as f:
            f.write(FAKE_FUNCTION % sys.executable)
        os.chmod(path, 0o755)
        self.log = io.StringIO()
        self.fn = Function("fn", path, {"PATH": os.environ.get("PATH", "")}, timeout=10,
                           memory=128, arn="arn:aws:lambda:us-east-1:1:function:fn",
                           log_stream=self.log)
        self.fn.start()

    def tearDown(self):
        self.fn.stop()
        self.dir.cleanup()

    def test_responses_errors_and_a_new_instance_after_an_exit(self):
        self.assertEqual(json.loads(self.fn.invoke({"a": 1})), {"a": 1})
        with self.assertRaises(InvocationError) as failed:
            self.fn.invoke({"fail": True})
        self.assertIn("failed", str(failed.exception))
        first = self.fn.process.pid
        with self.assertRaises(InvocationError) as died:
            self.fn.invoke({"exit": True})
        self.assertIn("exited (3)", str(died.exception))
        self.assertEqual(json.loads(self.fn.invoke({"b": 2})), {"b": 2})
        self.assertNotEqual(self.fn.process.pid, first)
        self.assertIn("[fn] exited (3); starting a new instance", self.log.getvalue())

    def test_each_invocation_reports_its_duration_and_event(self):
        self.fn.invoke({"routeKey": "POST /v1/facts", "a": 1})
        self.fn.invoke({"Records": [{"eventSource": "aws:sqs",
                                     "eventSourceARN": "arn:aws:sqs:us-east-1:1:lapses.fifo"}]})
        self.fn.invoke({"sweep": True})
        reports = [l for l in self.log.getvalue().splitlines() if " REPORT RequestId: " in l]
        self.assertEqual(len(reports), 3, reports)
        for line, kind in zip(reports, ["POST /v1/facts", "sqs:lapses.fifo", "schedule"]):
            self.assertRegex(line, r"Duration: \d+\.\d\d ms Billed Duration: \d+ ms Event: ")
            self.assertTrue(line.endswith("Event: " + kind), line)


class RuntimeTimeoutTest(unittest.TestCase):
    def test_an_invocation_past_its_timeout_fails_and_its_instance_is_replaced(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "fn")
            with open(path, "w") as f:
                f.write(FAKE_FUNCTION % sys.executable)
            os.chmod(path, 0o755)
            fn = Function("fn", path, {"PATH": os.environ.get("PATH", "")}, timeout=1,
                          memory=128, arn="arn:aws:lambda:us-east-1:1:function:fn",
                          log_stream=io.StringIO())
            fn.start()
            try:
                first = fn.process.pid
                started = time.time()
                with self.assertRaises(InvocationError) as late:
                    fn.invoke({"sleep": 30})
                self.assertIn("timed out", str(late.exception))
                self.assertLess(time.time() - started, 10)
                self.assertEqual(json.loads(fn.invoke({"c": 3})), {"c": 3})
                self.assertNotEqual(fn.process.pid, first)
            finally:
                fn.stop()


class BadInputTest(unittest.TestCase):
    def test_bad_input_is_one_clear_line(self):
        from . import __main__ as program

        for config, reason in (("/no/such.toml", "No such file"), (TEMPLATE, "is not TOML")):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as done:
                program.main(["--bin-dir", "/x", "--endpoint", "http://127.0.0.1:1",
                              "--config", config])
            self.assertEqual(done.exception.code, 1)
            self.assertIn("[aws-local] error: ", out.getvalue())
            self.assertIn(reason, out.getvalue())
            self.assertNotIn("Traceback", out.getvalue())


class ReadyBannerTest(unittest.TestCase):
    """The terminal's last line at start is the ready line, under a banner naming what to use
    and how to stop; with a log file, the stack's and the functions' lines go there."""

    def tearDown(self):
        from . import __main__ as program

        program.use_log("-")

    def test_the_ready_line_ends_a_banner_with_the_urls_the_log_and_the_stop(self):
        from . import __main__ as program

        config = {"agents": [{"id": "booking", "push_token": "push-token-1"}],
                  "operators": [{"id": "ops-desk", "token": "ops-token-1"}]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "aws-local.log")
            program.use_log(path)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                program.log("resources made")
                Function("api", "/bin/true", {}, 3, 128,
                         "arn:aws:lambda:us-east-1:1:function:api",
                         log_stream=program.log_stream()).log("a function's line")
                program.print_ready("http://127.0.0.1:3000", config, "http://127.0.0.1:5010")
            program.use_log("-")
            with open(path, encoding="utf-8") as f:
                logged = f.read()
        shown = out.getvalue().splitlines()
        self.assertEqual(
            shown[-1], "[aws-local] ready at http://127.0.0.1:3000 (Ctrl-C stops everything)")
        text = "\n".join(shown)
        for expected in (
            "API URL: http://127.0.0.1:3000",
            "agent booking: push http://127.0.0.1:3000/v1/agents/booking/push  "
            "X-A2A-Notification-Token: push-token-1",
            "operator ops-desk: Authorization: Bearer ops-token-1",
            "Emulator: http://127.0.0.1:5010",
            f"Log: {path} (every function's lines; tail -f to follow)",
            "Stop: Ctrl-C stops everything it started",
        ):
            self.assertIn(expected, text)
        # The start-up lines are in the log, not on the terminal; the banner is in both.
        self.assertNotIn("resources made", text)
        self.assertNotIn("a function's line", text)
        self.assertIn("[aws-local] resources made", logged)
        self.assertIn("[api] a function's line", logged)
        self.assertIn("[aws-local] ready at http://127.0.0.1:3000", logged)

    def test_without_a_log_file_everything_stays_on_standard_output(self):
        from . import __main__ as program

        program.use_log("-")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            program.log("resources made")
            program.say("stopping")
            program.print_ready("http://127.0.0.1:3000", {})
        shown = out.getvalue().splitlines()
        self.assertEqual(shown[0], "[aws-local] resources made")
        self.assertEqual(shown.count("[aws-local] stopping"), 1)
        self.assertEqual(
            shown[-1], "[aws-local] ready at http://127.0.0.1:3000 (Ctrl-C stops everything)")
        self.assertNotIn("Log:", out.getvalue())


class CapsTest(unittest.TestCase):
    def test_a_capped_lease_keeps_the_function_timeout_below_it(self):
        from aws_local.__main__ import capped_lease, capped_timeout

        env = capped_lease({"SENDER_LEASE_SECONDS": "70"}, 30)
        self.assertEqual(env["SENDER_LEASE_SECONDS"], "29")
        # The submitter's 60 s would let a held send outlast its 29 s claim.
        self.assertEqual(capped_timeout(env, 60, 30), 28)
        self.assertEqual(capped_timeout(env, 10, 30), 10)
        # No cap, or no lease: the template's timeout.
        self.assertEqual(capped_timeout({"SENDER_LEASE_SECONDS": "70"}, 60, None), 60)
        self.assertEqual(capped_timeout({}, 60, 30), 60)


class EndpointsTest(unittest.TestCase):
    def test_dynamodb_may_have_an_emulator_of_its_own(self):
        from . import __main__ as program

        shared = program.parse_args(["--bin-dir", "/x", "--endpoint", "http://127.0.0.1:1"])
        self.assertEqual(set(program.service_endpoints(shared).values()), {"http://127.0.0.1:1"})
        own = program.parse_args(["--bin-dir", "/x", "--endpoint", "http://127.0.0.1:1",
                                  "--dynamodb-endpoint", "http://127.0.0.1:2",
                                  "--stop-moto-port", "1", "--stop-moto-port", "2"])
        endpoints = program.service_endpoints(own)
        self.assertEqual(endpoints["dynamodb"], "http://127.0.0.1:2")
        self.assertEqual(endpoints["sqs"], "http://127.0.0.1:1")
        self.assertEqual(endpoints["scheduler"], "http://127.0.0.1:1")
        self.assertEqual(own.stop_moto_port, [1, 2])


@contextlib.contextmanager
def transactions_table():
    """A DynamoDB client on moto's in-process mock with infra/moto_server.py's transactions
    installed, and table `t` keyed by `pk` made."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import moto_server

    moto_server.install_journaled_transactions()
    with mock_aws():
        c = boto3.client("dynamodb", region_name="us-east-1")
        c.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield c


class JournaledTransactionsTest(unittest.TestCase):
    """infra/moto_server.py: transactions roll back from a journal, not from table copies."""

    def test_a_canceled_transaction_leaves_every_item_as_it_was(self):
        with transactions_table() as c:
            c.put_item(TableName="t", Item={"pk": {"S": "a"}, "v": {"N": "1"}})
            c.put_item(TableName="t", Item={"pk": {"S": "d"}, "v": {"N": "7"}})

            def update_a(expected, new):
                return {"Update": {
                    "TableName": "t", "Key": {"pk": {"S": "a"}},
                    "UpdateExpression": "SET v = :n", "ConditionExpression": "v = :o",
                    "ExpressionAttributeValues": {":n": {"N": new}, ":o": {"N": expected}},
                }}

            put_b = {"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}, "v": {"N": "2"}}}}
            delete_d = {"Delete": {"TableName": "t", "Key": {"pk": {"S": "d"}}}}
            with self.assertRaises(c.exceptions.TransactionCanceledException) as canceled:
                c.transact_write_items(TransactItems=[put_b, delete_d, update_a("5", "9")])
            reasons = [r.get("Code") for r in canceled.exception.response["CancellationReasons"]]
            self.assertEqual(reasons, ["None", "None", "ConditionalCheckFailed"])

            def items():
                return {i["pk"]["S"]: i["v"]["N"] for i in c.scan(TableName="t")["Items"]}

            self.assertEqual(items(), {"a": "1", "d": "7"})
            c.transact_write_items(TransactItems=[put_b, delete_d, update_a("1", "9")])
            self.assertEqual(items(), {"a": "9", "b": "2"})


class ClientRequestTokenTest(unittest.TestCase):
    """infra/moto_server.py: a transaction sent again with its ClientRequestToken is answered
    as the success it was and applied once, as DynamoDB does; the token with other items is
    refused."""

    def test_a_transaction_sent_again_with_its_token_is_applied_once(self):
        with transactions_table() as c:
            # A binary value too: the token's items are compared as JSON, bytes in base64.
            new_a = {"Put": {
                "TableName": "t", "Item": {"pk": {"S": "a"}, "v": {"N": "1"}, "b": {"B": b"\x00"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }}
            c.transact_write_items(TransactItems=[new_a], ClientRequestToken="tok-1")
            # The same request again, as the SDK retries one whose answer it lost: a success,
            # though its condition no longer holds, and nothing changes.
            c.transact_write_items(TransactItems=[new_a], ClientRequestToken="tok-1")
            self.assertEqual(len(c.scan(TableName="t")["Items"]), 1)
            # Another request: its condition is checked.
            with self.assertRaises(c.exceptions.TransactionCanceledException):
                c.transact_write_items(TransactItems=[new_a], ClientRequestToken="tok-2")
            # The first token with other items.
            new_b = {"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}, "v": {"N": "2"}}}}
            with self.assertRaises(c.exceptions.IdempotentParameterMismatchException):
                c.transact_write_items(TransactItems=[new_b], ClientRequestToken="tok-1")
            self.assertEqual(len(c.scan(TableName="t")["Items"]), 1)

    def test_expired_tokens_are_dropped_from_the_front_and_the_rest_kept(self):
        import collections
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto_server

        window = moto_server.IDEMPOTENCY_WINDOW
        tokens = collections.OrderedDict(
            (f"tok-{k}", ("[]", float(k))) for k in range(10)
        )
        # At window + 3.5, the tokens of 0, 1, 2 and 3 are older than the window.
        self.assertEqual(moto_server.expire_tokens(window + 3.5, tokens), 4)
        self.assertEqual(list(tokens), [f"tok-{k}" for k in range(4, 10)])
        # A token exactly the window old is kept, as the handler's check is "older than".
        self.assertEqual(moto_server.expire_tokens(window + 4.0, tokens), 0)
        self.assertEqual(moto_server.expire_tokens(window + 100.0, tokens), 6)
        self.assertEqual(len(tokens), 0)
        self.assertEqual(moto_server.expire_tokens(window + 200.0, tokens), 0)


class PartitionQueriesTest(unittest.TestCase):
    """infra/moto_server.py: a base-table Query reads its one partition and answers as moto's."""

    def test_a_query_answers_its_partition_in_order_and_pages_on(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto_server

        moto_server.install_partition_queries()
        with mock_aws():
            c = boto3.client("dynamodb", region_name="us-east-1")
            c.create_table(
                TableName="t",
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                AttributeDefinitions=[
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "g", "AttributeType": "S"},
                ],
                GlobalSecondaryIndexes=[{
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }],
                BillingMode="PAY_PER_REQUEST",
            )
            for pk in ("a", "b"):
                for sk in ("3", "1", "2", "x1"):
                    c.put_item(TableName="t", Item={
                        "pk": {"S": pk}, "sk": {"S": sk}, "g": {"S": "G" + sk},
                    })

            def query(**more):
                values = {":p": {"S": "a"}, **more.pop("values", {})}
                answer = c.query(
                    TableName="t",
                    KeyConditionExpression=more.pop("KeyConditionExpression", "pk = :p"),
                    ExpressionAttributeValues=values,
                    **more,
                )
                return [i["sk"]["S"] for i in answer["Items"]], answer.get("LastEvaluatedKey")

            # A base-table query never lists the whole table.
            listing = unittest.mock.patch.object(
                moto_server.dynamodb_models.Table, "all_items",
                side_effect=AssertionError("a Query listed every item of the table"),
            )
            listing.start()
            self.addCleanup(listing.stop)
            self.assertEqual(query(), (["1", "2", "3", "x1"], None))
            self.assertEqual(query(ScanIndexForward=False)[0], ["x1", "3", "2", "1"])
            first, after = query(Limit=2)
            self.assertEqual(first, ["1", "2"])
            self.assertEqual(after, {"pk": {"S": "a"}, "sk": {"S": "2"}})
            self.assertEqual(query(ExclusiveStartKey=after), (["3", "x1"], None))
            self.assertEqual(
                query(KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
                      values={":s": {"S": "x"}})[0],
                ["x1"],
            )
            self.assertEqual(
                query(FilterExpression="g <> :g", values={":g": {"S": "G2"}})[0],
                ["1", "3", "x1"],
            )
            missing = c.query(
                TableName="t", KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": "none"}},
            )
            self.assertEqual(missing["Items"], [])
            listing.stop()

            # An index query: from a grouping of the table by the index's key, made once and
            # made again after a write.
            listed = []
            all_items = moto_server.dynamodb_models.Table.all_items

            def counted(table):
                listed.append(table.name)
                return all_items(table)

            counting = unittest.mock.patch.object(
                moto_server.dynamodb_models.Table, "all_items", counted
            )
            counting.start()
            self.addCleanup(counting.stop)

            def by_g(g):
                answer = c.query(
                    TableName="t", IndexName="by-g", KeyConditionExpression="g = :g",
                    ExpressionAttributeValues={":g": {"S": g}},
                )
                return sorted((i["pk"]["S"], i["sk"]["S"]) for i in answer["Items"])

            self.assertEqual(by_g("G1"), [("a", "1"), ("b", "1")])
            self.assertEqual(by_g("G3"), [("a", "3"), ("b", "3")])
            self.assertEqual(by_g("none"), [])
            self.assertEqual(listed, ["t"], "one listing serves the index until a write")
            c.update_item(
                TableName="t", Key={"pk": {"S": "a"}, "sk": {"S": "1"}},
                UpdateExpression="SET g = :g", ExpressionAttributeValues={":g": {"S": "G3"}},
            )
            self.assertEqual(by_g("G1"), [("b", "1")])
            self.assertEqual(by_g("G3"), [("a", "1"), ("a", "3"), ("b", "3")])
            self.assertEqual(listed, ["t", "t"], "a write makes the grouping again, once")

if __name__ == "__main__":
    unittest.main()


class GroupFirstReceivesTest(unittest.TestCase):
    """infra/moto_server.py: a FIFO receive hands out one group's messages together, as SQS."""

    def test_a_receive_takes_as_many_of_one_group_as_it_can(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto_server

        with mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            url = sqs.create_queue(
                QueueName="q.fifo",
                Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"},
            )["QueueUrl"]
            for body in ("a1", "b1", "a2", "c1", "b2", "a3"):
                sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=body[0],
                                 MessageDeduplicationId=body)

            def receive(n):
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n)
                return [m["Body"] for m in got.get("Messages", [])]

            self.assertEqual(receive(2), ["a1", "b1"], "moto's own: the oldest, any group")
            sqs.purge_queue(QueueUrl=url)
            for body in ("a1", "b1", "a2", "c1", "b2", "a3"):
                sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=body[0],
                                 MessageDeduplicationId=body + "-again")
            moto_server.install_group_first_receives()
            try:
                self.assertEqual(receive(2), ["a1", "a2"])
                # Group a is in flight: the next receive starts with b, then c.
                self.assertEqual(receive(10), ["b1", "b2", "c1"])
                self.assertEqual(receive(10), [], "every group in flight")
            finally:
                moto_server.sqs_models.Queue.messages = moto_server._visible


class LeanLookupsTest(unittest.TestCase):
    """infra/moto_server.py: moto's clock and service list, the same answers at less cost."""

    def test_the_clock_answers_as_motos(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import datetime as dt

        import moto_server

        for when in (dt.datetime(1970, 1, 1), dt.datetime(2026, 12, 3, 8, 30, 15, 123456),
                     dt.datetime(1969, 12, 31, 23, 59, 59)):
            self.assertEqual(moto_server.unix_time(when), moto_server.moto_utils.unix_time(when))
            self.assertEqual(moto_server.unix_time_millis(when),
                             moto_server.moto_utils.unix_time_millis(when))
        before = moto_server.moto_utils.unix_time()
        now = moto_server.unix_time()
        self.assertLess(abs(now - before), 1.0, "now, as moto's now")

    def test_messages_are_delayed_and_visible_as_before(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto_server

        originals = (moto_server.moto_utils.unix_time, moto_server.moto_utils.unix_time_millis,
                     moto_server.sqs_models.unix_time_millis, moto_server.moto.backends.list_of_moto_modules)
        modules = list(moto_server._list_of_moto_modules())
        moto_server.install_lean_lookups()
        try:
            self.assertIs(moto_server.sqs_models.unix_time_millis, moto_server.unix_time_millis)
            self.assertEqual(list(moto_server.moto.backends.list_of_moto_modules()), modules)
            with mock_aws():
                sqs = boto3.client("sqs", region_name="us-east-1")
                url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
                sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=5)
                sqs.send_message(QueueUrl=url, MessageBody="now")
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
                self.assertEqual([m["Body"] for m in got["Messages"]], ["now"])
                self.assertNotIn("Messages", sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10),
                                 "one delayed, one in flight")
                attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
                self.assertEqual(attrs["ApproximateNumberOfMessagesDelayed"], "1")
                self.assertEqual(attrs["ApproximateNumberOfMessagesNotVisible"], "1")
        finally:
            moto_server.moto_utils.unix_time, moto_server.moto_utils.unix_time_millis = originals[:2]
            moto_server.sqs_models.unix_time_millis = originals[2]
            moto_server.sqs_models.unix_time = originals[0]
            moto_server.moto.backends.list_of_moto_modules = originals[3]


class PlainItemAnswersTest(unittest.TestCase):
    """infra/moto_server.py: DynamoDB's item operations answer exactly as moto's serializer
    would, each answer dumped as it is built."""

    def test_every_item_operation_answers_as_moto_serializes(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto_server
        from moto.core.responses import ActionResult

        compared, differing = [], []
        moto_own = moto_server._execute_result

        def both(result, context):
            operation = context.operation_model.name
            members = context.operation_model.output_shape.members
            plain = moto_server.plain_answer(operation, result.result, members)
            _, _, body = moto_own(result, context)
            if plain is not None:
                compared.append(operation)
                if json.loads(plain) != json.loads(body):
                    differing.append((operation, plain, body))
            return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

        item = {
            "pk": {"S": "p"}, "sk": {"S": "1"}, "s": {"S": "text é"}, "n": {"N": "12.50"},
            "b": {"B": b"\x00\x01binary"}, "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2"]},
            "bs": {"BS": [b"x", b"y"]}, "t": {"BOOL": True}, "nul": {"NULL": True},
            "m": {"M": {"in": {"L": [{"S": "x"}, {"N": "3"}, {"M": {}}]}}}, "l": {"L": []},
        }
        with unittest.mock.patch.object(ActionResult, "execute_result", both), mock_aws():
            c = boto3.client("dynamodb", region_name="us-east-1")
            c.create_table(
                TableName="t",
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                           {"AttributeName": "sk", "KeyType": "RANGE"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                      {"AttributeName": "sk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            total = {"ReturnConsumedCapacity": "TOTAL"}
            c.put_item(TableName="t", Item=item)
            c.put_item(TableName="t", Item={**item, "sk": {"S": "2"}}, ReturnValues="ALL_OLD", **total)
            c.put_item(TableName="t", Item={**item, "sk": {"S": "2"}}, ReturnValues="ALL_OLD")
            c.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "1"}})
            c.get_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "1"}},
                       ProjectionExpression="#m, b", ExpressionAttributeNames={"#m": "m"},
                       ConsistentRead=True, **total)
            c.get_item(TableName="t", Key={"pk": {"S": "none"}, "sk": {"S": "1"}})
            c.update_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "1"}},
                          UpdateExpression="SET n = n + :one ADD ss :more REMOVE nul",
                          ExpressionAttributeValues={":one": {"N": "1"}, ":more": {"SS": ["c"]}},
                          ReturnValues="ALL_NEW", **total)
            c.update_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "1"}},
                          UpdateExpression="SET s = :s", ExpressionAttributeValues={":s": {"S": "new"}},
                          ReturnValues="UPDATED_OLD")
            c.update_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "3"}},
                          UpdateExpression="SET s = :s", ExpressionAttributeValues={":s": {"S": "x"}})
            c.query(TableName="t", KeyConditionExpression="pk = :p",
                    ExpressionAttributeValues={":p": {"S": "p"}}, Limit=1, **total)
            c.query(TableName="t", KeyConditionExpression="pk = :p",
                    ExpressionAttributeValues={":p": {"S": "p"}}, Select="COUNT")
            c.query(TableName="t", KeyConditionExpression="pk = :p",
                    ExpressionAttributeValues={":p": {"S": "none"}})
            c.scan(TableName="t", FilterExpression="attribute_exists(b)", **total)
            c.scan(TableName="t", Limit=2)
            c.batch_get_item(RequestItems={"t": {"Keys": [
                {"pk": {"S": "p"}, "sk": {"S": "1"}}, {"pk": {"S": "none"}, "sk": {"S": "1"}}]}},
                **total)
            c.batch_write_item(RequestItems={"t": [
                {"PutRequest": {"Item": {**item, "sk": {"S": "4"}}}},
                {"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"S": "3"}}}}]}, **total)
            c.transact_get_items(TransactItems=[
                {"Get": {"TableName": "t", "Key": {"pk": {"S": "p"}, "sk": {"S": "1"}}}},
                {"Get": {"TableName": "t", "Key": {"pk": {"S": "none"}, "sk": {"S": "1"}}}}],
                **total)
            c.transact_write_items(TransactItems=[
                {"Put": {"TableName": "t", "Item": {**item, "sk": {"S": "5"}}}},
                {"Update": {"TableName": "t", "Key": {"pk": {"S": "p"}, "sk": {"S": "1"}},
                            "UpdateExpression": "SET s = :s",
                            "ExpressionAttributeValues": {":s": {"S": "t"}}}}], **total)
            c.delete_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "4"}},
                          ReturnValues="ALL_OLD", **total)
            c.delete_item(TableName="t", Key={"pk": {"S": "p"}, "sk": {"S": "5"}})
            with self.assertRaises(c.exceptions.ConditionalCheckFailedException):
                c.put_item(TableName="t", Item=item, ConditionExpression="attribute_not_exists(pk)")
        self.maxDiff = None
        self.assertEqual(differing, [])
        self.assertEqual(set(compared), moto_server.ITEM_OPERATIONS, compared)


class CachedMethodNamesTest(unittest.TestCase):
    """infra/moto_server.py: a handler class's method names are listed once, and are moto's."""

    def test_the_names_are_motos_and_listed_once(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        import moto.core.utils as moto_utils
        import moto.dynamodb.responses as dynamodb_responses
        import moto.sqs.responses as sqs_responses
        import moto_server

        for handler in (dynamodb_responses.DynamoHandler, sqs_responses.SQSResponse):
            self.assertEqual(
                sorted(moto_server.method_names_from_class(handler)),
                sorted(moto_utils.method_names_from_class(handler)),
            )
        with unittest.mock.patch.object(
            moto_utils, "method_names_from_class", wraps=moto_utils.method_names_from_class
        ) as listed:
            moto_server.method_names_from_class.cache_clear()
            for _ in range(3):
                moto_server.method_names_from_class(dynamodb_responses.DynamoHandler)
            self.assertEqual(listed.call_count, 1)


class KeptConnectionsTest(unittest.TestCase):
    """infra/moto_server.py: the emulator keeps a client's connection open across requests
    (werkzeug would close each one), and a request sent as soon as the last answer is read is
    answered, not thrown away as left-over input."""

    def test_one_connection_serves_request_after_request(self):
        import http.client
        import socket
        import subprocess

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        infra = os.path.join(os.path.dirname(__file__), "..")
        server = subprocess.Popen(
            [sys.executable, "-m", "moto_server", "-H", "127.0.0.1", "-p", str(port)],
            cwd=infra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            def up():
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    return True
                except OSError:
                    return False

            self.assertTrue(wait_for(up, 30), "the emulator started")
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            headers = {
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/"
                                 "dynamodb/aws4_request, SignedHeaders=host, Signature=x",
            }
            first_socket = None
            for _ in range(20):
                c.request("POST", "/", body="{}", headers=headers)
                r = c.getresponse()
                self.assertEqual(r.status, 200)
                self.assertEqual(json.loads(r.read()), {"TableNames": []})
                self.assertIsNone(r.getheader("Connection"))
                self.assertIsNotNone(c.sock, "the connection is kept")
                first_socket = first_socket or c.sock
                self.assertIs(c.sock, first_socket, "every request on the one connection")
            c.close()
        finally:
            server.terminate()
            server.wait(10)
