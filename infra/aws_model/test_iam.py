"""Unit tests of the iam part: which actions IAM checks for a call, the answer a denial gets in
each protocol, and decisions through the evaluator (`../.venv/bin/python -m unittest
aws_model.test_iam` from infra/; the evaluator's tests skip, saying why, without node or
`bash infra/iam.sh`)."""

import json
import os
import tempfile
import unittest

from aws_model.calls import Call
from aws_model.iam import (DYNAMODB_KMS_DENIAL, _Part, actions_of, default_key_policy,
                           denial_message, evaluator_missing, kms_checks, refusal_for,
                           schedule_fire_check)

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

    def test_a_schedule_under_a_customer_key_needs_its_caller_to_use_the_key(self):
        # EventBridge Scheduler user guide, "Encryption at rest", "Identity-based permissions
        # for customer managed keys": kms:DescribeKey, kms:GenerateDataKey, kms:Decrypt, on the
        # key, for CreateSchedule and UpdateSchedule alike; none without KmsKeyArn.
        key = f"arn:aws:kms:us-east-1:{ACCT}:key/k-1"
        role = f"arn:aws:iam::{ACCT}:role/sched"
        for op in ("CreateSchedule", "UpdateSchedule"):
            c = call("scheduler", op, {"Name": "d-1", "GroupName": "g", "KmsKeyArn": key,
                                       "Target": {"RoleArn": role, "Arn": "x"}},
                     protocol="rest-json")
            self.assertEqual(actions_of(c, ACCT)[1:], [
                ("iam:PassRole", role, {"iam:PassedToService": "scheduler.amazonaws.com"}),
                ("kms:DescribeKey", key, {}), ("kms:GenerateDataKey", key, {}),
                ("kms:Decrypt", key, {})])
        c = call("scheduler", "DeleteSchedule", {"Name": "d-1", "groupName": "g",
                                                 "KmsKeyArn": key}, protocol="rest-json")
        self.assertEqual([a for a, _, _ in actions_of(c, ACCT)], ["scheduler:DeleteSchedule"])

    def test_a_schedule_under_a_customer_key_is_decrypted_by_its_role_when_it_fires(self):
        key = f"arn:aws:kms:us-east-1:{ACCT}:key/k-1"
        arn = f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/g/d-1"
        self.assertEqual(schedule_fire_check(arn, key), (
            "kms:Decrypt", key, {"kms:EncryptionContext:aws:scheduler:schedule:arn": arn}))

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


KEY = f"arn:aws:kms:us-east-1:{ACCT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
QUEUE = f"arn:aws:sqs:us-east-1:{ACCT}:q.fifo"
TOPIC = f"arn:aws:sns:us-east-1:{ACCT}:t"
ENCRYPTED = {TABLE: {"key": KEY, "policy": None}, QUEUE: {"key": KEY, "policy": None},
             TOPIC: {"key": KEY, "policy": None}}
# The customer's key, made without a key policy of the template's: the default one.
DEFAULT = default_key_policy(KEY)
VIA = {s: {"kms:ViaService": f"{s}.us-east-1.amazonaws.com"} for s in ("dynamodb", "sqs", "sns")}


class KmsMappingTest(unittest.TestCase):
    """What a call on a resource under a customer key also needs of the key (SQS developer
    guide, "Key management"; SNS developer guide, "Key management"; KMS developer guide, "How
    Amazon DynamoDB uses AWS KMS")."""

    def test_every_item_read_and_write_of_an_encrypted_table_needs_decrypt_via_dynamodb(self):
        for action in ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
                       "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:DeleteItem"):
            self.assertEqual(kms_checks(action, TABLE, "us-east-1", ENCRYPTED),
                             [("kms:Decrypt", KEY, VIA["dynamodb"], DEFAULT)], action)

    def test_a_query_of_an_index_needs_its_table_s_key(self):
        self.assertEqual(kms_checks("dynamodb:Query", TABLE + "/index/timers", "us-east-1",
                                    ENCRYPTED),
                         [("kms:Decrypt", KEY, VIA["dynamodb"], DEFAULT)])

    def test_a_table_s_control_plane_needs_no_key(self):
        self.assertEqual(kms_checks("dynamodb:DescribeTable", TABLE, "us-east-1", ENCRYPTED), [])

    def test_a_sender_needs_generate_data_key_and_decrypt_a_receiver_decrypt(self):
        self.assertEqual(kms_checks("sqs:SendMessage", QUEUE, "us-east-1", ENCRYPTED), [
            ("kms:GenerateDataKey", KEY, VIA["sqs"], DEFAULT),
            ("kms:Decrypt", KEY, VIA["sqs"], DEFAULT)])
        self.assertEqual(kms_checks("sqs:ReceiveMessage", QUEUE, "us-east-1", ENCRYPTED),
                         [("kms:Decrypt", KEY, VIA["sqs"], DEFAULT)])
        # Deleting a received message or changing its visibility reads no body.
        self.assertEqual(kms_checks("sqs:DeleteMessage", QUEUE, "us-east-1", ENCRYPTED), [])

    def test_a_publisher_needs_generate_data_key_and_decrypt(self):
        self.assertEqual([a for a, _, c, _ in kms_checks("sns:Publish", TOPIC, "eu-west-1",
                                                         ENCRYPTED)],
                         ["kms:GenerateDataKey", "kms:Decrypt"])
        self.assertEqual(kms_checks("sns:Publish", TOPIC, "eu-west-1", ENCRYPTED)[0][2],
                         {"kms:ViaService": "sns.eu-west-1.amazonaws.com"})

    def test_a_resource_under_an_aws_managed_key_needs_nothing_of_the_caller(self):
        other = f"arn:aws:dynamodb:us-east-1:{ACCT}:table/u"
        self.assertEqual(kms_checks("dynamodb:PutItem", other, "us-east-1", ENCRYPTED), [])


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

    def test_a_key_s_denial_is_each_service_s_kms_error_http_400(self):
        c = call("sqs", "SendMessage", {"QueueUrl": "http://h/1/q"})
        status, headers, body = refusal_for(c, PRINCIPAL, "kms:GenerateDataKey", KEY,
                                            "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "400 Bad Request")
        self.assertEqual(json.loads(body)["__type"], "com.amazonaws.sqs#KmsAccessDenied")
        self.assertIn(("x-amzn-query-error", "KMS.AccessDeniedException;Sender"), headers)
        c = call("sqs", "SendMessage", {"QueueUrl": "http://h/1/q"}, protocol="query")
        status, _, body = refusal_for(c, PRINCIPAL, "kms:Decrypt", KEY,
                                      "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "400 Bad Request")
        self.assertIn(b"<Code>KMS.AccessDeniedException</Code>", body)
        c = call("sns", "Publish", {"TopicArn": TOPIC}, protocol="query")
        status, _, body = refusal_for(c, PRINCIPAL, "kms:Decrypt", KEY,
                                      "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "400 Bad Request")
        self.assertIn(b"<Code>KMSAccessDenied</Code>", body)
        c = call("dynamodb", "PutItem", {"TableName": "t"})
        status, _, body = refusal_for(c, PRINCIPAL, "kms:Decrypt", KEY,
                                      "ImplicitlyDenied").answer(c)
        self.assertEqual(status, "400 Bad Request")
        self.assertEqual(json.loads(body), {
            "__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
            "message": DYNAMODB_KMS_DENIAL})
        self.assertTrue(DYNAMODB_KMS_DENIAL.startswith("KMS key access denied error: "))

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


KMS_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Table", "Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:Query"],
     "Resource": [TABLE, TABLE + "/index/*"]},
    {"Sid": "Queue", "Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:ReceiveMessage"],
     "Resource": QUEUE},
    {"Sid": "CustomerKeyForTables", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": KEY,
     "Condition": {"StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}}},
    {"Sid": "CustomerKeyForQueues", "Effect": "Allow",
     "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": KEY,
     "Condition": {"StringEquals": {"kms:ViaService": "sqs.us-east-1.amazonaws.com"}}},
]}


def _without(sid):
    return {"Version": "2012-10-17",
            "Statement": [s for s in KMS_POLICY["Statement"] if s["Sid"] != sid]}


@unittest.skipIf(evaluator_missing(), f"the IAM evaluator cannot run: {evaluator_missing()}")
class CustomerKeyTest(unittest.TestCase):
    """A table and a queue under the customer's key: the role's calls pass with the template's
    grants (kms:Decrypt via DynamoDB; kms:GenerateDataKey and kms:Decrypt via SQS) and are
    denied, in each service's words, once one grant is removed."""

    def part(self, document):
        part = _Part()
        part.configure({"principals": {"ASIAFN": {
            "arn": PRINCIPAL, "role": f"arn:aws:iam::{ACCT}:role/fn-role",
            "policies": [{"name": "fn-policy", "document": document}]}},
            "encrypted": {TABLE: ENCRYPTED[TABLE], QUEUE: ENCRYPTED[QUEUE]}})
        self.addCleanup(part.evaluator.close)
        return part

    PUT = ("dynamodb", "PutItem", {"TableName": "t"})
    QUERY = ("dynamodb", "Query", {"TableName": "t", "IndexName": "timers"})
    SEND = ("sqs", "SendMessage", {"QueueUrl": f"http://h/{ACCT}/q.fifo"})
    RECEIVE = ("sqs", "ReceiveMessage", {"QueueUrl": f"http://h/{ACCT}/q.fifo"})

    def test_with_the_grants_every_call_passes_and_the_key_is_checked(self):
        part = self.part(KMS_POLICY)
        for c in (self.PUT, self.QUERY, self.SEND, self.RECEIVE):
            self.assertIsNone(part.admit(call(*c)), c)
        # PutItem and Query: Decrypt via DynamoDB each; SendMessage: GenerateDataKey and
        # Decrypt via SQS; ReceiveMessage: Decrypt via SQS.
        self.assertEqual(part.counts["kms"], 5)
        self.assertEqual(part.counts["denied"], 0)
        self.assertEqual(part.state()["encrypted"], {TABLE: KEY, QUEUE: KEY})

    def test_without_the_table_grant_an_item_write_is_denied_as_dynamodb_denies_it(self):
        part = self.part(_without("CustomerKeyForTables"))
        refusal = part.admit(call(*self.PUT))
        self.assertIsNotNone(refusal)
        self.assertEqual((refusal.status, refusal.code, refusal.message),
                         (400, "AccessDeniedException", DYNAMODB_KMS_DENIAL))
        self.assertIsNotNone(part.admit(call(*self.QUERY)))
        self.assertEqual(part.denials[-1]["action"], "kms:Decrypt")
        self.assertEqual(part.denials[-1]["resource"], KEY)
        # The queues' grant is through SQS only: it does not open the table.
        self.assertIsNone(part.admit(call(*self.SEND)))

    def test_without_the_queue_grant_a_send_and_a_receive_are_denied_kms_access_denied(self):
        part = self.part(_without("CustomerKeyForQueues"))
        refusal = part.admit(call(*self.SEND))
        self.assertEqual((refusal.status, refusal.code), (400, "KmsAccessDenied"))
        self.assertEqual(refusal.message, denial_message(PRINCIPAL, "kms:GenerateDataKey", KEY,
                                                         "ImplicitlyDenied"))
        refusal = part.admit(call(*self.RECEIVE, protocol="query"))
        self.assertEqual((refusal.status, refusal.code), (400, "KMS.AccessDeniedException"))
        self.assertIn("kms:Decrypt", refusal.message)
        # The table's grant is through DynamoDB only: it does not open the queue.
        self.assertIsNone(part.admit(call(*self.PUT)))

    def test_a_resource_under_no_customer_key_asks_nothing_of_the_key(self):
        part = self.part(_without("CustomerKeyForQueues"))
        other = call("sqs", "SendMessage", {"QueueUrl": f"http://h/{ACCT}/other"})
        part.configure(dict(part.settings, encrypted={}))
        self.assertIsNotNone(part.admit(other))  # no sqs grant on it at all: IAM's denial
        self.assertEqual(part.denials[-1]["action"], "sqs:SendMessage")
        self.assertIsNone(part.admit(call(*self.SEND)))
        self.assertEqual(part.counts["kms"], 0)


@unittest.skipIf(evaluator_missing(), f"the IAM evaluator cannot run: {evaluator_missing()}")
class TemplateCustomerKeyTest(unittest.TestCase):
    """template.yaml's roles with KmsKeyArn set, as the local stack builds them: each function
    may use the key for what it calls, through those services only; without one of its grants,
    that call is denied."""

    @classmethod
    def setUpClass(cls):
        from aws_local import roles as iam_roles
        from aws_local.template import Stack, load

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        cls.stack = Stack(load(os.path.join(root, "template.yaml")), "kms", "us-east-1",
                          {"WatcherConfigSecret": "kms-config", "KmsKeyArn": KEY})
        for lid, _ in cls.stack.of_type("AWS::SQS::Queue"):
            cls.stack.queue_urls[lid] = f"http://h/{ACCT}/{cls.stack.physical_name(lid)}"
        cls.roles = iam_roles.build(cls.stack)
        cls.settings = iam_roles.iam_settings(cls.stack, cls.roles)

    def part(self, drop=None):
        """The iam part over the template's roles; `drop` = (role lid, Sid) removed."""
        settings = json.loads(json.dumps(self.settings))
        if drop:
            role = self.roles[drop[0]]
            for p in settings["principals"][role.access_key]["policies"]:
                p["document"]["Statement"] = [s for s in p["document"]["Statement"]
                                              if s.get("Sid") != drop[1]]
        part = _Part()
        part.configure(settings)
        self.addCleanup(part.evaluator.close)
        return part

    def as_role(self, lid, service, operation, params, protocol="json"):
        return call(service, operation, params, protocol, key=self.roles[lid].access_key)

    def test_every_table_queue_and_topic_is_under_the_key(self):
        self.assertEqual(sorted(r.split(":")[2] + ":" + r.rsplit(":", 1)[-1].split("/")[-1]
                                for r in self.settings["encrypted"]), [
            "dynamodb:kms-DefinitionsTable", "dynamodb:kms-WatcherTable",
            "sns:kms-AlarmTopic", "sns:kms-NotificationTopic",
            "sqs:kms-LapseDeadLetterQueue.fifo", "sqs:kms-LapseQueue.fifo",
            "sqs:kms-SchedulerDeadLetterQueue", "sqs:kms-TimerQueue"])
        self.assertEqual(set(k["key"] for k in self.settings["encrypted"].values()), {KEY})

    def test_the_submitter_s_calls_pass_and_fail_without_its_queue_grant(self):
        lapse = self.stack.queue_urls["LapseQueue"]
        receive = ("sqs", "ReceiveMessage", {"QueueUrl": lapse})
        put = ("dynamodb", "PutItem", {"TableName": "kms-WatcherTable"})
        part = self.part()
        self.assertIsNone(part.admit(self.as_role("SubmitterFunctionRole", *receive)))
        self.assertIsNone(part.admit(self.as_role("SubmitterFunctionRole", *put)))
        part = self.part(("SubmitterFunctionRole", "CustomerKeyForQueues"))
        refusal = part.admit(self.as_role("SubmitterFunctionRole", *receive))
        self.assertEqual((refusal.status, refusal.code), (400, "KmsAccessDenied"))
        self.assertIn("kms:Decrypt", refusal.message)
        self.assertIsNone(part.admit(self.as_role("SubmitterFunctionRole", *put)))

    def test_the_api_s_table_write_fails_without_its_table_grant(self):
        put = ("dynamodb", "PutItem", {"TableName": "kms-WatcherTable"})
        self.assertIsNone(self.part().admit(self.as_role("ApiFunctionRole", *put)))
        refusal = self.part(("ApiFunctionRole", "CustomerKeyForTables")).admit(
            self.as_role("ApiFunctionRole", *put))
        self.assertEqual((refusal.status, refusal.code, refusal.message),
                         (400, "AccessDeniedException", DYNAMODB_KMS_DENIAL))

    def test_the_timer_publishes_and_scheduler_dead_letters_only_with_their_grants(self):
        topic = f"arn:aws:sns:us-east-1:{ACCT}:kms-NotificationTopic"
        publish = ("sns", "Publish", {"TopicArn": topic}, "query")
        dead = ("sqs", "SendMessage",
                {"QueueUrl": self.stack.queue_urls["SchedulerDeadLetterQueue"]})
        self.assertIsNone(self.part().admit(self.as_role("TimerFunctionRole", *publish)))
        self.assertIsNone(self.part().admit(self.as_role("SchedulerRole", *dead)))
        refusal = self.part(("TimerFunctionRole", "CustomerKeyForTopic")).admit(
            self.as_role("TimerFunctionRole", *publish))
        self.assertEqual((refusal.status, refusal.code), (400, "KMSAccessDenied"))
        refusal = self.part(("SchedulerRole", "CustomerKeyForDeadLetters")).admit(
            self.as_role("SchedulerRole", *dead))
        self.assertEqual((refusal.status, refusal.code), (400, "KmsAccessDenied"))


    def test_the_functions_arm_schedules_under_the_key_only_with_their_grant(self):
        # The three roles that arm timers (ArmAndDisarmTimers), each allowed CreateSchedule
        # with KmsKeyArn, and denied the key's first action without CustomerKeyForSchedules.
        arm = ("scheduler", "CreateSchedule", {
            "Name": "d-1", "GroupName": self.stack.physical_name("TimerScheduleGroup"),
            "KmsKeyArn": KEY, "Target": {"RoleArn": self.roles["SchedulerRole"].arn,
                                         "Arn": "x"}}, "rest-json")
        for lid in ("ApiFunctionRole", "TimerFunctionRole", "LessonWriteFunctionRole"):
            part = self.part()
            self.assertIsNone(part.admit(self.as_role(lid, *arm)), lid)
            self.assertEqual(part.counts["kms"], 3, lid)
            refusal = self.part((lid, "CustomerKeyForSchedules")).admit(self.as_role(lid, *arm))
            self.assertEqual((refusal.status, refusal.code), (403, "AccessDeniedException"), lid)
            self.assertIn(f"kms:DescribeKey on resource: {KEY}", refusal.message)
        # Whether or not Scheduler's call on the caller's behalf carries kms:ViaService (the
        # guide does not say), the grant holds; through a table, a queue or a topic it does not.
        api = self.roles["ApiFunctionRole"].arn
        for via, allowed in (("scheduler", True), ("sqs", False), ("dynamodb", False)):
            answer = self.part(("ApiFunctionRole", "CustomerKeyForQueues")).request("check", {
                "principal": api, "action": "kms:GenerateDataKey", "resource": KEY,
                "context": {"kms:ViaService": f"{via}.us-east-1.amazonaws.com"}})
            self.assertEqual(answer["allowed"], allowed, (via, answer))
        # The submitter only deletes schedules: it is given no key for them.
        self.assertNotIn("CustomerKeyForSchedules", json.dumps(
            self.settings["principals"][self.roles["SubmitterFunctionRole"].access_key]))

    def test_scheduler_decrypts_a_firing_schedule_s_input_only_with_its_grant(self):
        group = self.stack.physical_name("TimerScheduleGroup")
        action, key, context = schedule_fire_check(
            f"arn:aws:scheduler:us-east-1:{ACCT}:schedule/{group}/d-1", KEY)
        check = {"principal": self.roles["SchedulerRole"].arn, "action": action,
                 "resource": key, "context": context}
        answer = self.part().request("check", check)
        self.assertTrue(answer["allowed"], answer)
        # Allowed by the role's grant (and by the key's default policy, which lets IAM decide).
        self.assertIn("CustomerKeyForScheduleInput", [s["sid"] for s in answer["statements"]])
        answer = self.part(("SchedulerRole", "CustomerKeyForScheduleInput")).request("check",
                                                                                     check)
        self.assertFalse(answer["allowed"], answer)
        self.assertIn(f"kms:Decrypt on resource: {KEY}", answer["message"])

    def test_the_functions_are_told_the_key_only_when_it_is_set(self):
        from aws_local.template import Stack

        env = self.stack.template["Globals"]["Function"]["Environment"]["Variables"]
        self.assertEqual(self.stack.resolve(env)["SCHEDULE_KMS_KEY_ARN"], KEY)
        plain = Stack(self.stack.template, "plain", "us-east-1",
                      {"WatcherConfigSecret": "plain-config"})
        plain.queue_urls.update(self.stack.queue_urls)
        self.assertIsNone(plain.resolve(env).get("SCHEDULE_KMS_KEY_ARN"))


class CoverageKeyTest(unittest.TestCase):
    """infra/iam_coverage.py builds the roles with KmsKeyArn when the log shows a run with the
    customer's key, so that its grants are proven needed too."""

    def test_the_customer_key_is_the_logged_kms_key_that_is_not_the_template_s(self):
        import iam_coverage

        alarm = f"arn:aws:kms:us-east-1:{ACCT}:key/a2a-watcher-local-AlarmTopicKey"
        other = f"arn:aws:kms:us-east-1:{ACCT}:key/other"
        log = [{"action": "kms:Decrypt", "resource": KEY}, {"action": "kms:Decrypt",
                                                           "resource": alarm},
               {"action": "kms:GenerateDataKey", "resource": KEY},
               {"action": "kms:Decrypt", "resource": other},
               {"action": "dynamodb:PutItem", "resource": TABLE}]
        self.assertEqual(iam_coverage.customer_key(log), KEY)
        self.assertEqual(iam_coverage.customer_key(log[4:]), "")
        self.assertEqual(iam_coverage.key_policy(log[0]), DEFAULT)
        self.assertIsNone(iam_coverage.key_policy(log[4]))


if __name__ == "__main__":
    unittest.main()
