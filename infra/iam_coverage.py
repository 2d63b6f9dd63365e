"""Least privilege, proven from a test run: every statement of every role in template.yaml is
needed by some call the functions made.

    .venv/bin/python infra/iam_coverage.py [--template template.yaml] [DECISIONS.jsonl ...]

Reads the decision logs the local stack's IAM wrote while the tests ran (infra/aws_model/iam.py;
`A2A_IAM_DECISIONS=FILE` when no file is named), builds the template's roles as AWS would
(infra/aws_local/roles.py: SAM's transform, intrinsics resolved, managed policies expanded),
and for each statement of each role re-evaluates, with that statement removed, every allowed
call the log holds for the role (infra/iam/evaluate.mjs). A statement is needed when some call
is then denied. Also checked: each action a statement lists was allowed by it at least once.

When the log holds KMS decisions on a key that is not the template's own (a run of the local
stack with `--customer-key`, tests/aws_kms.rs), the roles are built with KmsKeyArn set to that
key, so the grants a customer key adds (`CustomerKeyFor...`) are checked as the others are, each
KMS decision evaluated with the key's default key policy as the stack evaluated it.

Grants the code needs on paths the suite cannot reach in its time (a timer more than 15 minutes
ahead, a message handed back, an SNS channel) are listed in NOT_EXERCISED with the code that
needs each, and printed as "not exercised here" rather than failing.

Prints one line a statement (`needed by ACTION on RESOURCE`, or why not), then exits
- 0 when every statement and every action listed is needed and no call was denied;
- 1 naming each statement nothing needs, each action no call used, and each denied call;
- 2 when the log is missing or empty, or the evaluator cannot run.

Left out: the statements of AWS managed policies SAM attaches, listed as "not checked" with
the reason in MANAGED: the calls they allow are made by Lambda on the function's behalf, not by
the function code, so no test run can log them.
"""

import argparse
import fnmatch
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from aws_local import roles as iam_roles  # noqa: E402
from aws_local.template import Stack, load  # noqa: E402
from aws_model.iam import Evaluator, default_key_policy, evaluator_missing  # noqa: E402


# Grants the code needs on paths the test suite does not reach in its time, each with the code
# that needs it: printed as "not exercised here", never a failure. Keyed (role, Sid) for a whole
# statement, (role, Sid, action) for one action of it. Anything else unused fails the check.
LATER = "a timer more than 15 minutes ahead (the timer queue takes the last 900 s; " \
    "shared/watcher-lambda/src/sink.rs)"
NOT_EXERCISED = {
    ("ApiFunctionRole", "ArmAndDisarmTimers", "scheduler:UpdateSchedule"):
        "a deadline moved while its schedule exists: CreateSchedule answers Conflict, then "
        "UpdateSchedule (shared/watcher-aws/src/scheduler.rs arm); " + LATER,
    ("ApiFunctionRole", "ArmAndDisarmTimers", "scheduler:DeleteSchedule"):
        "a disarm the timer queue did not take is deleted at once (sink.rs carry_out)",
    # CreateSchedule and its PassRole: tests/aws_iam.rs, a lesson ending two hours ahead.
    ("LessonWriteFunctionRole", "ArmAndDisarmTimers", "scheduler:UpdateSchedule"):
        "a lesson.review's schedule armed again while it exists: CreateSchedule answers "
        "Conflict, then UpdateSchedule (shared/watcher-aws/src/scheduler.rs arm); " + LATER,
    ("LessonWriteFunctionRole", "ArmAndDisarmTimers", "scheduler:DeleteSchedule"):
        "a closed review's disarm the timer queue did not take is deleted at once "
        "(shared/watcher-lambda/src/sink.rs carry_out)",
    ("SchedulerRole", "DeadLetter"):
        "a run-time schedule whose invocation Scheduler gave up on (DeadLetterConfig); the "
        "sweep has none, and a run-time schedule is " + LATER,
    ("SubmitterFunctionRole", "WatcherTable", "dynamodb:BatchGetItem"):
        "a commit reading the items it does not hold yet "
        "(shared/watcher-store-dynamodb/src/commit.rs get_projected_batch)",
    ("SubmitterFunctionRole", "RetryAtBackoff"):
        "a wake-up handed back (a store failure, or a continuation or delayed wake-up the "
        "queues refused) is made visible after its backoff "
        "(shared/watcher-lambda/src/submitter.rs settle; shared/watcher-aws/src/sqs.rs "
        "redeliver_after)",
    ("TimerFunctionRole", "RetryTimerAtBackoff"):
        "a timer message handed back for a passing failure returns after its backoff "
        "(shared/watcher-lambda/src/timer.rs redeliver; shared/watcher-aws/src/timer_queue.rs "
        "redeliver_after); the suite's firings do not fail",
    ("TimerFunctionRole", "PublishNotifications"):
        "a [[notify]] channel of format sns (shared/watcher-host/src/aws/sns.rs); the local "
        "stack makes no SNS topic",
    # The grants KmsKeyArn adds (checked when the suite ran with --customer-key: tests/aws_kms.rs).
    ("SchedulerRole", "CustomerKeyForDeadLetters"):
        "Scheduler's send to its dead-letter queue under the customer's key, as DeadLetter",
    ("TimerFunctionRole", "CustomerKeyForTopic"):
        "a publish to the notification topic under the customer's key, as PublishNotifications",
}


# The AWS managed policies SAM attaches to every function role, and who makes the calls they
# allow: Lambda itself, as the role, outside the function code (and so outside the local stack,
# whose functions make only their own calls). Printed beside "not checked"; a managed policy not
# named here is still left out, with no reason given.
MANAGED = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole":
        "CloudWatch Logs: Lambda writes the function's output to its log group",
    # Globals `Tracing: Active`: SAM attaches AWSXrayWriteOnlyAccess (AWSXRayDaemonWriteAccess
    # outside the aws partition). Lambda's runtime sends the segments and reads the sampling
    # rules; the functions link no X-Ray SDK.
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess":
        "X-Ray: Lambda sends each traced invocation's segments (Tracing: Active)",
    "arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess":
        "X-Ray: Lambda sends each traced invocation's segments (Tracing: Active)",
    # DeploymentPreference: SAM's CodeDeployServiceRole, which CodeDeploy assumes to read the
    # alarms and move each function's `live` alias during a deploy; no function runs as it.
    "arn:aws:iam::aws:policy/service-role/AWSCodeDeployRoleForLambda":
        "CodeDeploy: reads the deployment alarms and moves the aliases during a deploy",
}


def read_logs(paths):
    """The distinct entries of the decision logs at `paths`."""
    seen, out = set(), []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                key = (entry.get("principal"), entry.get("action"), entry.get("resource"),
                       json.dumps(entry.get("context") or {}, sort_keys=True),
                       entry.get("allowed"))
                if key not in seen:
                    seen.add(key)
                    out.append(entry)
    return out


def stack_names(entries, role_lids):
    """The stack names the log's role ARNs were made with (`{stack}-{role logical id}`)."""
    names = set()
    for e in entries:
        name = (e.get("role") or "").rsplit("/", 1)[-1]
        for lid in role_lids:
            if name.endswith("-" + lid):
                names.add(name[: -len(lid) - 1])
    return names


def customer_key(entries):
    """The customer's key the log's stacks ran with (`--customer-key`: the template's KmsKeyArn),
    or "" when none did: the key of the logged KMS decisions that is no key of the template's
    own (the alarm topic's key is `{stack}-AlarmTopicKey`, and no role calls with it). With
    several (runs of the suite against different emulators appended to one log), the one most
    decisions name."""
    counts = {}
    for e in entries:
        resource = e.get("resource") or ""
        if (e.get("action") or "").startswith("kms:") and ":key/" in resource \
                and not resource.endswith("-AlarmTopicKey"):
            counts[resource] = counts.get(resource, 0) + 1
    return max(sorted(counts), key=counts.get) if counts else ""


def key_policy(entry):
    """The key policy a logged KMS decision was evaluated with: the default key policy of the
    customer's key (infra/aws_model/iam.py `kms_checks`), None for any other action. KMS needs
    its key policy to allow a call; the role's policies alone would deny every one."""
    if (entry.get("action") or "").startswith("kms:"):
        return default_key_policy(entry.get("resource") or "")
    return None


def roles_for(template_path, stack_name, region="us-east-1", kms_key=""):
    """The template's roles as the local stack built them for `stack_name` (its default
    parameters; the configuration secret named as the stack names it; KmsKeyArn `kms_key`, so
    that the grants a customer key adds are checked when the suite ran with one)."""
    params = {"WatcherConfigSecret": f"{stack_name}-config"}
    if kms_key:
        params["KmsKeyArn"] = kms_key
    stack = Stack(load(template_path), stack_name, region, params)
    for lid, _ in stack.of_type("AWS::SQS::Queue"):
        # Only the queue's ARN matters here, and it comes from the URL's last segments.
        stack.queue_urls[lid] = f"http://local/{iam_roles.ACCOUNT}/{stack.physical_name(lid)}"
    return iam_roles.build(stack)


def without(policies, policy_name, sid):
    """`policies` with statement `sid` (Sid or 1-based index) of `policy_name` removed."""
    out = []
    for p in policies:
        doc = dict(p["document"])
        stmts = doc.get("Statement") or []
        if isinstance(stmts, dict):
            stmts = [stmts]
        if p["name"] == policy_name:
            stmts = [s for i, s in enumerate(stmts, 1) if (s.get("Sid") or str(i)) != sid]
        doc["Statement"] = stmts
        out.append({"name": p["name"], "document": doc})
    return out


def _listed(statement):
    actions = statement.get("Action") or []
    return [actions] if isinstance(actions, str) else list(actions)


def check(entries, roles, evaluator, out=print):
    """The findings (a list of lines naming what is not needed or was denied) for the log
    `entries` against `roles`; prints one line a statement through `out`."""
    findings = []
    by_role = {}
    for e in entries:
        by_role.setdefault(e.get("role"), []).append(e)
    by_arn = {r.arn: r for r in roles.values()}
    for e in entries:
        if e.get("allowed"):
            continue
        role = by_arn.get(e.get("role"))
        if role is not None and not e.get("error"):
            # A test that runs a copy of the template with a statement removed (tests/aws_iam.rs)
            # logs the denial it expects: one the template itself allows is no finding.
            answer = evaluator.evaluate(role.principal, e["action"], e["resource"],
                                        e.get("context") or {}, role.policies, key_policy(e))
            if answer.get("allowed"):
                out(f"denied with a statement removed, allowed by the template: {e['action']} "
                    f"on {e['resource']} ({role.lid})")
                continue
        findings.append(f"denied: {e.get('principal')} {e.get('action')} on "
                        f"{e.get('resource')}" + (f" ({e['error']})" if e.get("error") else ""))
    for role in sorted(roles.values(), key=lambda r: r.lid):
        logged = [e for e in by_role.get(role.arn, []) if e.get("allowed")]
        # Which statements of the template allow each logged call now (the log's own list names
        # the statements of the template the run had, which may since have changed).
        allowing = {}
        for e in logged:
            answer = evaluator.evaluate(role.principal, e["action"], e["resource"],
                                        e.get("context") or {}, role.policies, key_policy(e))
            allowing[id(e)] = answer.get("statements") or [] if answer.get("allowed") else []
        for policy_name, sid, statement in _statements(role):
            name = f"{role.lid} {policy_name} {sid}"
            if policy_name.startswith("arn:aws:iam::aws:policy/"):
                why = f"; {MANAGED[policy_name]}" if policy_name in MANAGED else ""
                out(f"{name}: not checked (an AWS managed policy: "
                    f"{', '.join(_listed(statement))}{why})")
                continue
            candidates = [e for e in logged
                          if {"policy": policy_name, "sid": sid} in allowing[id(e)]]
            needed_by = None
            stripped = without(role.policies, policy_name, sid)
            for e in candidates:
                answer = evaluator.evaluate(role.principal, e["action"], e["resource"],
                                            e.get("context") or {}, stripped, key_policy(e))
                if "error" in answer:
                    raise ValueError(f"the evaluator refused {e['action']}: {answer['error']}")
                if not answer.get("allowed"):
                    needed_by = e
                    break
            if needed_by is None and (role.lid, sid) in NOT_EXERCISED:
                out(f"{name}: not exercised here: {NOT_EXERCISED[(role.lid, sid)]}")
                continue
            if needed_by is None:
                why = ("no logged call was allowed by it" if not candidates else
                       f"every call it allowed ({len(candidates)}) is allowed without it too")
                findings.append(f"not needed: {name} ({why})")
                out(f"{name}: NOT NEEDED: {why}")
                continue
            out(f"{name}: needed by {needed_by['action']} on {needed_by['resource']}")
            used = {e["action"].lower() for e in candidates}
            for action in _listed(statement):
                if not any(fnmatch.fnmatch(u, action.lower()) for u in used):
                    if (role.lid, sid, action) in NOT_EXERCISED:
                        out(f"{name}: {action} not exercised here: "
                            f"{NOT_EXERCISED[(role.lid, sid, action)]}")
                        continue
                    findings.append(f"not used: {action} in {name}")
                    out(f"{name}: {action} NOT USED by any logged call")
    return findings


def _statements(role):
    for p in role.policies:
        stmts = p["document"].get("Statement") or []
        if isinstance(stmts, dict):
            stmts = [stmts]
        for i, s in enumerate(stmts, 1):
            yield p["name"], s.get("Sid") or str(i), s


def main(argv):
    p = argparse.ArgumentParser(prog="iam_coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("--template", default=os.path.join(os.path.dirname(HERE), "template.yaml"))
    p.add_argument("logs", nargs="*", help="decision logs (default: $A2A_IAM_DECISIONS)")
    args = p.parse_args(argv)
    paths = args.logs or ([os.environ["A2A_IAM_DECISIONS"]]
                          if os.environ.get("A2A_IAM_DECISIONS") else [])
    if not paths:
        print("iam-coverage: name a decision log, or set A2A_IAM_DECISIONS", file=sys.stderr)
        return 2
    missing = evaluator_missing()
    if missing:
        print(f"iam-coverage: {missing}", file=sys.stderr)
        return 2
    try:
        entries = read_logs(paths)
    except OSError as e:
        print(f"iam-coverage: {e}", file=sys.stderr)
        return 2
    if not entries:
        print(f"iam-coverage: no decision in {', '.join(paths)} (did the tests run with IAM?)",
              file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    lids = list(roles_for(args.template, "probe").keys())
    names = stack_names(entries, lids)
    if not names:
        print("iam-coverage: the log names no role of the template", file=sys.stderr)
        return 2
    evaluator = Evaluator()
    findings = []
    try:
        kms_key = customer_key(entries)
        for stack_name in sorted(names):
            print(f"== stack {stack_name}: {len(entries)} distinct decisions"
                  + (f"; KmsKeyArn={kms_key} (a run with the customer's key)" if kms_key else ""))
            findings += check(entries, roles_for(args.template, stack_name, kms_key=kms_key),
                              evaluator)
    except ValueError as e:
        print(f"iam-coverage: {e}", file=sys.stderr)
        return 2
    finally:
        evaluator.close()
    if findings:
        print(f"iam-coverage: {len(findings)} finding(s):")
        for f in findings:
            print(f"  - {f}")
        return 1
    print("iam-coverage: every statement of the template is needed, every action it lists used")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
