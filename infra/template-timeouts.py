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
comes back finds the claim of the invocation it left expired, not still standing). Exit 0 when
every pair passes, 1 otherwise.
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
    """The logical id a `!Ref X` or `!GetAtt X.Arn` names, or None."""
    if isinstance(ref, dict):
        if "Ref" in ref:
            return ref["Ref"]
        if "Fn::GetAtt" in ref:
            return ref["Fn::GetAtt"][0]
    return None


def problems(template):
    """Every (queue, function) pair whose visibility timeout is not above the function's
    timeout, as sentences; an empty list when all pass."""
    resources = template.get("Resources", {})
    default_timeout = template.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    pairs = []
    for rid, res in resources.items():
        props = res.get("Properties", {}) or {}
        if res.get("Type") == "AWS::Lambda::EventSourceMapping":
            pairs.append((_logical(props.get("EventSourceArn")), _logical(props.get("FunctionName"))))
        if res.get("Type") == "AWS::Serverless::Function":
            for event in (props.get("Events") or {}).values():
                if event.get("Type") == "SQS":
                    pairs.append((_logical(event.get("Properties", {}).get("Queue")), rid))
    found = []
    for queue, function in pairs:
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
    return found


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
    print(f"{path}: every queue's visibility timeout is above its consumer's timeout")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
