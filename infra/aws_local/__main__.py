"""`python -m aws_local`: the local serverless stack; `bash infra/aws-local.sh` runs it.

Makes the template's resources in the emulator at `--endpoint`, stores `--config` as the
configuration secret, starts each function binary from `--bin-dir` behind its own Lambda
Runtime API, then serves the HTTP API on 127.0.0.1:`--port`, fires schedules and polls the
event source queues until SIGINT or SIGTERM, when it stops every process it started.
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib

import boto3
import yaml
from botocore.exceptions import BotoCoreError, ClientError

from . import resources, roles as iam_roles
from . import faults as local_faults
from . import scale
from .gateway import Gateway, routes_of
from .runtime import Function
from .template import Stack, load
from .triggers import QueueSource, Scheduler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOG_LOCK = threading.Lock()
# Where the stack's and the functions' lines go (`--log`): standard output, or a file, so that the
# terminal shows only what a person needs (errors, the ready banner, the stop).
LOG = {"stream": None, "path": None}


def use_log(path):
    """Sends every later `log` line, and the functions' lines, to `path` (appended), or to
    standard output for `-` or None."""
    if path in (None, "-"):
        LOG.update(stream=None, path=None)
    else:
        LOG.update(stream=open(path, "a", buffering=1, encoding="utf-8"), path=path)


def log_stream():
    """The log's stream: the file, or standard output as it is now."""
    return LOG["stream"] if LOG["path"] is not None else sys.stdout


def log(line):
    with LOG_LOCK:
        print(f"[aws-local] {line}", file=log_stream(), flush=True)


def say(line):
    """`log`, and on the terminal too when the log is a file: what a person must see."""
    log(line)
    if LOG["path"] is not None:
        with LOG_LOCK:
            print(f"[aws-local] {line}", flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="aws-local", description=__doc__.split("\n\n")[0])
    p.add_argument("--template", default=os.path.join(ROOT, "template.yaml"))
    p.add_argument(
        "--config",
        default=os.path.join(ROOT, "infra", "aws_local", "example.toml"),
        help="the watcher's TOML configuration, stored as the configuration secret",
    )
    p.add_argument("--bin-dir", required=True, help="folder of the api, timer, ... binaries")
    p.add_argument("--port", type=int, default=3000, help="the HTTP API's port on 127.0.0.1")
    p.add_argument("--endpoint", required=True, help="the emulator's URL (AWS_ENDPOINT_URL)")
    p.add_argument(
        "--dynamodb-endpoint",
        help="an emulator for DynamoDB alone (AWS_ENDPOINT_URL_DYNAMODB; default: --endpoint)",
    )
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--stack-name", default="a2a-watcher-local")
    p.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="a template parameter (default: its Default; WatcherConfigSecret: STACK-config)",
    )
    p.add_argument(
        "--visibility-timeout-cap", type=int, metavar="SECONDS",
        help="cap every queue's VisibilityTimeout (tests of crashes: a record held by a dead "
        "instance comes back after SECONDS, not the template's minutes), a function's "
        "SENDER_LEASE_SECONDS to SECONDS - 1, which must stay below it, and that function's "
        "timeout below its lease, as on AWS",
    )
    p.add_argument(
        "--rate-cap", type=int, metavar="SECONDS",
        help="fire every rate() or cron() schedule (each sweep duty) at least every SECONDS, not "
        "the template's 1 or 5 minutes (tests of what the sweep does: card re-reads, probes, following)",
    )
    p.add_argument(
        "--faults", metavar="SEED[:SPEC]",
        help="inject faults as AWS makes them, seeded: throttles, 500s and 503s, transaction "
        "conflicts and lost answers in every emulator, and function instances killed "
        "mid-invocation (docs/howto/aws-local.md, \"Faults\"; SPEC: aws_local/faults.py)",
    )
    p.add_argument(
        "--log", default="-", metavar="FILE",
        help="where the stack's and the functions' lines go: FILE (appended), or - for standard "
        "output (the default here; infra/aws-local.sh gives target/aws-local.log). The ready "
        "banner, errors and the stop are printed on standard output either way",
    )
    p.add_argument(
        "--iam", choices=("on", "off"),
        help="evaluate every call a function makes against its role in the template "
        "(docs/howto/aws-local.md, \"IAM on the local stack\"); default: on when the "
        "evaluator is installed (bash infra/iam.sh), else off, saying so",
    )
    p.add_argument(
        "--scale", type=scale.scale_of, default=os.environ.get("A2A_AWS_SCALE", "1"),
        metavar="K",
        help="AWS's quotas and partition limits divided by K (default 1, or A2A_AWS_SCALE): "
        "the emulators' limits part, Lambda's concurrency and Scheduler's invocation rate "
        "(docs/howto/aws-local.md, \"Limits and the scale factor\")",
    )
    p.add_argument(
        "--api-throttle", choices=("on", "off"), default="off",
        help="the HTTP API's stage throttle: each route's requests beyond the template's "
        "DefaultRouteSettings (ApiThrottleRate, ApiThrottleBurst), or its own RouteSettings entry "
        "(FactThrottle..., PushThrottle..., OperatorThrottle..., AnonymousThrottle...), divided by "
        "--scale K, are "
        "answered 429 as API Gateway answers them (default off: the test suite's clients read a "
        "429 as the functions' own, with Retry-After; docs/howto/aws-local.md, \"Limits and the "
        "scale factor\")",
    )
    p.add_argument(
        "--cold-start-ms", type=int, default=0, metavar="MS",
        help="what a new Lambda execution environment's cold start costs before its first "
        "invocation, beyond the binary's own start (default 0)",
    )
    p.add_argument(
        "--transaction-window-ms", type=float, metavar="MS",
        help="how long a DynamoDB transaction holds its items after it applied (the limits "
        "part's default: 25)",
    )
    p.add_argument(
        "--customer-key", action="store_true",
        help="make a symmetric KMS key in the emulator and deploy with the template's KmsKeyArn "
        "set to its ARN: the tables, queues and topics are then under the customer's key, and "
        "with IAM on each role's calls need its KMS grants (docs/howto/aws-local.md, \"IAM on "
        "the local stack\"; docs/security.md, \"Encryption at rest\")",
    )
    p.add_argument(
        "--stop-moto-port", type=int, action="append", default=[],
        help="stop the emulator on this port (infra/moto.sh stop) when done; may be repeated",
    )
    return p.parse_args(argv)


def service_endpoints(args):
    """Each service's emulator URL: `--endpoint`, DynamoDB's `--dynamodb-endpoint` when given."""
    endpoints = {n: args.endpoint for n in ("dynamodb", "sqs", "scheduler", "secretsmanager")}
    if args.dynamodb_endpoint:
        endpoints["dynamodb"] = args.dynamodb_endpoint
    return endpoints


def make_resources(stack, clients, config_text, visibility_cap=None):
    """Every stored resource; ones an earlier run left in the same emulator are kept."""
    resources.make_tables(stack, clients["dynamodb"])
    resources.make_queues(stack, clients["sqs"], visibility_cap)
    resources.make_schedules(stack, clients["scheduler"])
    resources.put_secret(clients["secretsmanager"], stack.params["WatcherConfigSecret"], config_text)


def function_env(stack, lid, base):
    """The environment `template.yaml` gives function `lid` (Globals, then its own), resolved
    to the local resources, over `base` (endpoint, credentials, region)."""
    env = dict(base)
    glob = stack.template.get("Globals", {}).get("Function", {})
    own = stack.resources[lid].get("Properties", {})
    for source in (glob, own):
        variables = ((source.get("Environment") or {}).get("Variables")) or {}
        for k, v in stack.resolve(variables).items():
            if v is not None:
                env[k] = str(v)
    return env


def capped_lease(env, visibility_cap):
    """`env` with SENDER_LEASE_SECONDS below `visibility_cap` when a cap is given: a claim must
    end before its message comes back (infra/template-timeouts.py checks the template's own)."""
    if visibility_cap is not None and "SENDER_LEASE_SECONDS" in env:
        env["SENDER_LEASE_SECONDS"] = str(
            max(1, min(int(env["SENDER_LEASE_SECONDS"]), visibility_cap - 1))
        )
    return env


def capped_timeout(env, timeout, visibility_cap):
    """`timeout` (seconds) below the function's capped send lease when a cap is given: on AWS
    the function's timeout keeps a live send under its lease (infra/template-timeouts.py), so a
    second submitter never sends while the first still waits on the agent; the cap shortens
    the lease, and the timeout goes with it. A function without a lease keeps its timeout."""
    if visibility_cap is not None and "SENDER_LEASE_SECONDS" in env:
        return max(1, min(timeout, int(env["SENDER_LEASE_SECONDS"]) - 1))
    return timeout


def max_concurrency(stack, lid, k=1):
    """How many invocations of function `lid` run at once: the most batches any event source
    mapping feeding it runs at once at scale K (`triggers.concurrency_of`), else 1."""
    from .triggers import _function_lid, concurrency_of

    most = 1
    for _, props in stack.of_type("AWS::Lambda::EventSourceMapping"):
        props = stack.resolve(props)
        if _function_lid(stack, props) == lid:
            most = max(most, concurrency_of(props, k))
    return most


def iam_wanted(args):
    """(on, why-not): whether IAM is enforced (`--iam`, else whether the evaluator is
    installed), and the reason when it is not. `--iam on` without the evaluator is an error."""
    from aws_model.iam import evaluator_missing

    missing = evaluator_missing()
    if args.iam == "off":
        return False, "--iam off"
    if missing:
        if args.iam == "on":
            raise ValueError(f"--iam on: {missing}")
        return False, missing
    return True, None


def record_iam_skip(why):
    """Appends `aws-local IAM: why` to A2A_SKIPPED_LOG (tests/common/skip.rs) once per reason,
    so the test run's summary says the stack ran without IAM."""
    path = os.environ.get("A2A_SKIPPED_LOG")
    if not path:
        return
    line = f"aws-local (IAM not enforced): {why}\n"
    try:
        with open(path, "a+", encoding="utf-8") as f:
            f.seek(0)
            if line not in f.read():
                f.write(line)
    except OSError:
        pass


def enforce_iam(args, stack, endpoints):
    """Sets up the iam part of every emulator the stack uses with the template's roles; the
    roles (`roles.build`), or None when IAM is off (said in the log, and recorded as a skip
    when it is off because the evaluator is missing)."""
    on, why = iam_wanted(args)
    if not on:
        say(f"IAM not enforced: {why}")
        if args.iam != "off":
            record_iam_skip(why)
        return None
    built = iam_roles.build(stack)
    settings = iam_roles.iam_settings(stack, built, os.environ.get("A2A_IAM_DECISIONS") or None)
    for url in sorted(set(endpoints.values())):
        iam_roles.post_model(url, "iam", settings)
    log(f"IAM enforced for {len(built)} roles of the template "
        f"({', '.join(sorted(built))}) at {', '.join(sorted(set(endpoints.values())))}")
    return built


def setting(stack, lid, key, default):
    own = stack.resources[lid].get("Properties", {})
    glob = stack.template.get("Globals", {}).get("Function", {})
    return stack.resolve(own.get(key, glob.get(key, default)))


def ready_banner(url, config, emulator=None, log_path=None):
    """The lines printed once the stack is up, the ready line last: the API URL, each party's
    route and token, the emulator, where the log is, and how to stop."""
    rule = "=" * 78
    lines = ["", rule, "a2a-watcher, the AWS shape on this machine: ready", f"API URL: {url}"]
    for a in config.get("agents", []):
        lines.append(f"  agent {a['id']}: push {url}/v1/agents/{a['id']}/push  "
                     f"X-A2A-Notification-Token: {a.get('push_token', '')}")
    for s in config.get("sources", []):
        lines.append(f"  source {s['id']}: Authorization: Bearer {s.get('token', '')}")
    for o in config.get("operators", []):
        lines.append(f"  operator {o['id']}: Authorization: Bearer {o.get('token', '')}")
    for t in config.get("teachers", []):
        lines.append(f"  teacher {t['id']}: Authorization: Bearer {t.get('token', '')}")
    if emulator:
        lines.append(f"Emulator: {emulator}")
    if log_path:
        lines.append(f"Log: {log_path} (every function's lines; tail -f to follow)")
    lines.append("Stop: Ctrl-C stops everything it started")
    lines.append(rule)
    lines.append(f"[aws-local] ready at {url} (Ctrl-C stops everything)")
    return lines


def print_ready(url, config, emulator=None):
    """Prints the ready banner on standard output, the last thing the start prints (the log
    file, when there is one, gets it too)."""
    lines = ready_banner(url, config, emulator, LOG["path"])
    with LOG_LOCK:
        if LOG["path"] is not None:
            print("\n".join(lines), file=log_stream(), flush=True)
        print("\n".join(lines), flush=True)


def main(argv):
    args = parse_args(argv)
    try:
        use_log(args.log)
        run(args)
    except (OSError, ValueError, KeyError, yaml.YAMLError, BotoCoreError, ClientError) as e:
        # Bad input (a missing file, a template or configuration that does not read, an
        # emulator that refuses a resource): one clear line, no traceback.
        say(f"error: {type(e).__name__}: {e}")
        sys.exit(1)
    finally:
        for port in args.stop_moto_port:
            env = dict(os.environ, MOTO_PORT=str(port))
            subprocess.run(["bash", os.path.join(ROOT, "infra", "moto.sh"), "stop"], env=env,
                           check=False,
                           stdout=None if LOG["path"] is None else LOG["stream"],
                           stderr=None if LOG["path"] is None else subprocess.STDOUT)
    say("stopped")


def run(args):
    with open(args.config, encoding="utf-8") as f:
        config_text = f.read()
    try:
        config = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"--config {args.config} is not TOML: {e}") from e
    params = {"WatcherConfigSecret": f"{args.stack_name}-config"}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param {item}: expected NAME=VALUE")
        params[name] = value
    if args.customer_key:
        params["KmsKeyArn"] = customer_key(args)
    stack = Stack(load(args.template), args.stack_name, args.region, params)

    creds = {
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
    }
    session = boto3.session.Session(
        aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
        region_name=args.region,
    )
    endpoints = service_endpoints(args)
    faults = local_faults.Faults.from_flag(args.faults, log)  # before the clients: retries
    clients = {n: session.client(n, endpoint_url=url) for n, url in endpoints.items()}
    make_resources(stack, clients, config_text, args.visibility_timeout_cap)
    where = args.endpoint
    if endpoints["dynamodb"] != args.endpoint:
        where += f" (DynamoDB at {endpoints['dynamodb']})"
    log(f"resources of {args.template} made at {where}")
    roles = enforce_iam(args, stack, endpoints)
    if faults is not None:
        faults.configure(endpoints)

    base = dict(creds)
    if endpoints["dynamodb"] != args.endpoint:
        base["AWS_ENDPOINT_URL_DYNAMODB"] = endpoints["dynamodb"]
    base.update({
        "AWS_ENDPOINT_URL": args.endpoint,
        "AWS_REGION": args.region,
        "AWS_DEFAULT_REGION": args.region,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    })
    for name in ("RUST_BACKTRACE", "A2A_NOTIFY_SETTLE_SECS"):
        if name in os.environ:
            base[name] = os.environ[name]
    functions = {}
    for lid, _ in stack.of_type("AWS::Serverless::Function"):
        meta = stack.resources[lid].get("Metadata", {})
        binary = os.path.join(args.bin_dir, meta["BuildProperties"]["Binary"])
        if not os.access(binary, os.X_OK):
            raise ValueError(f"{binary} is not built (bash infra/aws-local.sh builds it)")
        env = capped_lease(function_env(stack, lid, base), args.visibility_timeout_cap)
        role = iam_roles.role_of_function(roles, lid) if roles else None
        if role is not None:
            env.update(role.env())  # its execution role's credentials, as Lambda gives them
        functions[lid] = Function(
            name=meta["BuildProperties"]["Binary"],
            binary=binary,
            env=env,
            timeout=capped_timeout(
                env, int(setting(stack, lid, "Timeout", 3)), args.visibility_timeout_cap
            ),
            memory=int(setting(stack, lid, "MemorySize", 128)),
            arn=stack.arn(lid),
            log_stream=log_stream() if LOG["path"] is not None else None,
            instances=max_concurrency(stack, lid, args.scale),
        )

    scale.configure(args.scale, endpoints, stack, functions, args.cold_start_ms,
                    args.transaction_window_ms, log, api_throttle=args.api_throttle == "on")
    if faults is not None:
        faults.attach(functions)
    stopping = threading.Event()
    parts = []

    def stop(*_):
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        parts.extend(functions.values())
        for fn in functions.values():
            fn.start()
        gateway = Gateway(args.port, routes_of(stack), functions, log)
        gateway.start()
        scheduler = Scheduler(
            stack, clients["scheduler"], clients["sqs"], functions, log, rate_cap=args.rate_cap
        )
        if roles:
            scheduler.as_role = lambda arn: _as_role(roles, arn, args, session)
        scheduler.invocation_rate = scale.invocation_rate(args.scale)

        # SIGUSR1: every recurring schedule at its own period, as deployed (the sweep's duties
        # every 1 and 5 minutes); SIGUSR2: back to `--rate-cap`. The suite's measurements of
        # a lane's pace send SIGUSR1 for their run: the capped duties (every 5 s) put 60 times
        # AWS's sweep load on an emulator that serves one request at a time.
        def as_deployed(*_):
            scheduler.rate_cap = None
            scheduler.next_rate.clear()
            log("recurring schedules at their own periods (as deployed)")

        def capped(*_):
            scheduler.rate_cap = args.rate_cap
            scheduler.next_rate.clear()
            log(f"recurring schedules capped at {args.rate_cap} s")

        signal.signal(signal.SIGUSR1, as_deployed)
        signal.signal(signal.SIGUSR2, capped)
        scheduler.start()
        parts.append(scheduler)
        for lid, props in stack.of_type("AWS::Lambda::EventSourceMapping"):
            props = stack.resolve(props)
            sqs = clients["sqs"]
            if roles:
                # Lambda's poller receives, deletes and reads attributes as the function's
                # execution role; it reads the queue's attributes as it when the mapping is made.
                from .triggers import _function_lid

                role = iam_roles.role_of_function(roles, _function_lid(stack, props))
                sqs = _client_as(role, "sqs", endpoints["sqs"], args.region)
                queue = stack.queue_urls[stack.lid_by_arn(props["EventSourceArn"])]
                try:
                    sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])
                except ClientError as e:
                    say(f"{lid}: the event source cannot read its queue as {role.principal}: {e}")
            source = QueueSource(stack, sqs, lid, props, functions, log, k=args.scale)
            source.start()
            parts.append(source)
        # Ready once every function has asked for its first invocation (its cold start done).
        deadline = time.time() + 120
        for fn in functions.values():
            while not fn.ready.wait(0.2) and not stopping.is_set():
                if time.time() > deadline:
                    say(f"{fn.name} has not finished its cold start after 120 s; see its log")
                    break
        host, port = gateway.server_address
        if not stopping.is_set():
            print_ready(f"http://{host}:{port}", config, where)
        stopping.wait()
        say("stopping")
        scale.report(endpoints, say)
        if faults is not None:
            faults.report()
        gateway.shutdown()
        gateway.server_close()
    finally:
        # The schedules and event sources first, then the functions they invoke: an invocation
        # cut short by the stop is the stop's, not a failure to report.
        for part in reversed(parts):
            part.stop()


def customer_key(args):
    """`--customer-key`: the ARN of a symmetric encryption key made in the emulator at
    `--endpoint` as the deployer, with the default key policy (the account's IAM policies
    decide its use), as a customer makes the key KmsKeyArn names before deploying."""
    kms = boto3.session.Session(
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
        region_name=args.region,
    ).client("kms", endpoint_url=args.endpoint)
    arn = kms.create_key(Description=f"{args.stack_name}: the customer's key (KmsKeyArn)",
                         KeyUsage="ENCRYPT_DECRYPT",
                         KeySpec="SYMMETRIC_DEFAULT")["KeyMetadata"]["Arn"]
    log(f"customer key made: KmsKeyArn={arn}")
    return arn


def _client_as(role, service, endpoint, region):
    """A boto3 client signing with `role`'s credentials."""
    return boto3.session.Session(
        aws_access_key_id=role.access_key, aws_secret_access_key=role.secret_key,
        aws_session_token=role.session_token, region_name=region,
    ).client(service, endpoint_url=endpoint)


def _as_role(roles, role_arn, args, session):
    """The Scheduler stand-in's (may, sqs) acting as `role_arn`: decisions asked of the
    emulator's iam part, and an SQS client with the role's credentials. A role that is not the
    template's is refused every action, as Scheduler cannot assume it."""
    for role in roles.values():
        if role.arn == role_arn:
            return (iam_roles.checker(args.endpoint, role.arn),
                    _client_as(role, "sqs", args.endpoint, args.region))
    refused = (False, f"{role_arn} is no role of the stack")
    return ((lambda action, resource, context=None: refused),
            session.client("sqs", endpoint_url=args.endpoint))


if __name__ == "__main__":
    main(sys.argv[1:])
