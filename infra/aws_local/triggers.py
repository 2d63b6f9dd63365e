"""Local stand-ins for what invokes the functions on AWS but that the emulator only stores:
EventBridge Scheduler (the schedules in the template's schedule groups) and the SQS event
source mappings (`AWS::Lambda::EventSourceMapping`).
"""

import bisect
import datetime
import functools
import json
import math
import re
import threading
import time

from botocore.exceptions import ClientError

from .runtime import InvocationError, Throttled
from .scale import scaled

_RATE_UNITS = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}
_DAY = 86400


# Each schedule's expression is read at every poll (twice a second): a Cron is read once.
@functools.lru_cache(maxsize=1024)
def parse_expression(expr, tz="UTC"):
    """`("at", epoch seconds)` for `at(yyyy-mm-ddThh:mm:ss)`, `("rate", seconds)` for
    `rate(N unit)`, `("cron", Cron)` for the daily `cron()` expressions `Cron` reads; ValueError
    for anything else (a cron on some days only, another time zone than UTC)."""
    m = re.fullmatch(r"at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)", expr.strip())
    if m:
        _utc_only(tz)
        when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
        return "at", when.replace(tzinfo=datetime.timezone.utc).timestamp()
    m = re.fullmatch(r"rate\((\d+)\s+(minutes?|hours?|days?)\)", expr.strip())
    if m:
        return "rate", int(m.group(1)) * _RATE_UNITS[m.group(2)]
    m = re.fullmatch(r"cron\((.*)\)", expr.strip())
    if m:
        _utc_only(tz)
        return "cron", Cron(m.group(1))
    raise ValueError(f"schedule expression {expr!r} is not supported locally")


def _utc_only(tz):
    """ValueError unless `tz` (a schedule's ScheduleExpressionTimezone) is UTC or unset."""
    if tz not in (None, "", "UTC", "Etc/UTC"):
        raise ValueError(f"time zone {tz} is not supported locally")


def _cron_values(field, low, high, what):
    """The values of a cron field between `low` and `high`: comma-separated `*`, `n` or
    `a-b`, each with an optional `/step` (`n/step`: from n to `high`), as EventBridge reads
    them; ValueError for anything else."""
    values = set()
    for item in field.split(","):
        part, _, step = item.partition("/")
        try:
            step = int(step) if step else 1
            if part == "*":
                first, last = low, high
            elif "-" in part:
                first, last = (int(v) for v in part.split("-", 1))
            else:
                first = int(part)
                last = high if "/" in item else first
        except ValueError:
            raise ValueError(f"cron {what} {item!r} is not supported locally") from None
        if step < 1 or not low <= first <= last <= high:
            raise ValueError(f"cron {what} {item!r} is out of {low}-{high}")
        values.update(range(first, last + 1, step))
    return values


class Cron:
    """A `cron(minutes hours day-of-month month day-of-week year)` of EventBridge Scheduler,
    in UTC, of the subset the local stack fires: any minutes and hours, every day (day-of-month,
    month and year `*`, and one of day-of-month and day-of-week `?`, the other `*`). This is
    what staggers the sweep's duties (template.yaml: each 5-minute duty at its own minute).
    `starts` are the seconds of the day at which it fires, in order."""

    def __init__(self, fields):
        parts = fields.split()
        if len(parts) != 6:
            raise ValueError(f"cron({fields}) has {len(parts)} fields, not 6")
        minutes, hours, dom, month, dow, year = parts
        if (month, year) != ("*", "*") or (dom, dow) not in (("*", "?"), ("?", "*")):
            raise ValueError(f"cron({fields}): only a schedule firing every day is supported "
                             "locally")
        self.starts = sorted(h * 3600 + m * 60
                             for h in _cron_values(hours, 0, 23, "hours")
                             for m in _cron_values(minutes, 0, 59, "minutes"))

    def next_after(self, t):
        """Epoch seconds of its first start strictly after `t`."""
        day = t - t % _DAY
        i = bisect.bisect_right(self.starts, t - day)
        return day + self.starts[i] if i < len(self.starts) else day + _DAY + self.starts[0]

    def period(self):
        """Seconds of the shortest gap between two starts (a day's last to the next day's
        first included): 300 for `cron(2/5 * * * ? *)`."""
        s = self.starts
        return min(b - a for a, b in zip(s, s[1:] + [s[0] + _DAY]))

    def phase(self):
        """Seconds into its period of its first start of the day: 120 for `cron(2/5 * * * ? *)`."""
        return self.starts[0] % self.period()


class Scheduler:
    """Polls every schedule group of the stack each `interval` seconds and fires what is due:
    a one-time `at()` schedule once at its time (then deletes it when its
    ActionAfterCompletion is DELETE, before invoking, so a target that re-arms the same name
    keeps its new schedule), a `rate()` one every period from when it was first seen, a `cron()`
    one at each of its minutes of the clock (`Cron`: the sweep's duties). The target
    function gets the schedule's `Input`, asynchronously; an invocation Scheduler may not make
    (IAM) is retried as the target's RetryPolicy allows (at most 3 times here, 1 s apart) and
    then sent to its DeadLetterConfig queue; a function error is retried as the function's
    EventInvokeConfig allows (Lambda's asynchronous retries: none for the timer).

    A rate or cron that `rate_cap` shortened fires again only once its previous invocation has
    ended: each sweep duty's period is above its longest run (the timer's timeout for the 5-minute
    duties, the following budget for the 1-minute one), so on AWS a duty never runs beside
    itself, while at a capped 5 s a duty slowed by a busy machine would, and ticks piling up
    would take every instance of the timer function from the deadlines it serves. Each duty's
    schedule is capped on its own: every duty runs every `rate_cap` seconds, a cron at its
    place in the capped period (`_recurring`)."""

    def __init__(self, stack, scheduler, sqs, functions, log, interval=0.5, rate_cap=None):
        self.stack = stack
        # Seconds: a rate() or cron() schedule fires at least this often (tests of what the
        # sweep does; None keeps each schedule's own period).
        self.rate_cap = rate_cap
        self.client = scheduler
        self.sqs = sqs
        self.functions = functions
        self.log = log
        self.interval = interval
        self.groups = [stack.physical_name(lid) for lid, _ in stack.of_type("AWS::Scheduler::ScheduleGroup")]
        self.fired = set()  # (group, name, expression) of fired one-time schedules
        self.next_rate = {}  # (group, name) -> epoch seconds of the next rate() or cron() fire
        self.warned = set()
        self.details = {}  # (group, name) -> ((created, modified), GetSchedule's answer)
        self.running = set()  # (group, name) of capped schedules whose invocation runs
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        # IAM (aws_local/__main__.py): `as_role(role_arn)` -> (may(action, resource) ->
        # (allowed, message), the role's SQS client); None: every target is invoked and
        # dead-lettered with `sqs`, unchecked.
        self.as_role = None
        # Invocations a second (Scheduler's invocation quota / K: aws_local/scale.py); None:
        # unpaced. `next_slot` is when the next invocation may start.
        self.invocation_rate = None
        self.next_slot = 0.0

    def start(self):
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stopping.wait(self.interval):
            try:
                self.poll(time.time())
            except Exception as e:  # noqa: BLE001 (a poll failure is logged; the next one runs)
                if self.stopping.is_set():
                    return  # the emulator may be going away with the stack: nothing to say
                self.log(f"scheduler poll failed: {e}")

    def poll(self, now):
        # A schedule's details are read once per version (its creation and last modification
        # dates, which ListSchedules answers): a poll of 200 waiting schedules is then a few
        # ListSchedules pages, not 200 GetSchedules every half second queueing in the emulator
        # before the functions' own requests.
        listed = {}
        for group in self.groups:
            pages = self.client.get_paginator("list_schedules").paginate(GroupName=group)
            for page in pages:
                for summary in page.get("Schedules", []):
                    if summary.get("State", "ENABLED") != "ENABLED":
                        continue
                    key = (group, summary["Name"])
                    stamp = (summary.get("CreationDate"), summary.get("LastModificationDate"))
                    listed[key] = self._details(key, stamp)
        self.details = {k: v for k, v in listed.items() if v is not None}
        for (group, name), (_, s) in self.details.items():
            self._consider(group, name, s, now)

    def _details(self, key, stamp):
        """`(stamp, GetSchedule's answer)` of schedule `key` at version `stamp`: the one read
        before when the version is the same, else read now; None when it is gone meanwhile."""
        known = self.details.get(key)
        if known is not None and stamp[1] is not None and known[0] == stamp:
            return known
        try:
            return stamp, self.client.get_schedule(GroupName=key[0], Name=key[1])
        except ClientError:
            return None  # deleted meanwhile

    def _consider(self, group, name, s, now):
        expr = s["ScheduleExpression"]
        # A schedule's input under a customer key (KmsKeyArn): its execution role decrypts it
        # at each firing.
        keyed = (s.get("KmsKeyArn") or None, s.get("Arn") or f"{group}/{name}")
        fire, args = self._fire, (name, s["Target"], *keyed)
        try:
            kind, value = parse_expression(expr, s.get("ScheduleExpressionTimezone"))
        except ValueError as e:
            if (group, name) not in self.warned:
                self.warned.add((group, name))
                self.log(f"schedule {group}/{name}: {e}; not fired")
            return
        if kind == "at":
            key = (group, name, expr)
            if now < value or key in self.fired:
                return
            self.fired.add(key)
            if s.get("ActionAfterCompletion") == "DELETE":
                try:
                    self.client.delete_schedule(GroupName=group, Name=name)
                except ClientError:
                    pass
        else:
            capped, upcoming = self._recurring(kind, value)
            due = self.next_rate.setdefault((group, name), upcoming(now))
            if now < due:
                return
            if capped:
                with self.lock:
                    if (group, name) in self.running:
                        return  # fires at the first poll after its invocation ends
                    self.running.add((group, name))
                fire, args = self._fire_once, ((group, name), s["Target"], *keyed)
            self.next_rate[(group, name)] = upcoming(now)
        self.log(f"schedule {group}/{name} ({expr}) fires")
        threading.Thread(target=fire, args=args, daemon=True).start()

    def _recurring(self, kind, value):
        """`(capped, upcoming)` of a `rate()` (`value` its seconds) or `cron()` (`value` its
        `Cron`) schedule: whether `rate_cap` shortens it, and `upcoming(t)`, the epoch seconds of
        its first fire after `t`. A rate fires every period from when it was first seen; a cron
        at its minutes of the clock. A capped cron keeps its place in its period, scaled: one at
        minute 2 of every 5 fires 2/5 of the way into each capped period, so the sweep duties
        the template staggers stay staggered at any cap."""
        if kind == "rate":
            period = value
            if self.rate_cap is not None and self.rate_cap < period:
                period = self.rate_cap
            return period != value, lambda t: t + period
        period, cap = value.period(), self.rate_cap
        if cap is None or cap >= period:
            return False, value.next_after
        offset = value.phase() / period * cap
        return True, lambda t: (math.floor((t - offset) / cap) + 1) * cap + offset

    def _fire_once(self, key, target, kms_key=None, arn=None):
        """`_fire` of a capped rate or cron schedule `key`, marked running until it ends."""
        try:
            self._fire(key[1], target, kms_key, arn)
        finally:
            with self.lock:
                self.running.discard(key)

    def _fire(self, name, target, kms_key=None, arn=None):
        """Invokes `target` with its input as Scheduler does, as its RoleArn when IAM is on:
        first kms:Decrypt of the input when the schedule is under the customer key `kms_key`
        (its ARN `arn` the encryption context), then lambda:InvokeFunction, each denial an
        attempt of the RetryPolicy, then the dead-letter queue."""
        lid = self.stack.lid_by_arn(target["Arn"])
        if lid not in self.functions:
            self.log(f"schedule {name}: target {target['Arn']} is no local function")
            return
        payload = json.loads(target.get("Input") or "{}")
        retries = min(int((target.get("RetryPolicy") or {}).get("MaximumRetryAttempts", 185)), 3)
        # A function error is retried by Lambda's asynchronous invocation, not by Scheduler
        # (whose invocation succeeded): as the function's EventInvokeConfig says, at most 3 here,
        # and never dead-lettered to the schedule's queue (the template's functions have no
        # on-failure destination).
        # The configuration of the qualifier the target names: a schedule invoking the alias
        # gets the alias's EventInvokeConfig, not $LATEST's (template.yaml TimerAsyncRetries).
        qualifier = qualifier_of(target["Arn"])
        function_retries = min(async_retries(self.stack, lid, qualifier), 3)
        # Scheduler acts as the target's RoleArn: it invokes, and dead-letters, as that role.
        may, sqs = (self.as_role(target.get("RoleArn", "")) if self.as_role
                    else (None, self.sqs))
        attempt, function_attempt = 0, 0
        while attempt <= retries:
            try:
                if may is not None and kms_key:
                    # The input is decrypted as the execution role before the target is called
                    # (EventBridge Scheduler user guide, "Encryption at rest"); a denial fails
                    # the invocation as the invoke's would.
                    from aws_model.iam import schedule_fire_check

                    allowed, message = may(*schedule_fire_check(arn, kms_key))
                    if not allowed:
                        raise Denied(f"KMSAccessDeniedException: {message}")
                if may is not None:
                    allowed, message = may("lambda:InvokeFunction", target["Arn"])
                    if not allowed:
                        raise Denied(f"AccessDeniedException: {message}")
                self._invoke(self.functions[lid], payload,
                             async_max_age(self.stack, lid, qualifier))
                return
            except Denied as e:
                if self.stopping.is_set():
                    return
                attempt += 1
                self.log(f"schedule {name}: invocation failed (attempt {attempt}): {e}")
                time.sleep(1)
            except Throttled as e:
                # Throttled past the event's maximum age: Lambda drops the event.
                self.log(f"schedule {name}: throttled past the event's maximum age; dropped: {e}")
                return
            except InvocationError as e:
                if self.stopping.is_set():
                    return  # the stack is stopping, the function with it
                function_attempt += 1
                self.log(f"schedule {name}: invocation failed (attempt {function_attempt}, "
                         f"Lambda retries {function_retries}): {e}")
                if function_attempt > function_retries:
                    return
                time.sleep(1)
        dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
        if dlq:
            url = self.sqs.get_queue_url(QueueName=dlq.rsplit(":", 1)[1])["QueueUrl"]
            try:
                sqs.send_message(QueueUrl=url, MessageBody=json.dumps(payload))
            except ClientError as e:
                self.log(f"schedule {name}: could not send to its dead-letter queue: {e}")
                return
            self.log(f"schedule {name}: sent to its dead-letter queue")

    # A throttled asynchronous invocation goes back to Lambda's queue and is tried again "for
    # up to 6 hours", 1 s after the first attempt and then exponentially up to 5 minutes apart
    # (Lambda developer guide, "How Lambda handles errors and retries with asynchronous
    # invocation"): a throttle is not one of the target's RetryPolicy attempts.
    ASYNC_THROTTLE_RETRY_SECONDS = 6 * 3600
    ASYNC_THROTTLE_MAX_DELAY = 300.0

    def _invoke(self, function, payload, max_age=None):
        """`function.invoke(payload)` at Scheduler's invocation rate, its throttles retried as
        Lambda retries an asynchronous invocation's; raises the last Throttled after `max_age`
        seconds (the function's EventInvokeConfig MaximumEventAgeInSeconds), else 6 hours (or
        when the stack stops)."""
        if self.invocation_rate:
            with self.lock:
                now = time.monotonic()
                slot = max(now, self.next_slot)
                self.next_slot = slot + 1.0 / self.invocation_rate
            if slot > now:
                self.stopping.wait(slot - now)
        age = self.ASYNC_THROTTLE_RETRY_SECONDS if max_age is None else max_age
        delay, give_up = 1.0, time.monotonic() + age
        while True:
            try:
                return function.invoke(payload)
            except Throttled:
                if self.stopping.is_set() or time.monotonic() + delay > give_up:
                    raise
                self.stopping.wait(delay)
                delay = min(delay * 2, self.ASYNC_THROTTLE_MAX_DELAY)

    def stop(self):
        self.stopping.set()


# Batches an SQS event source mapping without a ScalingConfig receives and invokes at once:
# "Lambda starts processing five batches at a time with five concurrent invocations of your
# function" (Lambda developer guide, "Scaling behavior" of SQS event sources). AWS adds more
# while messages remain; the local stack stays at five.
INITIAL_BATCHES = 5


def concurrency_of(props, k=1):
    """How many batches an event source mapping (its resolved properties) runs at once:
    `ScalingConfig.MaximumConcurrency`, else `INITIAL_BATCHES`; at scale K (`--scale`) that
    divided by K, rounded up, at least 1 (`scale.scaled`), as the account's concurrency and the
    functions' reserves are: a source's pollers are concurrent invocations like any other."""
    scaling = props.get("ScalingConfig") or {}
    return scaled(int(scaling.get("MaximumConcurrency", INITIAL_BATCHES)), k)


class QueueSource:
    """One `AWS::Lambda::EventSourceMapping` from an SQS queue: receives up to `BatchSize`
    messages (a FIFO queue hands each message group's messages in order and holds the group
    while they are in flight), invokes the function with the SQS event, and deletes every
    record the answer's `batchItemFailures` does not name (all of them stay when the invocation
    fails). The records left come back after the queue's visibility timeout, and go to its
    redrive queue after `maxReceiveCount`, as SQS does. Up to `ScalingConfig.MaximumConcurrency`
    batches are received and invoked at once, each by a poller of its own; without a
    `ScalingConfig`, `INITIAL_BATCHES` (Lambda's first scaling step for an SQS source, which it
    raises further on AWS while messages remain), divided by the scale factor `k` (`--scale`,
    `concurrency_of`); a FIFO queue never hands two of them the same message group. As Lambda's
    pollers scale with
    the queue, only the first poller polls an empty queue every `idle` seconds; the others poll
    every `IDLE_OTHERS` seconds until a batch is received, which wakes them at once (before its
    invocation, which may take seconds: more messages may wait behind its message groups)."""

    IDLE_OTHERS = 2.0  # seconds between an extra poller's polls of an empty queue

    def __init__(self, stack, sqs, lid, props, functions, log, k=1):
        self.sqs = sqs
        self.log = log
        self.arn = props["EventSourceArn"]
        self.queue_lid = stack.lid_by_arn(self.arn)
        self.url = stack.queue_urls[self.queue_lid]
        self.function = functions[_function_lid(stack, props)]
        self.batch = int(props.get("BatchSize", 10))
        self.partial = "ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or [])
        self.enabled = props.get("Enabled", True) not in (False, "false")
        self.name = lid
        self.region = stack.region
        self.stopping = threading.Event()
        self.idle = 0.25  # seconds between the first poller's polls of an empty queue
        self.work = threading.Event()  # set when a poll received a batch: wakes the others
        self.concurrency = concurrency_of(props, k)  # divided by the scale factor K
        self.visibility = None  # the queue's VisibilityTimeout, read at the first throttle

    def start(self):
        if self.enabled:
            for k in range(self.concurrency):
                threading.Thread(target=self._run, args=(k,), daemon=True).start()

    def _run(self, k):
        while not self.stopping.is_set():
            try:
                if self.poll_once():
                    continue
                if k == 0:
                    # Short polls with a pause, never a long poll: the emulator serves one
                    # request at a time (infra/moto.sh), so a long poll would hold up the
                    # functions' own calls for its whole wait.
                    self.stopping.wait(self.idle)
                else:
                    # A wake lost to this clear costs at most IDLE_OTHERS.
                    self.work.clear()
                    self.work.wait(self.IDLE_OTHERS)
            except Exception as e:  # noqa: BLE001
                if self.stopping.is_set():
                    return  # the emulator may be going away with the stack: nothing to say
                self.log(f"{self.name}: poll failed: {e}")
                self.stopping.wait(1)

    def poll_once(self):
        """One receive, and the invocation of its batch; the number of messages received."""
        got = self.sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=min(self.batch, 10),
            WaitTimeSeconds=0,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            return 0
        # Wake the other pollers now: more may be waiting behind this batch's message groups.
        self.work.set()
        event = {"Records": [self._record(m) for m in got]}
        try:
            answer = json.loads(self._invoke(event) or b"null")
        except InvocationError as e:
            if not self.stopping.is_set():
                self.log(f"{self.name}: batch of {len(got)} failed, left on the queue: {e}")
            return len(got)
        failed = set()
        if self.partial and isinstance(answer, dict):
            failed = {f.get("itemIdentifier") for f in answer.get("batchItemFailures") or []}
        done = [m for m in got if m["MessageId"] not in failed]
        if done:
            self.sqs.delete_message_batch(
                QueueUrl=self.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        if failed:
            self.log(f"{self.name}: {len(failed)} of {len(got)} handed back")
        return len(got)

    # A throttled batch: Lambda "gradually backs off retries" and "continues to retry the
    # message until the message's timestamp exceeds your queue's visibility timeout" (Lambda
    # developer guide, "Handling errors for an SQS event source in Lambda"); the batch is then
    # left on the queue. The first retry comes THROTTLE_FIRST_DELAY s later, doubling up to
    # THROTTLE_MAX_DELAY.
    THROTTLE_FIRST_DELAY = 0.1
    THROTTLE_MAX_DELAY = 5.0

    def _invoke(self, event):
        """`self.function.invoke(event)`, a throttle retried with backoff until the batch's
        visibility timeout has run out (then the last Throttled is raised)."""
        received = time.monotonic()
        delay = self.THROTTLE_FIRST_DELAY
        while True:
            try:
                return self.function.invoke(event)
            except Throttled:
                if self.visibility is None:
                    try:
                        self.visibility = int(self.sqs.get_queue_attributes(
                            QueueUrl=self.url, AttributeNames=["VisibilityTimeout"]
                        )["Attributes"]["VisibilityTimeout"])
                    except (ClientError, KeyError, ValueError):
                        self.visibility = 30
                if self.stopping.is_set() or time.monotonic() + delay > received + self.visibility:
                    raise
                self.stopping.wait(delay)
                delay = min(delay * 2, self.THROTTLE_MAX_DELAY)

    def _record(self, m):
        attrs = {}
        for k, v in m.get("MessageAttributes", {}).items():
            attrs[k] = {
                "stringValue": v.get("StringValue"),
                "binaryValue": None,
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": v.get("DataType"),
            }
        return {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": m.get("Attributes", {}),
            "messageAttributes": attrs,
            "md5OfBody": m.get("MD5OfBody"),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": self.region,
        }

    def stop(self):
        self.stopping.set()


# Lambda's retries of an asynchronous invocation's function error when the function declares
# none: twice (Lambda developer guide, "How Lambda handles errors and retries with asynchronous
# invocation").
DEFAULT_ASYNC_RETRIES = 2


class Denied(InvocationError):
    """Scheduler could not invoke the target (its role lacks lambda:InvokeFunction): retried by
    Scheduler's RetryPolicy, then dead-lettered."""


def qualifier_of(arn):
    """The qualifier a function ARN invokes: its alias or version after the name
    (`...:function:NAME:live` -> `live`), `$LATEST` for an unqualified ARN."""
    parts = arn.split(":")
    return parts[7] if len(parts) > 7 and parts[7] else "$LATEST"


def _invoke_config(stack, lid, qualifier):
    """The resolved `AWS::Lambda::EventInvokeConfig` of function `lid` at `qualifier` (an
    alias, a version or `$LATEST`, as its `Qualifier` names it), or None: Lambda applies a
    configuration to the invocations of its qualifier only."""
    for _, props in stack.of_type("AWS::Lambda::EventInvokeConfig"):
        props = stack.resolve(props)
        if _function_lid(stack, props) == lid and str(props.get("Qualifier")) == qualifier:
            return props
    return None


def async_retries(stack, lid, qualifier="$LATEST"):
    """How many times Lambda retries function `lid`'s failed asynchronous invocation of
    `qualifier`: its `AWS::Lambda::EventInvokeConfig` `MaximumRetryAttempts`, else
    `DEFAULT_ASYNC_RETRIES`."""
    props = _invoke_config(stack, lid, qualifier) or {}
    return int(props.get("MaximumRetryAttempts", DEFAULT_ASYNC_RETRIES))


def async_max_age(stack, lid, qualifier="$LATEST"):
    """How long Lambda keeps function `lid`'s asynchronous event of `qualifier` through
    throttles, in seconds: its `AWS::Lambda::EventInvokeConfig` `MaximumEventAgeInSeconds`,
    else None (6 hours)."""
    props = _invoke_config(stack, lid, qualifier) or {}
    if "MaximumEventAgeInSeconds" in props:
        return int(props["MaximumEventAgeInSeconds"])
    return None


def _function_lid(stack, props):
    """The logical id of the mapping's `FunctionName` (unresolved `!Ref Fn` or a name, an ARN,
    or its alias's ARN: `!Ref Fn.Alias`)."""
    name = props["FunctionName"]
    for lid, _ in stack.of_type("AWS::Serverless::Function"):
        if name in (lid, stack.physical_name(lid), stack.arn(lid)):
            return lid
        if stack.alias(lid) and name == stack.alias_arn(lid):
            return lid
    raise ValueError(f"event source mapping names no function of the template: {name}")
