"""Making the template's stored resources in the emulator: DynamoDB tables (keys, indexes,
TTL), SQS queues (FIFO, visibility, retention, redrive), schedule groups and schedules, and the
configuration secret. Each is read from its template properties, resolved by `Stack`.

Left out: what the emulator does not need to hold the data (IAM roles and policies, log groups,
alarms, the alarm topic and its key, encryption settings: moto stores plain data either way).
"""

import json

from botocore.exceptions import ClientError


def make_tables(stack, dynamodb):
    """Creates every `AWS::DynamoDB::Table` with its keys, GSIs and TTL."""
    for lid, props in stack.of_type("AWS::DynamoDB::Table"):
        props = stack.resolve(props)
        name = stack.physical_name(lid)
        args = {
            "TableName": name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        try:
            dynamodb.create_table(**args)
        except ClientError as e:
            if e.response["Error"]["Code"] != "ResourceInUseException":
                raise
            continue  # made by an earlier run in the same emulator
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={
                    "AttributeName": ttl["AttributeName"],
                    "Enabled": True,
                },
            )


# Queue properties as SQS attribute names (the rest, e.g. KmsMasterKeyId, are left out).
_QUEUE_ATTRIBUTES = {
    "FifoQueue": "FifoQueue",
    "ContentBasedDeduplication": "ContentBasedDeduplication",
    "DeduplicationScope": "DeduplicationScope",
    "FifoThroughputLimit": "FifoThroughputLimit",
    "VisibilityTimeout": "VisibilityTimeout",
    "MessageRetentionPeriod": "MessageRetentionPeriod",
    "DelaySeconds": "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
}


def make_queues(stack, sqs, visibility_cap=None):
    """Creates every `AWS::SQS::Queue`, dead-letter targets before the queues naming them.

    `visibility_cap` (seconds), when given, caps every queue's VisibilityTimeout: a record a
    function failed or died holding comes back after that long instead of the template's
    minutes (for tests of crashes; everything else stays as the template says)."""
    pending = stack.of_type("AWS::SQS::Queue")
    while pending:
        progress = []
        for lid, raw in pending:
            try:
                props = stack.resolve(raw)
            except ValueError:
                continue  # names a queue not made yet
            attrs = {
                _QUEUE_ATTRIBUTES[k]: _attr(v)
                for k, v in props.items()
                if k in _QUEUE_ATTRIBUTES
            }
            if visibility_cap is not None:
                attrs["VisibilityTimeout"] = str(
                    min(int(attrs.get("VisibilityTimeout", 30)), visibility_cap)
                )
            if "RedrivePolicy" in props:
                attrs["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
            url = sqs.create_queue(QueueName=stack.physical_name(lid), Attributes=attrs)[
                "QueueUrl"
            ]
            stack.queue_urls[lid] = url
            progress.append(lid)
        if not progress:
            names = ", ".join(lid for lid, _ in pending)
            raise ValueError(f"queues whose references cannot be resolved: {names}")
        pending = [(lid, raw) for lid, raw in pending if lid not in progress]


def _attr(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def make_schedules(stack, scheduler):
    """Creates every `AWS::Scheduler::ScheduleGroup`, then every `AWS::Scheduler::Schedule`."""
    for lid, _ in stack.of_type("AWS::Scheduler::ScheduleGroup"):
        _unless_exists(scheduler.create_schedule_group, Name=stack.physical_name(lid))
    for lid, raw in stack.of_type("AWS::Scheduler::Schedule"):
        props = stack.resolve(raw)
        target = {k: v for k, v in props["Target"].items() if k != "RetryPolicy"}
        args = {
            "Name": props["Name"],
            "ScheduleExpression": props["ScheduleExpression"],
            "FlexibleTimeWindow": props["FlexibleTimeWindow"],
            "Target": target,
        }
        for key in ("GroupName", "Description", "State"):
            if key in props:
                args[key] = props[key]
        _unless_exists(scheduler.create_schedule, **args)


def _unless_exists(call, **args):
    """`call(**args)`, where a ConflictException (made by an earlier run) is no error."""
    try:
        call(**args)
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConflictException":
            raise


def put_secret(secrets, name, text):
    """Stores `text` as the SecretString of secret `name`, creating it or adding a version."""
    try:
        secrets.create_secret(Name=name, SecretString=text)
    except ClientError as e:
        if e.response["Error"]["Code"] != "ResourceExistsException":
            raise
        secrets.put_secret_value(SecretId=name, SecretString=text)
