#!/usr/bin/env python3
"""Checks that every SQS queue feeding a Lambda function hides a received message for longer
than that function may run (its VisibilityTimeout above the function's Timeout).

    python3 infra/template-timeouts.py [TEMPLATE]      # default: template.yaml
    python3 infra/template-timeouts.py --self-test     # the check fails on a bad template

A queue whose visibility timeout is not above its consumer's timeout hands a message to a second
invocation while the first may still be sending it. Exactly-once delivery does not rest on this
(the outbox's leased claim does: docs/dynamodb.md "Leased sends"), but such a template redelivers
work still in progress, so it is refused here. Event sources are `AWS::Lambda::EventSourceMapping`
resources and SAM `SQS` events; a function's timeout is its own `Timeout`, else the
`Globals.Function.Timeout`, else Lambda's default of 3 s; a queue's visibility timeout is its
`VisibilityTimeout`, else SQS's default of 30 s.

A consumer that claims lapse tasks (`SENDER_LEASE_SECONDS` in its environment) must hold its
claims longer than it may run (an invocation cannot act on a claim after it ends, so a crashed
invocation's claims free soon after) and shorter than its queue hides a message (a message that
comes back finds the claim of the invocation it left expired, not still standing).

A function with reserved concurrency (`ReservedConcurrentExecutions`) fed by SQS event source
mappings must reserve at least the sum of their `ScalingConfig.MaximumConcurrency`, each source
having one: otherwise Lambda throttles its own poller, which returns messages to the queue and
counts their receives towards the dead-letter redrive (Lambda developer guide, "Configuring
scaling behavior for SQS event source mappings",
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html). A function that a
schedule of the template also invokes (the timer: the sweep, and at run time each deadline's
schedule) must reserve `SCHEDULE_HEADROOM` more than that, so that its pollers cannot take the
whole reserve and leave Scheduler's invocations to Lambda's asynchronous retries, which back off
up to 5 minutes (Lambda developer guide, "Asynchronous invocation"). A `!Ref` to a parameter
is compared at the parameter's `Default`. Exit 0 when every pair and every reserve passes, 1
otherwise.
"""

import copy
import sys

import yaml


class _Loader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (`!Ref X`, `!GetAtt X.Arn`, ...) as
    `{"Ref": X}` / `{"Fn::GetAtt": ...}` mappings."""


def _tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if name == "Fn::GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {name: value}


_Loader.add_multi_constructor("!", _tag)


def _logical(ref):
    """The logical id a `!Ref X` or `!GetAtt X.Arn` names, or None. SAM's `!Ref X.Alias` (the
    alias AutoPublishAlias makes, which the event sources invoke) names function X."""
    if isinstance(ref, dict):
        if "Ref" in ref:
            name = ref["Ref"]
            return name[: -len(".Alias")] if name.endswith(".Alias") else name
        if "Fn::GetAtt" in ref:
            return ref["Fn::GetAtt"][0]
    return None


def _number(template, value):
    """`value` as a number: itself, or the `Default` of the parameter a `!Ref` names; None when
    it is neither."""
    if isinstance(value, dict) and "Ref" in value:
        value = (template.get("Parameters", {}).get(value["Ref"]) or {}).get("Default")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# Concurrency a scheduled function keeps beyond its SQS sources' maximum: one for the sweep, one
# for a deadline's schedule firing during a full queue.
SCHEDULE_HEADROOM = 2


def _scheduled(resources, function):
    """Whether a schedule of the template targets `function` (`Target.Arn: !GetAtt F.Arn`, or
    its alias: `!Ref F.Alias`)."""
    for res in resources.values():
        if res.get("Type") != "AWS::Scheduler::Schedule":
            continue
        arn = ((res.get("Properties") or {}).get("Target") or {}).get("Arn")
        if isinstance(arn, dict) and "Ref" in arn and _logical(arn) == function:
            return True
        if isinstance(arn, dict) and str(arn.get("Fn::GetAtt", "")).split(".")[0] == function:
            return True
        if isinstance(arn, dict) and isinstance(arn.get("Fn::GetAtt"), list):
            if arn["Fn::GetAtt"][0] == function:
                return True
    return False


def _reserve_problems(template, pairs):
    """Every function whose reserved concurrency is below what its SQS sources may invoke at
    once (see the module's docstring), as sentences."""
    resources = template.get("Resources", {})
    found = []
    for function, res in resources.items():
        reserved = (res.get("Properties") or {}).get("ReservedConcurrentExecutions")
        if res.get("Type") != "AWS::Serverless::Function" or reserved is None:
            continue
        total, unbounded = 0, []
        for source, _, fn in pairs:
            if fn != function:
                continue
            props = (resources.get(source) or {}).get("Properties") or {}
            most = _number(template, (props.get("ScalingConfig") or {}).get("MaximumConcurrency"))
            if most is None:
                unbounded.append(source)
            else:
                total += most
        for source in unbounded:
            found.append(
                f"{function}: ReservedConcurrentExecutions is set but its SQS source {source} "
                f"has no ScalingConfig.MaximumConcurrency (its poller would be throttled)"
            )
        reserve = _number(template, reserved)
        if not unbounded and reserve is not None and reserve < total:
            found.append(
                f"{function}: ReservedConcurrentExecutions {reserve} is below its SQS sources' "
                f"MaximumConcurrency, {total} in all (its poller would be throttled)"
            )
        elif (not unbounded and reserve is not None and _scheduled(resources, function)
              and reserve < total + SCHEDULE_HEADROOM):
            found.append(
                f"{function}: ReservedConcurrentExecutions {reserve} leaves its schedules less "
                f"than {SCHEDULE_HEADROOM} beyond its SQS sources' MaximumConcurrency, {total} "
                f"in all (Scheduler's invocations would wait on Lambda's retries)"
            )
    return found


def problems(template):
    """Every (queue, function) pair whose visibility timeout is not above the function's
    timeout, and every reserve below its SQS sources' concurrency, as sentences; an empty list
    when all pass."""
    resources = template.get("Resources", {})
    default_timeout = template.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    pairs = []
    for rid, res in resources.items():
        props = res.get("Properties", {}) or {}
        if res.get("Type") == "AWS::Lambda::EventSourceMapping":
            pairs.append((rid, _logical(props.get("EventSourceArn")),
                          _logical(props.get("FunctionName"))))
        if res.get("Type") == "AWS::Serverless::Function":
            for event in (props.get("Events") or {}).values():
                if event.get("Type") == "SQS":
                    # A SAM SQS event: no mapping resource of its own to read a ScalingConfig
                    # from, so a reserved function fed by one is reported unbounded.
                    pairs.append((None, _logical(event.get("Properties", {}).get("Queue")), rid))
    found = []
    for _, queue, function in pairs:
        q = resources.get(queue)
        f = resources.get(function)
        if not q or q.get("Type") != "AWS::SQS::Queue" or not f:
            continue
        visibility = (q.get("Properties") or {}).get("VisibilityTimeout", 30)
        timeout = (f.get("Properties") or {}).get("Timeout", default_timeout)
        if not visibility > timeout:
            found.append(
                f"{queue}: VisibilityTimeout {visibility} s is not above {function}'s "
                f"Timeout {timeout} s"
            )
        variables = (((f.get("Properties") or {}).get("Environment") or {}).get("Variables")) or {}
        lease = variables.get("SENDER_LEASE_SECONDS")
        if lease is not None and not timeout < int(lease) < visibility:
            found.append(
                f"{function}: SENDER_LEASE_SECONDS {lease} is not between its Timeout "
                f"{timeout} s and {queue}'s VisibilityTimeout {visibility} s"
            )
    return found + _reserve_problems(template, pairs)


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_Loader)


def self_test(path):
    """The template passes, and fails once the lapse queue's visibility timeout is lowered to
    the submitter's timeout."""
    template = load(path)
    assert problems(template) == [], problems(template)
    bad = copy.deepcopy(template)
    bad["Resources"]["LapseQueue"]["Properties"]["VisibilityTimeout"] = 60
    found = problems(bad)
    assert found == [
        "LapseQueue: VisibilityTimeout 60 s is not above SubmitterFunction's Timeout 60 s",
        "SubmitterFunction: SENDER_LEASE_SECONDS 70 is not between its Timeout 60 s and "
        "LapseQueue's VisibilityTimeout 60 s",
    ], found
    short = copy.deepcopy(template)
    env = short["Resources"]["SubmitterFunction"]["Properties"]["Environment"]["Variables"]
    env["SENDER_LEASE_SECONDS"] = 30
    found = problems(short)
    assert found == [
        "SubmitterFunction: SENDER_LEASE_SECONDS 30 is not between its Timeout 60 s and "
        "LapseQueue's VisibilityTimeout 360 s"
    ], found
    wide = copy.deepcopy(template)
    wide["Resources"]["TimerQueueSource"]["Properties"]["ScalingConfig"]["MaximumConcurrency"] = 20
    found = problems(wide)
    assert found == [
        "TimerFunction: ReservedConcurrentExecutions 10 is below its SQS sources' "
        "MaximumConcurrency, 20 in all (its poller would be throttled)"
    ], found
    tight = copy.deepcopy(template)
    tight["Resources"]["TimerQueueSource"]["Properties"]["ScalingConfig"]["MaximumConcurrency"] = 9
    found = problems(tight)
    assert found == [
        "TimerFunction: ReservedConcurrentExecutions 10 leaves its schedules less than 2 beyond "
        "its SQS sources' MaximumConcurrency, 9 in all (Scheduler's invocations would wait on "
        "Lambda's retries)"
    ], found
    unbounded = copy.deepcopy(template)
    del unbounded["Resources"]["SubmitterLapseQueueSource"]["Properties"]["ScalingConfig"]
    found = problems(unbounded)
    assert found == [
        "SubmitterFunction: ReservedConcurrentExecutions is set but its SQS source "
        "SubmitterLapseQueueSource has no ScalingConfig.MaximumConcurrency (its poller would be "
        "throttled)"
    ], found
    print("template-timeouts self-test: passed")


def main(argv):
    if argv[1:2] == ["--self-test"]:
        self_test(argv[2] if len(argv) > 2 else "template.yaml")
        return 0
    path = argv[1] if len(argv) > 1 else "template.yaml"
    found = problems(load(path))
    for p in found:
        print(f"{path}: {p}", file=sys.stderr)
    if found:
        return 1
    print(f"{path}: every queue's visibility timeout is above its consumer's timeout, and every "
          f"reserve covers its SQS sources")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
