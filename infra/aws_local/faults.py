"""Faults on the local stack (`--faults SEED[:SPEC]`): the emulators' seeded fault injector
(infra/aws_model/faults.py: throttles, 500s and 503s, transaction conflicts, writes applied with
their answer lost), and a seeded killer of function instances mid-invocation.

SPEC is a comma-separated list of `KEY=VALUE`:

- `SERVICE.KIND=RATE`: the share of SERVICE's calls (dynamodb, sqs, scheduler,
  secretsmanager) that get fault KIND (throttle, error, unavailable, conflict, lost; see
  aws_model/faults.py for which apply where and how each is answered);
- `kill=RATE`: the share of the invocations of the killed functions whose instance is killed
  (SIGKILL) partway, at a delay drawn in [0, `kill.within`] seconds after the instance took the
  invocation; one that ends before its delay is not killed (counted as `outlived`);
- `kill.functions=NAME+NAME`: the functions whose instances are killed (binary names; default
  `submitter+timer`: killing `api` would answer the client API Gateway's own 500);
- `kill.within=SECONDS`: the longest delay (default 1.0).

Without SPEC (`--faults 7`), `DEFAULT_RATES` and `DEFAULT_KILL` apply; with one, only what it
names (every other rate 0). The same SEED gives the same sequence of decisions: per emulator,
for the calls in the order it serves them; for the killer, for the invocations in the order the
instances take them (which threads decide, so a run is reproduced in its faults' kinds and
shares, not call for call).
"""

import json
import os
import random
import threading
import urllib.error
import urllib.request

# Rates for `--faults SEED` alone: a few percent of every service's calls, every kind at once.
DEFAULT_RATES = {
    "dynamodb": {"throttle": 0.05, "error": 0.02, "unavailable": 0.01, "conflict": 0.02,
                 "lost": 0.02},
    "sqs": {"throttle": 0.05, "error": 0.02, "unavailable": 0.01, "lost": 0.02},
    "scheduler": {"throttle": 0.05, "error": 0.02, "lost": 0.02},
    "secretsmanager": {"throttle": 0.05, "error": 0.02},
}
DEFAULT_KILL = {"rate": 0.05, "functions": ["submitter", "timer"], "within": 1.0}


def parse(text):
    """`(model settings, killer settings)` of `--faults SEED[:SPEC]`; ValueError saying what is
    wrong. The model's settings are the JSON `POST /_model/faults` takes."""
    seed_text, sep, spec = text.partition(":")
    try:
        seed = int(seed_text)
    except ValueError:
        raise ValueError(f"--faults {text}: SEED must be an integer") from None
    if not sep:
        rates = {s: dict(k) for s, k in DEFAULT_RATES.items()}
        kill = dict(DEFAULT_KILL)
    else:
        rates, kill = {}, {"rate": 0.0, "functions": list(DEFAULT_KILL["functions"]),
                           "within": DEFAULT_KILL["within"]}
        for item in filter(None, (p.strip() for p in spec.split(","))):
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"--faults: {item!r} is not KEY=VALUE")
            key = key.strip()
            if key == "kill.functions":
                kill["functions"] = [f for f in value.split("+") if f]
                continue
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"--faults: {key}={value!r} is not a number") from None
            if key == "kill":
                kill["rate"] = number
            elif key == "kill.within":
                kill["within"] = number
            elif "." in key:
                service, kind = key.split(".", 1)
                rates.setdefault(service, {})[kind] = number
            else:
                raise ValueError(f"--faults: unknown key {key!r} (SERVICE.KIND, kill, "
                                 "kill.functions, kill.within)")
    if not 0 <= kill["rate"] <= 1 or kill["within"] < 0:
        raise ValueError("--faults: kill must be in [0, 1] and kill.within at least 0")
    settings = {"seed": seed, "rates": rates}
    # The model checks the rates itself (services, kinds, sums); its message is the one to show.
    from aws_model.faults import _read_settings

    _read_settings(settings)
    return settings, dict(kill, seed=seed)


def configure_emulators(urls, settings, timeout=10):
    """`POST /_model/faults` with `settings` to each emulator in `urls`; their states.
    ValueError when one refuses (or has no fault model: an emulator started before it)."""
    states = {}
    for url in urls:
        req = urllib.request.Request(
            url.rstrip("/") + "/_model/faults", data=json.dumps(settings).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                states[url] = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise ValueError(f"the emulator at {url} refused the fault settings "
                             f"({e.code}): {e.read()[:300].decode(errors='replace')}") from None
    return states


def read_states(urls, timeout=5):
    """`GET /_model/faults` of each emulator: url -> state (None when it does not answer)."""
    states = {}
    for url in urls:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/_model/faults", timeout=timeout) as r:
                states[url] = json.loads(r.read() or b"{}")
        except (OSError, ValueError):
            states[url] = None
    return states


def standin_config():
    """The botocore configuration of the stand-ins' clients while faults are on: the SDK's
    standard retry mode with 10 attempts. The stand-ins are AWS's own pollers and Scheduler,
    which retry a throttle or a 500 themselves; without it boto3's legacy mode would not retry
    SQS's `RequestThrottled`, and a stand-in's failed delete would hand a batch back to the queue
    where AWS's poller would have retried the delete."""
    from botocore.config import Config

    return Config(retries={"mode": "standard", "total_max_attempts": 10})


class Killer:
    """Kills a seeded share of the invocations of the named functions partway: installed as each
    such function's `on_handed(instance, invocation)`, which the local Runtime API calls when
    an instance takes an invocation."""

    def __init__(self, seed, rate, functions, within, log):
        self.random = random.Random(seed)
        self.rate = rate
        self.names = frozenset(functions)
        self.within = within
        self.log = log
        self.lock = threading.Lock()
        self.counts = {"considered": 0, "chosen": 0, "killed": 0, "outlived": 0}

    def attach(self, functions):
        """Hooks every function of `functions` (logical id -> runtime.Function) named in
        `functions=`; the names it does not know are an error (a typo would kill nothing)."""
        known = {fn.name for fn in functions.values()}
        unknown = self.names - known
        if unknown:
            raise ValueError(f"--faults kill.functions: no function {sorted(unknown)} "
                             f"(functions: {sorted(known)})")
        for fn in functions.values():
            if fn.name in self.names:
                fn.on_handed = self.handed

    def handed(self, instance, inv):
        with self.lock:
            self.counts["considered"] += 1
            draw = self.random.random()
            delay = self.random.uniform(0, self.within)
            if draw >= self.rate:
                return
            self.counts["chosen"] += 1
        threading.Thread(target=self._kill_later, args=(instance, inv, delay),
                         daemon=True).start()

    def _kill_later(self, instance, inv, delay):
        if inv.done.wait(delay) or instance.in_flight.get(inv.request_id) is not inv:
            with self.lock:
                self.counts["outlived"] += 1
            return
        fn = instance.function
        if fn.stopping.is_set():
            return
        with self.lock:
            self.counts["killed"] += 1
        fn.log(f"fault: killing instance {instance.number} {delay:.2f} s into invocation "
               f"{inv.request_id} ({inv.kind})")
        instance.kill()

    def summary(self):
        with self.lock:
            c = dict(self.counts)
        return (f"killer: {c['killed']} instances killed mid-invocation ({c['chosen']} chosen of "
                f"{c['considered']} invocations, {c['outlived']} ended before their delay)")


class Faults:
    """What `--faults SEED[:SPEC]` sets up in the stack: made from the flag before the stack's
    clients (so the stand-ins retry as AWS's services do), then `configure` the emulators once
    the resources are made, `attach` the killer to the functions, `report` at the stop."""

    def __init__(self, flag, log):
        self.settings, self.kill = parse(flag)
        self.log = log
        self.urls = []
        self.killer = None
        # Read by botocore for every client this process makes from now on (the stand-ins'
        # own and the per-role ones alike); the functions' environments do not inherit it.
        os.environ["AWS_RETRY_MODE"] = "standard"
        os.environ["AWS_MAX_ATTEMPTS"] = "10"

    @classmethod
    def from_flag(cls, flag, log):
        """The stack's faults, or None without `--faults`."""
        return None if flag is None else cls(flag, log)

    def configure(self, endpoints):
        """Sets the fault model of every emulator in `endpoints` (service -> URL)."""
        self.urls = sorted(set(endpoints.values()))
        configure_emulators(self.urls, self.settings)
        rates = "; ".join(f"{s} " + ", ".join(f"{k} {r:g}" for k, r in kinds.items())
                          for s, kinds in self.settings["rates"].items() if kinds)
        self.log(f"faults (seed {self.settings['seed']}) at {', '.join(self.urls)}: "
                 f"{rates or 'none'}; killing {self.kill['rate']:g} of "
                 f"{'+'.join(self.kill['functions'])} invocations within "
                 f"{self.kill['within']:g} s")

    def attach(self, functions):
        """The killer on `functions` (logical id -> runtime.Function), when `kill` > 0."""
        if self.kill["rate"] > 0:
            self.killer = Killer(self.kill["seed"], self.kill["rate"], self.kill["functions"],
                                 self.kill["within"], self.log)
            self.killer.attach(functions)

    def report(self):
        """Logs what was injected: each emulator's totals, and the killer's counts."""
        for url, state in read_states(self.urls).items():
            if state is not None:
                self.log(f"faults at {url}: {json.dumps(state.get('totals', {}))} "
                         f"of {state.get('considered', 0)} calls")
        if self.killer is not None:
            self.log(self.killer.summary())
