"""IAM on the local AWS stack: each function's calls are allowed or denied as IAM would, against
its role's policies in `template.yaml` (built by infra/aws_local/roles.py).

Settings (`POST /_model/iam`):

    {"principals": {ACCESS_KEY_ID: {"arn": "arn:aws:sts::ACCT:assumed-role/ROLE/SESSION",
                                    "role": "arn:aws:iam::ACCT:role/ROLE",
                                    "policies": [{"name": NAME, "document": {...}}, ...]}},
     "encrypted": {TABLE_QUEUE_OR_TOPIC_ARN: {"key": KMS_KEY_ARN, "policy": {key policy}}},
     "decision_log": "/path/decisions.jsonl"}

A call signed with an access key that is not among the principals passes untouched (the
deployer's `test` key: the stack's own set-up and the tests' reads). A principal's call is
mapped to every action IAM checks for it (`actions_of`): one call may need several (a
TransactWriteItems needs the action of each of its items on its table; a CreateSchedule also
needs iam:PassRole on its target's role; a call on a table, queue or topic encrypted with a
customer KMS key also needs the key's actions, `kms_checks`, with `kms:ViaService` the service's).
A key with no policy given (the customer's own key, passed as the template's KmsKeyArn) is
modelled with the default key policy (`default_key_policy`), which lets the account's IAM
policies decide. Each is
evaluated by infra/iam/evaluate.mjs (what that evaluator does not model is written there); the
first denied one answers the call with AWS's error: `AccessDeniedException` (DynamoDB, Secrets
Manager: HTTP 400; SQS, Scheduler: HTTP 403), SNS's `AuthorizationError` (403), with AWS's
message `User: ARN is not authorized to perform: ACTION on resource: RESOURCE because no
identity-based policy allows the ACTION action`; a key's denial in each service's own words,
HTTP 400 (SQS `KmsAccessDenied`, SNS `KMSAccessDenied`, DynamoDB `AccessDeniedException` with
KMS's message, `DYNAMODB_KMS_DENIAL`).

Decisions are cached by (principal, action, resource, context), the resource by which of the
role's resource patterns it matches (`_resource_class`); each distinct one is appended
to the decision log, one JSON object a line (`role`, `principal`, `action`, `resource`,
`context`, `allowed`, `decision`, `statements`: the statements that allowed it, each
`{"policy", "sid"}` with the statement's Sid or its 1-based index), which
infra/iam_coverage.py reads to prove each statement of the template is needed.

`POST /_model/iam/check` with `{"principal": ROLE_ARN or ACCESS_KEY, "action", "resource",
"context"}` answers one decision (`{"allowed", "decision", "message", "statements"}`), for what
the local stack does as a role outside the emulator (the Scheduler stand-in invoking the timer
function as SchedulerRole, or decrypting the input of a schedule under the customer's key:
`schedule_fire_check`); a `kms:` action is decided with the key's policy.

A CreateSchedule or UpdateSchedule with `KmsKeyArn` also needs the caller's
`SCHEDULE_KMS_FOR_CALLER` on that key, with no `kms:ViaService` (EventBridge Scheduler user
guide, "Encryption at rest").
"""

import fnmatch
import json
import os
import shutil
import subprocess
import threading
import urllib.parse

from .calls import Refusal

NAME = "iam"

EVALUATOR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "iam",
                         "evaluate.mjs")


def evaluator_missing():
    """Why the evaluator cannot run here (no node, or `bash infra/iam.sh` not run), or None."""
    if shutil.which("node") is None:
        return "node is not installed (bash infra/iam.sh says what is needed)"
    module = os.path.join(os.path.dirname(EVALUATOR), "node_modules", "@cloud-copilot",
                          "iam-simulate", "package.json")
    if not os.path.isfile(module):
        return "the IAM evaluator is not installed (bash infra/iam.sh)"
    return None


class Evaluator:
    """The evaluator process (infra/iam/evaluate.mjs), one request and answer a line."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc = None
        self.next_id = 0

    def _start(self):
        why = evaluator_missing()
        if why:
            raise ValueError(why)
        self.proc = subprocess.Popen(
            ["node", EVALUATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1,
            cwd=os.path.dirname(EVALUATOR),
        )

    def evaluate(self, principal, action, resource, context, policies, resource_policy=None):
        """The evaluator's answer (a dict) for one request; ValueError when it cannot run."""
        request = {"principal": principal, "action": action, "resource": resource,
                   "context": context or {}, "policies": policies}
        if resource_policy is not None:
            request["resource_policy"] = resource_policy
        with self.lock:
            for attempt in (0, 1):
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self.next_id += 1
                request["id"] = self.next_id
                try:
                    self.proc.stdin.write(json.dumps(request) + "\n")
                    self.proc.stdin.flush()
                    line = self.proc.stdout.readline()
                except (BrokenPipeError, OSError):
                    line = ""
                if line:
                    return json.loads(line)
                self.proc = None  # it died: start it again once
            raise ValueError("the IAM evaluator stopped answering")

    def close(self):
        with self.lock:
            if self.proc is not None:
                self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                self.proc.stdout.close()
            self.proc = None


# -- what IAM checks for a call -----------------------------------------------------------

_TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
_SQS_BATCH = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
# What a queue encrypted with a customer key needs of the key, by SQS action (SQS developer
# guide, "Key management": producers kms:GenerateDataKey and kms:Decrypt, consumers kms:Decrypt);
# SNS's publishers need both (SNS developer guide, "Data encryption", "Key management").
_KMS_FOR = {
    "sqs:SendMessage": ("kms:GenerateDataKey", "kms:Decrypt"),
    "sqs:ReceiveMessage": ("kms:Decrypt",),
    "sns:Publish": ("kms:GenerateDataKey", "kms:Decrypt"),
}
# A table under a customer key: DynamoDB decrypts the table key with it on behalf of the caller
# of every item read or write (DynamoDB developer guide, "Encryption at rest: how it works",
# "Authorizing use of your KMS key"; KMS developer guide, "How Amazon DynamoDB uses AWS KMS":
# https://docs.aws.amazon.com/kms/latest/developerguide/services-dynamodb.html#dynamodb-authz).
# Writes need kms:Decrypt too: the items are encrypted under the table key, which DynamoDB made with the
# key when the table was created, not under a data key of the caller's. Control-plane actions
# (DescribeTable, UpdateTimeToLive) read no item and are left out.
_DYNAMODB_ITEM_ACTIONS = {
    "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
    "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem",
    "dynamodb:Query", "dynamodb:Scan",
}
for _action in _DYNAMODB_ITEM_ACTIONS:
    _KMS_FOR[_action] = ("kms:Decrypt",)


# A schedule whose input is under a customer key (CreateSchedule or UpdateSchedule with
# KmsKeyArn): Scheduler encrypts it with the caller's own permissions, which must allow these
# on the key (EventBridge Scheduler user guide, "Encryption at rest", "Identity-based
# permissions for customer managed keys": DescribeKey to check the key is symmetric,
# GenerateDataKey for the data key, Decrypt for the one stored with the input). The guide names
# no kms:ViaService for them, so none is set: a grant conditioned on one is denied here.
SCHEDULE_KMS_FOR_CALLER = ("kms:DescribeKey", "kms:GenerateDataKey", "kms:Decrypt")


def schedule_fire_check(schedule_arn, key_arn):
    """The (action, key, context) IAM checks of a schedule's execution role when a schedule
    whose input is under the customer key `key_arn` fires: kms:Decrypt (the guide's "Execution
    role permissions for customer managed keys"), the role's own session calling KMS with the
    encryption context of the guide's CloudTrail example (`aws:scheduler:schedule:arn`, the
    schedule's ARN) and no kms:ViaService."""
    return ("kms:Decrypt", key_arn,
            {"kms:EncryptionContext:aws:scheduler:schedule:arn": schedule_arn})


def kms_checks(action, resource, region, encrypted):
    """The KMS (action, key ARN, context, key policy) IAM also checks for `action` on
    `resource` when `encrypted` (the iam part's setting) names it, or its table for an index of
    a table: none for a resource under an AWS managed key. The context is `kms:ViaService` of
    the service making the KMS call on the caller's behalf (KMS developer guide, "kms:ViaService"),
    which the template's grants are conditioned on."""
    base = resource.split("/index/", 1)[0] if action.startswith("dynamodb:") else resource
    key = encrypted.get(base)
    if not key:
        return []
    service = action.split(":", 1)[0]
    context = {"kms:ViaService": f"{service}.{region}.amazonaws.com"}
    policy = key.get("policy") or default_key_policy(key["key"])
    return [(k, key["key"], context, policy) for k in _KMS_FOR.get(action, ())]


def default_key_policy(key_arn):
    """The default key policy of a key made without one (KMS developer guide, "Default key
    policy", https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html):
    the account's root may do anything with it, which is what lets the account's IAM policies
    allow its use. KMS, unlike most services, needs the key policy to allow a call; an identity
    policy alone is not enough, and the evaluator models that."""
    account = key_arn.split(":")[4] if key_arn.count(":") >= 5 else "123456789012"
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "Enable IAM User Permissions", "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "kms:*",
        "Resource": "*"}]}


def _table_arn(name, region, account):
    if name.startswith("arn:"):
        return name
    return f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def _queue_arn(url, region, account):
    """The ARN of a queue URL (`http://host/ACCOUNT/NAME`, or already an ARN)."""
    if url.startswith("arn:"):
        return url
    parts = [p for p in urllib.parse.urlparse(url).path.split("/") if p]
    if len(parts) >= 2:
        return f"arn:aws:sqs:{region}:{parts[-2]}:{parts[-1]}"
    return f"arn:aws:sqs:{region}:{account}:{parts[-1] if parts else url}"


def _secret_arn(secret_id, region, account, lookup):
    """The secret's full ARN (`...:secret:NAME-AbCdEf`), through `lookup(id) -> arn | None`
    (moto's store); for a secret that does not exist, the ARN its name would have."""
    found = lookup(secret_id) if lookup else None
    if found:
        return found
    if secret_id.startswith("arn:"):
        return secret_id
    return f"arn:aws:secretsmanager:{region}:{account}:secret:{secret_id}"


def actions_of(call, account, secret_lookup=None):
    """Every (action, resource ARN, context) IAM checks for `call`, in the order AWS would meet
    them. The resource is `*` for an action that takes none (ListQueues, GetCallerIdentity's
    sts action needs no permission and maps to nothing)."""
    region = call.region or "us-east-1"
    p = call.params if isinstance(call.params, dict) else {}
    op = call.operation
    service = call.service
    if service == "dynamodb":
        if op == "TransactWriteItems":
            out = []
            for item in p.get("TransactItems") or []:
                for kind, action in _TRANSACT_ITEM_ACTIONS.items():
                    if isinstance(item, dict) and kind in item:
                        table = _table_arn(item[kind].get("TableName", ""), region, account)
                        out.append((action, table, {}))
            return _unique(out)
        if op == "TransactGetItems":
            return _unique([("dynamodb:GetItem",
                             _table_arn(i["Get"].get("TableName", ""), region, account), {})
                            for i in p.get("TransactItems") or []
                            if isinstance(i, dict) and "Get" in i])
        if op in ("BatchGetItem", "BatchWriteItem"):
            return [(f"dynamodb:{op}", _table_arn(t, region, account), {})
                    for t in (p.get("RequestItems") or {})]
        if op in ("ListTables", "DescribeLimits", "DescribeEndpoints"):
            return [(f"dynamodb:{op}", "*", {})]
        table = p.get("TableName") or p.get("ResourceArn") or ""
        arn = _table_arn(table, region, account)
        if op in ("Query", "Scan") and p.get("IndexName"):
            arn += f"/index/{p['IndexName']}"
        return [(f"dynamodb:{op}", arn, {})]
    if service == "sqs":
        action = "sqs:" + _SQS_BATCH.get(op, op)
        if op == "ListQueues":
            return [(action, "*", {})]
        if op in ("GetQueueUrl", "CreateQueue"):
            owner = p.get("QueueOwnerAWSAccountId") or account
            return [(action, f"arn:aws:sqs:{region}:{owner}:{p.get('QueueName', '')}", {})]
        return [(action, _queue_arn(p.get("QueueUrl", ""), region, account), {})]
    if service == "scheduler":
        if op in ("ListSchedules", "ListScheduleGroups"):
            return [(f"scheduler:{op}", "*", {})]
        if op.endswith("ScheduleGroup"):
            return [(f"scheduler:{op}",
                     f"arn:aws:scheduler:{region}:{account}:schedule-group/{p.get('Name', '')}",
                     {})]
        # CreateSchedule and UpdateSchedule name the group in the body (GroupName); GetSchedule
        # and DeleteSchedule in the query string (groupName).
        group = p.get("GroupName") or p.get("groupName") or "default"
        out = [(f"scheduler:{op}",
                f"arn:aws:scheduler:{region}:{account}:schedule/{group}/{p.get('Name', '')}", {})]
        role = (p.get("Target") or {}).get("RoleArn") if isinstance(p.get("Target"), dict) else None
        if op in ("CreateSchedule", "UpdateSchedule") and role:
            # Scheduler checks that the caller may pass the target's role to it (EventBridge
            # Scheduler user guide, "Setting up the execution role").
            out.append(("iam:PassRole", role, {"iam:PassedToService": "scheduler.amazonaws.com"}))
        key = p.get("KmsKeyArn")
        if op in ("CreateSchedule", "UpdateSchedule") and isinstance(key, str) and key:
            out += [(a, key, {}) for a in SCHEDULE_KMS_FOR_CALLER]
        return out
    if service == "secretsmanager":
        if op in ("ListSecrets", "GetRandomPassword", "BatchGetSecretValue"):
            return [(f"secretsmanager:{op}", "*", {})]
        if op == "CreateSecret":
            return [(f"secretsmanager:{op}",
                     f"arn:aws:secretsmanager:{region}:{account}:secret:{p.get('Name', '')}", {})]
        arn = _secret_arn(p.get("SecretId", ""), region, account, secret_lookup)
        return [(f"secretsmanager:{op}", arn, {})]
    if service == "sns":
        if op in ("ListTopics", "CreateTopic"):
            return [(f"sns:{op}", "*" if op == "ListTopics"
                     else f"arn:aws:sns:{region}:{account}:{p.get('Name', '')}", {})]
        action = "sns:Publish" if op == "PublishBatch" else f"sns:{op}"
        return [(action, p.get("TopicArn") or p.get("TargetArn") or "*", {})]
    if service == "sts" and op == "GetCallerIdentity":
        return []  # needs no permission (STS API reference)
    if service and op:
        return [(f"{service}:{op}", "*", {})]
    return []


def _unique(items):
    seen, out = set(), []
    for a, r, c in items:
        key = (a, r, json.dumps(c, sort_keys=True))
        if key not in seen:
            seen.add(key)
            out.append((a, r, c))
    return out


# -- the answer AWS gives -----------------------------------------------------------------

def denial_message(principal, action, resource, decision):
    """AWS's AccessDenied message for `principal` denied `action` on `resource`."""
    why = ("with an explicit deny in an identity-based policy" if decision == "ExplicitlyDenied"
           else f"because no identity-based policy allows the {action} action")
    return f"User: {principal} is not authorized to perform: {action} on resource: {resource} {why}"


# What DynamoDB answers an item call whose caller may not use the table's customer key (as AWS
# sends it, less the request ids).
DYNAMODB_KMS_DENIAL = (
    "KMS key access denied error: com.amazonaws.services.kms.model.AWSKMSException: The "
    "ciphertext refers to a customer master key that does not exist, does not exist in this "
    "region, or you are not allowed to access. (Service: AWSKMS; Status Code: 400; Error Code: "
    "AccessDeniedException)")


def refusal_for(call, principal, action, resource, decision):
    """The `Refusal` AWS answers `call` with when `action` on `resource` is denied."""
    message = denial_message(principal, action, resource, decision)
    if action.startswith("kms:"):
        # Each service answers a key's denial in its own words, HTTP 400: SQS KmsAccessDenied
        # (KMS.AccessDeniedException as query; SQS API reference, SendMessage, "Errors"), SNS
        # KMSAccessDenied (SNS API reference, Publish, "Errors"), DynamoDB AccessDeniedException
        # carrying KMS's own error ("KMS key access denied error: ...").
        if call.service == "sns":
            return Refusal(400, "KMSAccessDenied", message)
        if call.service == "sqs":
            return Refusal(400, "KMS.AccessDeniedException" if call.protocol == "query" else
                           "KmsAccessDenied", message)
        if call.service == "dynamodb":
            # KMS's words, not IAM's: DynamoDB's message names neither the action nor the
            # caller (the model's `denials` do).
            return Refusal(400, "AccessDeniedException", DYNAMODB_KMS_DENIAL)
    if call.service == "sns":
        return Refusal(403, "AuthorizationError", message)
    if call.service == "sqs":
        # The JSON protocol's code; as query (and in x-amzn-query-error), AccessDenied.
        return Refusal(403, "AccessDenied" if call.protocol == "query" else
                       "AccessDeniedException", message)
    if call.service in ("scheduler", "lambda"):
        return Refusal(403, "AccessDeniedException", message)
    # DynamoDB, Secrets Manager (JSON 1.0/1.1): HTTP 400.
    return Refusal(400, "AccessDeniedException", message)


class _Part:
    def __init__(self):
        self.settings = {}
        self.principals = {}  # access key -> principal
        self.by_role = {}  # role ARN -> principal
        self.encrypted = {}
        self.cache = {}
        self.decision_log = None
        # kms: allowed checks of a customer key (part of `allowed`).
        self.counts = {"allowed": 0, "denied": 0, "evaluated": 0, "errors": 0, "kms": 0}
        self.denials = []  # the last few denials, for GET /_model/iam
        self.evaluator = Evaluator()
        self.log_lock = threading.Lock()

    def configure(self, settings):
        principals = settings.get("principals") or {}
        if not isinstance(principals, dict):
            raise ValueError("principals: expected an object of access key -> principal")
        for key, p in principals.items():
            for field in ("arn", "role", "policies"):
                if field not in p:
                    raise ValueError(f"principals.{key}: {field} is missing")
        if principals and evaluator_missing():
            raise ValueError(evaluator_missing())
        self.settings = dict(settings)
        self.principals = dict(principals)
        self.by_role = {p["role"]: p for p in principals.values()}
        self.encrypted = dict(settings.get("encrypted") or {})
        self.decision_log = settings.get("decision_log") or None
        self.cache = {}
        self.denials = []
        for k in self.counts:
            self.counts[k] = 0

    def state(self):
        return {
            "enabled": bool(self.principals),
            "principals": {k: {"arn": p["arn"], "role": p["role"]}
                           for k, p in self.principals.items()},
            "decision_log": self.decision_log,
            "encrypted": {r: k["key"] for r, k in sorted(self.encrypted.items())},
            "counts": dict(self.counts),
            "denials": list(self.denials[-20:]),
        }

    # -- decisions -----------------------------------------------------------------------
    def decide(self, principal, action, resource, context, resource_policy=None):
        """(allowed, decision, statements) for `principal` (a principals entry), cached."""
        key = (principal["arn"], action, _resource_class(principal, resource),
               json.dumps(context or {}, sort_keys=True),
               json.dumps(resource_policy, sort_keys=True) if resource_policy else "")
        if key in self.cache:
            return self.cache[key]
        self.counts["evaluated"] += 1
        try:
            answer = self.evaluator.evaluate(principal["arn"], action, resource, context,
                                             principal["policies"], resource_policy)
        except ValueError as e:
            answer = {"error": str(e)}
        if "error" in answer:
            # Fail closed, as IAM does for what it cannot match: the error is in the log.
            self.counts["errors"] += 1
            result = (False, "ImplicitlyDenied", [], answer["error"])
        else:
            result = (bool(answer.get("allowed")), answer.get("decision", "ImplicitlyDenied"),
                      answer.get("statements") or [], None)
        self.cache[key] = result
        self._log(principal, action, resource, context, result)
        return result

    def _log(self, principal, action, resource, context, result):
        if not self.decision_log:
            return
        allowed, decision, statements, error = result
        entry = {"role": principal["role"], "principal": principal["arn"], "action": action,
                 "resource": resource, "context": context or {}, "allowed": allowed,
                 "decision": decision, "statements": statements}
        if error:
            entry["error"] = error
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.log_lock:
            # One write of one line, appended: stacks writing the same log never interleave.
            fd = os.open(self.decision_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def admit(self, call):
        principal = self.principals.get(call.access_key) if call.access_key else None
        if principal is None:
            return None
        account = principal["arn"].split(":")[4]
        for action, resource, context in actions_of(call, account, _moto_secret_arn(call, account)):
            # A key's own action (a schedule's input under a customer key) is decided with its
            # key policy too, as KMS decides it.
            checks = [(action, resource, context, self.key_policy(resource)
                       if action.startswith("kms:") else None)]
            checks += kms_checks(action, resource, call.region or "us-east-1", self.encrypted)
            for a, r, c, rp in checks:
                allowed, decision, _, error = self.decide(principal, a, r, c, rp)
                if allowed:
                    self.counts["allowed"] += 1
                    if a.startswith("kms:"):
                        self.counts["kms"] += 1
                    continue
                self.counts["denied"] += 1
                self.denials.append({"principal": principal["arn"], "action": a, "resource": r,
                                     "decision": decision, **({"error": error} if error else {})})
                del self.denials[:-100]
                return refusal_for(call, principal["arn"], a, r, decision)
        return None

    def key_policy(self, key_arn):
        """The key policy of `key_arn`: the one `encrypted` gives it (a key of the template's
        own), else the default key policy (the customer's key, KmsKeyArn)."""
        for entry in self.encrypted.values():
            if entry.get("key") == key_arn and entry.get("policy"):
                return entry["policy"]
        return default_key_policy(key_arn)

    def request(self, sub, body):
        """`POST /_model/iam/<sub>`: `check` answers one decision."""
        if sub != "check":
            raise ValueError(f"no such request: {sub!r} (check)")
        who = body.get("principal", "")
        principal = self.by_role.get(who) or self.principals.get(who)
        if principal is None:
            for p in self.principals.values():
                if p["arn"] == who:
                    principal = p
        if principal is None:
            if not self.principals:
                return {"allowed": True, "decision": "NotEnforced", "statements": []}
            raise ValueError(f"principal {who!r} is no role of the stack")
        kms = body["action"].startswith("kms:")
        allowed, decision, statements, error = self.decide(
            principal, body["action"], body["resource"], body.get("context") or {},
            self.key_policy(body["resource"]) if kms else None)
        self.counts["allowed" if allowed else "denied"] += 1
        if allowed and kms:
            self.counts["kms"] += 1
        answer = {"allowed": allowed, "decision": decision, "statements": statements,
                  "principal": principal["arn"]}
        if not allowed:
            answer["message"] = denial_message(principal["arn"], body["action"],
                                               body["resource"], decision)
            self.denials.append({"principal": principal["arn"], "action": body["action"],
                                 "resource": body["resource"], "decision": decision,
                                 **({"error": error} if error else {})})
            del self.denials[:-100]
        if error:
            answer["error"] = error
        return answer


def _patterns(policies):
    """Every Resource and NotResource pattern of `policies`, or None when one holds a policy
    variable (`${aws:username}`), whose value depends on the request."""
    out = set()
    for p in policies:
        stmts = p["document"].get("Statement") or []
        for s in [stmts] if isinstance(stmts, dict) else stmts:
            for field in ("Resource", "NotResource"):
                value = s.get(field, [])
                for pattern in [value] if isinstance(value, str) else value:
                    if "${" in pattern:
                        return None
                    out.add(pattern)
    return sorted(out)


def _resource_class(principal, resource):
    """What of `resource` can change a decision for `principal`: which of its policies'
    resource patterns match it (IAM's `*` and `?` wildcards, case-sensitive). Two schedules of
    one group under `schedule/GROUP/*` are one class, so a decision is evaluated once for all,
    not once per schedule name (the evaluator takes milliseconds, the emulator serves one
    request at a time). The exact resource when a pattern holds a policy variable."""
    patterns = principal.get("_patterns", None)
    if patterns is None:
        patterns = principal["_patterns"] = _patterns(principal["policies"]) or False
    if patterns is False:
        return resource
    return tuple(fnmatch.fnmatchcase(resource, pat.replace("[", "[[]")) for pat in patterns)


def _moto_secret_arn(call, account):
    """A lookup of a secret's full ARN in moto's store (this process's), for `call`'s account
    and region."""
    if call.service != "secretsmanager":
        return None

    def lookup(secret_id):
        try:
            from moto.backends import get_backend

            regional = get_backend("secretsmanager")[account][call.region or "us-east-1"]
            secret = regional.secrets.get(secret_id)
            return secret.arn if secret is not None else None
        except Exception:  # noqa: BLE001 (no store: the ARN is built from the name)
            return None

    return lookup


PART = _Part()
