"""A local Lambda: each function is its own process (the real binary), fed through a local
Lambda Runtime API (`/2018-06-01/runtime/invocation/next`, `/invocation/{id}/response`,
`/invocation/{id}/error`, `/init/error`), as `lambda_runtime` speaks it over
`AWS_LAMBDA_RUNTIME_API`.

A function runs `instances` processes (one by default; a function fed by an SQS event source
as many as that source's batches at once: `ScalingConfig.MaximumConcurrency`, else five), each with a Runtime API of its own, taking
invocations from one queue in arrival order, one at a time each, as Lambda's execution
environments do. An instance that exits (a crash, a kill, an init error) fails the invocation it
held and is started again, as Lambda starts a new execution environment; an invocation past the
function's `Timeout` kills its instance. Every line a process prints is logged with its name.
"""

import json
import queue
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime"


class InvocationError(Exception):
    """The function answered with an error, timed out, or its instance died."""


class Throttled(InvocationError):
    """Lambda refused the invocation (TooManyRequestsException, 429): the account's
    concurrency, or the function's reserved concurrency, is all in use (`CONCURRENCY`)."""


class Concurrency:
    """Lambda's concurrency over the stack's functions (`--scale`, aws_local/scale.py): at most
    `account` invocations in flight at once (None: unbounded); a function with reserved
    concurrency has that many of its own, the others share what is left. An invocation beyond
    is `Throttled`. In flight counts from the call to its answer, waiting for a local instance
    included: on AWS each would have an execution environment of its own. An invocation in
    flight beyond the environments the function had so far makes a new one, which costs
    `cold_start` seconds first (an instance that died takes its environment with it)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.account = None
        self.cold_start = 0.0
        self.reserved = {}  # function name -> its reserved concurrency
        self.running = {}  # function name -> invocations in flight
        self.warm = {}  # function name -> execution environments it has
        self.stats = {}  # function name -> counts
        self.peak = 0
        self.since = time.monotonic()
        self.first = None  # (function, seconds after configure) of the first throttle

    def configure(self, account=None, cold_start=0.0, reserved=None):
        with self.lock:
            self.account, self.cold_start = account, cold_start
            self.reserved = dict(reserved or {})
            self.since, self.first = time.monotonic(), None

    def enter(self, name):
        """Takes a place for one invocation of function `name`; True when it needs a new
        environment (a cold start). Raises Throttled when there is none."""
        with self.lock:
            s = self.stats.setdefault(
                name, {"invocations": 0, "throttles": 0, "cold_starts": 0, "peak": 0})
            s["invocations"] += 1
            running = self.running.get(name, 0)
            if name in self.reserved:
                full = running >= self.reserved[name]
            elif self.account is not None:
                shared = sum(n for f, n in self.running.items() if f not in self.reserved)
                full = shared >= self.account - sum(self.reserved.values())
            else:
                full = False
            if full:
                s["throttles"] += 1
                if self.first is None:
                    self.first = (name, round(time.monotonic() - self.since, 3))
                raise Throttled(f"TooManyRequestsException: Rate Exceeded. ({name}: "
                                f"{running} in flight, account {self.account})")
            self.running[name] = running + 1
            self.peak = max(self.peak, sum(self.running.values()))
            s["peak"] = max(s["peak"], running + 1)
            cold = running + 1 > self.warm.get(name, 0)
            if cold:
                self.warm[name] = running + 1
                s["cold_starts"] += 1
            return cold

    def leave(self, name):
        with self.lock:
            self.running[name] = max(0, self.running.get(name, 0) - 1)

    def lost(self, name):
        """An instance of `name` died: its environment is gone."""
        with self.lock:
            self.warm[name] = max(0, self.warm.get(name, 0) - 1)

    def report(self):
        with self.lock:
            return {"account": self.account, "peak": self.peak, "first_throttle": self.first,
                    "functions": {n: dict(s) for n, s in self.stats.items()}}


CONCURRENCY = Concurrency()


def event_kind(payload):
    """What an invocation's event is, for its REPORT line: `POST /v1/facts` for an HTTP API
    event (the route's method and path), `sqs:{queue}` for an SQS batch, `schedule` otherwise."""
    if isinstance(payload, dict):
        if "routeKey" in payload:
            return payload["routeKey"]
        records = payload.get("Records") or []
        if records and records[0].get("eventSource") == "aws:sqs":
            return "sqs:" + records[0].get("eventSourceARN", "").rsplit(":", 1)[-1]
    return "schedule"


class _Invocation:
    def __init__(self, payload, timeout):
        self.request_id = str(uuid.uuid4())
        self.kind = event_kind(payload)
        self.handed_at = None  # time.monotonic() when an instance took it
        self.body = json.dumps(payload).encode()
        self.timeout = timeout
        self.deadline_ms = 0
        self.instance = None  # the _Instance running it
        self.done = threading.Event()
        self.result = None
        self.error = None

    def finish(self, result=None, error=None):
        if not self.done.is_set():
            self.result, self.error = result, error
            self.done.set()


class _RuntimeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, function, instance):
        super().__init__(("127.0.0.1", 0), _RuntimeHandler)
        self.function = function
        self.instance = instance


class _RuntimeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # the function's own log says enough
        pass

    def _answer(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):  # noqa: N802 (http.server's name)
        fn = self.server.function
        instance = self.server.instance
        if self.path != PREFIX + "/invocation/next":
            self._answer(404, b'{"errorMessage":"no such route"}')
            return
        fn.ready.set()  # an instance finished its cold start
        while not fn.stopping.is_set():
            try:
                inv = fn.pending.get(timeout=0.5)
            except queue.Empty:
                continue
            inv.deadline_ms = int((time.time() + inv.timeout) * 1000)
            inv.handed_at = time.monotonic()
            inv.instance = instance
            instance.in_flight[inv.request_id] = inv
            # `--faults`: the killer (aws_local/faults.py) may kill this instance partway.
            on_handed = getattr(fn, "on_handed", None)
            if on_handed is not None:
                on_handed(instance, inv)
            try:
                self._answer(
                    200,
                    inv.body,
                    {
                        "Lambda-Runtime-Aws-Request-Id": inv.request_id,
                        "Lambda-Runtime-Deadline-Ms": str(inv.deadline_ms),
                        "Lambda-Runtime-Invoked-Function-Arn": fn.arn,
                        "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000",
                    },
                )
            except OSError:
                # The instance went away while waiting: hand the event to the next one.
                instance.in_flight.pop(inv.request_id, None)
                inv.instance = None
                fn.pending.put(inv)
                return
            return

    def do_POST(self):  # noqa: N802
        fn = self.server.function
        instance = self.server.instance
        body = self._read_body()
        path = self.path
        if path == PREFIX + "/init/error":
            fn.log(f"init error: {body.decode(errors='replace')}")
            self._answer(202, b'{"status":"OK"}')
            return
        parts = path[len(PREFIX) :].strip("/").split("/")
        if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            inv = instance.in_flight.pop(parts[1], None)
            if inv is None:
                self._answer(400, b'{"errorMessage":"unknown request id"}')
                return
            if inv.handed_at is not None:
                # As Lambda's own REPORT line, with the event's kind for the local measurement
                # of durations (docs/costs.md, "Durations").
                ms = (time.monotonic() - inv.handed_at) * 1000
                fn.log(
                    f"REPORT RequestId: {inv.request_id} Duration: {ms:.2f} ms "
                    f"Billed Duration: {max(1, int(ms + 0.999))} ms Event: {inv.kind}"
                )
            if parts[2] == "response":
                inv.finish(result=body)
            else:
                inv.finish(error=body.decode(errors="replace"))
            self._answer(202, b'{"status":"OK"}')
            return
        self._answer(404, b'{"errorMessage":"no such route"}')


class _Instance:
    """One execution environment of a function: its process and its own Runtime API."""

    def __init__(self, function, number):
        self.function = function
        self.number = number
        self.in_flight = {}
        self.process = None
        self.server = _RuntimeServer(function, self)
        host, port = self.server.server_address
        self.env = dict(function.env)
        self.env["AWS_LAMBDA_RUNTIME_API"] = f"{host}:{port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def start(self):
        """Starts the process and the watchdog that starts it again when it exits."""
        self._spawn()
        threading.Thread(target=self._watch, daemon=True).start()

    def _spawn(self):
        fn = self.function
        with fn.spawning:
            if fn.stopping.is_set():
                return
            self.process = subprocess.Popen(
                _DIE_WITH_PARENT + [fn.binary],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C at the terminal reaches this program, which stops
                # the instances itself. No preexec_fn: a fork of this many-threaded program may
                # hold a lock another thread took (the import lock) and never reach exec, which
                # blocks Popen, and stop() behind it, for good; _DIE_WITH_PARENT does its work
                # in a process of its own instead.
                start_new_session=True,
            )
            fn.log(f"started (pid {self.process.pid})")
            out = self.process.stdout
            threading.Thread(target=fn._pump, args=(out,), daemon=True).start()

    def _watch(self):
        fn = self.function
        while not fn.stopping.is_set():
            proc = self.process
            if proc is None:
                return
            code = proc.wait()
            if fn.stopping.is_set():
                return
            fn.log(f"exited ({code}); starting a new instance")
            CONCURRENCY.lost(fn.name)
            for rid in list(self.in_flight):
                inv = self.in_flight.pop(rid, None)
                if inv:
                    inv.finish(error=f"the instance exited ({code}) during the invocation")
            time.sleep(0.5)
            self._spawn()

    def kill(self):
        proc = self.process
        if proc and proc.poll() is None:
            proc.kill()

    def stop(self):
        proc = self.process
        if proc and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.server.shutdown()
        self.server.server_close()


class Function:
    """One function: its instances (each a process behind its own Runtime API), and `invoke`.

    `env` is the function's whole environment (the template's variables resolved, the AWS
    endpoint and credentials); the Lambda variables are added here. `instances` is how many
    invocations may run at once.
    """

    def __init__(self, name, binary, env, timeout, memory, arn, log_stream=None, instances=1):
        self.name = name
        self.binary = binary
        self.timeout = timeout
        self.arn = arn
        self.pending = queue.Queue()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.spawning = threading.Lock()  # stop() never misses an instance being started
        self.log_stream = log_stream or sys.stdout
        self.env = dict(env)
        self.env.update(
            {
                "AWS_LAMBDA_FUNCTION_NAME": arn.rsplit(":", 1)[1],
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_TIMEOUT": str(timeout),
            }
        )
        self.instances = [_Instance(self, n) for n in range(max(1, int(instances)))]

    @property
    def process(self):
        """The first instance's process (the only one of a function with one instance)."""
        return self.instances[0].process

    def log(self, line):
        with _LOG_LOCK:
            print(f"[{self.name}] {line}", file=self.log_stream, flush=True)

    def start(self):
        """Starts every instance, each with a watchdog that starts it again when it exits."""
        for instance in self.instances:
            instance.start()

    def _pump(self, out):
        with out:
            for raw in iter(out.readline, b""):
                self.log(raw.decode(errors="replace").rstrip())

    def invoke(self, payload):
        """Runs the function on `payload` (JSON data) and returns its answer's bytes.

        Raises `Throttled` (an InvocationError) when Lambda's concurrency is in use
        (`CONCURRENCY`); a new environment's cold start is waited for first.
        """
        if CONCURRENCY.enter(self.name) and CONCURRENCY.cold_start > 0:
            time.sleep(CONCURRENCY.cold_start)
        try:
            return self._invoke(payload)
        finally:
            CONCURRENCY.leave(self.name)

    def _invoke(self, payload):
        """Runs the function on `payload` (JSON data) and returns its answer's bytes.

        Raises `InvocationError` on a function error, an exited instance, or a timeout.
        """
        inv = _Invocation(payload, self.timeout)
        self.pending.put(inv)
        # The wait for a free instance is not part of the function's timeout.
        while not inv.done.wait(0.2):
            if self.stopping.is_set():
                raise InvocationError("stopping")
            if inv.deadline_ms and time.time() * 1000 > inv.deadline_ms + 1000:
                self.log(f"invocation {inv.request_id} timed out after {self.timeout} s")
                inv.finish(error="timed out")
                instance = inv.instance
                if instance is not None:
                    instance.in_flight.pop(inv.request_id, None)
                    instance.kill()
        if inv.error is not None:
            raise InvocationError(inv.error)
        return inv.result

    def kill(self):
        """Kills every instance (each watchdog starts another)."""
        for instance in self.instances:
            instance.kill()

    def stop(self):
        """Stops the processes for good, and their Runtime APIs."""
        self.stopping.set()
        # An instance being started is waited for, a bounded time: stopping never hangs.
        if self.spawning.acquire(timeout=10):
            self.spawning.release()
        # Every instance is told at once, then each waited for (at most 5 s, then killed): a
        # function with many instances stops in the time of its slowest, not of their sum.
        for instance in self.instances:
            proc = instance.process
            if proc and proc.poll() is None:
                proc.terminate()
        for instance in self.instances:
            instance.stop()


_LOG_LOCK = threading.Lock()


# The instance dies with the thread that started it (Linux PR_SET_PDEATHSIG, kept across exec),
# so a killed aws-local leaves no instance behind: a fresh interpreter sets it and then becomes
# the function binary (exec keeps the pid the log names).
_DIE_WITH_PARENT = [
    sys.executable,
    "-S",
    "-c",
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, 9)\n"
    "except OSError:\n"
    "    pass\n"
    "os.execv(sys.argv[1], sys.argv[1:])",
]
