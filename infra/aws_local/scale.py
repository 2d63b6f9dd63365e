"""The scale factor K of the local stack (`--scale K`, docs/howto/aws-local.md, "Limits and the
scale factor"): AWS's quotas divided by K in every emulator the stack uses (the model's limits
part, infra/aws_model/limits.py) and in the stand-ins here (Lambda's concurrency,
runtime.CONCURRENCY; Scheduler's invocation rate, triggers.Scheduler).

The figures are docs/quotas.toml's (`lambda_concurrency`, `scheduler_invocations_per_second`),
each with its public source there.
"""

import argparse
import json
import os
import tomllib
import urllib.error
import urllib.request

from .runtime import CONCURRENCY

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quota(name, default):
    """docs/quotas.toml's `[quota]` figure `name` (`default` when the file lacks it)."""
    try:
        with open(os.path.join(ROOT, "docs", "quotas.toml"), "rb") as f:
            value = tomllib.load(f).get("quota", {}).get(name, default)
    except (OSError, tomllib.TOMLDecodeError):
        return default
    return value if isinstance(value, (int, float)) else default


def scale_of(text):
    """K from `--scale` (or A2A_AWS_SCALE): a number > 0 (argparse's error otherwise)."""
    try:
        k = float(text)
    except (TypeError, ValueError):
        k = None
    if k is None or not k > 0 or k == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, not {text!r}")
    return k


def post(url, part, settings):
    """POST /_model/PART at the emulator `url`; its answer (JSON). Raises OSError or ValueError
    when the emulator does not take it."""
    request = urllib.request.Request(
        url.rstrip("/") + f"/_model/{part}", data=json.dumps(settings).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise ValueError(f"{url} refused the {part} settings: {e.read().decode(errors='replace')}")


def get(url, part):
    with urllib.request.urlopen(url.rstrip("/") + f"/_model/{part}", timeout=10) as answer:
        return json.loads(answer.read() or b"{}")


def invocation_rate(k):
    """Scheduler's invocations a second at scale K (its quota / K)."""
    return quota("scheduler_invocations_per_second", 1000) / k


def configure(k, endpoints, stack, functions, cold_start_ms=0, transaction_window_ms=None,
              log=print):
    """Sets K everywhere: the limits part of each emulator in `endpoints` (service -> URL),
    Lambda's concurrency (account 1,000 / K, a function's ReservedConcurrentExecutions / K, at
    least 1 each; a new environment's cold start `cold_start_ms`) and Scheduler's invocation
    rate, `invocation_rate(k)`, which the caller gives its Scheduler)."""
    settings = {"k": k}
    if transaction_window_ms is not None:
        settings["transaction_window_ms"] = transaction_window_ms
    for url in sorted(set(endpoints.values())):
        post(url, "limits", settings)
    account = max(1, int(quota("lambda_concurrency", 1000) / k))
    reserved = {}
    for lid, props in stack.of_type("AWS::Serverless::Function"):
        value = stack.resolve((props or {}).get("ReservedConcurrentExecutions"))
        if value is not None and lid in functions:
            reserved[functions[lid].name] = max(1, int(int(value) / k))
    CONCURRENCY.configure(account=account, cold_start=cold_start_ms / 1000.0, reserved=reserved)
    rate = invocation_rate(k)
    log(f"limits at 1/{k:g} of AWS's in {', '.join(sorted(set(endpoints.values())))}; Lambda "
        f"concurrency {account} for the account"
        + (f" (reserved: {reserved})" if reserved else "")
        + f", cold start {cold_start_ms} ms; Scheduler {rate:g} invocations a second")


def report(endpoints, say):
    """Says, when the stack stops, what throttled: each emulator's refusals by kind and first
    refusal, and Lambda's throttles and peak concurrency."""
    for url in sorted(set(endpoints.values())):
        try:
            state = get(url, "limits")
        except (OSError, ValueError):
            continue
        if not state.get("configured"):
            continue
        say(f"limits at {url}: refusals {state['refusals']['by_kind'] or 'none'}; first "
            f"{state.get('first_refusal') or 'none'}")
    lam = CONCURRENCY.report()
    throttles = {n: s["throttles"] for n, s in lam["functions"].items() if s["throttles"]}
    say(f"Lambda: peak concurrency {lam['peak']} of {lam['account']}; throttles "
        f"{throttles or 'none'}; first {lam['first_throttle'] or 'none'}")
