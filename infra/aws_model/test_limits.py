"""The limits part (aws_model/limits.py), driven with Call objects as the emulator reads them,
on moto's in-process backends: `../.venv/bin/python -m unittest aws_model.test_limits` from
infra/. Each test sets the part's clock, so rates are exact."""

import json
import os
import tomllib
import unittest

import boto3
from moto import mock_aws

from aws_model import limits
from aws_model.calls import Call

REGION = "us-east-1"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def call(service, operation, params, protocol="json"):
    return Call(service, operation, protocol, "test", REGION, dict(params))


def put(table, pk, sk="a", size=10):
    return call("dynamodb", "PutItem", {
        "TableName": table,
        "Item": {"pk": {"S": pk}, "sk": {"S": sk}, "v": {"S": "x" * size}},
    })


def answer(refusal, c):
    status, headers, body = refusal.answer(c)
    return status, json.loads(body)


class LimitsCase(unittest.TestCase):
    def setUp(self):
        self.mock = mock_aws()
        self.mock.start()
        self.ddb = boto3.client("dynamodb", region_name=REGION)
        self.ddb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"},
                                  {"AttributeName": "g", "AttributeType": "S"}],
            GlobalSecondaryIndexes=[{
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }],
            BillingMode="PAY_PER_REQUEST",
        )
        self.clock = Clock()
        self.part = limits._Part(clock=self.clock)

    def tearDown(self):
        self.mock.stop()

    def configure(self, **settings):
        self.part.configure(settings)


class Unconfigured(LimitsCase):
    def test_everything_passes_until_configured(self):
        for _ in range(5000):
            self.assertIsNone(self.part.admit(put("t", "hot")))
        self.assertEqual(self.part.state(), {"configured": False})

    def test_bad_settings_are_refused(self):
        with self.assertRaises(ValueError):
            self.part.configure({"k": 0})
        with self.assertRaises(ValueError):
            self.part.configure({"k": 1, "no_such_limit": 3})


class PartitionThroughput(LimitsCase):
    def test_a_hot_key_throttles_past_1000_over_k_write_units_in_a_second(self):
        self.configure(k=10)  # 100 WRU/s per partition
        for i in range(100):
            self.assertIsNone(self.part.admit(put("t", "hot", str(i))), i)
        refused = self.part.admit(put("t", "hot", "101"))
        self.assertIsNotNone(refused)
        status, body = answer(refused, put("t", "hot"))
        self.assertEqual(status.split()[0], "400")
        self.assertEqual(body["__type"],
                         "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException")
        self.assertEqual(body["ThrottlingReasons"][0]["reason"],
                         "TableWriteKeyRangeThroughputExceeded")
        # Another key is another partition; a second later the hot key has its units again.
        self.assertIsNone(self.part.admit(put("t", "cold")))
        self.clock.now += 1.0
        self.assertIsNone(self.part.admit(put("t", "hot", "102")))
        state = self.part.state()
        partitions = state["resources"]["dynamodb:t:partitions"]
        self.assertEqual(partitions["refusals"], {"ProvisionedThroughputExceededException": 1})
        self.assertGreaterEqual(partitions["peak_share"], 1.0)
        self.assertEqual(state["first_refusal"]["resource"], "dynamodb:t:partitions")
        self.assertEqual(state["hot_partitions"][0]["key"], {"S": "hot"})
        self.assertEqual(state["hot_partitions"][0]["refusals"],
                         {"ProvisionedThroughputExceededException": 1})

    def test_a_hot_key_below_the_limit_is_never_throttled(self):
        self.configure(k=10)
        for second in range(3):
            for i in range(99):
                self.clock.now += 1.0 / 99
                self.assertIsNone(self.part.admit(put("t", "hot", f"{second}-{i}")))
        self.assertEqual(self.part.state()["refusals"]["total"], 0)

    def test_write_units_count_each_kilobyte(self):
        self.configure(k=10)
        # 3,000 bytes of value: 3 write units each, so 33 fit in 100 units and the 34th does not.
        for i in range(33):
            self.assertIsNone(self.part.admit(put("t", "hot", str(i), size=3000)))
        self.assertIsNotNone(self.part.admit(put("t", "hot", "x", size=3000)))

    def test_reads_and_writes_share_a_partition_linearly(self):
        self.configure(k=10)  # 300 RRU or 100 WRU a second
        for i in range(50):  # half the partition's second
            self.assertIsNone(self.part.admit(put("t", "hot", str(i))))
        get = call("dynamodb", "GetItem", {"TableName": "t", "ConsistentRead": True,
                                           "Key": {"pk": {"S": "hot"}, "sk": {"S": "0"}}})
        for i in range(150):  # the other half: 150 strongly consistent reads of 4 KB or less
            self.assertIsNone(self.part.admit(get), i)
        self.assertIsNotNone(self.part.admit(get))
        # An eventually consistent read costs half a unit: after 1/300 s one fits, not two.
        self.clock.now += 1.0 / 300
        eventual = call("dynamodb", "GetItem", {"TableName": "t",
                                                "Key": {"pk": {"S": "hot"}, "sk": {"S": "0"}}})
        self.assertIsNone(self.part.admit(eventual))
        self.assertIsNone(self.part.admit(eventual))
        self.assertIsNotNone(self.part.admit(eventual))

    def test_index_writes_count_against_the_index_partition(self):
        self.configure(k=10)
        for i in range(100):
            item = {"pk": {"S": f"k{i}"}, "sk": {"S": "a"}, "g": {"S": "same"}}
            self.assertIsNone(self.part.admit(
                call("dynamodb", "PutItem", {"TableName": "t", "Item": item})), i)
        item = {"pk": {"S": "k100"}, "sk": {"S": "a"}, "g": {"S": "same"}}
        refused = self.part.admit(call("dynamodb", "PutItem", {"TableName": "t", "Item": item}))
        self.assertIsNotNone(refused)
        self.assertEqual(refused.extra["ThrottlingReasons"][0]["reason"],
                         "IndexWriteKeyRangeThroughputExceeded")

    def test_a_query_is_charged_for_the_bytes_it_read(self):
        self.configure(k=1000)  # 3 RRU a second per partition
        for i in range(20):
            self.ddb.put_item(TableName="t", Item={"pk": {"S": "p"}, "sk": {"S": f"{i:02}"},
                                                   "v": {"S": "x" * 3000}})
        query = call("dynamodb", "Query", {
            "TableName": "t", "KeyConditionExpression": "#p = :p",
            "ExpressionAttributeNames": {"#p": "pk"},
            "ExpressionAttributeValues": {":p": {"S": "p"}}})
        self.assertIsNone(self.part.admit(query))
        self.ddb.query(TableName="t", KeyConditionExpression="pk = :p",
                       ExpressionAttributeValues={":p": {"S": "p"}})
        self.part.after(query, 200)
        # 20 items of about 3 KB: 15 read units, half of them for an eventually consistent
        # read, 7.5 units of a partition holding 3: in debt until 1.5 s later.
        table = self.part.state()["resources"]["dynamodb:t:read"]
        self.assertAlmostEqual(table["peak"], 7.5)
        self.assertIsNotNone(self.part.admit(query))
        self.clock.now += 1.6
        self.assertIsNone(self.part.admit(query))

    def test_the_table_maximum_over_k(self):
        self.configure(k=1000)  # 40 WRU a second for the table, 1 per partition
        for i in range(40):
            self.assertIsNone(self.part.admit(put("t", f"key{i}")))
        refused = self.part.admit(put("t", "key40"))
        # The per-table quota, not a configured maximum: `AccountLimitExceeded` (AWS's
        # ThrottlingReason reference), at the table's ARN.
        self.assertEqual(refused.extra["ThrottlingReasons"][0], {
            "reason": "TableWriteAccountLimitExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/t"})

    def test_a_global_index_has_its_own_table_level_quota(self):
        # On demand the per-table quota applies to "any table, or any individual GSI within
        # that table" (ServiceQuotas.html): an index's units never count against its table's.
        self.configure(k=1000)  # 40 WRU a second for the table, 40 for its index, 1 a partition

        def put_g(pk, g, size=10):
            return call("dynamodb", "PutItem", {"TableName": "t", "Item": {
                "pk": {"S": pk}, "sk": {"S": "a"}, "g": {"S": g}, "v": {"S": "x" * size}}})

        # 40 writes of 1 WRU to the table and 1 to the index each: 80 WRU in the second, 40 per
        # bucket, all served (charged to the table alone, the 21st would have been refused).
        for i in range(40):
            self.assertIsNone(self.part.admit(put_g(f"k{i}", f"g{i}")), i)
        resources = self.part.state()["resources"]
        self.assertEqual(resources["dynamodb:t:write"]["peak"], 40.0)
        self.assertEqual(resources["dynamodb:t/by-g:write"]["peak"], 40.0)
        self.assertEqual(resources["dynamodb:t/by-g:write"]["limit"], 40.0)
        # The billed units are unchanged: each write's units, its table's and its index's.
        self.assertEqual(self.part.state()["dynamodb_units"]["by_table"],
                         {"t": {"read": 0.0, "write": 40.0},
                          "t/by-g": {"read": 0.0, "write": 40.0}})
        # The same 80 WRU on the table itself (40 writes of 1,500 bytes, 2 WRU each, no index
        # key) meet the table's quota at the 21st.
        self.clock.now += 1.0
        for i in range(20):
            self.assertIsNone(self.part.admit(put("t", f"big{i}", size=1500)), i)
        refused = self.part.admit(put("t", "big20", size=1500))
        self.assertEqual(refused.extra["ThrottlingReasons"][0]["reason"],
                         "TableWriteAccountLimitExceeded")
        # The index meets its own quota: replacing an item whose index key changes writes to the
        # index twice (the old entry removed, the new put), 1 WRU to the table. At the 21st the
        # index has taken 40 WRU, the table 20: the index is refused, at the index's ARN.
        self.clock.now += 1.0
        for i in range(21):
            self.ddb.put_item(TableName="t", Item={"pk": {"S": f"m{i}"}, "sk": {"S": "a"},
                                                   "g": {"S": f"old{i}"}})
        for i in range(20):
            self.assertIsNone(self.part.admit(put_g(f"m{i}", f"new{i}")), i)
        refused = self.part.admit(put_g("m20", "new20"))
        self.assertEqual(refused.extra["ThrottlingReasons"][0], {
            "reason": "IndexWriteAccountLimitExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/t/index/by-g"})
        resources = self.part.state()["resources"]
        self.assertEqual(resources["dynamodb:t/by-g:write"]["refusals"],
                         {"ProvisionedThroughputExceededException": 1})
        self.assertEqual(resources["dynamodb:t:write"]["refusals"],
                         {"ProvisionedThroughputExceededException": 1})


def transact(*keys, token=None):
    items = [{"Put": {"TableName": "t", "Item": {"pk": {"S": k}, "sk": {"S": "a"}}}} for k in keys]
    params = {"TransactItems": items}
    if token:
        params["ClientRequestToken"] = token
    return call("dynamodb", "TransactWriteItems", params)


class TransactionConflicts(LimitsCase):
    def test_a_transaction_holds_its_items_for_the_window(self):
        self.configure(k=1, transaction_window_ms=25)
        first = transact("x", token="one")
        self.assertIsNone(self.part.admit(first))
        self.part.after(first, 200)
        self.clock.now += 0.010
        second = transact("y", "x", token="two")
        refused = self.part.admit(second)
        status, body = answer(refused, second)
        self.assertEqual(body["__type"],
                         "com.amazonaws.dynamodb.v20120810#TransactionCanceledException")
        self.assertEqual(body["CancellationReasons"], [
            {"Code": "None"},
            {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}])
        single = self.part.admit(put("t", "x"))
        self.assertEqual(answer(single, put("t", "x"))[1]["__type"],
                         "com.amazonaws.dynamodb.v20120810#TransactionConflictException")
        # The same transaction sent again (the SDK's retry, same token) is no conflict.
        self.assertIsNone(self.part.admit(transact("x", token="one")))
        # After the window, nothing holds the item.
        self.clock.now += 0.016
        self.assertIsNone(self.part.admit(second))
        self.assertIsNone(self.part.admit(put("t", "x")))
        conflicts = self.part.state()["resources"]["dynamodb:transaction-conflicts"]
        self.assertEqual(conflicts["refusals"],
                         {"TransactionConflict": 1, "TransactionConflictException": 1})

    def test_a_failed_transaction_holds_nothing(self):
        self.configure(k=1)
        first = transact("x")
        self.assertIsNone(self.part.admit(first))
        self.part.after(first, 400)
        self.assertIsNone(self.part.admit(put("t", "x")))

    def test_a_throttled_transaction_is_cancelled_with_throttling_reasons(self):
        self.configure(k=1000)  # 1 WRU a second per partition; a transactional write is 2
        self.assertIsNone(self.part.admit(transact("x")))  # a full bucket passes 2 units
        self.clock.now += 1.0  # in debt by one unit, paid back after a second: still empty
        refused = self.part.admit(transact("x", "y"))
        self.assertEqual([r["Code"] for r in refused.extra["CancellationReasons"]],
                         ["ThrottlingError", "ThrottlingError"])
        self.assertIn("ThrottlingError", self.part.state()["refusals"]["by_kind"])
        self.clock.now += 1.0
        self.assertIsNone(self.part.admit(transact("x", "y")))


class TransactionWindow(LimitsCase):
    """The conflict window is a setting (`transaction_window_ms`), 25 ms unless set."""

    def conflicts_at(self, seconds):
        first = transact("x", token="one")
        self.assertIsNone(self.part.admit(first))
        self.part.after(first, 200)
        self.clock.now += seconds
        refused = self.part.admit(transact("x", token="two"))
        self.clock.now += 10.0  # past any window the next check sets up
        return refused is not None

    def test_the_default_is_25_ms(self):
        self.configure(k=1)
        self.assertEqual(self.part.state()["transaction_window_ms"], 25.0)
        self.assertTrue(self.conflicts_at(0.024))
        self.assertFalse(self.conflicts_at(0.026))

    def test_a_longer_window_holds_longer_and_zero_holds_nothing(self):
        self.configure(k=1, transaction_window_ms=100)
        self.assertEqual(self.part.state()["transaction_window_ms"], 100.0)
        self.assertTrue(self.conflicts_at(0.060))
        self.assertFalse(self.conflicts_at(0.101))
        self.configure(k=1, transaction_window_ms=0)
        self.assertFalse(self.conflicts_at(0.0))

    def test_the_window_is_not_divided_by_k(self):
        self.configure(k=100, transaction_window_ms=50)
        self.assertEqual(self.part.state()["transaction_window_ms"], 50.0)
        self.assertTrue(self.conflicts_at(0.049))

    def test_a_negative_window_is_refused(self):
        with self.assertRaises(ValueError):
            self.part.configure({"k": 1, "transaction_window_ms": -1})


class Reasons(LimitsCase):
    """Refusals of callers' requests told apart by reason: a throttle (come back after a wait)
    from a conflict and a size."""

    def test_each_refusal_counts_under_its_reason(self):
        self.configure(k=1000)  # 1 WRU a second per partition
        self.assertIsNone(self.part.admit(put("t", "hot")))
        throttled = self.part.admit(put("t", "hot", "b"))  # throttle
        self.assertEqual(throttled.code, "ProvisionedThroughputExceededException")
        self.clock.now += 5.0
        first = transact("x", token="one")
        self.assertIsNone(self.part.admit(first))
        self.part.after(first, 200)
        self.assertIsNotNone(self.part.admit(transact("x", token="two")))  # conflict
        self.assertIsNotNone(self.part.admit(put("t", "x")))  # conflict (a single write)
        requests = [{"PutRequest": {"Item": {"pk": {"S": f"k{i}"}, "sk": {"S": "a"}}}}
                    for i in range(26)]
        self.assertIsNotNone(self.part.admit(call(  # size
            "dynamodb", "BatchWriteItem", {"RequestItems": {"t": requests}})))
        state = self.part.state()
        self.assertEqual(state["refusals"]["by_reason"],
                         {"throttle": 1, "conflict": 2, "size": 1})
        self.assertEqual(state["refusals"]["total"], 4)
        self.assertEqual(state["first_refusal"]["reason"], "throttle")
        resources = state["resources"]
        self.assertEqual(resources["dynamodb:t:partitions"]["refusals_by_reason"],
                         {"throttle": 1})
        self.assertEqual(resources["dynamodb:transaction-conflicts"]["refusals_by_reason"],
                         {"conflict": 2})
        self.assertEqual(resources["dynamodb:BatchWriteItem"]["refusals_by_reason"],
                         {"size": 1})

    def test_a_scheduler_throttle_and_a_fifo_window_have_their_reasons(self):
        self.assertEqual(limits.reason_of("ThrottlingException"), "throttle")
        self.assertEqual(limits.reason_of("hidden"), "window")
        self.assertEqual(limits.reason_of("InvalidParameterValue"), "size")
        self.assertEqual(limits.reason_of("SomethingElse"), "other")


class Units(LimitsCase):
    """The request units consumed, in all and by table and index: what on-demand bills."""

    def test_writes_and_reads_are_totalled_per_table_and_index(self):
        self.configure(k=1)
        # A 10-byte value: 1 WRU to the table, 1 to the index whose key the item holds.
        item = {"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"S": "G"}}
        self.assertIsNone(self.part.admit(call("dynamodb", "PutItem",
                                               {"TableName": "t", "Item": item})))
        self.part.after(call("dynamodb", "PutItem", {"TableName": "t", "Item": item}), 200)
        self.ddb.put_item(TableName="t", Item=item)
        # 3,000 bytes of value: 3 WRU, no index key.
        self.assertIsNone(self.part.admit(put("t", "b", size=3000)))
        # A transactional write counts twice: 2 WRU to the table, 2 to the index.
        t = call("dynamodb", "TransactWriteItems", {"TransactItems": [{"Put": {
            "TableName": "t", "Item": {"pk": {"S": "c"}, "sk": {"S": "1"}, "g": {"S": "H"}}}}]})
        self.assertIsNone(self.part.admit(t))
        # Reads: a strongly consistent GetItem of a small item is 1 RRU, an eventual one 0.5.
        key = {"pk": {"S": "a"}, "sk": {"S": "1"}}
        self.assertIsNone(self.part.admit(call("dynamodb", "GetItem", {
            "TableName": "t", "Key": key, "ConsistentRead": True})))
        self.assertIsNone(self.part.admit(call("dynamodb", "GetItem", {"TableName": "t",
                                                                       "Key": key})))
        # A Query on the index: charged after it ran, 0.5 RRU (eventual, under 4 KB).
        query = call("dynamodb", "Query", {
            "TableName": "t", "IndexName": "by-g", "KeyConditionExpression": "g = :g",
            "ExpressionAttributeValues": {":g": {"S": "G"}}})
        self.assertIsNone(self.part.admit(query))
        self.ddb.query(TableName="t", IndexName="by-g", KeyConditionExpression="g = :g",
                       ExpressionAttributeValues={":g": {"S": "G"}})
        self.part.after(query, 200)
        units = self.part.state()["dynamodb_units"]
        self.assertEqual(units["by_table"], {"t": {"read": 1.5, "write": 6.0},
                                             "t/by-g": {"read": 0.5, "write": 3.0}})
        self.assertEqual((units["read"], units["write"]), (2.0, 9.0))
        # The table's meters total its own units, the index's meters the index's (each is its
        # own table-level throughput on demand).
        resources = self.part.state()["resources"]
        self.assertEqual(resources["dynamodb:t:write"]["total"], 6.0)
        self.assertEqual(resources["dynamodb:t:read"]["total"], 1.5)
        self.assertEqual(resources["dynamodb:t/by-g:write"]["total"], 3.0)
        self.assertEqual(resources["dynamodb:t/by-g:read"]["total"], 0.5)

    def test_a_failed_conditional_write_keeps_the_tables_units_not_the_indexes(self):
        self.configure(k=1)
        item = {"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"S": "G"}}
        c = call("dynamodb", "PutItem", {"TableName": "t", "Item": item,
                                         "ConditionExpression": "attribute_exists(pk)"})
        self.assertIsNone(self.part.admit(c))
        self.part.after(c, 400)  # ConditionalCheckFailedException: nothing written
        units = self.part.state()["dynamodb_units"]
        self.assertEqual(units["by_table"], {"t": {"read": 0.0, "write": 1.0},
                                             "t/by-g": {"read": 0.0, "write": 0.0}})
        self.assertEqual(units["write"], 1.0)

    def test_a_refused_request_consumes_nothing(self):
        self.configure(k=1000)  # 1 WRU a second per partition
        self.assertIsNone(self.part.admit(put("t", "hot")))
        self.assertIsNotNone(self.part.admit(put("t", "hot", "b")))
        self.assertEqual(self.part.state()["dynamodb_units"]["write"], 1.0)

    def test_a_query_on_a_local_index_reads_its_tables_throughput(self):
        # A local index shares its table's throughput; only a global index has its own.
        self.ddb.create_table(
            TableName="l",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"},
                                  {"AttributeName": "s2", "AttributeType": "S"}],
            LocalSecondaryIndexes=[{
                "IndexName": "by-s2",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "s2", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }],
            BillingMode="PAY_PER_REQUEST",
        )
        self.configure(k=1)
        self.ddb.put_item(TableName="l", Item={"pk": {"S": "p"}, "sk": {"S": "1"},
                                               "s2": {"S": "x"}})
        query = call("dynamodb", "Query", {
            "TableName": "l", "IndexName": "by-s2", "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "p"}}})
        self.assertIsNone(self.part.admit(query))
        self.ddb.query(TableName="l", IndexName="by-s2", KeyConditionExpression="pk = :p",
                       ExpressionAttributeValues={":p": {"S": "p"}})
        self.part.after(query, 200)
        resources = self.part.state()["resources"]
        self.assertEqual(resources["dynamodb:l:read"]["total"], 0.5)
        self.assertNotIn("dynamodb:l/by-s2:read", resources)


class Sizes(LimitsCase):
    def test_a_transaction_over_4_mb(self):
        self.configure(k=1)
        big = [{"Put": {"TableName": "t", "Item": {"pk": {"S": f"k{i}"}, "sk": {"S": "a"},
                                                   "v": {"S": "x" * 390_000}}}}
               for i in range(11)]
        c = call("dynamodb", "TransactWriteItems", {"TransactItems": big})
        refused = self.part.admit(c)
        self.assertEqual((refused.code, refused.message),
                         ("ValidationException", "Transaction request cannot be larger than 4MB"))
        self.assertIsNone(self.part.admit(call("dynamodb", "TransactWriteItems",
                                               {"TransactItems": big[:10]})))

    def test_batch_write_over_25_requests(self):
        self.configure(k=1)
        requests = [{"PutRequest": {"Item": {"pk": {"S": f"k{i}"}, "sk": {"S": "a"}}}}
                    for i in range(26)]
        refused = self.part.admit(call("dynamodb", "BatchWriteItem",
                                       {"RequestItems": {"t": requests}}))
        self.assertEqual(refused.code, "ValidationException")
        self.assertIsNone(self.part.admit(call("dynamodb", "BatchWriteItem",
                                               {"RequestItems": {"t": requests[:25]}})))

    def test_an_sqs_message_counts_its_attributes(self):
        self.configure(k=1)
        body = "x" * (1024 * 1024 - 100)
        ok = call("sqs", "SendMessage", {"QueueUrl": "http://h/123456789012/q",
                                         "MessageBody": body})
        self.assertIsNone(self.part.admit(ok))
        with_attrs = call("sqs", "SendMessage", {
            "QueueUrl": "http://h/123456789012/q", "MessageBody": body,
            "MessageAttributes": {"a": {"DataType": "String", "StringValue": "y" * 200}}})
        refused = self.part.admit(with_attrs)
        self.assertEqual(refused.code, "InvalidParameterValue")
        self.assertIn("1048576 bytes", refused.message)
        query = call("sqs", "SendMessage", {
            "Action": "SendMessage", "QueueUrl": "http://h/123456789012/q", "MessageBody": body,
            "MessageAttribute.1.Name": "a", "MessageAttribute.1.Value.DataType": "String",
            "MessageAttribute.1.Value.StringValue": "y" * 200}, protocol="query")
        self.assertEqual(self.part.admit(query).code, "InvalidParameterValue")


class SqsRates(LimitsCase):
    def test_a_plain_fifo_queue_takes_300_over_k_requests_a_second_per_action(self):
        self.configure(k=100)
        receive = call("sqs", "ReceiveMessage", {"QueueUrl": "http://h/123456789012/q.fifo"})
        for _ in range(3):
            self.assertIsNone(self.part.admit(receive))
        refused = self.part.admit(receive)
        self.assertEqual((refused.status, refused.code), (400, "ThrottlingException"))
        # Another action has its own rate; a standard queue is only counted.
        self.assertIsNone(self.part.admit(call("sqs", "DeleteMessage",
                                               {"QueueUrl": "http://h/123456789012/q.fifo"})))
        standard = call("sqs", "ReceiveMessage", {"QueueUrl": "http://h/123456789012/q"})
        for _ in range(1000):
            self.assertIsNone(self.part.admit(standard))
        self.assertIsNone(self.part.state()["resources"]["sqs:q:ReceiveMessage"]["limit"])

    def test_a_high_throughput_fifo_queue_takes_70000_over_k(self):
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="h.fifo", Attributes={
            "FifoQueue": "true", "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId"})["QueueUrl"]
        self.configure(k=1000)  # 70 a second
        send = call("sqs", "SendMessageBatch", {"QueueUrl": url, "Entries": [
            {"Id": "1", "MessageBody": "b", "MessageGroupId": "g"}]})
        for i in range(70):
            self.assertIsNone(self.part.admit(send), i)
        self.assertEqual(self.part.admit(send).code, "ThrottlingException")
        self.assertEqual(self.part.state()["resources"]["sqs:h.fifo:SendMessage"]["limit"], 70)


class Scheduler(LimitsCase):
    def test_schedule_requests_over_k_answer_429(self):
        self.configure(k=1000)  # CreateSchedule 5 a second, DeleteSchedule 1
        create = Call("scheduler", "CreateSchedule", "rest-json", "test", REGION, {"Name": "s"},
                      "POST", "/schedules/s")
        for _ in range(5):
            self.assertIsNone(self.part.admit(create))
        refused = self.part.admit(create)
        self.assertEqual((refused.status, refused.code), (429, "ThrottlingException"))
        status, headers, _ = refused.answer(create)
        self.assertEqual(status, "429 Too Many Requests")
        self.assertIn(("x-amzn-ErrorType", "ThrottlingException"), headers)
        delete = Call("scheduler", "DeleteSchedule", "rest-json", "test", REGION, {"Name": "s"},
                      "DELETE", "/schedules/s")
        self.assertIsNone(self.part.admit(delete))
        self.assertIsNotNone(self.part.admit(delete))
        self.clock.now += 1.0
        self.assertIsNone(self.part.admit(delete))
        self.assertIsNone(self.part.admit(create))
        resources = self.part.state()["resources"]
        self.assertEqual(resources["scheduler:CreateSchedule"]["calls"], 7)
        self.assertEqual(resources["scheduler:CreateSchedule"]["peak_share"], 1.0)


class FifoWindow(LimitsCase):
    """The backlog window on moto's receive as infra/moto_server.py changes it."""

    def setUp(self):
        super().setUp()
        import moto.sqs.models as sqs_models
        import moto_server

        self.saved = (sqs_models.Queue.messages, sqs_models.SQSBackend.receive_message)
        moto_server.install_group_first_receives()
        self.real_part = limits.PART
        limits.PART = self.part

    def tearDown(self):
        import moto.sqs.models as sqs_models

        sqs_models.Queue.messages, sqs_models.SQSBackend.receive_message = self.saved
        limits.PART = self.real_part
        super().tearDown()

    def backlog(self):
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="w.fifo", Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        for start in range(0, 150, 10):
            sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": f"a{i}", "MessageGroupId": "a"}
                for i in range(start, start + 10)])
        sqs.send_message(QueueUrl=url, MessageBody="b0", MessageGroupId="b")
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        self.assertEqual([m["Body"] for m in first], [f"a{i}" for i in range(10)])
        return sqs, url

    def test_a_receive_sees_only_the_window(self):
        self.configure(k=1000)  # a window of 120 messages
        sqs, url = self.backlog()
        # Group a is in flight; group b's message is the 151st, past the window: not seen.
        self.assertEqual(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
                         .get("Messages", []), [])
        window = self.part.state()["resources"]["sqs:w.fifo:backlog-window"]
        self.assertEqual(window["limit"], 120)
        self.assertGreaterEqual(window["refusals"]["hidden"], 1)
        self.assertEqual(int(sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
                "ApproximateNumberOfMessages"]), 141)

    def test_without_the_model_a_receive_sees_every_message(self):
        sqs, url = self.backlog()
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        self.assertEqual([m["Body"] for m in got], ["b0"])


class _Emulator:
    """moto's server application behind `aws_model.modelled` with only this limits part, on a
    free port of this process: what an SDK reads back (botocore parses the answers)."""

    def __init__(self, part):
        self.part = part

    def __enter__(self):
        import threading

        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        from aws_model import _PARTS, modelled, register

        class Quiet(WSGIRequestHandler):
            def log_request(self, *args, **kwargs):
                pass

        self.parts = _PARTS
        self.saved = dict(_PARTS)
        _PARTS.clear()
        register("limits", self.part)
        app = DomainDispatcherApplication(create_backend_app)
        self.server = make_server("127.0.0.1", 0, modelled(app), threaded=False,
                                  request_handler=Quiet)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        from botocore.config import Config

        self.ddb = boto3.client(
            "dynamodb", endpoint_url=f"http://127.0.0.1:{self.server.server_port}",
            region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test",
            config=Config(retries={"mode": "standard", "total_max_attempts": 1}))
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.parts.clear()
        self.parts.update(self.saved)


class Batches(unittest.TestCase):
    """A batch over partitions some of which are throttled: the throttled items come back
    unprocessed in a 200 answer, the others are served; only a batch with no item served is
    refused whole (AWS's API reference, BatchWriteItem and BatchGetItem)."""

    def setUp(self):
        self.clock = Clock()
        self.part = limits._Part(clock=self.clock)
        self.emulator = _Emulator(self.part).__enter__()
        self.ddb = self.emulator.ddb
        self.ddb.create_table(
            TableName="b", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])

    def tearDown(self):
        self.ddb.delete_table(TableName="b")
        self.emulator.__exit__()

    @staticmethod
    def put_request(pk, sk):
        return {"PutRequest": {"Item": {"pk": {"S": pk}, "sk": {"S": sk}}}}

    def keys(self):
        return sorted((i["pk"]["S"], i["sk"]["S"]) for i in self.ddb.scan(TableName="b")["Items"])

    def test_a_batch_write_hands_back_only_the_throttled_items(self):
        self.part.configure({"k": 1000})  # 1 WRU a second per partition
        answer = self.ddb.batch_write_item(RequestItems={"b": [
            self.put_request("hot", "1"), self.put_request("hot", "2"),
            self.put_request("cold", "1"), self.put_request("hot", "3")]})
        self.assertEqual(answer["ResponseMetadata"]["HTTPStatusCode"], 200)
        # The first write to `hot` takes its partition's second; the next two find it empty.
        self.assertEqual(answer["UnprocessedItems"], {"b": [
            self.put_request("hot", "2"), self.put_request("hot", "3")]})
        self.assertEqual(self.keys(), [("cold", "1"), ("hot", "1")])
        state = self.part.state()
        self.assertEqual(state["refusals"]["by_kind"], {"UnprocessedItems": 2})
        self.assertEqual(state["refusals"]["by_reason"], {"throttle": 2})
        self.assertEqual(state["dynamodb_units"]["write"], 2.0)
        # The unprocessed items sent again a second later, as AWS asks: served.
        self.clock.now += 1.0
        again = self.ddb.batch_write_item(RequestItems={"b": [self.put_request("hot", "2")]})
        self.assertEqual(again["UnprocessedItems"], {})

    def test_a_batch_write_with_every_item_throttled_is_refused_whole(self):
        from botocore.exceptions import ClientError

        self.part.configure({"k": 1000})
        # This write takes `hot`'s one unit for the second.
        self.ddb.put_item(TableName="b", Item={"pk": {"S": "hot"}, "sk": {"S": "0"}})
        with self.assertRaises(ClientError) as caught:
            self.ddb.batch_write_item(RequestItems={"b": [
                self.put_request("hot", "1"), self.put_request("hot", "2")]})
        error = caught.exception.response
        self.assertEqual(error["ResponseMetadata"]["HTTPStatusCode"], 400)
        self.assertEqual(error["Error"]["Code"], "ProvisionedThroughputExceededException")
        self.assertEqual(self.keys(), [("hot", "0")])
        # One call refused (its items are not counted one by one: none was taken).
        self.assertEqual(self.part.state()["refusals"]["by_kind"],
                         {"ProvisionedThroughputExceededException": 1})

    def test_a_batch_get_hands_back_only_the_throttled_keys(self):
        for pk, sk in (("hot", "1"), ("hot", "2"), ("cold", "1")):
            self.ddb.put_item(TableName="b", Item={"pk": {"S": pk}, "sk": {"S": sk},
                                                   "v": {"S": "x"}})
        self.part.configure({"k": 3000})  # 1 RRU a second per partition
        key = lambda pk, sk: {"pk": {"S": pk}, "sk": {"S": sk}}  # noqa: E731
        answer = self.ddb.batch_get_item(RequestItems={"b": {
            "Keys": [key("hot", "1"), key("hot", "2"), key("cold", "1")],
            "ConsistentRead": True, "ProjectionExpression": "#p, sk",
            "ExpressionAttributeNames": {"#p": "pk"}}})
        self.assertEqual(answer["ResponseMetadata"]["HTTPStatusCode"], 200)
        # A strongly consistent read of a small item is one unit: `hot`'s second is taken by
        # the first; the second key comes back in the form it was asked.
        self.assertEqual(sorted((i["pk"]["S"], i["sk"]["S"]) for i in answer["Responses"]["b"]),
                         [("cold", "1"), ("hot", "1")])
        self.assertEqual(answer["UnprocessedKeys"], {"b": {
            "Keys": [key("hot", "2")], "ConsistentRead": True,
            "ProjectionExpression": "#p, sk", "ExpressionAttributeNames": {"#p": "pk"}}})
        self.assertEqual(self.part.state()["refusals"]["by_kind"], {"UnprocessedKeys": 1})
        # Every key on throttled partitions: the call is refused whole.
        from botocore.exceptions import ClientError

        with self.assertRaises(ClientError) as caught:
            self.ddb.batch_get_item(RequestItems={"b": {
                "Keys": [key("hot", "1"), key("hot", "2")], "ConsistentRead": True}})
        self.assertEqual(caught.exception.response["Error"]["Code"],
                         "ProvisionedThroughputExceededException")


class Quotas(unittest.TestCase):
    def test_every_figure_is_read_from_docs_quotas_toml_with_a_source(self):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "quotas.toml")
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        for name in list(limits.FIGURES) + list(limits.SIZES):
            self.assertIn(name, doc["quota"], name)
            self.assertTrue(doc["source"][name].startswith("https://"), name)
        expected = {
            "dynamodb_partition_rru_per_second": 3000, "dynamodb_partition_wru_per_second": 1000,
            "dynamodb_table_rru_per_second": 40000, "dynamodb_table_wru_per_second": 40000,
            "sqs_fifo_requests_per_second": 70000, "sqs_fifo_plain_requests_per_second": 300,
            "sqs_fifo_backlog_window": 120000, "scheduler_create_per_second": 5000,
            "scheduler_update_per_second": 1000, "scheduler_delete_per_second": 1000,
            "dynamodb_transaction_bytes": 4194304, "dynamodb_batch_write_requests": 25,
            "dynamodb_batch_write_bytes": 16777216, "sqs_message_bytes": 1048576,
        }
        self.assertEqual({n: limits.FIGURES.get(n, limits.SIZES.get(n)) for n in expected},
                         expected)


class LambdaConcurrency(unittest.TestCase):
    """aws_local's Lambda concurrency (runtime.Concurrency), as `--scale` sets it."""

    def test_the_account_bound_and_reserved_concurrency(self):
        from aws_local.runtime import Concurrency, Throttled

        c = Concurrency()
        c.configure(account=3, reserved={"timer": 1})
        self.assertTrue(c.enter("api"))  # the first environment: a cold start
        self.assertTrue(c.enter("submitter"))
        with self.assertRaises(Throttled):  # 3 - 1 reserved for the timer = 2 unreserved
            c.enter("api")
        self.assertTrue(c.enter("timer"))
        with self.assertRaises(Throttled):
            c.enter("timer")
        c.leave("api")
        self.assertFalse(c.enter("api"))  # its environment is warm again
        c.lost("api")
        c.leave("api")
        self.assertTrue(c.enter("api"))  # the instance died: a new environment
        report = c.report()
        self.assertEqual(report["peak"], 3)
        self.assertEqual(report["first_throttle"][0], "api")
        self.assertEqual(report["functions"]["api"],
                         {"invocations": 4, "throttles": 1, "cold_starts": 2, "peak": 1})

    def test_unbounded_until_configured(self):
        from aws_local.runtime import Concurrency

        c = Concurrency()
        for _ in range(5000):
            c.enter("api")
        self.assertEqual(c.report()["functions"]["api"]["throttles"], 0)


class ItemSizes(unittest.TestCase):
    def test_sizes_as_dynamodb_counts_them(self):
        self.assertEqual(limits.item_size({"ab": {"S": "héllo"}}), 2 + 6)
        self.assertEqual(limits.av_size({"N": "12345"}), 4)  # 5 digits: 3 bytes + 1
        self.assertEqual(limits.av_size({"BOOL": True}), 1)
        self.assertEqual(limits.av_size({"L": [{"S": "a"}, {"N": "1"}]}), 3 + 2 + 3)
        self.assertEqual(limits.av_size({"M": {"k": {"S": "v"}}}), 3 + 1 + 1 + 1)
        self.assertEqual(limits.av_size({"B": "AAEC"}), 3)


if __name__ == "__main__":
    unittest.main()
