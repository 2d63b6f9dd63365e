"""The IAM roles of `template.yaml` as AWS builds them, for IAM on the local stack
(infra/aws_model/iam.py).

The template is first transformed by SAM's own translator (samtranslator, the library
CloudFormation's AWS::Serverless transform is built from), so each function's role is the one
SAM generates: its inline statements, SAM policy templates expanded, and the managed policies
SAM attaches (AWSLambdaBasicExecutionRole). Then every intrinsic function in the roles is
resolved against the local resources (`Stack`), and each managed policy ARN is replaced by its
document from `managed_policies.json` (AWS's published version, with its source).

Each role gets local credentials as Lambda hands a function its execution role's: an access key
id (`ASIA...`, as temporary credentials are), a secret and a session token; the principal is
the assumed role `arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION`, whose session name Lambda
makes the function's name.
"""

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field

from .template import ACCOUNT, Stack

MANAGED_POLICIES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "managed_policies.json")


@dataclass
class Role:
    """One role: `lid` its logical id in the transformed template, `arn` the role's ARN,
    `principal` the assumed-role ARN its callers sign as, `policies` `[{"name", "document"}]`
    (inline policies by their PolicyName, managed ones by their ARN), `function` the logical id
    of the function that runs as it (None for a service role such as SchedulerRole), and the
    credentials."""

    lid: str
    arn: str
    principal: str
    policies: list
    function: str | None = None
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    sources: dict = field(default_factory=dict)  # managed policy ARN -> its source URL

    def settings(self):
        """This role as an entry of the iam part's `principals`."""
        return {"arn": self.principal, "role": self.arn, "policies": self.policies}

    def env(self):
        """The credentials as a function's environment holds them."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_SESSION_TOKEN": self.session_token}


def transform(template, region, params):
    """`template` (plain data, as `template.load` reads it) through SAM's translator: the
    AWS::Serverless resources become the CloudFormation ones SAM makes (functions' roles
    included). `params` are the template's parameter values."""
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    data = copy.deepcopy(template)
    for r in data.get("Resources", {}).values():
        if r.get("Type") == "AWS::Serverless::Function":
            # The translator wants the uploaded code's S3 location; the role does not depend
            # on it (cfn-lint does the same).
            r.setdefault("Properties", {})["CodeUri"] = "s3://local/code.zip"

    values = dict(params)
    values.update({"AWS::Region": region, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws"})
    # The translator reads the region from a boto3 session (no call is made); a managed policy
    # given by name it would look up in IAM, and this template names them by ARN.
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    transformed = translator.translate(data, parameter_values=values, get_managed_policy_map=dict)
    translator.metrics.publish()  # to its dummy publisher: nothing is sent anywhere
    return transformed


def _managed():
    with open(MANAGED_POLICIES, encoding="utf-8") as f:
        return {k: v for k, v in json.load(f).items() if not k.startswith("_")}


def _key_of(lid, stack_name):
    """A stable access key id for role `lid` of stack `stack_name`: ASIA and 16 characters."""
    digest = hashlib.sha256(f"{stack_name}/{lid}".encode()).hexdigest().upper()
    return "ASIA" + digest[:16]


def build(stack):
    """Every `AWS::IAM::Role` of `stack`'s template after SAM's transform, resolved against
    `stack`'s local resources (its queues must be made: their ARNs come from their URLs),
    keyed by the role's logical id."""
    transformed = transform(stack.template, stack.region, stack.params)
    local = Stack(transformed, stack.stack_name, stack.region, stack.params)
    local.queue_urls = dict(stack.queue_urls)
    managed = _managed()
    # Which function runs as which role: the transformed function's Role is !GetAtt ROLE.Arn.
    runs_as = {}
    for lid, r in transformed["Resources"].items():
        if r.get("Type") == "AWS::Lambda::Function":
            role = (r.get("Properties") or {}).get("Role")
            if isinstance(role, dict) and "Fn::GetAtt" in role:
                runs_as[role["Fn::GetAtt"][0]] = lid
    roles = {}
    for lid, r in transformed["Resources"].items():
        if r.get("Type") != "AWS::IAM::Role":
            continue
        # A role under a condition that is false is not made, as in CloudFormation (BackupRole
        # without BackupCopyVaultArn).
        if "Condition" in r and not local.condition(r["Condition"]):
            continue
        props = r.get("Properties") or {}
        policies, sources = [], {}
        for p in props.get("Policies") or []:
            doc = local.resolve(p["PolicyDocument"])
            policies.append({"name": local.resolve(p["PolicyName"]), "document": _clean(doc)})
        for arn in local.resolve(props.get("ManagedPolicyArns") or []):
            if arn not in managed:
                raise ValueError(
                    f"role {lid} attaches {arn}, whose document is not in {MANAGED_POLICIES}")
            policies.append({"name": arn, "document": managed[arn]["document"]})
            sources[arn] = managed[arn]["source"]
        role_name = local.physical_name(lid)
        function = runs_as.get(lid)
        if function is not None:
            fprops = transformed["Resources"][function].get("Properties") or {}
            session = local.resolve(fprops.get("FunctionName", f"{stack.stack_name}-{function}"))
        else:
            session = lid
        key = _key_of(lid, stack.stack_name)
        secret = hashlib.sha256(f"secret/{stack.stack_name}/{lid}".encode()).hexdigest()
        roles[lid] = Role(
            lid=lid, arn=local.arn(lid),
            principal=f"arn:aws:sts::{ACCOUNT}:assumed-role/{role_name}/{session}",
            policies=policies, function=function, access_key=key, secret_key=secret[:40],
            session_token="local-session-" + secret[40:], sources=sources,
        )
    return roles


def role_of_function(roles, function_lid):
    """The role function `function_lid` (its logical id in template.yaml) runs as, or None."""
    for role in roles.values():
        if role.function == function_lid:
            return role
    return None


def encrypted(stack):
    """Tables, queues and topics encrypted with a customer KMS key, as the iam part's
    `encrypted` setting: `{resource ARN: {"key": key ARN, "policy": key policy}}`. The key is
    a table's `SSESpecification.KMSMasterKeyId` (with `SSEEnabled`), a queue's or topic's
    `KmsMasterKeyId`, after conditions (`!If [HasCustomerKey, ...]`) are resolved: a key of
    the template (`AWS::KMS::Key`) with its key policy, or a key ARN given as a parameter
    (KmsKeyArn) with no policy, which the iam part reads as the default key policy (the
    account's IAM policies decide). Those with an AWS managed key (`alias/aws/...`), and tables
    without a KMSMasterKeyId, are left out: its key policy lets every principal of the account
    use it through the service, so IAM asks nothing of the caller's role."""
    out = {}
    kinds = (("AWS::DynamoDB::Table", ("SSESpecification", "KMSMasterKeyId")),
             ("AWS::SQS::Queue", ("KmsMasterKeyId",)), ("AWS::SNS::Topic", ("KmsMasterKeyId",)))
    keys = {lid: stack.physical_name(lid) for lid, _ in stack.of_type("AWS::KMS::Key")}
    for kind, path in kinds:
        for lid, raw in stack.of_type(kind):
            condition = stack.resources[lid].get("Condition")
            if condition and not stack.condition(condition):
                continue
            try:
                value = stack.resolve(raw.get(path[0]))
            except ValueError:
                continue  # names a queue not made yet: no ARN to key it by
            for part in path[1:]:
                value = value.get(part) if isinstance(value, dict) else None
            if not isinstance(value, str) or not value or value.startswith("alias/aws/"):
                continue
            # A `!Ref` of the template's own key resolves to its name: its ARN and policy.
            own = next((k for k, name in keys.items() if name == value), None)
            if own is not None:
                policy = stack.resolve(stack.resources[own]["Properties"].get("KeyPolicy"))
                out[stack.arn(lid)] = {"key": stack.arn(own), "policy": policy}
            else:
                out[stack.arn(lid)] = {"key": value, "policy": None}
    return out


def _clean(value):
    """A resolved policy without the `None`s `AWS::NoValue` leaves."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value if v is not None]
    return value


def statements(roles):
    """Every statement of every role: `(role lid, policy name, sid, statement)`, with the sid
    the statement's `Sid` or its 1-based index in its policy (as the evaluator names it)."""
    out = []
    for role in roles.values():
        for p in role.policies:
            stmts = p["document"].get("Statement") or []
            if isinstance(stmts, dict):
                stmts = [stmts]
            for i, s in enumerate(stmts, 1):
                out.append((role.lid, p["name"], s.get("Sid") or str(i), s))
    return out


def post_model(endpoint, path, body, timeout=30):
    """POSTs `body` (JSON) to the emulator's `/_model/<path>`; its JSON answer. ValueError with
    the emulator's own words when it refuses."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        endpoint.rstrip("/") + "/_model/" + path, data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (local)
            return json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise ValueError(f"{endpoint}/_model/{path}: {e.code} {e.read().decode(errors='replace')}")


def iam_settings(stack, roles, decision_log=None):
    """The iam part's settings for `roles` (`build`) of `stack`."""
    return {
        "principals": {r.access_key: r.settings() for r in roles.values()},
        "encrypted": encrypted(stack),
        "decision_log": decision_log,
    }


def checker(endpoint, role_arn):
    """`may(action, resource) -> (allowed, message)` for what the stack does as `role_arn`
    outside the emulator (Scheduler invoking a function), asked of the emulator's iam part so
    the decision is cached and logged with the others."""

    def may(action, resource, context=None):
        answer = post_model(endpoint, "iam/check", {"principal": role_arn, "action": action,
                                                    "resource": resource,
                                                    "context": context or {}})
        return bool(answer.get("allowed")), answer.get("message", "")

    return may
