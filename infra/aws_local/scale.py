"""The scale factor K of the local stack (`--scale K`, docs/howto/aws-local.md, "Limits and the
scale factor"): AWS's quotas divided by K in every emulator the stack uses (the model's limits
part, infra/aws_model/limits.py) and in the stand-ins here (Lambda's concurrency,
runtime.CONCURRENCY; the SQS event sources' maximum concurrency, triggers.concurrency_of;
Scheduler's invocation rate, triggers.Scheduler; the HTTP API's stage throttle, when it is on,
gateway.THROTTLE).

The figures are docs/quotas.toml's (`lambda_concurrency`, `scheduler_invocations_per_second`),
each with its public source there.
"""

import argparse
import json
import math
import os
import tomllib
import urllib.error
import urllib.request

from .gateway import THROTTLE
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


def scaled(value, k):
    """A count `value` at scale K: value / K rounded up, at least 1. Up, not down: a function's
    reserve or a source's pollers at 1/K must stay able to run (20 / 100 is one poller, not
    none), as the account's concurrency does; the small error (at most one) is on the side of
    what AWS grants. (A hair is taken off before rounding so that 10 / 0.1 stays 100.)"""
    return max(1, math.ceil(value / k - 1e-9))


def stage_throttle(stack, k):
    """(rate a second, burst) of the HTTP API's stage throttle at scale K: the template's
    `HttpApi` `DefaultRouteSettings` (`ThrottlingRateLimit`, `ThrottlingBurstLimit`, parameters
    resolved), the rate / K and the burst / K rounded up, each at least 1. None when the
    template sets neither. Raises ValueError when one is not a number > 0."""
    for lid, props in stack.of_type("AWS::Serverless::HttpApi"):
        settings = stack.resolve((props or {}).get("DefaultRouteSettings") or {})
        rate, burst = settings.get("ThrottlingRateLimit"), settings.get("ThrottlingBurstLimit")
        if rate is None and burst is None:
            continue
        try:
            rate, burst = float(rate), float(burst)
        except (TypeError, ValueError):
            raise ValueError(f"{lid}: DefaultRouteSettings throttling {rate!r}, {burst!r} is not "
                             f"a rate and a burst") from None
        if not (rate > 0 and burst > 0):
            raise ValueError(f"{lid}: DefaultRouteSettings throttling must be above 0, not "
                             f"{rate:g} and {burst:g}")
        return max(1.0, rate / k), scaled(burst, k)
    return None


def route_throttles(stack, k):
    """{route key: (rate a second, burst)} of the HTTP API's `RouteSettings` at scale K, as
    `stage_throttle` scales the default: each route named there has a bucket of its own instead
    of the default route settings. Raises ValueError when a setting lacks a rate or a burst > 0
    (API Gateway would leave the missing one at the account's level, not the default's)."""
    out = {}
    for lid, props in stack.of_type("AWS::Serverless::HttpApi"):
        for key, setting in (stack.resolve((props or {}).get("RouteSettings") or {})).items():
            rate, burst = (setting or {}).get("ThrottlingRateLimit"), \
                (setting or {}).get("ThrottlingBurstLimit")
            try:
                rate, burst = float(rate), float(burst)
            except (TypeError, ValueError):
                raise ValueError(f"{lid}: RouteSettings {key!r} throttling {rate!r}, {burst!r} "
                                 f"is not a rate and a burst") from None
            if not (rate > 0 and burst > 0):
                raise ValueError(f"{lid}: RouteSettings {key!r} throttling must be above 0")
            out[key] = (max(1.0, rate / k), scaled(burst, k))
    return out


def invocation_rate(k):
    """Scheduler's invocations a second at scale K (its quota / K)."""
    return quota("scheduler_invocations_per_second", 1000) / k


def configure(k, endpoints, stack, functions, cold_start_ms=0, transaction_window_ms=None,
              log=print, api_throttle=False):
    """Sets K everywhere: the limits part of each emulator in `endpoints` (service -> URL),
    Lambda's concurrency (account 1,000 / K, a function's ReservedConcurrentExecutions / K, each
    rounded up, at least 1: `scaled`; a new environment's cold start `cold_start_ms`), the HTTP
    API's stage throttle when `api_throttle` (the template's DefaultRouteSettings, rate and burst
    / K, at least 1: `stage_throttle`, and each route of its RouteSettings likewise:
    `route_throttles`; otherwise off) and Scheduler's invocation rate,
    `invocation_rate(k)`, which the caller gives its Scheduler. The event sources divide their
    own concurrency (triggers.concurrency_of)."""
    settings = {"k": k}
    if transaction_window_ms is not None:
        settings["transaction_window_ms"] = transaction_window_ms
    for url in sorted(set(endpoints.values())):
        post(url, "limits", settings)
    account = scaled(quota("lambda_concurrency", 1000), k)
    reserved = {}
    for lid, props in stack.of_type("AWS::Serverless::Function"):
        value = stack.resolve((props or {}).get("ReservedConcurrentExecutions"))
        if value is not None and lid in functions:
            reserved[functions[lid].name] = scaled(int(value), k)
    CONCURRENCY.configure(account=account, cold_start=cold_start_ms / 1000.0, reserved=reserved)
    unreserved = account - sum(reserved.values())
    # Lambda refuses a reserve that leaves less than 100 unreserved (its developer guide,
    # "Configuring reserved concurrency"); said here rather than refused, so that a factor that
    # rounds the reserves up past it can still be run and seen.
    if unreserved < scaled(100, k):
        log(f"warning: the reserves {reserved} leave {unreserved} of the account's {account} "
            f"unreserved, below the {scaled(100, k)} Lambda keeps (100 at 1/{k:g}); AWS would "
            f"refuse this deployment")
    stage = stage_throttle(stack, k) if api_throttle else None
    if stage is not None:
        routes = route_throttles(stack, k)
        THROTTLE.configure(rate=stage[0], burst=stage[1], routes=routes)
        api = (f"the HTTP API's stage throttle {stage[0]:g} a second, burst {stage[1]:g}, each "
               f"route" + (f" but {len(routes)} with their own (RouteSettings: "
                           + ", ".join(f"{key} {r:g}/{b:g}" for key, (r, b) in sorted(routes.items()))
                           + ")" if routes else ""))
    else:
        THROTTLE.configure(rate=None)
        api = "the HTTP API's stage throttle off" + (
            " (the template sets none)" if api_throttle else "")
    rate = invocation_rate(k)
    log(f"limits at 1/{k:g} of AWS's in {', '.join(sorted(set(endpoints.values())))}; Lambda "
        f"concurrency {account} for the account"
        + (f" (reserved: {reserved}; {unreserved} unreserved)" if reserved else "")
        + f", cold start {cold_start_ms} ms; Scheduler {rate:g} invocations a second; {api}")


def report(endpoints, say):
    """Says, when the stack stops, what throttled: each emulator's refusals by kind and first
    refusal, Lambda's throttles and peak concurrency, and the HTTP API's 429s (its stage
    throttle's, when on)."""
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
    api = THROTTLE.report()
    if api["rate"] is not None:
        say(f"HTTP API: stage throttle {api['rate']:g} a second, burst {api['burst']:g}, each "
            f"route; throttled {api['throttled']} of {api['requests']} requests (429) "
            f"{api['by_route'] or ''}".rstrip())
