"""moto_server (moto.server.main) with requests served one at a time over kept-alive
connections (werkzeug alone closes each), transactions that do not copy whole tables, queries that read one partition, and
FIFO receives that hand out one message group's messages together, as SQS does, transactions
that honour their ClientRequestToken as DynamoDB does, item answers written as they are built,
and a clock and a service lookup that cost no more than they must: the emulator
`bash infra/moto.sh` starts (`python -m moto_server -H HOST -p PORT` from infra/). The comment
above each change says why it is made."""
import base64
import collections
import copy
import datetime
import functools
import inspect
import io
import json
import os
import sys
import threading
import time

import aws_model
import aws_model.limits
import moto.backends
import moto.core.responses as moto_core_responses
import moto.core.utils as moto_utils
import moto.dynamodb.exceptions as dynamodb_exceptions
import moto.dynamodb.models as dynamodb_models
import moto.dynamodb.responses as dynamodb_responses
from moto.core.responses import ActionResult
import moto.server
import moto.sqs.models as sqs_models
import werkzeug.serving as werkzeug_serving
from werkzeug.serving import WSGIRequestHandler, run_simple as werkzeug_run_simple

LOCK = threading.Lock()

# MOTO_PROFILE=1: every 10 s, one line on stderr (the emulator's log) per operation over the last
# 10 s: how many, the time each held the lock and waited for it. Where an emulator-bound
# measurement's seconds go, without a profiler.
PROFILE = os.environ.get("MOTO_PROFILE") == "1"
_PROFILE_LOCK = threading.Lock()
_profile = collections.defaultdict(lambda: [0, 0.0, 0.0])
_profile_since = [time.monotonic()]


def _profiled(environ, waited, held):
    """Counts one request of `environ` that waited `waited` s for the lock and held it `held` s;
    prints and clears the counts every 10 s."""
    target = environ.get("HTTP_X_AMZ_TARGET") or environ.get("PATH_INFO", "?")
    op = target.rsplit(".", 1)[-1] + environ.get("profile.index", "")
    with _PROFILE_LOCK:
        row = _profile[op]
        row[0] += 1
        row[1] += held
        row[2] += waited
        now = time.monotonic()
        if now - _profile_since[0] < 10:
            return
        span = now - _profile_since[0]
        lines = sorted(_profile.items(), key=lambda kv: -kv[1][1])
        busy = sum(r[1] for _, r in lines)
        print(f"profile: {span:.1f} s, lock held {busy:.1f} s ({100 * busy / span:.0f}%)",
              file=sys.stderr)
        for op, (n, h, w) in lines:
            print(f"profile:   {op}: {n}, held {1000 * h / n:.1f} ms each, waited "
                  f"{1000 * w / n:.1f} ms each", file=sys.stderr)
        _profile.clear()
        _profile_since[0] = now


def serialised(app):
    """`app` answering one request at a time."""

    def handle(environ, start_response):
        if PROFILE and environ.get("HTTP_X_AMZ_TARGET", "").endswith(".Query"):
            # The index a Query reads, for the profile's line (the body read and put back).
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            try:
                index = json.loads(body).get("IndexName", "table")
            except ValueError:
                index = "?"
            environ["profile.index"] = f" {index}"
        asked = time.monotonic()
        with LOCK:
            got = time.monotonic()
            # The whole answer is produced inside the lock.
            answer = list(app(environ, start_response))
        if PROFILE:
            _profiled(environ, got - asked, time.monotonic() - got)
        return answer

    return handle


# Each request's own cost, beyond moto's: werkzeug's server speaks HTTP/1.0 by default, so every
# request opens a connection and a thread of its own, and it logs every request line. Profiled
# under a burst of lapses (py-spy), moto's own work was 15% of the emulator's time, the
# connection, its thread and the log line most of the rest. Here connections are kept alive
# (HTTP/1.1, as the SDKs ask) and request lines are logged only with MOTO_REQUEST_LOG=1.
#
# Werkzeug closes every connection even over HTTP/1.1: it adds `Connection: close` to each
# answer, then reads whatever the client sent after its request for up to 10 ms and throws it
# away, which on a kept connection would be the next request. So the header is not sent, and
# that read finds nothing (`_NoDrain`): moto reads each request's body whole (its
# Content-Length), so nothing of a request is left to drain.
REQUEST_LOG = os.environ.get("MOTO_REQUEST_LOG") == "1"


class _NoDrain:
    """Stands in for the `selectors` module in werkzeug.serving, whose only use there is the
    read after each answer: a selector that never finds anything to read."""

    EVENT_READ = 1

    class DefaultSelector:
        def register(self, *args, **kwargs):
            pass

        def select(self, timeout=None):
            return []

        def close(self):
            pass


def run_simple(host, port, app, **kwargs):
    handler = kwargs.get("request_handler") or WSGIRequestHandler
    werkzeug_serving.selectors = _NoDrain

    class KeptAlive(handler):
        protocol_version = "HTTP/1.1"
        # An answer's head and body leave in one write, and nothing waits for the client's
        # delayed ACK (40 ms a request on a kept connection otherwise: Nagle's algorithm).
        wbufsize = -1
        disable_nagle_algorithm = True

        def send_header(self, keyword, value):
            if keyword.lower() == "connection" and value.lower() == "close":
                return  # werkzeug's; the client's own `Connection: close` still ends it
            super().send_header(keyword, value)

        def log_request(self, *args, **kw):
            if REQUEST_LOG:
                super().log_request(*args, **kw)

    kwargs["request_handler"] = KeptAlive
    werkzeug_run_simple(host, port, serialised(aws_model.modelled(app)), **kwargs)


# TransactWriteItems: moto keeps a deep copy of every table a transaction touches, to roll back
# on failure, so each transaction costs time in proportion to the table (300 ms at a few
# thousand items), which no real DynamoDB does. Here the tables are not copied; a journal of
# the items the transaction names (each as it was) is kept instead and put back on failure.
class _TablesUncopied:
    """The `copy` module, but a table is not copied (the journal below stands in)."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, dynamodb_models.Table):
            return value
        return copy.deepcopy(value, memo)


def _key_of(table, op):
    if "Key" in op:
        return op["Key"]
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


_transact = dynamodb_models.DynamoDBBackend.transact_write_items


def transact_write_items(self, transact_items):
    """moto's `transact_write_items`, rolled back from a journal of the items it names."""
    journal = []  # (table name, key, the item's attributes before, or None)
    for entry in transact_items[:100]:
        try:
            _, op = next(iter(entry.items()))
            name = op["TableName"]
            key = _key_of(self.tables[name], op)
            before = self.get_item(name, key)
            attrs = copy.deepcopy(before.to_json()["Attributes"]) if before else None
            journal.append((name, key, attrs))
        except Exception:  # noqa: BLE001  the transaction itself reports a malformed entry
            continue
    try:
        return _transact(self, transact_items)
    except Exception:
        for name, key, before in reversed(journal):
            if before is None:
                if self.get_item(name, key) is not None:
                    self.delete_item(name, key)
            else:
                self.put_item(name, before)
        raise


# ClientRequestToken: DynamoDB answers a TransactWriteItems sent again with the token of one
# that succeeded within ten minutes as a success and changes nothing ("Making idempotent
# requests", TransactWriteItems), and refuses the token with other items
# (IdempotentParameterMismatchException). The Rust SDK gives every TransactWriteItems a token
# and sends the same one again when it retries a request whose answer it lost (a connection
# that broke after the emulator applied it). moto ignores the token, so that retry applied the
# transaction twice and its conditions failed: a commit that had landed came back a conflict
# (seen once in a million filler commits of the scale run). Kept per server, a token's entry
# for IDEMPOTENCY_WINDOW seconds.
IDEMPOTENCY_WINDOW = 600.0
# token -> (the request's items as JSON, time of success), oldest first: a token is added once,
# at its success, so the order of insertion is the order of time and the expired ones are at
# the front. Dropping them costs what expired, not what is kept (tens of thousands of tokens in
# ten minutes of a scale run).
_tokens = collections.OrderedDict()
_tokens_lock = threading.Lock()


def expire_tokens(now, tokens=None):
    """Drops the tokens older than IDEMPOTENCY_WINDOW at `now` (time.monotonic() seconds) from
    the front of `tokens` (this server's by default); answers how many were dropped."""
    tokens = _tokens if tokens is None else tokens
    dropped = 0
    while tokens:
        _, (_, at) = next(iter(tokens.items()))
        if now - at <= IDEMPOTENCY_WINDOW:
            break
        tokens.popitem(last=False)
        dropped += 1
    return dropped


class IdempotentParameterMismatch(dynamodb_exceptions.DynamodbException):
    def __init__(self):
        super().__init__(
            dynamodb_exceptions.ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException",
            message="The request uses the same client token as a previous, but non-identical request.",
        )


_transact_response = dynamodb_responses.DynamoHandler.transact_write_items


def transact_write_items_once(self):
    """moto's TransactWriteItems handler, answering a token seen with the same items within
    the window as the success it was, without applying it again."""
    token = self.body.get("ClientRequestToken")
    if not token:
        return _transact_response(self)
    items = json.dumps(self.body.get("TransactItems"), sort_keys=True, default=_base64)
    with _tokens_lock:
        expire_tokens(time.monotonic())
        seen = _tokens.get(token)
    if seen is not None:
        if seen[0] != items:
            raise IdempotentParameterMismatch()
        return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
    answer = _transact_response(self)
    with _tokens_lock:
        _tokens[token] = (items, time.monotonic())
    return answer


def install_journaled_transactions():
    """moto's DynamoDB backend, from now on in this process, rolls a failed transaction back
    from the journal above instead of from copies of its tables."""
    dynamodb_models.copy = _TablesUncopied()
    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items
    dynamodb_responses.DynamoHandler.transact_write_items = transact_write_items_once


# Query: moto lists every item of the table and keeps those of the asked partition, so each
# Query costs time in proportion to the table (seconds a request at 100,000 items, minutes for
# the pages of an index sharded sixteen ways), which no real DynamoDB does: a Query reads its one
# partition. Here moto's query is handed only the items of the asked partition: on the table's
# own key straight from the table, on an index from a grouping of the table's items by the
# index's partition key, made once and kept until the next request that may write (every
# backend call but the reads named in _READS). Sorting, paging, conditions, filters and
# projections stay moto's.
_query = dynamodb_models.Table.query

# Backend calls that never change an item; every other call drops the index groupings.
_READS = ("get_", "describe_", "list_", "query", "scan", "batch_get_item", "transact_get_items",
          "check_unicity", "default_vpc_endpoint_service", "iter_tagged_resources")

# Bumped before and after each backend call that may write: a grouping made at another
# count is stale.
_writes = [0]


def _partition_items(table, hash_key):
    """The items of one partition of `table`, as moto's `all_items` would list them."""
    partition = table.items.get(hash_key)
    if partition is None:
        return []
    if table.range_key_attr:
        return list(partition.values())
    return [partition]


def _index_partition(table, index_name, hash_key_conditions):
    """The items of `table` whose attributes equal the index's partition key conditions, from
    the table's grouping for that index (made again when a write came since)."""
    cached = getattr(table, "_index_groupings", None)
    if cached is None or cached[0] != _writes[0]:
        cached = (_writes[0], {})
        table._index_groupings = cached
    groupings = cached[1]
    index = table.get_index(index_name)
    names = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
    asked = dict(hash_key_conditions)
    if sorted(asked) != sorted(names):
        return None
    if index_name not in groupings:
        grouping = {}
        for item in table.all_items():
            values = tuple(item.attrs.get(name) for name in names)
            if all(values):
                grouping.setdefault(values, []).append(item)
        groupings[index_name] = grouping
    return list(groupings[index_name].get(tuple(asked[name] for name in names), []))


def query(self, hash_key, *args, **kwargs):
    """moto's `Table.query`, handed only the asked partition's items."""
    # moto's backend passes the index's name as the eighth argument after the table.
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name is None:
        if hash_key is None:
            return _query(self, hash_key, *args, **kwargs)
        items = _partition_items(self, hash_key)
    else:
        conditions = kwargs.get("hash_key_conditions") or []
        try:
            items = _index_partition(self, index_name, conditions)
        except Exception:  # noqa: BLE001  moto's own query reports an unknown index
            items = None
        if items is None:
            return _query(self, hash_key, *args, **kwargs)
    self.all_items = lambda: items
    try:
        return _query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


def _counting_writes(method):
    """`method`, bumping `_writes` before and after it runs."""

    @functools.wraps(method)
    def call(*args, **kwargs):
        _writes[0] += 1
        try:
            return method(*args, **kwargs)
        finally:
            _writes[0] += 1

    return call


def install_partition_queries():
    """moto's Query, from now on in this process, reads one partition of the table or index.
    Install after install_journaled_transactions (it wraps the backend's calls as they are)."""
    backend = dynamodb_models.DynamoDBBackend
    for name, member in list(vars(backend).items()):
        if name.startswith("_") or name.startswith(_READS) or not inspect.isfunction(member):
            continue
        setattr(backend, name, _counting_writes(member))
    dynamodb_models.Table.query = query


# DynamoDB's item operations: moto's handlers build each answer as JSON already (items, keys,
# counts, consumed capacity), then moto 5 walks it through the service model's output shape to
# serialize it, trying each attribute value's ten possible members through six alias providers.
# Measured in process, that walk was most of a GetItem's time: 5.1 ms for an item of 19
# attributes, 1.5 ms with the answer dumped as it is. Here these operations' answers are dumped
# as they are, binary values (bytes) in base64 and only the output shape's own keys, as the
# serializer writes them (moto's DeleteItem adds a `ConsumedCapacityUnits` of its own); an
# answer holding anything else (a None the serializer would leave out, a value of another type)
# goes through moto's serializer as before. A unit test checks every answer equals moto's own.
ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
_PLAIN_LEAVES = (str, bool, int, float)


def _is_plain(value):
    """Whether `value` dumps as moto's serializer writes it: dicts, lists, strings, numbers,
    booleans and bytes (base64), with no None anywhere."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain(v) for v in value)
    return isinstance(value, _PLAIN_LEAVES + (bytes,))


def _base64(value):
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not plain")


def plain_answer(operation, result, members):
    """The JSON body of DynamoDB `operation`'s answer `result`, dumped as it is but for the keys
    not among `members` (its output shape's), which the serializer leaves out too; or None when
    it must go through moto's serializer (another operation, an error, a value not plain)."""
    if operation not in ITEM_OPERATIONS or not isinstance(result, dict) or not _is_plain(result):
        return None
    return json.dumps({k: v for k, v in result.items() if k in members}, default=_base64)


_execute_result = ActionResult.execute_result


def execute_result(self, context):
    """moto's `ActionResult.execute_result`, with `plain_answer` for DynamoDB's item operations."""
    if context.service_model.service_name == "dynamodb":
        operation = context.operation_model
        body = plain_answer(operation.name, self.result, operation.output_shape.members)
        if body is not None:
            return 200, {"Content-Type": "application/x-amz-json-1.0"}, body
    return _execute_result(self, context)


def install_plain_item_answers():
    """DynamoDB's item operations answer, from now on in this process, with `plain_answer`."""
    ActionResult.execute_result = execute_result


# Every request lists its handler class's methods (`inspect.getmembers`) to find the action's:
# 12% of a GetItem's time in process once its answer is dumped as it is. A class's method names
# do not change while the emulator serves (the changes above replace methods under their own
# names, before the first request), so each class's are listed once.
@functools.lru_cache(maxsize=None)
def method_names_from_class(clazz):
    """moto's `method_names_from_class`, once per class (a tuple: callers only test membership)."""
    return tuple(moto_utils.method_names_from_class(clazz))


def install_cached_method_names():
    """moto's handlers, from now on in this process, list each class's method names once."""
    moto_core_responses.method_names_from_class = method_names_from_class


# ReceiveMessage on a FIFO queue: moto hands out the oldest visible messages whatever their
# group, so a batch of ten holds ten agents' lapse tasks, one each, and each agent's next one
# waits for the whole batch. SQS "first attempts to return as many messages with the same message
# group ID as possible" (Amazon SQS Developer Guide, "FIFO queue message grouping"): here the
# visible messages moto's receive walks are ordered group by group (the group of the oldest
# message first, each group's messages in their order), so a receive takes as many of one
# group's as the batch holds before it takes another group's.
_visible = sqs_models.Queue.messages


# A receive looks only at the first messages of a FIFO queue for groups it can serve ("FIFO
# queues scan the first 120,000 messages to determine available message groups", Amazon SQS
# Developer Guide): the model's limits part says how many (120,000 / K, None when it is not
# configured), and only while a receive runs (`_receiving`); counts of a queue's messages see
# them all.
_receiving = [False]


def _group_first(queue):
    """The queue's visible messages, a FIFO queue's ordered group by group (within the limits
    part's backlog window, during a receive)."""
    if not queue.fifo_queue:
        return _visible.fget(queue)
    window = None
    if _receiving[0]:
        window = aws_model.limits.PART.fifo_window(queue.name, len(queue._messages))
    if window is not None and len(queue._messages) > window:
        # As moto's own `messages`, over the window's messages only.
        visible = [m for m in queue._messages[:window] if m.visible and not m.delayed]
    else:
        visible = _visible.fget(queue)
    groups = {}
    for message in visible:
        groups.setdefault(message.group_id, []).append(message)
    return [message for group in groups.values() for message in group]


_receive = sqs_models.SQSBackend.receive_message


def receive_message(self, *args, **kwargs):
    """moto's receive, with `_receiving` set while it runs."""
    _receiving[0] = True
    try:
        return _receive(self, *args, **kwargs)
    finally:
        _receiving[0] = False


def install_group_first_receives():
    """moto's SQS, from now on in this process, receives a FIFO queue's messages group by
    group, within the limits part's backlog window."""
    sqs_models.Queue.messages = property(_group_first)
    sqs_models.SQSBackend.receive_message = receive_message


# moto's clock: `unix_time` makes the epoch a datetime again (importing `datetime.UTC`) on each
# call, and SQS calls it twice for every message of a queue at each receive (is it visible? is it
# delayed?) and at each count of a queue's messages. Profiled under a burst of lapses (py-spy),
# that was a third of the SQS emulator's time. The same values, computed once per call.
_EPOCH = datetime.datetime(1970, 1, 1)


def unix_time(dt=None):
    """Seconds since the epoch of the naive UTC datetime `dt` (now when None), as moto's."""
    if dt is None:
        return time.time()
    delta = dt - _EPOCH
    return (delta.days * 86400) + (delta.seconds + (delta.microseconds / 1e6))


def unix_time_millis(dt=None):
    """Milliseconds since the epoch of `dt` (now when None), as moto's."""
    return unix_time(dt) * 1000.0


# moto finds which service a request is for by listing its own package folder (a `listdir` and
# an `isdir` for each of its 150 services) on every request: 8% of the emulator's time in the
# same profile. The list never changes while the server runs, so it is made once.
_list_of_moto_modules = moto.backends.list_of_moto_modules


@functools.cache
def _moto_modules():
    return tuple(_list_of_moto_modules())


def install_lean_lookups():
    """moto, from now on in this process, reads the clock with `unix_time` above (in every
    moto module loaded so far, and in those loaded later, which import it from
    `moto.core.utils`) and lists its services once."""
    fast = {id(moto_utils.unix_time): unix_time, id(moto_utils.unix_time_millis): unix_time_millis}
    originals = (moto_utils.unix_time, moto_utils.unix_time_millis)
    for module in list(sys.modules.values()):
        if module is None or not getattr(module, "__name__", "").startswith("moto"):
            continue
        for name, value in list(vars(module).items()):
            if any(value is o for o in originals):
                setattr(module, name, fast[id(value)])
    moto.backends.list_of_moto_modules = _moto_modules


if __name__ == "__main__":
    # A session of its own: a Ctrl-C at the terminal that started it (infra/aws-local.sh runs in
    # the foreground, in the same process group) does not reach it. The stack stops its
    # emulators itself after its pollers and functions (`infra/moto.sh stop`), so nothing is
    # left asking a server that is gone.
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    install_journaled_transactions()
    install_partition_queries()
    install_group_first_receives()
    install_lean_lookups()
    install_plain_item_answers()
    install_cached_method_names()
    aws_model.install_parts()
    moto.server.run_simple = run_simple
    moto.server.main(sys.argv[1:])


