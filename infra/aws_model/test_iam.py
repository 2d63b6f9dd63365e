"""Unit tests of the iam part: which actions IAM checks for a call, the answer a denial gets in
each protocol, and decisions through the evaluator (`../.venv/bin/python -m unittest
aws_model.test_iam` from infra/; the evaluator's tests skip, saying why, without node or
`bash infra/iam.sh`)."""

import json
import os
import tempfile
import unittest

from aws_model.calls import Call
from aws_model.iam import _Part, actions_of, denial_message, evaluator_missing, refusal_for

ACCT = "123456789012"
TABLE = f"arn:aws:dynamodb:us-east-1:{ACCT}:table/t"
PRINCIPAL = f"arn:aws:sts::{ACCT}:assumed-role/fn-role/fn"


def call(service, operation, params, protocol="json", key="ASIAFN"):
    return Call(service, operation, protocol, key, "us-east-1", dict(params))


class MappingTest(unittest.TestCase):
    def test_a_transaction_needs_the_action_of_each_item_on_its_table(self):
        c = call("dynamodb", "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": "t", "Item": {}}},
            {"Update": {"TableName": "t", "Key": {}}},
            {"Delete": {"TableName": "u", "Key": {}}},
            {"ConditionCheck": {"TableName": "t", "Key": {}}},
            {"Put": {"TableName": "t", "Item": {}}},  # the same action twice: checked once
        ]})
        self.assertEqual(actions_of(c, ACCT), [
            ("dynamodb:PutItem", TABLE, {}),
            ("dynamodb:UpdateItem", TABLE, {}),
            ("dynamodb:DeleteItem", f"arn:aws:dynamodb:us-east-1:{ACCT}:table/u", {}),
            ("dynamodb:ConditionCheckItem", TABLE, {}),
        ])

    def test_a_transactional_read_needs_get_item(self):
        c = call("dynamodb", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": "t"}}]})
        self.assertEqual(actions_of(c, ACCT), [("dynamodb:GetItem", TABLE, {})])

    def test_a_query_of_an_index_is_on_the_index_arn(self):
        c = call("dynamodb", "Query", {"TableName": "t", "IndexName": "timers"})
        self.assertEqual(actions_of(c, ACCT), [("dynamodb:Query", TABLE + "/index/timers", {})])
        c = call("dynamodb", "Query", {"TableName": "t"})
        self.assertEqual(actions_of(c, ACCT), [("dynamodb:Query", TABLE, {})])

    def test_a_batch_read_is_checked_per_table(self):
        c = call("dynamodb", "BatchGetItem", {"RequestItems": {"t": {}, "u": {}}})
        self.assertEqual([a for a, _, _ in actions_of(c, ACCT)], ["dynamodb:BatchGetItem"] * 2)
        self.assertEqual(actions_of(c, ACCT)[0][1], TABLE)

    def test_a_batch_send_needs_send_message_on_the_queue_arn(self):
        c = call("sqs", "SendMessageBatch",
                 {"QueueUrl": f"http://127.0.0.1:5010/{ACCT}/q.fifo", "Entries": []})
        self.assertEqual(actions_of(c, ACCT),
                         [("sqs:SendMessage", f"arn:aws:sqs:us-east-1:{ACCT}:q.fifo", {})])
        for op, action in (("DeleteMessageBatch", "sqs:DeleteMessage"),
                           ("ChangeMessageVisibilityBatch", "sqs:ChangeMessageVisibility")):
            c = call("sqs", op, {"QueueUrl": f"http://h/{ACCT}/q"}, protocol="query")
            self.assertEqual(actions_of(c, ACCT)[0][0], action)

    def test_create_schedule_also_passes_its_role_to_scheduler(self):
        role = f"arn:aws:iam::{ACCT}:role/sched"
        c = call("scheduler", "CreateSchedule",
                 {"Name": "d-1", "GroupName": "g", "Target": {"RoleArn": role, "Arn": "x"}},
                 protocol="rest-json")
        self.assertEqual(actions_of(c, ACCT), [
            ("scheduler:CreateSchedule", f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/g/d-1", {}),
            ("iam:PassRole", role, {"iam:PassedToService": "scheduler.amazonaws.com"}),
        ])

    def test_delete_schedule_names_its_group_in_the_query_string(self):
        c = call("scheduler", "DeleteSchedule", {"Name": "d-1", "groupName": "g"},
                 protocol="rest-json")
        self.assertEqual(actions_of(c, ACCT), [
            ("scheduler:DeleteSchedule", f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/g/d-1", {})])

    def test_a_schedule_without_a_group_is_in_the_default_group(self):
        c = call("scheduler", "DeleteSchedule", {"Name": "d-1"}, protocol="rest-json")
        self.assertEqual(actions_of(c, ACCT), [
            ("scheduler:DeleteSchedule",
             f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/default/d-1", {})])

    def test_a_secret_named_by_name_is_checked_on_its_full_arn(self):
        full = f"arn:aws:secretsmanager:us-east-1:{ACCT}:secret:cfg-AbCdEf"
        c = call("secretsmanager", "GetSecretValue", {"SecretId": "cfg"})
        lookup = {"cfg": full}.get
        self.assertEqual(actions_of(c, ACCT, lookup),
                         [("secretsmanager:GetSecretValue", full, {})])

    def test_publish_is_checked_on_the_topic(self):
        topic = f"arn:aws:sns:us-east-1:{ACCT}:t"
        c = call("sns", "Publish", {"TopicArn": topic}, protocol="query")
        self.assertEqual(actions_of(c, ACCT), [("sns:Publish", topic, {})])

    def test_get_caller_identity_needs_no_permission(self):
        self.assertEqual(actions_of(call("sts", "GetCallerIdentity", {}, "query"), ACCT), [])


class DenialTest(unittest.TestCase):
    MESSAGE = (f"User: {PRINCIPAL} is not authorized to perform: dynamodb:PutItem on resource: "
               f"{TABLE} because no identity-based policy allows the dynamodb:PutItem action")

    def test_the_message_is_aws_s(self):
        self.assertEqual(denial_message(PRINCIPAL, "dynamodb:PutItem", TABLE, "ImplicitlyDenied"),
                         self.MESSAGE)
        self.assertTrue(denial_message(PRINCIPAL, "a:B", "r", "ExplicitlyDenied").endswith(
            "with an explicit deny in an identity-based policy"))

    def test_dynamodb_answers_400_access_denied(self):
        c = call("dynamodb", "PutItem", {"TableName": "t"})
        status, headers, body = refusal_for(c, PRINCIPAL, "dynamodb:PutItem", TABLE,
                                            "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "400 Bad Request")
        self.assertEqual(json.loads(body), {
            "__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
            "message": self.MESSAGE})

    def test_sqs_answers_403_in_either_protocol(self):
        c = call("sqs", "SendMessage", {"QueueUrl": "http://h/1/q"})
        status, headers, body = refusal_for(c, PRINCIPAL, "sqs:SendMessage", "q",
                                            "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "403 Forbidden")
        self.assertIn(("x-amzn-query-error", "AccessDenied;Sender"), headers)
        self.assertEqual(json.loads(body)["__type"], "com.amazonaws.sqs#AccessDeniedException")
        c = call("sqs", "SendMessage", {"QueueUrl": "http://h/1/q"}, protocol="query")
        status, _, body = refusal_for(c, PRINCIPAL, "sqs:SendMessage", "q",
                                      "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "403 Forbidden")
        self.assertIn(b"<Code>AccessDenied</Code>", body)

    def test_scheduler_answers_403_access_denied(self):
        c = call("scheduler", "DeleteSchedule", {"Name": "d"}, protocol="rest-json")
        status, headers, body = refusal_for(c, PRINCIPAL, "scheduler:DeleteSchedule", "s",
                                            "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "403 Forbidden")
        self.assertIn(("x-amzn-ErrorType", "AccessDeniedException"), headers)
        self.assertIn("scheduler:DeleteSchedule", json.loads(body)["Message"])

    def test_sns_answers_403_authorization_error(self):
        c = call("sns", "Publish", {"TopicArn": "t"}, protocol="query")
        status, _, body = refusal_for(c, PRINCIPAL, "sns:Publish", "t",
                                      "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "403 Forbidden")
        self.assertIn(b"<Code>AuthorizationError</Code>", body)


POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Write", "Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:UpdateItem"],
     "Resource": TABLE},
    {"Sid": "PassSchedulerRole", "Effect": "Allow", "Action": "iam:PassRole",
     "Resource": f"arn:aws:iam::{ACCT}:role/sched",
     "Condition": {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}},
    {"Effect": "Allow", "Action": "scheduler:CreateSchedule",
     "Resource": f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/g/*"},
]}


@unittest.skipIf(evaluator_missing(), f"the IAM evaluator cannot run: {evaluator_missing()}")
class EvaluatorTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.dir.name, "decisions.jsonl")
        self.part = _Part()
        self.part.configure({"principals": {"ASIAFN": {
            "arn": PRINCIPAL, "role": f"arn:aws:iam::{ACCT}:role/fn-role",
            "policies": [{"name": "fn-policy", "document": POLICY}]}},
            "decision_log": self.log})

    def tearDown(self):
        self.part.evaluator.close()
        self.dir.cleanup()

    def test_an_access_key_that_is_no_role_passes(self):
        c = call("dynamodb", "DeleteItem", {"TableName": "t"}, key="test")
        self.assertIsNone(self.part.admit(c))

    def test_a_transaction_is_denied_on_the_item_its_role_may_not_write(self):
        c = call("dynamodb", "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": "t"}}, {"Delete": {"TableName": "t"}}]})
        refusal = self.part.admit(c)
        self.assertIsNotNone(refusal)
        self.assertEqual((refusal.status, refusal.code), (400, "AccessDeniedException"))
        self.assertEqual(refusal.message, denial_message(PRINCIPAL, "dynamodb:DeleteItem", TABLE,
                                                         "ImplicitlyDenied"))
        c = call("dynamodb", "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": "t"}}, {"Update": {"TableName": "t"}}]})
        self.assertIsNone(self.part.admit(c))

    def test_pass_role_is_allowed_only_to_scheduler(self):
        target = {"RoleArn": f"arn:aws:iam::{ACCT}:role/sched", "Arn": "f"}
        c = call("scheduler", "CreateSchedule", {"Name": "d", "GroupName": "g", "Target": target},
                 protocol="rest-json")
        self.assertIsNone(self.part.admit(c))
        answer = self.part.request("check", {
            "principal": f"arn:aws:iam::{ACCT}:role/fn-role", "action": "iam:PassRole",
            "resource": target["RoleArn"],
            "context": {"iam:PassedToService": "lambda.amazonaws.com"}})
        self.assertFalse(answer["allowed"])
        self.assertEqual(answer["decision"], "ImplicitlyDenied")

    def test_each_distinct_decision_is_logged_with_the_statements_that_allowed_it(self):
        put = call("dynamodb", "PutItem", {"TableName": "t"})
        self.assertIsNone(self.part.admit(put))
        self.assertIsNone(self.part.admit(put))  # cached: logged once
        self.assertIsNotNone(self.part.admit(call("dynamodb", "Scan", {"TableName": "t"})))
        with open(self.log, encoding="utf-8") as f:
            entries = [json.loads(line) for line in f]
        self.assertEqual([(e["action"], e["allowed"]) for e in entries],
                         [("dynamodb:PutItem", True), ("dynamodb:Scan", False)])
        self.assertEqual(entries[0]["statements"], [{"policy": "fn-policy", "sid": "Write"}])
        self.assertEqual(entries[0]["role"], f"arn:aws:iam::{ACCT}:role/fn-role")

    def test_a_statement_without_a_sid_is_named_by_its_index(self):
        answer = self.part.request("check", {
            "principal": PRINCIPAL, "action": "scheduler:CreateSchedule",
            "resource": f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/g/d"})
        self.assertTrue(answer["allowed"])
        self.assertEqual(answer["statements"], [{"policy": "fn-policy", "sid": "3"}])

    def test_schedules_matching_the_same_patterns_are_evaluated_once(self):
        for name in ("d-1", "d-2", "d-3"):
            c = call("scheduler", "CreateSchedule", {"Name": name, "GroupName": "g"},
                     protocol="rest-json")
            self.assertIsNone(self.part.admit(c))
        self.assertEqual(self.part.counts["evaluated"], 1)
        other = call("scheduler", "CreateSchedule", {"Name": "d-1", "GroupName": "h"},
                     protocol="rest-json")
        self.assertIsNotNone(self.part.admit(other))  # another group: another class, denied

    def test_an_unconfigured_part_lets_everything_through(self):
        part = _Part()
        self.assertIsNone(part.admit(call("dynamodb", "DeleteItem", {"TableName": "t"})))


if __name__ == "__main__":
    unittest.main()
