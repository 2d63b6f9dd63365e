"""Faults as AWS makes them, seeded: a share of the calls to DynamoDB, SQS, EventBridge
Scheduler and Secrets Manager is throttled, failed, refused as a transaction conflict, or applied
with its answer lost, each answered exactly as the service answers it.

Settings (`POST /_model/faults`, JSON):

    {"seed": 7,
     "rates": {"dynamodb": {"throttle": 0.05, "error": 0.02, "unavailable": 0.0,
                            "conflict": 0.02, "lost": 0.02},
               "sqs": {...}, "scheduler": {...}, "secretsmanager": {...}},
     "operations": ["TransactWriteItems", "sqs:SendMessage"],   # optional: only these
     "callers": ["AKID..."]}                                    # optional: only these keys

A rate is the share of that service's calls (those the filters keep) that get that fault; the
rates of one service add up to at most 1. A call gets at most one fault, decided by ONE draw of
`random.Random(seed)` per call the filters keep, over the kinds that apply to its operation (a
read has no `lost`, only DynamoDB's writes and transactions have `conflict`): the same seed and
the same sequence of calls give the same faults. Each POST starts the sequence again and clears
the counts; `{}` (or no rates) turns faults off.

The kinds, and their answers (protocol as `calls.Refusal.answer` writes it):

- `throttle`: DynamoDB `ProvisionedThroughputExceededException` (400) on item operations,
  `ThrottlingException` (400) on the control plane (CreateTable, UpdateTable, DeleteTable, ...:
  the operations the DynamoDB API reference says it throttles so); SQS `RequestThrottled` (400,
  the error SQS's API reference gives its actions for a request rate above the queue's);
  Scheduler `ThrottlingException` (429); Secrets Manager `ThrottlingException` (400).
- `error`: DynamoDB `InternalServerError` (500), SQS `InternalFailure` (500, the common error),
  Scheduler `InternalServerException` (500), Secrets Manager `InternalServiceError` (500).
  Nothing is applied.
- `unavailable`: `ServiceUnavailable` (503) on DynamoDB and SQS (both list it among their
  errors); not on Scheduler or Secrets Manager, whose APIs have no 503.
- `conflict` (DynamoDB): TransactWriteItems and TransactGetItems answer
  `TransactionCanceledException` (400) whose `CancellationReasons` give one item (the draw
  chooses which) `TransactionConflict`, "Transaction is ongoing for the item", and the others
  `None`; PutItem, UpdateItem and DeleteItem answer `TransactionConflictException` (400), as
  DynamoDB answers a single write to an item an ongoing transaction holds ("Transaction
  conflict handling in DynamoDB", DynamoDB developer guide). Nothing is applied. The SDKs do
  not retry either.
- `lost` (writes only: `WRITES`): the call is applied by the emulator, then its answer is
  replaced by the service's 500 (`error` above), as when the service applied a write and the
  answer never reached the caller. A caller that retries a write that is not idempotent applies
  it twice; a token (TransactWriteItems' ClientRequestToken, a FIFO queue's deduplication id)
  makes the retry harmless. Only a call the emulator applied (2xx) has its answer replaced; a
  call it refused keeps its refusal and is not counted.

`state()` gives the settings, how many calls were considered, and the counts per
service/operation/kind.
"""

import json
import random
import threading

from .calls import Refusal

NAME = "faults"

SERVICES = ("dynamodb", "sqs", "scheduler", "secretsmanager")
# The order the kinds take their share of the draw's [0, 1): fixed, so a seed's faults do not
# depend on the order the settings were written in.
KINDS = ("throttle", "error", "unavailable", "conflict", "lost")

# Calls that change what the service stores: the ones whose answer can be lost after they applied.
WRITES = {
    "dynamodb": frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
                           "TransactWriteItems"}),
    "sqs": frozenset({"SendMessage", "SendMessageBatch", "DeleteMessage", "DeleteMessageBatch",
                      "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"}),
    "scheduler": frozenset({"CreateSchedule", "UpdateSchedule", "DeleteSchedule"}),
    "secretsmanager": frozenset({"PutSecretValue", "UpdateSecret"}),
}

# DynamoDB's control plane: throttled with ThrottlingException, not
# ProvisionedThroughputExceededException (DynamoDB API reference, "Common errors" and each
# operation's errors).
_DYNAMODB_CONTROL = frozenset({"CreateTable", "UpdateTable", "DeleteTable", "DescribeTable",
                               "ListTables", "UpdateTimeToLive", "DescribeTimeToLive",
                               "DescribeLimits", "TagResource", "UntagResource"})
_TRANSACTIONS = frozenset({"TransactWriteItems", "TransactGetItems"})
_SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})

_THROTTLED = "Rate of requests exceeds the allowed throughput."
_PROVISIONED = ("The level of configured provisioned throughput for the table was exceeded. "
                "Consider increasing your provisioning level with the UpdateTable API.")
_ONGOING = "Transaction is ongoing for the item"


class _Canceled(Refusal):
    """A `Refusal` whose JSON body carries more members than `__type` and `message`:
    DynamoDB's TransactionCanceledException with its `CancellationReasons` (and `Message`
    spelled as DynamoDB spells it for this exception)."""

    def __init__(self, message, reasons):
        super().__init__(400, "TransactionCanceledException", message, sender=True)
        self.reasons = reasons

    def answer(self, call):
        status, headers, _ = super().answer(call)
        body = json.dumps({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "CancellationReasons": self.reasons,
            "Message": self.message,
        }).encode()
        headers = [(k, str(len(body)) if k == "Content-Length" else v) for k, v in headers]
        return status, headers, body


def applicable(service, operation):
    """The kinds of fault that can befall `operation` of `service`, in `KINDS` order."""
    kinds = ["throttle", "error"]
    if service in ("dynamodb", "sqs"):
        kinds.append("unavailable")
    if service == "dynamodb" and operation in _TRANSACTIONS | _SINGLE_WRITES:
        kinds.append("conflict")
    if operation in WRITES.get(service, ()):
        kinds.append("lost")
    return kinds


def refusal(service, operation, kind, params=None, pick=0.0):
    """The answer `service` gives `operation` for fault `kind` (`lost` answers as `error`):
    a `Refusal`. `params` are the call's (a transaction's items); `pick` in [0, 1) chooses which
    item of a canceled transaction is in conflict."""
    if kind == "lost":
        kind = "error"
    if service == "dynamodb":
        if kind == "throttle":
            if operation in _DYNAMODB_CONTROL:
                return Refusal(400, "ThrottlingException", _THROTTLED)
            return Refusal(400, "ProvisionedThroughputExceededException", _PROVISIONED)
        if kind == "error":
            return Refusal(500, "InternalServerError", "Internal server error", sender=False)
        if kind == "unavailable":
            return Refusal(503, "ServiceUnavailable", "Service unavailable", sender=False)
        if kind == "conflict":
            if operation in _TRANSACTIONS:
                items = (params or {}).get("TransactItems") or [{}]
                n = max(1, len(items))
                at = min(n - 1, int(pick * n))
                reasons = [{"Code": "TransactionConflict", "Message": _ONGOING} if i == at
                           else {"Code": "None"} for i in range(n)]
                codes = ", ".join(r["Code"] for r in reasons)
                return _Canceled(
                    "Transaction cancelled, please refer cancellation reasons for specific "
                    f"reasons [{codes}]", reasons)
            return Refusal(400, "TransactionConflictException", _ONGOING)
    elif service == "sqs":
        if kind == "throttle":
            return Refusal(400, "RequestThrottled", "Request is throttled.")
        if kind == "error":
            return Refusal(500, "InternalFailure",
                           "The request processing has failed because of an unknown error, "
                           "exception or failure.", sender=False)
        if kind == "unavailable":
            return Refusal(503, "ServiceUnavailable",
                           "The request has failed due to a temporary failure of the server.",
                           sender=False)
    elif service == "scheduler":
        if kind == "throttle":
            return Refusal(429, "ThrottlingException", "Rate exceeded")
        if kind == "error":
            return Refusal(500, "InternalServerException",
                           "Unexpected error during processing of request.", sender=False)
    elif service == "secretsmanager":
        if kind == "throttle":
            return Refusal(400, "ThrottlingException", "Rate exceeded")
        if kind == "error":
            return Refusal(500, "InternalServiceError",
                           "An error occurred on the server side.", sender=False)
    raise ValueError(f"no fault {kind!r} for {service}:{operation}")


def _read_settings(settings):
    """(seed, {service: {kind: rate}}, operations or None, callers or None) from `settings`;
    ValueError naming what is wrong."""
    if not isinstance(settings, dict):
        raise ValueError("faults settings must be a JSON object")
    unknown = set(settings) - {"seed", "rates", "operations", "callers"}
    if unknown:
        raise ValueError(f"unknown faults settings {sorted(unknown)}")
    seed = settings.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, not {seed!r}")
    rates = {}
    for service, kinds in (settings.get("rates") or {}).items():
        if service not in SERVICES:
            raise ValueError(f"rates: unknown service {service!r} (one of {', '.join(SERVICES)})")
        if not isinstance(kinds, dict):
            raise ValueError(f"rates.{service} must be an object of kind: rate")
        own = {}
        for kind, rate in kinds.items():
            if kind not in KINDS:
                raise ValueError(f"rates.{service}: unknown kind {kind!r} (one of "
                                 f"{', '.join(KINDS)})")
            if kind == "unavailable" and service not in ("dynamodb", "sqs"):
                raise ValueError(f"rates.{service}.unavailable: {service} has no 503 answer")
            if kind == "conflict" and service != "dynamodb":
                raise ValueError(f"rates.{service}.conflict: only DynamoDB has conflicts")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
                raise ValueError(f"rates.{service}.{kind} must be a number in [0, 1], "
                                 f"not {rate!r}")
            own[kind] = float(rate)
        if sum(own.values()) > 1 + 1e-9:
            raise ValueError(f"rates.{service} add up to {sum(own.values())}, above 1")
        rates[service] = own
    operations = settings.get("operations")
    if operations is not None:
        if not isinstance(operations, list) or not all(isinstance(o, str) for o in operations):
            raise ValueError("operations must be a list of names (Operation or service:Operation)")
        operations = frozenset(operations)
    callers = settings.get("callers")
    if callers is not None:
        if not isinstance(callers, list) or not all(isinstance(c, str) for c in callers):
            raise ValueError("callers must be a list of access key ids")
        callers = frozenset(callers)
    return seed, rates, operations, callers


class _Part:
    def __init__(self):
        self._lock = threading.Lock()  # configure/state come from the control endpoint
        self.configure({})

    def configure(self, settings):
        seed, rates, operations, callers = _read_settings(settings)
        with self._lock:
            self.settings = dict(settings)
            self.seed, self.rates, self.operations, self.callers = seed, rates, operations, callers
            self.random = random.Random(seed)
            self.counts = {}  # "service/operation" -> {kind: n}
            self.considered = 0
            self.pending = None  # (call, kind): the `lost` the next `after` applies

    def state(self):
        with self._lock:
            totals = {}
            for key, kinds in self.counts.items():
                service = key.split("/", 1)[0]
                for kind, n in kinds.items():
                    totals.setdefault(service, {}).setdefault(kind, 0)
                    totals[service][kind] += n
            return {"settings": self.settings, "considered": self.considered,
                    "counts": {k: dict(v) for k, v in sorted(self.counts.items())},
                    "totals": totals}

    def _kept(self, call):
        if call.service not in self.rates or not call.operation:
            return False
        if self.callers is not None and call.access_key not in self.callers:
            return False
        if self.operations is not None and not (
            call.operation in self.operations
            or f"{call.service}:{call.operation}" in self.operations
        ):
            return False
        return True

    def _count(self, call, kind):
        key = f"{call.service}/{call.operation}"
        kinds = self.counts.setdefault(key, {})
        kinds[kind] = kinds.get(kind, 0) + 1

    def admit(self, call):
        self.pending = None
        if not self.rates or not self._kept(call):
            return None
        rates = self.rates[call.service]
        with self._lock:
            self.considered += 1
            draw = self.random.random()
            pick = self.random.random()  # drawn for every call, so later draws do not shift
        edge = 0.0
        for kind in applicable(call.service, call.operation):
            edge += rates.get(kind, 0.0)
            if draw < edge:
                if kind == "lost":
                    self.pending = (call, kind)
                    return None
                with self._lock:
                    self._count(call, kind)
                return refusal(call.service, call.operation, kind, call.params, pick)
        return None

    def after(self, call, status):
        """The lost answer of a write the emulator applied: the service's 500 instead of its
        answer (returned to `aws_model.modelled`, which sends it in place of moto's)."""
        pending, self.pending = self.pending, None
        if pending is None or pending[0] is not call or not 200 <= status < 300:
            return None
        with self._lock:
            self._count(call, "lost")
        return refusal(call.service, call.operation, "lost")


PART = _Part()
