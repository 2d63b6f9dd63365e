"""Reading template.yaml: CloudFormation short tags, and the intrinsic functions the local
stack needs, resolved against the local resources.

The template is the one source of the resources' shape (keys, indexes, TTL, queue attributes,
routes, event sources, environment): nothing here repeats it.
"""

import re

import yaml

ACCOUNT = "123456789012"  # moto's default account

# A function before SAM's transform and after it (aws_local/roles.py reads the transformed one).
_FUNCTIONS = ("AWS::Serverless::Function", "AWS::Lambda::Function")


class _Loader(yaml.SafeLoader):
    """A SafeLoader that reads `!Ref X`, `!GetAtt A.B` and `!Fn X` as their long forms."""


def _short_tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        return {"Fn::GetAtt": value.split(".", 1)}
    return {"Fn::" + suffix: value}


_Loader.add_multi_constructor("!", _short_tag)


def load(path):
    """The template at `path` as plain data, short tags turned into their long forms."""
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)


class Stack:
    """The template's resources as they exist locally: names, ARNs and queue URLs, and a
    resolver for `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If`, `Fn::Equals`, `Fn::Not`,
    `Fn::Select`, `Fn::Split` and `Fn::Join` over them.

    Physical names: a resource's `Name`/`FunctionName` property when it has one, else
    `{stack}-{LogicalId}` (plus `.fifo` for a FIFO queue), as CloudFormation names them.

    Aliases: a function with `AutoPublishAlias` (its own or the Globals') has that alias, which
    locally is the function itself (one binary, no versions): `!Ref Fn.Alias` is the alias's
    ARN (`...:function:NAME:ALIAS`, what CloudFormation's Ref of an `AWS::Lambda::Alias` gives),
    and `lid_by_arn` takes that qualified ARN to the function as it takes the unqualified one.
    """

    def __init__(self, template, stack_name, region, parameters):
        self.template = template
        self.resources = template.get("Resources", {})
        self.stack_name = stack_name
        self.region = region
        self.params = {}
        for name, spec in template.get("Parameters", {}).items():
            if name in parameters:
                self.params[name] = str(parameters[name])
            elif "Default" in spec:
                self.params[name] = str(spec["Default"])
        missing = [n for n in template.get("Parameters", {}) if n not in self.params]
        if missing:
            raise ValueError(f"template parameters without a value: {', '.join(missing)}")
        self.queue_urls = {}  # logical id -> URL, filled as queues are made
        self.conditions = {}

    # -- names ---------------------------------------------------------------------------
    def of_type(self, type_name):
        """Logical ids and properties of the resources of `type_name`, in template order."""
        return [
            (lid, r.get("Properties", {}) or {})
            for lid, r in self.resources.items()
            if r.get("Type") == type_name
        ]

    def physical_name(self, lid):
        r = self.resources[lid]
        props = r.get("Properties", {}) or {}
        kind = r["Type"]
        if kind == "AWS::Scheduler::ScheduleGroup" or kind == "AWS::Scheduler::Schedule":
            return self.resolve(props["Name"])
        if kind in _FUNCTIONS and "FunctionName" in props:
            return self.resolve(props["FunctionName"])
        name = f"{self.stack_name}-{lid}"
        if kind == "AWS::SQS::Queue" and str(props.get("FifoQueue", "")).lower() == "true":
            name += ".fifo"
        return name

    def arn(self, lid):
        kind = self.resources[lid]["Type"]
        name = self.physical_name(lid)
        if kind == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{self.region}:{ACCOUNT}:table/{name}"
        if kind == "AWS::SQS::Queue":
            return f"arn:aws:sqs:{self.region}:{ACCOUNT}:{name}"
        if kind == "AWS::Scheduler::ScheduleGroup":
            return f"arn:aws:scheduler:{self.region}:{ACCOUNT}:schedule-group/{name}"
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{ACCOUNT}:role/{name}"
        if kind in _FUNCTIONS:
            return f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{name}"
        if kind == "AWS::Logs::LogGroup":
            return f"arn:aws:logs:{self.region}:{ACCOUNT}:log-group:{name}"
        if kind == "AWS::SNS::Topic":
            return f"arn:aws:sns:{self.region}:{ACCOUNT}:{name}"
        if kind == "AWS::KMS::Key":
            # A key's id is a UUID AWS chooses; locally the stack's name and the logical id.
            return f"arn:aws:kms:{self.region}:{ACCOUNT}:key/{name}"
        return f"arn:aws:local:{self.region}:{ACCOUNT}:{lid}"

    def lid_by_arn(self, arn):
        """The logical id whose ARN is `arn` (a function, queue or other ARN), or None. A
        function's ARN qualified with its alias (`...:function:NAME:live`) is the function's."""
        for lid in self.resources:
            if self.arn(lid) == arn or (self.alias(lid) and self.alias_arn(lid) == arn):
                return lid
        return None

    def alias(self, lid):
        """The alias SAM publishes function `lid` under (`AutoPublishAlias`, its own, else the
        Globals'), or None (not a function, or no alias)."""
        r = self.resources.get(lid) or {}
        if r.get("Type") != "AWS::Serverless::Function":
            return None
        own = r.get("Properties") or {}
        glob = (self.template.get("Globals") or {}).get("Function") or {}
        name = own.get("AutoPublishAlias", glob.get("AutoPublishAlias"))
        return None if name is None else self.resolve(name)

    def alias_arn(self, lid):
        """The ARN of function `lid`'s alias: its ARN qualified with the alias's name."""
        name = self.alias(lid)
        if name is None:
            raise ValueError(f"{lid} has no AutoPublishAlias")
        return f"{self.arn(lid)}:{name}"

    # -- intrinsic functions -------------------------------------------------------------
    def _ref(self, name):
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::StackName": self.stack_name,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": None,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        if name.endswith(".Alias") and name[: -len(".Alias")] in self.resources:
            # SAM's `!Ref Fn.Alias`: the Ref of the alias it makes, the alias's ARN.
            return self.alias_arn(name[: -len(".Alias")])
        if name not in self.resources:
            raise ValueError(f"!Ref {name}: no such parameter or resource")
        kind = self.resources[name]["Type"]
        if kind == "AWS::SQS::Queue":
            if name not in self.queue_urls:
                raise ValueError(f"!Ref {name}: the queue is not made yet")
            return self.queue_urls[name]
        if kind == "AWS::SNS::Topic":
            return self.arn(name)  # a topic's Ref is its ARN
        if kind == "AWS::Lambda::Alias":
            # After SAM's transform (aws_local/roles.py): an alias's Ref is its ARN.
            props = self.resources[name].get("Properties") or {}
            return f"{self.arn(props['FunctionName']['Ref'])}:{self.resolve(props['Name'])}"
        return self.physical_name(name)

    def _get_att(self, lid, attr):
        if lid not in self.resources:
            raise ValueError(f"!GetAtt {lid}.{attr}: no such resource")
        if self.resources[lid]["Type"] == "AWS::SQS::Queue" and lid not in self.queue_urls:
            raise ValueError(f"!GetAtt {lid}.{attr}: the queue is not made yet")
        if attr == "Arn":
            return self.arn(lid)
        if attr in ("QueueName", "Name"):
            return self.physical_name(lid)
        if attr == "QueueUrl":
            return self._ref(lid)
        raise ValueError(f"!GetAtt {lid}.{attr}: not resolved locally")

    def condition(self, name):
        if name not in self.conditions:
            self.conditions[name] = bool(self.resolve(self.template["Conditions"][name]))
        return self.conditions[name]

    def _sub(self, text, extra):
        def one(m):
            key = m.group(1)
            if key.startswith("!"):
                return "${" + key[1:] + "}"
            if key in extra:
                return str(extra[key])
            if "." in key and not key.startswith("AWS::"):
                lid, attr = key.split(".", 1)
                return str(self._get_att(lid, attr))
            return str(self._ref(key))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def resolve(self, value):
        """`value` with every intrinsic function in it evaluated."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Fn::GetAtt":
                return self._get_att(arg[0], arg[1])
            if key == "Fn::Sub":
                if isinstance(arg, list):
                    return self._sub(arg[0], {k: self.resolve(v) for k, v in arg[1].items()})
                return self._sub(arg, {})
            if key == "Fn::If":
                return self.resolve(arg[1] if self.condition(arg[0]) else arg[2])
            if key == "Fn::Equals":
                a, b = self.resolve(arg)
                return str(a) == str(b)
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::Select":
                index, items = self.resolve(arg)
                return items[int(index)]
            if key == "Fn::Split":
                sep, text = self.resolve(arg)
                return text.split(sep)
            if key == "Fn::Join":
                sep, items = self.resolve(arg)
                return sep.join(str(i) for i in items)
            if key == "Condition":
                return self.condition(arg)
        return {k: self.resolve(v) for k, v in value.items()}
