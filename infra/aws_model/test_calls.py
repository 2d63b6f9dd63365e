"""Unit tests of how the model reads a call and answers one with an error
(`../.venv/bin/python -m unittest aws_model.test_calls` from infra/)."""

import io
import json
import unittest

from aws_model import modelled, register
from aws_model import _PARTS
from aws_model.calls import Refusal, read_call


def _environ(method="POST", path="/", body=b"", headers=None, query=""):
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    for k, v in (headers or {}).items():
        env["HTTP_" + k.upper().replace("-", "_")] = v
    if headers and "Content-Type" in headers:
        env["CONTENT_TYPE"] = headers["Content-Type"]
    return env


def _auth(key, service, region="us-east-1"):
    return (f"AWS4-HMAC-SHA256 Credential={key}/20261206/{region}/{service}/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=0")


class ReadCallTest(unittest.TestCase):
    def test_a_json_protocol_call_names_its_operation_and_caller(self):
        body = json.dumps({"TableName": "t", "Key": {"pk": {"S": "a"}}}).encode()
        env = _environ(body=body, headers={
            "Authorization": _auth("ASIAAPI", "dynamodb"),
            "X-Amz-Target": "DynamoDB_20120810.GetItem",
        })
        call = read_call(env)
        self.assertEqual((call.service, call.operation, call.protocol), ("dynamodb", "GetItem", "json"))
        self.assertEqual((call.access_key, call.region), ("ASIAAPI", "us-east-1"))
        self.assertEqual(call.params["TableName"], "t")
        self.assertEqual(call.body_size, len(body))
        # The body is put back for moto, unchanged.
        self.assertEqual(env["wsgi.input"].read(), body)

    def test_a_query_protocol_call_reads_its_form(self):
        body = b"Action=Publish&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A1%3At&Message=hi"
        call = read_call(_environ(body=body, headers={
            "Authorization": _auth("ASIATIMER", "sns"),
            "Content-Type": "application/x-www-form-urlencoded",
        }))
        self.assertEqual((call.service, call.operation, call.protocol), ("sns", "Publish", "query"))
        self.assertEqual(call.params["TopicArn"], "arn:aws:sns:us-east-1:1:t")

    def test_a_scheduler_call_is_named_from_its_method_and_path(self):
        body = json.dumps({"GroupName": "g", "Target": {"RoleArn": "r"}}).encode()
        for method, operation in (("POST", "CreateSchedule"), ("PUT", "UpdateSchedule"),
                                  ("DELETE", "DeleteSchedule"), ("GET", "GetSchedule")):
            call = read_call(_environ(method=method, path="/schedules/t%3A1", body=body, headers={
                "Authorization": _auth("ASIAAPI", "scheduler"),
            }))
            self.assertEqual((call.operation, call.protocol), (operation, "rest-json"))
            self.assertEqual(call.params["Name"], "t:1")
        call = read_call(_environ(method="DELETE", path="/schedules/x", query="groupName=g",
                                  headers={"Authorization": _auth("K", "scheduler")}))
        self.assertEqual(call.params["groupName"], "g")

    def test_the_models_own_routes_and_motos_are_not_calls(self):
        self.assertIsNone(read_call(_environ(method="GET", path="/moto-api/")))
        self.assertIsNone(read_call(_environ(method="GET", path="/_model/iam")))


class RefusalTest(unittest.TestCase):
    def _call(self, service, protocol):
        from aws_model.calls import Call
        return Call(service, "Op", protocol, "K", "us-east-1")

    def test_dynamodb_errors_carry_the_type_the_sdk_reads(self):
        status, headers, body = Refusal(400, "ProvisionedThroughputExceededException", "slow").answer(
            self._call("dynamodb", "json"))
        self.assertEqual(status, "400 Bad Request")
        self.assertEqual(json.loads(body)["__type"],
                         "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException")
        self.assertIn(("x-amzn-ErrorType", "ProvisionedThroughputExceededException"), headers)

    def test_sqs_json_errors_carry_the_query_error_header(self):
        _, headers, body = Refusal(403, "AccessDeniedException", "no").answer(self._call("sqs", "json"))
        self.assertEqual(json.loads(body)["__type"], "com.amazonaws.sqs#AccessDeniedException")
        self.assertIn(("x-amzn-query-error", "AccessDenied;Sender"), headers)

    def test_query_and_rest_errors_use_their_own_shapes(self):
        _, _, body = Refusal(400, "Throttling", "a <b>").answer(self._call("sns", "query"))
        self.assertIn(b"<Code>Throttling</Code>", body)
        self.assertIn(b"a &lt;b&gt;", body)
        status, headers, body = Refusal(429, "ThrottlingException", "x",
                                        headers={"Retry-After": "1"}).answer(
            self._call("scheduler", "rest-json"))
        self.assertEqual(status, "429 Too Many Requests")
        self.assertEqual(json.loads(body), {"Message": "x"})
        self.assertIn(("x-amzn-ErrorType", "ThrottlingException"), headers)
        self.assertIn(("Retry-After", "1"), headers)


class ModelledTest(unittest.TestCase):
    def setUp(self):
        self.saved = dict(_PARTS)
        _PARTS.clear()

    def tearDown(self):
        _PARTS.clear()
        _PARTS.update(self.saved)

    def _app(self, environ, start_response):
        start_response("200 OK", [])
        return [b"moto"]

    def test_a_refusing_part_answers_before_moto_and_later_parts(self):
        seen = []

        class Deny:
            def admit(self, call):
                seen.append("deny")
                return Refusal(400, "AccessDeniedException", "no")

        class Count:
            def admit(self, call):
                seen.append("count")

        register("iam", Deny())
        register("limits", Count())
        answered = {}
        body = b"".join(modelled(self._app)(
            _environ(headers={"Authorization": _auth("K", "dynamodb"),
                              "X-Amz-Target": "DynamoDB_20120810.GetItem"}),
            lambda status, headers, exc=None: answered.setdefault("status", status)))
        self.assertEqual(answered["status"], "400 Bad Request")
        self.assertIn(b"AccessDeniedException", body)
        self.assertEqual(seen, ["deny"])

    def test_parts_that_admit_see_motos_status_after(self):
        statuses = []

        class Watch:
            def admit(self, call):
                return None

            def after(self, call, status):
                statuses.append((call.operation, status))

        register("faults", Watch())
        body = b"".join(modelled(self._app)(
            _environ(headers={"Authorization": _auth("K", "dynamodb"),
                              "X-Amz-Target": "DynamoDB_20120810.PutItem"}),
            lambda status, headers, exc=None: None))
        self.assertEqual(body, b"moto")
        self.assertEqual(statuses, [("PutItem", 200)])


if __name__ == "__main__":
    unittest.main()
