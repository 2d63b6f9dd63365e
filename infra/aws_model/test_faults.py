"""Unit tests of the seeded fault injector (`../.venv/bin/python -m unittest aws_model.test_faults`
from infra/): the same seed gives the same faults, the rates hold over many calls, each fault
reaches an AWS SDK (botocore, retries off) as the service's own error, and a lost answer leaves
its write applied."""

import json
import threading
import unittest

from aws_model import _PARTS, faults, modelled, register
from aws_model.calls import Call


def _call(service="dynamodb", operation="PutItem", params=None, key="K"):
    return Call(service, operation, "json", key, "us-east-1", dict(params or {}))


def _run(part, calls):
    """What `part` did to each call: the refusal's code, `lost`, or None."""
    out = []
    for call in calls:
        refusal = part.admit(call)
        if refusal is not None:
            out.append(refusal.code)
            continue
        out.append("lost" if part.after(call, 200) is not None else None)
    return out


class SeedTest(unittest.TestCase):
    RATES = {"dynamodb": {"throttle": 0.1, "error": 0.05, "conflict": 0.05, "lost": 0.05},
             "sqs": {"throttle": 0.1, "unavailable": 0.05, "lost": 0.05}}

    def _calls(self):
        ops = [("dynamodb", "PutItem"), ("dynamodb", "GetItem"), ("sqs", "SendMessage"),
               ("dynamodb", "TransactWriteItems"), ("sqs", "ReceiveMessage")]
        return [_call(*ops[i % len(ops)], params={"TransactItems": [{}, {}]}) for i in range(500)]

    def test_the_same_seed_and_calls_give_the_same_faults(self):
        part = faults._Part()
        part.configure({"seed": 7, "rates": self.RATES})
        first = _run(part, self._calls())
        part.configure({"seed": 7, "rates": self.RATES})
        self.assertEqual(_run(part, self._calls()), first)
        part.configure({"seed": 8, "rates": self.RATES})
        self.assertNotEqual(_run(part, self._calls()), first)
        self.assertTrue(any(first), "some faults in 500 calls")

    def test_an_unconfigured_injector_lets_everything_pass(self):
        part = faults._Part()
        self.assertEqual(set(_run(part, self._calls())), {None})
        self.assertEqual(part.state()["considered"], 0)

    def test_rates_hold_roughly_over_many_calls(self):
        part = faults._Part()
        rates = {"throttle": 0.05, "error": 0.02, "conflict": 0.02, "lost": 0.03}
        part.configure({"seed": 1, "rates": {"dynamodb": rates}})
        n = 20000
        _run(part, [_call("dynamodb", "UpdateItem") for _ in range(n)])
        got = part.state()["counts"]["dynamodb/UpdateItem"]
        names = {"throttle": "throttle", "error": "error", "conflict": "conflict", "lost": "lost"}
        for kind, rate in rates.items():
            # Binomial: 4 standard deviations either side.
            sd = (n * rate * (1 - rate)) ** 0.5
            self.assertLess(abs(got[names[kind]] - n * rate), 4 * sd, (kind, got))
        self.assertEqual(part.state()["totals"]["dynamodb"], got)

    def test_kinds_apply_only_where_the_service_has_them(self):
        part = faults._Part()
        part.configure({"seed": 3, "rates": {"dynamodb": {"conflict": 0.5, "lost": 0.5}}})
        # A read has neither a conflict nor a lost answer.
        self.assertEqual(set(_run(part, [_call("dynamodb", "GetItem")] * 200)), {None})
        self.assertEqual(set(_run(part, [_call("dynamodb", "Query")] * 200)), {None})
        for bad in ({"sqs": {"conflict": 0.1}}, {"scheduler": {"unavailable": 0.1}},
                    {"dynamodb": {"throttle": 0.7, "error": 0.4}}, {"s3": {"error": 0.1}},
                    {"dynamodb": {"throttle": "x"}}, {"dynamodb": {"slow": 0.1}}):
            with self.assertRaises(ValueError, msg=bad):
                part.configure({"rates": bad})
        with self.assertRaises(ValueError):
            part.configure({"seed": "x"})

    def test_filters_keep_only_the_named_operations_and_callers(self):
        part = faults._Part()
        part.configure({"seed": 1, "rates": {"dynamodb": {"throttle": 1.0}},
                        "operations": ["dynamodb:PutItem", "TransactWriteItems"],
                        "callers": ["FN"]})
        self.assertEqual(_run(part, [_call("dynamodb", "PutItem", key="FN")]),
                         ["ProvisionedThroughputExceededException"])
        self.assertEqual(_run(part, [_call("dynamodb", "TransactWriteItems", key="FN")]),
                         ["ProvisionedThroughputExceededException"])
        self.assertEqual(_run(part, [_call("dynamodb", "GetItem", key="FN")]), [None])
        self.assertEqual(_run(part, [_call("dynamodb", "PutItem", key="STANDIN")]), [None])

    def test_a_lost_answer_is_not_lost_when_moto_refused_the_write(self):
        part = faults._Part()
        part.configure({"seed": 1, "rates": {"dynamodb": {"lost": 1.0}}})
        call = _call("dynamodb", "PutItem")
        self.assertIsNone(part.admit(call))
        self.assertIsNone(part.after(call, 400))  # a condition failed: nothing applied
        self.assertEqual(part.state()["counts"], {})


class _Emulator:
    """moto's server application behind `aws_model.modelled`, with only the faults part, on a
    port of its own, in this process."""

    def __enter__(self):
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, *args, **kwargs):
                pass

        self.saved = dict(_PARTS)
        _PARTS.clear()
        self.part = faults._Part()
        register("faults", self.part)
        app = DomainDispatcherApplication(create_backend_app)
        self.server = make_server("127.0.0.1", 0, modelled(app), threaded=False,
                                  request_handler=Quiet)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def client(self, service):
        import boto3
        from botocore.config import Config

        return boto3.client(service, endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test",
                            config=Config(retries={"mode": "standard", "total_max_attempts": 1}))

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        _PARTS.clear()
        _PARTS.update(self.saved)


def _error(test, fn, **kw):
    from botocore.exceptions import ClientError

    with test.assertRaises(ClientError) as caught:
        fn(**kw)
    r = caught.exception.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r


class AnswerShapeTest(unittest.TestCase):
    """Each fault as botocore parses it (the answer an SDK reads), and the lost answer's write
    applied."""

    @classmethod
    def setUpClass(cls):
        try:
            import boto3  # noqa: F401
            import moto.server  # noqa: F401
        except ImportError as e:  # pragma: no cover (the venv has both)
            raise unittest.SkipTest(f"moto or boto3 missing: {e}")

    def _table(self, ddb, name):
        ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])

    def test_dynamodb_faults(self):
        with _Emulator() as emu:
            ddb = emu.client("dynamodb")
            self._table(ddb, "t")
            item = {"TableName": "t", "Item": {"pk": {"S": "a"}}}
            for kind, want in (
                ("throttle", (400, "ProvisionedThroughputExceededException")),
                ("error", (500, "InternalServerError")),
                ("unavailable", (503, "ServiceUnavailable")),
                ("conflict", (400, "TransactionConflictException")),
            ):
                emu.part.configure({"seed": 1, "rates": {"dynamodb": {kind: 1.0}}})
                status, code, _ = _error(self, ddb.put_item, **item)
                self.assertEqual((status, code), want, kind)
            self.assertNotIn("Item", ddb.get_item(TableName="t", Key={"pk": {"S": "a"}}))

            emu.part.configure({"seed": 1, "rates": {"dynamodb": {"conflict": 1.0}}})
            status, code, r = _error(self, ddb.transact_write_items, TransactItems=[
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "x"}}}},
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "y"}}}},
            ])
            self.assertEqual((status, code), (400, "TransactionCanceledException"))
            codes = [c["Code"] for c in r["CancellationReasons"]]
            self.assertEqual(sorted(codes), ["None", "TransactionConflict"])
            self.assertIn(f"[{', '.join(codes)}]", r["Error"]["Message"])

            emu.part.configure({"seed": 1, "rates": {"dynamodb": {"throttle": 1.0}}})
            status, code, _ = _error(self, ddb.describe_table, TableName="t")
            self.assertEqual((status, code), (400, "ThrottlingException"))

            # Lost: the client sees DynamoDB's 500, and the item is there.
            emu.part.configure({"seed": 1, "rates": {"dynamodb": {"lost": 1.0}}})
            status, code, _ = _error(self, ddb.put_item, **item)
            self.assertEqual((status, code), (500, "InternalServerError"))
            emu.part.configure({})
            self.assertEqual(ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"],
                             {"pk": {"S": "a"}})

    def test_sqs_faults(self):
        with _Emulator() as emu:
            sqs = emu.client("sqs")
            url = sqs.create_queue(QueueName="q")["QueueUrl"]
            for kind, want in (("throttle", (400, "RequestThrottled")),
                               ("error", (500, "InternalFailure")),
                               ("unavailable", (503, "ServiceUnavailable"))):
                emu.part.configure({"seed": 1, "rates": {"sqs": {kind: 1.0}}})
                status, code, _ = _error(self, sqs.send_message, QueueUrl=url, MessageBody="m")
                self.assertEqual((status, code), want, kind)
            emu.part.configure({"seed": 1, "rates": {"sqs": {"lost": 1.0}}})
            status, code, _ = _error(self, sqs.send_message, QueueUrl=url, MessageBody="sent")
            self.assertEqual((status, code), (500, "InternalFailure"))
            emu.part.configure({})
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
            self.assertEqual([m["Body"] for m in got], ["sent"])  # the lost send only

    def test_scheduler_and_secrets_manager_faults(self):
        with _Emulator() as emu:
            sch = emu.client("scheduler")
            emu.part.configure({"seed": 1, "rates": {"scheduler": {"throttle": 1.0}}})
            status, code, _ = _error(self, sch.list_schedules)
            self.assertEqual((status, code), (429, "ThrottlingException"))
            emu.part.configure({"seed": 1, "rates": {"scheduler": {"error": 1.0}}})
            status, code, _ = _error(self, sch.list_schedules)
            self.assertEqual((status, code), (500, "InternalServerException"))
            emu.part.configure({"seed": 1, "rates": {"scheduler": {"lost": 1.0}}})
            schedule = {"Name": "s", "ScheduleExpression": "at(2030-01-01T00:00:00)",
                        "FlexibleTimeWindow": {"Mode": "OFF"},
                        "Target": {"Arn": "arn:aws:sqs:us-east-1:123456789012:q",
                                   "RoleArn": "arn:aws:iam::123456789012:role/r"}}
            status, code, _ = _error(self, sch.create_schedule, **schedule)
            self.assertEqual((status, code), (500, "InternalServerException"))
            emu.part.configure({})
            self.assertEqual(sch.get_schedule(Name="s")["Name"], "s")
            # The retry a client makes of a create whose answer was lost: AWS's conflict.
            _, code, _ = _error(self, sch.create_schedule, **schedule)
            self.assertEqual(code, "ConflictException")

            sm = emu.client("secretsmanager")
            sm.create_secret(Name="c", SecretString="x")
            for kind, want in (("throttle", (400, "ThrottlingException")),
                               ("error", (500, "InternalServiceError"))):
                emu.part.configure({"seed": 1, "rates": {"secretsmanager": {kind: 1.0}}})
                status, code, _ = _error(self, sm.get_secret_value, SecretId="c")
                self.assertEqual((status, code), want, kind)

    def test_state_counts_per_operation_and_kind(self):
        with _Emulator() as emu:
            ddb = emu.client("dynamodb")
            self._table(ddb, "counted")
            emu.part.configure({"seed": 1, "rates": {"dynamodb": {"throttle": 1.0}}})
            for _ in range(3):
                _error(self, ddb.get_item, TableName="counted", Key={"pk": {"S": "a"}})
            state = emu.part.state()
            self.assertEqual(state["counts"], {"dynamodb/GetItem": {"throttle": 3}})
            self.assertEqual(state["considered"], 3)
            self.assertEqual(json.loads(json.dumps(state))["totals"], {"dynamodb": {"throttle": 3}})


class _FakeFunction:
    def __init__(self, name):
        self.name = name
        self.stopping = threading.Event()
        self.lines = []
        self.on_handed = None

    def log(self, line):
        self.lines.append(line)


class _FakeInstance:
    def __init__(self, function):
        self.function = function
        self.number = 0
        self.in_flight = {}
        self.kills = 0

    def kill(self):
        self.kills += 1


class _FakeInvocation:
    def __init__(self, n):
        self.request_id = f"r{n}"
        self.kind = "sqs:q"
        self.done = threading.Event()


class LocalFlagTest(unittest.TestCase):
    """`--faults SEED[:SPEC]` of the local stack (infra/aws_local/faults.py) and its killer."""

    def test_the_flag_reads_seed_and_spec(self):
        from aws_local import faults as local

        settings, kill = local.parse("7")
        self.assertEqual(settings, {"seed": 7, "rates": local.DEFAULT_RATES})
        self.assertEqual(kill, dict(local.DEFAULT_KILL, seed=7))
        settings, kill = local.parse("9:dynamodb.lost=0.1,sqs.throttle=0.2,kill=0.3,"
                                     "kill.functions=submitter,kill.within=2")
        self.assertEqual(settings, {"seed": 9, "rates": {"dynamodb": {"lost": 0.1},
                                                         "sqs": {"throttle": 0.2}}})
        self.assertEqual(kill, {"rate": 0.3, "functions": ["submitter"], "within": 2.0,
                                "seed": 9})
        for bad in ("x", "7:nope", "7:sqs.conflict=0.1", "7:kill=2", "7:dynamodb.error=a",
                    "7:dynamodb.error=0.6,dynamodb.throttle=0.6"):
            with self.assertRaises(ValueError, msg=bad):
                local.parse(bad)

    def _killed(self, seed, rate, n=200):
        from aws_local.faults import Killer

        fn = _FakeFunction("submitter")
        killer = Killer(seed, rate, ["submitter"], 0.0, fn.log)
        killer.attach({"Submitter": fn})
        instance = _FakeInstance(fn)
        chosen = []
        for i in range(n):
            inv = _FakeInvocation(i)
            inv.done.set()  # ended at once: counted as outlived, never killed
            before = killer.counts["chosen"]
            fn.on_handed(instance, inv)
            chosen.append(killer.counts["chosen"] > before)
        return chosen

    def test_the_killer_chooses_by_seed(self):
        first = self._killed(5, 0.3)
        self.assertEqual(self._killed(5, 0.3), first)
        self.assertNotEqual(self._killed(6, 0.3), first)
        self.assertTrue(30 < sum(first) < 90, sum(first))

    def test_the_killer_kills_an_instance_still_running_its_invocation(self):
        from aws_local.faults import Killer

        fn = _FakeFunction("timer")
        killer = Killer(1, 1.0, ["timer"], 0.05, fn.log)
        killer.attach({"Timer": fn})
        instance = _FakeInstance(fn)
        running, ended = _FakeInvocation(1), _FakeInvocation(2)
        instance.in_flight = {"r1": running, "r2": ended}
        ended.done.set()
        fn.on_handed(instance, running)
        fn.on_handed(instance, ended)
        for _ in range(100):
            if killer.counts["killed"] + killer.counts["outlived"] == 2:
                break
            threading.Event().wait(0.01)
        self.assertEqual((instance.kills, killer.counts["killed"], killer.counts["outlived"]),
                         (1, 1, 1))
        self.assertIn("killing instance", fn.lines[0])
        with self.assertRaises(ValueError):
            Killer(1, 1.0, ["tmer"], 0.1, fn.log).attach({"Timer": fn})


if __name__ == "__main__":
    unittest.main()
