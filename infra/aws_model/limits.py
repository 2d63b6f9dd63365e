"""The limits part of the model of AWS: quotas, partition throughput, transaction conflicts and
size limits, each AWS's own figure divided by a scale factor K (docs/howto/aws-local.md,
"Limits and the scale factor"; each figure's public source is cited in docs/quotas.toml).

`configure({"k": K, ...})` turns it on (K = 1: AWS's own figures); a part never configured lets
every call through. Settings besides `k`: `transaction_window_ms` (how long a transaction holds
its items, below; 25 by default, 0 for no conflicts, not divided by K: it stands for the time
two transactions overlap, not for a rate), and any figure of `FIGURES` or `SIZES` by name to
override it (an override is taken as given, not divided by K).

What it enforces, per call (the emulator serves one request at a time, so every check below
sees the calls in the order they were served):

- DynamoDB throughput. A partition is modelled per partition-key value (of the table, or of a
  global secondary index): the bound a single hot key meets. AWS keeps several cold keys on one
  partition and splits a partition for heat, so the model never throttles one hot key later than
  AWS and may throttle several warm keys sharing an AWS partition later than AWS would. A
  partition serves 3,000 read units or 1,000 write units a second "or a linear combination of
  both", so it is one token bucket measured in partition-seconds (a read unit costs K/3,000 of
  one, a write unit K/1,000), holding one second: burst capacity (up to 300 s of unused
  capacity) is documented for provisioned tables and "can't alleviate partition-level
  throttling", and the template's tables are on demand. Each table, and each of its global
  secondary indexes apart from it, has a read and a write bucket of the on-demand per-table
  quota (40,000 units a second each) / K, one second deep too: on demand that quota applies to
  "any table, or any individual GSI within that table" (`_Run.throughput` cites AWS), so the
  units a write or Query spends on a global index never count against its table's bucket (a
  Query on a local index does: that index shares its table's throughput). Units as AWS counts
  them: a read unit per 4 KB (rounded up) of the item, half for an eventually consistent read,
  two for a transactional one; a write unit per 1 KB of the larger of the item before and
  after, two for a transactional one. A Query or Scan is charged after it ran, for the bytes of
  the items it read (rounded up to 4 KB once), and is refused only while its partition or
  table (or index) is in debt; AWS too only learns a Query's cost by running it. A refusal is
  `ProvisionedThroughputExceededException` (HTTP 400; on-demand tables answer it too, with the
  on-demand message), and `TransactionCanceledException` with `ThrottlingError` reasons for a
  transaction. A BatchGetItem or BatchWriteItem serves the items that have room and hands the
  throttled ones back in a 200 answer (`UnprocessedKeys`, `UnprocessedItems`); only a batch none
  of whose items has room is refused whole (`_admit_batch` cites AWS's API reference).
- Transaction conflicts. A TransactWriteItems that succeeded holds its items for
  `transaction_window_ms` after it applied: requests are served one at a time here, so that
  window is how two transactions overlapping on AWS are represented. Another transaction on one
  of those items in the window is cancelled (`TransactionCanceledException`, a
  `TransactionConflict` reason at that item, `None` at the others), a PutItem, UpdateItem or
  DeleteItem answers `TransactionConflictException`. The same transaction sent again (same
  ClientRequestToken, the SDK's retry) is not a conflict.
- Sizes moto does not check already: a transaction's 4 MB, BatchWriteItem's 25 requests and
  16 MB, and an SQS message's 1 MiB counted with its attributes (moto counts the body alone).
  moto already refuses an item over 400 KB, a transaction over 100 items, a BatchGetItem over
  100 keys and an SQS batch over 10 entries or 1 MiB, with AWS's messages.
- SQS request rates per FIFO queue and action (a batch is one request of its action):
  high-throughput FIFO queues 70,000 a second, other FIFO queues 300, both / K; standard queues
  support "a nearly unlimited number of API calls" and are only counted. Refused as
  `ThrottlingException`. The FIFO backlog window: a receive looks only at the first
  120,000 / K messages of a FIFO queue for groups it can serve (`fifo_window`, called by
  infra/moto_server.py's receive).
- EventBridge Scheduler: CreateSchedule, UpdateSchedule and DeleteSchedule requests a second
  / K, refused as `ThrottlingException` (HTTP 429).

`state()` (GET /_model/limits) answers, per resource: calls, refusals by kind and by reason,
the limit with its unit, the peak use in any one second and its share of the limit, the use in
all (`total`); the hottest partitions; the refusals of the callers' requests in all, by kind and
by reason (`throttle`: the caller may come back after a wait, a 429 in spirit whatever status
the service answers; `conflict`: a transaction conflict; `size`: a size or count the service
never takes; `window`: a FIFO receive the backlog window hid messages from; a batch's item
handed back unprocessed counts one throttle); the first refusal, with its reason; and
`dynamodb_units`: the read and write request units consumed in all and by table and global
index (`table/index`), what DynamoDB on demand bills (docs/prices.toml).
"""

import base64
import json
import math
import os
import re
import time
import tomllib

from .calls import Refusal

NAME = "limits"

# AWS's figures, per second unless named otherwise, us-east-1 defaults; docs/quotas.toml cites
# each and is read over these at import (the file is the one place they are changed).
FIGURES = {
    "dynamodb_partition_rru_per_second": 3000.0,
    "dynamodb_partition_wru_per_second": 1000.0,
    "dynamodb_table_rru_per_second": 40000.0,
    "dynamodb_table_wru_per_second": 40000.0,
    "sqs_fifo_requests_per_second": 70000.0,
    "sqs_fifo_plain_requests_per_second": 300.0,
    "sqs_fifo_backlog_window": 120000.0,
    "scheduler_create_per_second": 5000.0,
    "scheduler_update_per_second": 1000.0,
    "scheduler_delete_per_second": 1000.0,
}
# Sizes, in bytes or entries: not divided by K (a 400 KB item is 400 KB at any scale).
SIZES = {
    "dynamodb_transaction_bytes": 4 * 1024 * 1024,
    "dynamodb_batch_write_requests": 25,
    "dynamodb_batch_write_bytes": 16 * 1024 * 1024,
    "sqs_message_bytes": 1024 * 1024,
}

_QUOTAS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "quotas.toml")


def read_quotas(path=_QUOTAS):
    """FIGURES and SIZES with the values docs/quotas.toml's `[quota]` table gives (a figure the
    file lacks keeps its value here)."""
    figures, sizes = dict(FIGURES), dict(SIZES)
    try:
        with open(path, "rb") as f:
            quota = tomllib.load(f).get("quota", {})
    except (OSError, tomllib.TOMLDecodeError):
        return figures, sizes
    for table in (figures, sizes):
        for name in table:
            if isinstance(quota.get(name), (int, float)):
                table[name] = type(table[name])(quota[name])
    return figures, sizes


FIGURES, SIZES = read_quotas()

_ON_DEMAND_THROTTLE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly. If exceptions persist, check if "
    "you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
_CONFLICT = "Transaction is ongoing for the item"
_WRITE_OPS = ("PutItem", "UpdateItem", "DeleteItem")
_SQS_ACTIONS = {
    "SendMessage": "SendMessage",
    "SendMessageBatch": "SendMessage",
    "ReceiveMessage": "ReceiveMessage",
    "DeleteMessage": "DeleteMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibility": "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
_SCHEDULER_OPS = {
    "CreateSchedule": "scheduler_create_per_second",
    "UpdateSchedule": "scheduler_update_per_second",
    "DeleteSchedule": "scheduler_delete_per_second",
}


class _Answer(Refusal):
    """A Refusal whose JSON body carries more members than `message` (CancellationReasons,
    ThrottlingReasons), as DynamoDB sends them."""

    def __init__(self, status, code, message, extra):
        super().__init__(status, code, message)
        self.extra = extra

    def answer(self, call):
        status, headers, body = super().answer(call)
        if call.protocol != "json":
            return status, headers, body
        data = json.loads(body)
        data.update(self.extra)
        body = json.dumps(data).encode()
        headers = [(k, str(len(body)) if k == "Content-Length" else v) for k, v in headers]
        return status, headers, body


class Bucket:
    """A token bucket: `rate` tokens a second, holding at most `capacity`. `take` refuses a cost
    while fewer than min(cost, capacity) tokens are left (a cost above the capacity passes a
    full bucket and leaves it in debt); `charge` takes a cost known only afterwards."""

    def __init__(self, rate, capacity, now):
        self.rate, self.capacity, self.tokens, self.at = rate, capacity, capacity, now

    def refill(self, now):
        if now > self.at:
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now

    def can(self, now, cost):
        self.refill(now)
        return self.tokens >= min(cost, self.capacity) - 1e-9

    def charge(self, now, cost):
        self.refill(now)
        self.tokens -= cost


class Meter:
    """What one resource saw: calls, refusals by kind and by reason, its use per whole second
    (the peak one) and in all, against `limit` (None: not limited, only counted) in `unit`."""

    def __init__(self, limit, unit):
        self.limit, self.unit = limit, unit
        self.calls = 0
        self.refusals = {}
        self.reasons = {}
        self.second, self.used, self.peak = None, 0.0, 0.0
        self.total = 0.0

    def use(self, now, amount):
        second = int(now)
        if second != self.second:
            self.peak = max(self.peak, self.used)
            self.second, self.used = second, 0.0
        self.used += amount
        self.total += amount

    def peak_use(self):
        return max(self.peak, self.used)

    def report(self):
        peak = self.peak_use()
        return {
            "calls": self.calls,
            "refusals": dict(self.refusals),
            "refusals_by_reason": dict(self.reasons),
            "limit": self.limit,
            "unit": self.unit,
            "peak": round(peak, 3),
            "peak_share": round(peak / self.limit, 4) if self.limit else None,
            # `unit` a second, summed over the run: for a table's read and write meters, the
            # request units its own items consumed, for a global index's
            # (`dynamodb:table/index:…`) the index's; `dynamodb_units` holds both (what
            # on-demand bills).
            "total": round(self.total, 3),
        }


# Why a request was refused, by the kind its meter counts: a throttle (the caller may retry after
# a wait: a 429 in spirit, whatever status the service answers), a transaction conflict, a size
# the service never takes, or a FIFO receive the backlog window hid messages from.
_REASONS = {
    "ProvisionedThroughputExceededException": "throttle",
    "ThrottlingError": "throttle",
    "ThrottlingException": "throttle",
    "UnprocessedItems": "throttle",
    "UnprocessedKeys": "throttle",
    "TransactionConflict": "conflict",
    "TransactionConflictException": "conflict",
    "ValidationException": "size",
    "InvalidParameterValue": "size",
    "BatchRequestTooLong": "size",
    "hidden": "window",
}


def reason_of(kind):
    """The reason (`throttle`, `conflict`, `size`, `window`) a refusal of `kind` counts under;
    `other` for a kind not listed."""
    return _REASONS.get(kind, "other")


def av_size(value):
    """The size in bytes DynamoDB counts for one attribute value (wire JSON, `{"S": "x"}`):
    strings and binaries by their bytes, a number 1 byte per two significant digits plus 1,
    null and booleans 1, a list or map 3 plus 1 per element plus its elements (a map's names
    too), a set its elements."""
    if not isinstance(value, dict) or len(value) != 1:
        return 0
    kind, v = next(iter(value.items()))
    if kind == "S":
        return len(str(v).encode())
    if kind == "N":
        digits = str(v).lstrip("-").replace(".", "").strip("0")
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return _binary_size(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in v or [])
    if kind == "NS":
        return sum(av_size({"N": n}) for n in v or [])
    if kind == "BS":
        return sum(_binary_size(b) for b in v or [])
    if kind == "L":
        return 3 + sum(1 + av_size(e) for e in v or [])
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + av_size(e) for k, e in (v or {}).items())
    return 0


def _binary_size(v):
    try:
        return len(base64.b64decode(v, validate=False))
    except (ValueError, TypeError):
        return len(str(v))


def item_size(item):
    """The size DynamoDB counts for an item (wire JSON): its names' bytes and values' sizes."""
    if not isinstance(item, dict):
        return 0
    return sum(len(k.encode()) + av_size(v) for k, v in item.items())


def _key_text(value):
    return json.dumps(value, sort_keys=True)


class _Run:
    """One configuration's figures, buckets and counters (a new configure starts a new run)."""

    def __init__(self, settings, clock):
        self.clock = clock
        self.started = clock()
        self.settings = dict(settings)
        k = float(settings.get("k", 1))
        if not k > 0:
            raise ValueError(f"k must be a positive number, not {settings.get('k')!r}")
        self.k = k
        self.window = float(settings.get("transaction_window_ms", 25)) / 1000.0
        if self.window < 0:
            raise ValueError("transaction_window_ms must not be negative")
        self.limits = {n: settings.get(n, v / k) for n, v in FIGURES.items()}
        self.limits["sqs_fifo_backlog_window"] = max(1, int(self.limits["sqs_fifo_backlog_window"]))
        self.sizes = {n: settings.get(n, v) for n, v in SIZES.items()}
        unknown = set(settings) - set(FIGURES) - set(SIZES) - {"k", "transaction_window_ms"}
        if unknown:
            raise ValueError(f"unknown limits settings: {sorted(unknown)}")
        self.meters = {}
        self.buckets = {}
        self.partitions = {}  # (table, index, key text) -> [Bucket, Meter]
        self.held = {}  # (table, key text) -> (until, ClientRequestToken)
        self.first = None
        self.pending_read = None  # (charges) of the Query/Scan being served
        self.queues = {}  # queue name -> (fifo, high throughput)
        # Request units consumed, by table or `table/index`: [read, write]. What on-demand bills:
        # every unit charged to a request the model let through (a Query's after it ran), an
        # index's own included; a write whose condition failed keeps its table's units and gives
        # back its indexes' (nothing was written to them).
        self.units = {}
        self.pending_write = None  # the index charges of the PutItem/UpdateItem/DeleteItem served
        # (table, index) of the local indexes Queries named: they draw on their table's
        # throughput, a global index on its own (`owner`).
        self.local_indexes = set()

    # -- bookkeeping ---------------------------------------------------------------------
    def meter(self, name, limit=None, unit=""):
        m = self.meters.get(name)
        if m is None:
            m = self.meters[name] = Meter(limit, unit)
        return m

    def bucket(self, name, rate):
        b = self.buckets.get(name)
        if b is None:
            b = self.buckets[name] = Bucket(rate, rate, self.clock())
        return b

    def refuse(self, meter_name, kind, refusal, count=1):
        """Counts `count` refusals of `kind` at `meter_name` (and under its reason), notes the
        first refusal of the run, and answers `refusal`."""
        m = self.meter(meter_name)
        m.refusals[kind] = m.refusals.get(kind, 0) + count
        reason = reason_of(kind)
        m.reasons[reason] = m.reasons.get(reason, 0) + count
        if self.first is None:
            self.first = {"resource": meter_name, "kind": kind, "reason": reason,
                          "seconds": round(self.clock() - self.started, 3)}
        return refusal

    def partition(self, table, index, key):
        p = self.partitions.get((table, index, key))
        if p is None:
            now = self.clock()
            p = self.partitions[(table, index, key)] = [Bucket(1.0, 1.0, now),
                                                        Meter(1.0, "partition-seconds")]
        return p

    def partition_cost(self, rru, wru):
        return (rru / self.limits["dynamodb_partition_rru_per_second"]
                + wru / self.limits["dynamodb_partition_wru_per_second"])

    # -- DynamoDB ------------------------------------------------------------------------
    def owner(self, table, index):
        """Whose table-level throughput a charge of `index` on `table` draws on: `table` for the
        table's own items (index "") and for a local index (it shares its table's throughput),
        `table/index` for a global index, which has its own (see `throughput`)."""
        if not index or (table, index) in self.local_indexes:
            return table
        return f"{table}/{index}"

    def table_meters(self, table, index=""):
        """The read and write meters of the table-level throughput `owner(table, index)` draws
        on, each limited to the on-demand per-table quota over K."""
        owner = self.owner(table, index)
        r = self.meter(f"dynamodb:{owner}:read", self.limits["dynamodb_table_rru_per_second"],
                       "RRU/s")
        w = self.meter(f"dynamodb:{owner}:write", self.limits["dynamodb_table_wru_per_second"],
                       "WRU/s")
        return r, w

    def throughput(self, charges, now):
        """Whether every bucket of `charges` ([(table, index, key, rru, wru)]) has room; else
        (meter name, ThrottlingReasons reason, resource: `table` or `table/index/name`) of the
        first that has not, else None.

        Table-level throughput: on demand, the per-table quota (40,000 read and 40,000 write
        units a second) applies to the table and, separately, to each of its global indexes:
        "For on-demand capacity mode tables and GSIs, the table-level quota is the maximum read
        and write capacity units that are available for any table, or any individual GSI within
        that table"
        (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html,
        "Throughput default quotas"). So a write's own units go to its table's bucket and each
        global index's units to that index's bucket, never to the table's. Exceeding it is
        `AccountLimitExceeded` ("caused a table or global secondary index (GSI) in on-demand
        mode to exceed the per-table account-level service quotas"), not
        `MaxOnDemandThroughputExceeded`, a configured maximum the template does not set
        (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html).
        """
        for table, index, key, rru, wru in charges:
            owner = self.owner(table, index)
            gsi = owner != table
            resource = f"{table}/index/{index}" if gsi else table
            level = "Index" if gsi else "Table"
            if rru and not self.bucket(f"dynamodb:{owner}:read",
                                       self.limits["dynamodb_table_rru_per_second"]).can(now, rru):
                return f"dynamodb:{owner}:read", f"{level}ReadAccountLimitExceeded", resource
            if wru and not self.bucket(f"dynamodb:{owner}:write",
                                       self.limits["dynamodb_table_wru_per_second"]).can(now, wru):
                return f"dynamodb:{owner}:write", f"{level}WriteAccountLimitExceeded", resource
            if key is not None:
                bucket, meter = self.partition(table, index, key)
                if not bucket.can(now, self.partition_cost(rru, wru)):
                    meter.refusals["ProvisionedThroughputExceededException"] = (
                        meter.refusals.get("ProvisionedThroughputExceededException", 0) + 1)
                    kind = ("Index" if index else "Table") + (
                        "Write" if wru else "Read") + "KeyRangeThroughputExceeded"
                    return self.partition_meter_name(table, index), kind, resource
        return None

    def partition_meter_name(self, table, index):
        name = f"dynamodb:{table}{'/' + index if index else ''}:partitions"
        self.meter(name, 1.0, "share of one partition")
        return name

    def charge(self, charges, now):
        for table, index, key, rru, wru in charges:
            units = self.units.setdefault(f"{table}/{index}" if index else table, [0.0, 0.0])
            units[0] += rru
            units[1] += wru
            owner = self.owner(table, index)
            r, w = self.table_meters(table, index)
            if rru:
                self.bucket(f"dynamodb:{owner}:read",
                            self.limits["dynamodb_table_rru_per_second"]).charge(now, rru)
                r.use(now, rru)
            if wru:
                self.bucket(f"dynamodb:{owner}:write",
                            self.limits["dynamodb_table_wru_per_second"]).charge(now, wru)
                w.use(now, wru)
            if key is not None:
                bucket, meter = self.partition(table, index, key)
                cost = self.partition_cost(rru, wru)
                bucket.charge(now, cost)
                meter.use(now, cost)
                agg = self.meters[self.partition_meter_name(table, index)]
                agg.peak = max(agg.peak, meter.peak_use())


class _Part:
    """The limits part (see the module's doc): configure, state, admit, after, fifo_window."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.run = None

    def configure(self, settings):
        if not isinstance(settings, dict):
            raise ValueError("limits settings must be a JSON object")
        run = _Run(settings, self.clock)
        _install_read_meter()
        _install_batch_split()
        self.run = run

    def state(self):
        run = self.run
        if run is None:
            return {"configured": False}
        hot = sorted(((meter.peak_use(), t, i, k, meter)
                      for (t, i, k), (_, meter) in run.partitions.items()),
                     key=lambda e: e[0], reverse=True)[:10]
        return {
            "configured": True,
            "k": run.k,
            "settings": run.settings,
            "limits": dict(run.limits),
            "sizes": dict(run.sizes),
            "transaction_window_ms": run.window * 1000,
            "resources": {n: m.report() for n, m in sorted(run.meters.items())},
            "hot_partitions": [
                {"table": t, "index": i, "key": json.loads(k), "peak_share": round(p, 4),
                 "calls": m.calls, "refusals": dict(m.refusals)}
                for p, t, i, k, m in hot
            ],
            "refusals": _totals(run.meters),
            "first_refusal": run.first,
            "dynamodb_units": _units(run.units),
        }

    def admit(self, call):
        run = self.run
        if run is None:
            return None
        try:
            if call.service == "dynamodb":
                return _dynamodb(run, call)
            if call.service == "sqs":
                return _sqs(run, call)
            if call.service == "scheduler":
                return _scheduler(run, call)
        except (KeyError, TypeError, ValueError, AttributeError):
            # A malformed request is moto's to refuse, with its own validation message.
            return None
        return None

    def after(self, call, status):
        run = self.run
        if run is None or call.service != "dynamodb":
            return
        now = run.clock()
        _PENDING_BATCH[0] = None
        written, run.pending_write = run.pending_write, None
        if call.operation in _WRITE_OPS and written and status != 200:
            # Nothing was written (a condition failed): the table keeps the units AWS charges
            # for a failed conditional write; its indexes give theirs back.
            for table, index, _, _, wru in written:
                run.units[f"{table}/{index}"][1] -= wru
                run.table_meters(table, index)[1].total -= wru
        elif call.operation in ("Query", "Scan"):
            charges, run.pending_read = run.pending_read, None
            read = _LAST_READ[0]
            _LAST_READ[0] = None
            if status == 200 and charges and read is not None:
                units = max(1, math.ceil(read / 4096)) * charges[1]
                table, index, key = charges[0]
                run.charge([(table, index, key, units, 0)], now)
        elif call.operation == "TransactWriteItems" and status == 200 and run.window > 0:
            token = call.params.get("ClientRequestToken")
            for table, key in _transact_keys(call.params):
                run.held[(table, key)] = (now + run.window, token)
            if len(run.held) > 10000:
                run.held = {k: v for k, v in run.held.items() if v[0] > now}

    def fifo_window(self, queue_name, length):
        """How many of a FIFO queue's first messages a receive may look at (None: all), for
        infra/moto_server.py's receive; counts the receives a window hid messages from."""
        run = self.run
        if run is None:
            return None
        window = run.limits["sqs_fifo_backlog_window"]
        m = run.meter(f"sqs:{queue_name}:backlog-window", window, "messages")
        m.calls += 1
        m.peak = max(m.peak, float(length))
        if length > window:
            run.refuse(f"sqs:{queue_name}:backlog-window", "hidden", None)
        return window


def _totals(meters):
    """Every meter's refusals: the total, by kind and by reason (`reason_of`)."""
    by_kind, by_reason = {}, {}
    for m in meters.values():
        for kind, n in m.refusals.items():
            by_kind[kind] = by_kind.get(kind, 0) + n
            by_reason[reason_of(kind)] = by_reason.get(reason_of(kind), 0) + n
    return {"total": sum(by_kind.values()), "by_kind": by_kind, "by_reason": by_reason}


def _units(units):
    """The request units consumed: `read` and `write` in all, and `by_table` (a table's own
    under its name, each global index's under `table/index`)."""
    by_table = {name: {"read": round(r, 3), "write": round(w, 3)}
                for name, (r, w) in sorted(units.items())}
    return {
        "read": round(sum(r for r, _ in units.values()), 3),
        "write": round(sum(w for _, w in units.values()), 3),
        "by_table": by_table,
    }


# -- moto's backends, read cheaply ---------------------------------------------------------

def _backend(service, region):
    import moto.backends
    from moto.core.models import DEFAULT_ACCOUNT_ID

    return moto.backends.get_backend(service)[DEFAULT_ACCOUNT_ID][region or "us-east-1"]


def _table(call, name):
    try:
        return _backend("dynamodb", call.region).tables.get(name)
    except Exception:  # noqa: BLE001  no backend yet: nothing stored to size
        return None


def _stored(table, key):
    """The stored item (moto's Item) at `key` (wire JSON), or None."""
    if table is None:
        return None
    from moto.dynamodb.models.dynamo_type import DynamoType

    hash_value = key.get(table.hash_key_attr)
    if hash_value is None:
        return None
    found = table.items.get(DynamoType(hash_value))
    if found is None or table.range_key_attr is None:
        return found
    range_value = key.get(table.range_key_attr)
    return found.get(DynamoType(range_value)) if range_value is not None else None


def _stored_size(table, key):
    item = _stored(table, key)
    return item.size() if item is not None else 0


def _key_of(table, item_or_key):
    if table is None:
        return dict(item_or_key)
    names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    return {n: item_or_key[n] for n in names if n in item_or_key}


def _hash_of(table, key):
    if table is None:
        return _key_text(key)
    return _key_text(key.get(table.hash_key_attr))


def _index_hashes(table, attrs):
    """[(index name, hash key text)] of the table's global indexes whose partition key `attrs`
    (wire JSON, or moto attribute values) holds."""
    out = []
    for index in getattr(table, "global_indexes", []) or []:
        names = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
        values = [attrs.get(n) for n in names]
        if values and all(v is not None for v in values):
            values = [v.to_json() if hasattr(v, "to_json") else v for v in values]
            out.append((index.name, _key_text(values[0] if len(values) == 1 else values)))
    return out


_LAST_READ = [None]  # bytes the Query or Scan being served read (set by the wrapped backend)
_READ_METER = [False]


def _install_read_meter():
    """Wraps moto's DynamoDB backend `query` and `scan` to note the bytes of the items each
    read: the sizes of the items it returned, and for the items a filter dropped the average
    of those (their count is moto's ScannedCount)."""
    if _READ_METER[0]:
        return
    from moto.dynamodb.models import DynamoDBBackend

    def measured(method):
        def run(self, *args, **kwargs):
            results, scanned, last = method(self, *args, **kwargs)
            sizes = [item.size() for item in results]
            average = sum(sizes) / len(sizes) if sizes else 0
            _LAST_READ[0] = sum(sizes) + max(0, (scanned or 0) - len(sizes)) * average
            return results, scanned, last

        run.__wrapped__ = method
        return run

    DynamoDBBackend.query = measured(DynamoDBBackend.query)
    DynamoDBBackend.scan = measured(DynamoDBBackend.scan)
    _READ_METER[0] = True


# -- DynamoDB ------------------------------------------------------------------------------

def _throttle(run, where):
    meter_name, reason, resource = where  # resource: `table` or `table/index/name`
    resource = f"arn:aws:dynamodb:us-east-1:123456789012:table/{resource}"
    return run.refuse(meter_name, "ProvisionedThroughputExceededException", _Answer(
        400, "ProvisionedThroughputExceededException", _ON_DEMAND_THROTTLE,
        {"ThrottlingReasons": [{"reason": reason, "resource": resource}]}))


def _write_charges(run, call, table_name, op, params, transactional):
    """[(table, index, key, rru, wru)] of one write, and its item key text."""
    table = _table(call, table_name)
    factor = 2 if transactional else 1
    if op in ("PutItem", "Put"):
        item = params["Item"]
        key = _key_of(table, item)
        before = _stored(table, key)
        size = max(item_size(item), before.size() if before is not None else 0)
        index_attrs = [item] + ([before.attrs] if before is not None else [])
    elif op in ("ConditionCheck",):
        key = params["Key"]
        units = factor * max(1, math.ceil(_stored_size(table, key) / 4096))
        return [(table_name, "", _hash_of(table, key), units, 0)], _key_text(key)
    else:
        key = params["Key"]
        before = _stored(table, key)
        old = before.size() if before is not None else 0
        added = sum(av_size(v) for v in (params.get("ExpressionAttributeValues") or {}).values())
        size = max(old, old + added if op in ("UpdateItem", "Update") else old)
        index_attrs = [before.attrs] if before is not None else []
    units = factor * max(1, math.ceil(size / 1024))
    charges = [(table_name, "", _hash_of(table, key), 0, units)]
    seen = set()
    for attrs in index_attrs:
        for index, hash_text in _index_hashes(table, attrs):
            if (index, hash_text) not in seen:
                seen.add((index, hash_text))
                charges.append((table_name, index, hash_text, 0, units))
    return charges, _key_text(key)


def _read_charge(call, table_name, key, consistent, transactional=False):
    table = _table(call, table_name)
    factor = 2 if transactional else (1 if consistent else 0.5)
    units = factor * max(1, math.ceil(_stored_size(table, key) / 4096))
    return (table_name, "", _hash_of(table, key), units, 0)


def _held(run, table, key_text, token, now):
    hold = run.held.get((table, key_text))
    return hold is not None and hold[0] > now and (token is None or hold[1] != token)


def _transact_keys(params):
    out = []
    for entry in params.get("TransactItems") or []:
        _, op = next(iter(entry.items()))
        if "Key" in op:
            out.append((op["TableName"], _key_text(op["Key"])))
        elif "Item" in op:
            out.append((op["TableName"], _key_text(_key_of(_table_cache.get(op["TableName"]),
                                                           op["Item"]))))
    return out


# Tables by name, for `_transact_keys` in `after` (the same key shape `admit` used).
_table_cache = {}


def _dynamodb(run, call):
    op = call.operation
    p = call.params
    now = run.clock()
    _PENDING_BATCH[0] = None
    run.pending_write = None
    if op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem",
              "BatchWriteItem", "TransactWriteItems", "TransactGetItems"):
        run.meter(f"dynamodb:{op}").calls += 1
    if op == "GetItem":
        charges = [_read_charge(call, p["TableName"], p["Key"], p.get("ConsistentRead"))]
        return _admit_charges(run, charges, now)
    if op in _WRITE_OPS:
        table = _table(call, p["TableName"])
        _table_cache[p["TableName"]] = table
        charges, key_text = _write_charges(run, call, p["TableName"], op, p, False)
        if _held(run, p["TableName"], key_text, None, now):
            run.meter("dynamodb:transaction-conflicts").calls += 1
            return run.refuse("dynamodb:transaction-conflicts", "TransactionConflictException",
                              Refusal(400, "TransactionConflictException", _CONFLICT))
        refused = _admit_charges(run, charges, now)
        if refused is None:
            run.pending_write = [c for c in charges if c[1]]
        return refused
    if op in ("Query", "Scan"):
        table_name = p["TableName"]
        table = _table(call, table_name)
        index = p.get("IndexName") or ""
        key = _query_hash(table, index, p) if op == "Query" else None
        if index and table is not None and index not in {
                i.name for i in getattr(table, "global_indexes", []) or []}:
            run.local_indexes.add((table_name, index))
        factor = 1 if p.get("ConsistentRead") else 0.5
        where = run.throughput([(table_name, index, key, 1e-9, 0)], now)
        read, _ = run.table_meters(table_name, index)
        if key is not None:
            run.partition(table_name, index, key)[1].calls += 1
        read.calls += 1
        if where is not None:
            return _throttle(run, where)
        run.pending_read = ((table_name, index, key), factor)
        _LAST_READ[0] = None
        return None
    if op == "BatchGetItem":
        items = []
        for table_name, req in (p.get("RequestItems") or {}).items():
            for position, key in enumerate(req.get("Keys") or []):
                items.append((table_name, position, [
                    _read_charge(call, table_name, key, req.get("ConsistentRead"))]))
        return _admit_batch(run, op, items, now)
    if op == "BatchWriteItem":
        requests = [(t, r) for t, rs in (p.get("RequestItems") or {}).items() for r in rs or []]
        if len(requests) > run.sizes["dynamodb_batch_write_requests"]:
            return run.refuse("dynamodb:BatchWriteItem", "ValidationException", Refusal(
                400, "ValidationException", "Too many items requested for the BatchWriteItem call"))
        if call.body_size > run.sizes["dynamodb_batch_write_bytes"]:
            return run.refuse("dynamodb:BatchWriteItem", "ValidationException", Refusal(
                400, "ValidationException",
                "Size of BatchWriteItem request exceeds the maximum allowed size"))
        items = []
        positions = {}
        for table_name, request in requests:
            kind, body = next(iter(request.items()))
            op_name = "PutItem" if kind == "PutRequest" else "DeleteItem"
            position = positions[table_name] = positions.get(table_name, -1) + 1
            items.append((table_name, position,
                          _write_charges(run, call, table_name, op_name, body, False)[0]))
        return _admit_batch(run, op, items, now)
    if op == "TransactWriteItems":
        return _transact_write(run, call, now)
    if op == "TransactGetItems":
        items = [next(iter(e.items()))[1] for e in p.get("TransactItems") or []]
        reasons = [_CONFLICT_REASON if _held(run, i["TableName"], _key_text(i["Key"]), None, now)
                   else _NONE_REASON for i in items]
        if any(r is _CONFLICT_REASON for r in reasons):
            return _cancelled(run, reasons, "TransactionConflict")
        charges = [_read_charge(call, i["TableName"], i["Key"], True, True) for i in items]
        where = run.throughput(charges, now)
        if where is not None:
            return _throttled_transaction(run, len(items), where)
        run.charge(charges, now)
    return None


_NONE_REASON = {"Code": "None"}
_CONFLICT_REASON = {"Code": "TransactionConflict", "Message": _CONFLICT}


def _admit_charges(run, charges, now):
    where = run.throughput(charges, now)
    _count_partitions(run, charges)
    if where is not None:
        return _throttle(run, where)
    run.charge(charges, now)
    return None


def _count_partitions(run, charges):
    for table, index, key, rru, wru in charges:
        r, w = run.table_meters(table, index)
        (r if rru else w).calls += 1
        if key is not None:
            run.partition(table, index, key)[1].calls += 1
            run.meters[run.partition_meter_name(table, index)].calls += 1


def _admit_batch(run, operation, items, now):
    """A BatchGetItem or BatchWriteItem of `items` ([(table, position in its table's list,
    charges)]), as DynamoDB answers one over partitions some of which are throttled: each item is
    served while its partitions and tables have room (charged at once, so a later item of the
    batch on the same partition meets what the earlier ones took); the others are handed back
    unprocessed in a 200 answer (`UnprocessedKeys`, `UnprocessedItems`: `_install_batch_split`
    takes them out of moto's request and adds them to its answer). Only when no item can be
    served is the whole call refused, with `ProvisionedThroughputExceededException`.

    AWS's API reference: "If none of the items can be processed due to insufficient provisioned
    throughput on all of the tables in the request, then BatchGetItem returns a
    ProvisionedThroughputExceededException. If at least one of the items is successfully
    processed, then BatchGetItem completes successfully, while returning the keys of the unread
    items in UnprocessedKeys"
    (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html); "If
    BatchWriteItem cannot process any items due to throttling (for example, insufficient
    provisioned throughput on the tables in the request, or partition-level or account-level
    limits), it returns a ProvisionedThroughputExceededException or a ThrottlingException"
    (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html; the
    model answers the former, with its `ThrottlingReasons`, as for a single item)."""
    _count_partitions(run, [c for _, _, charges in items for c in charges])
    throttled = {}  # table -> positions handed back
    first = None
    for table, position, charges in items:
        where = run.throughput(charges, now)
        if where is None:
            run.charge(charges, now)
            continue
        throttled.setdefault(table, set()).add(position)
        first = first or where
    if first is None:
        return None
    count = sum(len(p) for p in throttled.values())
    if count == len(items):
        return _throttle(run, first)
    kind = "UnprocessedKeys" if operation == "BatchGetItem" else "UnprocessedItems"
    run.refuse(first[0], kind, None, count)
    _PENDING_BATCH[0] = (operation, throttled)
    return None


# The batch being served whose throttled items moto must not serve: (operation, {table:
# {positions}}), set by `_admit_batch` and taken by the handler `_install_batch_split` wraps
# (the emulator serves one request at a time, so the two meet in order).
_PENDING_BATCH = [None]
_BATCH_SPLIT = [False]


def _install_batch_split():
    """Wraps moto's BatchGetItem and BatchWriteItem handlers so that the items `_admit_batch`
    found throttled are taken out of the request moto serves and handed back in the answer's
    `UnprocessedKeys` / `UnprocessedItems`, in the form of the request (a table's
    `ProjectionExpression`, `ExpressionAttributeNames` and `ConsistentRead` kept with its keys),
    merged with whatever moto leaves unprocessed itself (its 16 MB answer limit)."""
    if _BATCH_SPLIT[0]:
        return
    from moto.dynamodb.responses import DynamoHandler

    def split(method, operation):
        def run(self):
            pending, _PENDING_BATCH[0] = _PENDING_BATCH[0], None
            if pending is None or pending[0] != operation:
                return method(self)
            requests = self.body.get("RequestItems") or {}
            unprocessed = {}
            for table, positions in pending[1].items():
                if table not in requests:
                    continue
                if operation == "BatchGetItem":
                    request = requests[table]
                    keys = request.get("Keys") or []
                    kept = [k for i, k in enumerate(keys) if i not in positions]
                    unprocessed[table] = dict(request, Keys=[
                        k for i, k in enumerate(keys) if i in positions])
                    if kept:
                        request["Keys"] = kept
                    else:
                        del requests[table]
                else:
                    entries = requests[table] or []
                    kept = [e for i, e in enumerate(entries) if i not in positions]
                    unprocessed[table] = [e for i, e in enumerate(entries) if i in positions]
                    if kept:
                        requests[table] = kept
                    else:
                        del requests[table]
            result = method(self)
            answer = getattr(result, "result", None)
            if isinstance(answer, dict):
                member = "UnprocessedKeys" if operation == "BatchGetItem" else "UnprocessedItems"
                mine = answer.get(member) or {}
                for table, value in unprocessed.items():
                    if operation == "BatchGetItem" and table in mine:
                        mine[table]["Keys"] = value["Keys"] + list(mine[table].get("Keys") or [])
                    elif table in mine:
                        mine[table] = value + list(mine[table])
                    else:
                        mine[table] = value
                answer[member] = mine
            return result

        run.__wrapped__ = method
        return run

    DynamoHandler.batch_get_item = split(DynamoHandler.batch_get_item, "BatchGetItem")
    DynamoHandler.batch_write_item = split(DynamoHandler.batch_write_item, "BatchWriteItem")
    _BATCH_SPLIT[0] = True


def _cancelled(run, reasons, kind):
    codes = ", ".join(r["Code"] for r in reasons)
    return run.refuse("dynamodb:transaction-conflicts" if kind == "TransactionConflict"
                      else "dynamodb:TransactWriteItems", kind, _Answer(
                          400, "TransactionCanceledException",
                          f"Transaction cancelled, please refer cancellation reasons for specific "
                          f"reasons [{codes}]", {"CancellationReasons": reasons}))


def _throttled_transaction(run, count, where):
    reason = {"Code": "ThrottlingError", "Message": _ON_DEMAND_THROTTLE}
    meter_name = where[0]
    run.refuse(meter_name, "ThrottlingError", None)
    codes = ", ".join(["ThrottlingError"] * count)
    return _Answer(400, "TransactionCanceledException",
                   f"Transaction cancelled, please refer cancellation reasons for specific "
                   f"reasons [{codes}]", {"CancellationReasons": [reason] * count})


def _transact_write(run, call, now):
    p = call.params
    entries = [next(iter(e.items())) for e in p.get("TransactItems") or []]
    size = 0
    for op, body in entries:
        size += item_size(body.get("Item")) + item_size(body.get("Key"))
        size += sum(av_size(v) for v in (body.get("ExpressionAttributeValues") or {}).values())
    if size > run.sizes["dynamodb_transaction_bytes"]:
        run.meter("dynamodb:TransactWriteItems")
        return run.refuse("dynamodb:TransactWriteItems", "ValidationException", Refusal(
            400, "ValidationException", "Transaction request cannot be larger than 4MB"))
    token = p.get("ClientRequestToken")
    charges, reasons = [], []
    for op, body in entries:
        table_name = body["TableName"]
        _table_cache[table_name] = _table(call, table_name)
        c, key_text = _write_charges(run, call, table_name, op, body, True)
        charges.extend(c)
        reasons.append(_CONFLICT_REASON if _held(run, table_name, key_text, token, now)
                       else _NONE_REASON)
    if any(r is _CONFLICT_REASON for r in reasons):
        run.meter("dynamodb:transaction-conflicts").calls += 1
        return _cancelled(run, reasons, "TransactionConflict")
    run.meter("dynamodb:transaction-conflicts").calls += 1
    _count_partitions(run, charges)
    where = run.throughput(charges, now)
    if where is not None:
        return _throttled_transaction(run, len(entries), where)
    run.charge(charges, now)
    return None


_KEY_EQ = re.compile(r"([#\w.:-]+)\s*=\s*([#\w.:-]+)")


def _query_hash(table, index, p):
    """The partition key value a Query names (KeyConditionExpression or KeyConditions), as
    key text; None when it cannot be read."""
    if table is None:
        return None
    hash_name = table.hash_key_attr
    if index:
        for i in getattr(table, "global_indexes", []) or []:
            if i.name == index:
                hashes = [k["AttributeName"] for k in i.schema if k["KeyType"] == "HASH"]
                hash_name = hashes[0] if len(hashes) == 1 else None
                break
        else:
            return None  # a local index: the table's own partition key
    if hash_name is None:
        return None
    names = p.get("ExpressionAttributeNames") or {}
    values = p.get("ExpressionAttributeValues") or {}
    expression = p.get("KeyConditionExpression")
    if expression:
        for left, right in _KEY_EQ.findall(expression):
            for name, value in ((left, right), (right, left)):
                if names.get(name, name) == hash_name and value in values:
                    return _key_text(values[value])
        return None
    condition = (p.get("KeyConditions") or {}).get(hash_name)
    if condition and condition.get("AttributeValueList"):
        return _key_text(condition["AttributeValueList"][0])
    return None


# -- SQS -----------------------------------------------------------------------------------

def _queue_name(call):
    url = call.params.get("QueueUrl") or call.path
    return str(url).rstrip("/").rsplit("/", 1)[-1]


def _queue_kind(run, call, name):
    """(fifo, high throughput) of queue `name`, read once per run from moto's queue."""
    kind = run.queues.get(name)
    if kind is None:
        fifo = name.endswith(".fifo")
        high = False
        try:
            queue = _backend("sqs", call.region).queues.get(name)
            if queue is not None:
                high = (getattr(queue, "fifo_throughput_limit", None) == "perMessageGroupId"
                        and getattr(queue, "deduplication_scope", None) == "messageGroup")
        except Exception:  # noqa: BLE001  not made yet: counted as plain FIFO until it is
            return fifo, False
        kind = run.queues[name] = (fifo, high)
    return kind


def _message_sizes(call):
    """[(entry id, bytes)] of the messages a SendMessage or SendMessageBatch carries, counting
    the body and every message attribute's name, type and value, as SQS does."""
    p = call.params
    if call.protocol == "json":
        entries = [("", p)] if call.operation == "SendMessage" else [
            (e.get("Id", ""), e) for e in p.get("Entries") or []]
        out = []
        for entry_id, e in entries:
            size = len(str(e.get("MessageBody", "")).encode())
            for name, attr in (e.get("MessageAttributes") or {}).items():
                size += len(name.encode()) + len(str(attr.get("DataType", "")).encode())
                size += len(str(attr.get("StringValue", "")).encode())
                size += _binary_size(attr["BinaryValue"]) if attr.get("BinaryValue") else 0
            out.append((entry_id, size))
        return out
    # The query protocol: flat form fields (`MessageBody`, `MessageAttribute.1.Name`, ... or
    # `SendMessageBatchRequestEntry.2.MessageBody`, ...).
    groups = {}
    for field, value in p.items():
        if not isinstance(value, str):
            continue
        if call.operation == "SendMessage":
            group = ""
            rest = field
        elif field.startswith("SendMessageBatchRequestEntry."):
            _, group, rest = field.split(".", 2) if field.count(".") >= 2 else (field, "", "")
        else:
            continue
        if rest == "MessageBody" or rest.startswith("MessageAttribute."):
            groups[group] = groups.get(group, 0) + len(value.encode())
    return sorted(groups.items())


def _sqs(run, call):
    action = _SQS_ACTIONS.get(call.operation)
    if action is None:
        return None
    name = _queue_name(call)
    fifo, high = _queue_kind(run, call, name)
    limit = None
    if fifo:
        limit = run.limits["sqs_fifo_requests_per_second" if high
                           else "sqs_fifo_plain_requests_per_second"]
    meter_name = f"sqs:{name}:{action}"
    meter = run.meter(meter_name, limit, "requests/s")
    meter.calls += 1
    now = run.clock()
    if call.operation in ("SendMessage", "SendMessageBatch"):
        most = run.sizes["sqs_message_bytes"]
        sizes = _message_sizes(call)
        if any(size > most for _, size in sizes):
            return run.refuse(meter_name, "InvalidParameterValue", Refusal(
                400, "InvalidParameterValue",
                f"One or more parameters are invalid. Reason: Message must be shorter than "
                f"{most} bytes."))
        total = sum(size for _, size in sizes)
        if call.operation == "SendMessageBatch" and total > most:
            return run.refuse(meter_name, "BatchRequestTooLong", Refusal(
                400, "BatchRequestTooLong",
                f"Batch requests cannot be longer than {most} bytes. You have sent {total} bytes."))
    if limit is not None:
        bucket = run.bucket(meter_name, limit)
        if not bucket.can(now, 1):
            return run.refuse(meter_name, "ThrottlingException",
                              Refusal(400, "ThrottlingException", "Rate exceeded"))
        bucket.charge(now, 1)
    meter.use(now, 1)
    return None


# -- EventBridge Scheduler -----------------------------------------------------------------

def _scheduler(run, call):
    figure = _SCHEDULER_OPS.get(call.operation)
    if figure is None:
        return None
    limit = run.limits[figure]
    meter_name = f"scheduler:{call.operation}"
    meter = run.meter(meter_name, limit, "requests/s")
    meter.calls += 1
    now = run.clock()
    bucket = run.bucket(meter_name, limit)
    if not bucket.can(now, 1):
        return run.refuse(meter_name, "ThrottlingException",
                          Refusal(429, "ThrottlingException", "Rate exceeded"))
    bucket.charge(now, 1)
    meter.use(now, 1)
    return None


PART = _Part()
