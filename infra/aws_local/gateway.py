"""A local API Gateway HTTP API (payload format 2.0) in front of the local functions.

Routes are the template's `HttpApi` events (method or ANY, path with `{x}` and greedy `{x+}`).
As API Gateway does, the most specific route wins: a route with fewer path variables before one
with more, a greedy variable last, an exact method before ANY. The path is matched decoded, and
the event carries it decoded in `rawPath` and `pathParameters` (docs: the api function rebuilds
ids from `pathParameters`). An unmatched request is 404 `{"message":"Not Found"}`; a function
error is 500 `{"message":"Internal Server Error"}`, as API Gateway answers.

The stage throttle (`THROTTLE`, `StageThrottle`), when the stack turns it on (`--api-throttle`,
aws_local/scale.py), refuses a route's request beyond its token bucket with API Gateway's own 429
`{"message":"Too Many Requests"}` before any function runs.
"""

import base64
import json
import re
import threading
import time
import urllib.parse
import uuid
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .runtime import InvocationError


class TokenBucket:
    """API Gateway's throttle: a bucket of `burst` tokens, refilled at `rate` a second, one token
    a request; a request finding less than one token is refused ("Throttle requests to your HTTP
    APIs for better throughput in API Gateway": a token bucket, where a token counts for a
    request, https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html).
    It starts full. `clock` gives seconds (time.monotonic; a test's own)."""

    def __init__(self, rate, burst, clock=time.monotonic):
        self.rate = float(rate)
        self.burst = float(burst)
        self.clock = clock
        self.tokens = self.burst
        self.last = clock()

    def take(self):
        """Takes a token: True when there was one, False when the request is throttled."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


# What API Gateway answers a request its throttle refuses: 429 and this body, with no
# Retry-After (an HTTP API cannot customize its gateway responses: "Choose between REST APIs and
# HTTP APIs", https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-vs-rest.html).
THROTTLED_BODY = b'{"message":"Too Many Requests"}'


class StageThrottle:
    """The HTTP API stage's route throttling: every route has a bucket of its own
    (`TokenBucket`), with the stage's `DefaultRouteSettings` rate and burst, as API Gateway
    applies the default route settings to each route, except a route its `RouteSettings` name,
    which has that setting's rate and burst instead. Off (everything passes) until `configure`
    gives a rate. Counts each route's requests and refusals for the stack's report."""

    def __init__(self, clock=time.monotonic):
        self.lock = threading.Lock()
        self.clock = clock
        self.rate = None
        self.burst = None
        self.routes = {}  # route key -> (rate, burst) of its own (RouteSettings)
        self.buckets = {}  # route key -> TokenBucket
        self.requests = {}  # route key -> requests seen while on
        self.throttled = {}  # route key -> requests refused

    def configure(self, rate=None, burst=None, routes=None):
        """`rate` a second and `burst` for every route (None: off), except the route keys of
        `routes` ({"POST /v1/facts": (rate, burst)}), which have their own; the counts start
        afresh."""
        with self.lock:
            self.rate, self.burst = rate, burst
            self.routes = dict(routes or {})
            self.buckets, self.requests, self.throttled = {}, {}, {}

    def admit(self, route_key):
        """True when a request on `route_key` may go on; False when it is throttled (429)."""
        with self.lock:
            if self.rate is None:
                return True
            bucket = self.buckets.get(route_key)
            if bucket is None:
                rate, burst = self.routes.get(route_key, (self.rate, self.burst))
                bucket = self.buckets[route_key] = TokenBucket(rate, burst, self.clock)
            self.requests[route_key] = self.requests.get(route_key, 0) + 1
            if bucket.take():
                return True
            self.throttled[route_key] = self.throttled.get(route_key, 0) + 1
            return False

    def report(self):
        """{"rate", "burst", "requests", "throttled", "by_route": {route key: refused}}."""
        with self.lock:
            return {"rate": self.rate, "burst": self.burst,
                    "requests": sum(self.requests.values()),
                    "throttled": sum(self.throttled.values()),
                    "by_route": dict(self.throttled)}


THROTTLE = StageThrottle()


class Route:
    """One HttpApi event: `method` (or ANY), `path` as in the template, the function's name."""

    def __init__(self, method, path, function):
        self.method = method.upper()
        self.path = path
        self.function = function
        self.key = f"{self.method} {path}"
        pattern = ""
        self.variables = 0
        self.greedy = False
        for piece in re.split(r"(\{[^}]+\})", path):
            if piece.startswith("{"):
                name = piece[1:-1]
                self.variables += 1
                if name.endswith("+"):
                    self.greedy = True
                    pattern += f"(?P<{name[:-1]}>.+)"
                else:
                    pattern += f"(?P<{name}>[^/]+)"
            else:
                pattern += re.escape(piece)
        self.regex = re.compile("^" + pattern + "$")

    def order(self):
        return (self.greedy, self.variables, self.method == "ANY", -len(self.path))

    def match(self, method, path):
        if self.method not in ("ANY", method):
            return None
        m = self.regex.match(path)
        return m.groupdict() if m else None


def routes_of(stack):
    """Every `HttpApi` event of the template's functions, most specific first."""
    routes = []
    for lid, props in stack.of_type("AWS::Serverless::Function"):
        for event in (props.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            p = event["Properties"]
            routes.append(Route(p.get("Method", "ANY"), p["Path"], lid))
    routes.sort(key=Route.order)
    return routes


def event_for(route, params, method, raw_path, query, headers, body, source_ip):
    """The payload format 2.0 event for a request."""
    joined = {}
    for k, v in headers.items():
        k = k.lower()
        joined[k] = f"{joined[k]},{v}" if k in joined else v
    event = {
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": joined,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": joined.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route.key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": False,
    }
    if "cookie" in joined:
        event["cookies"] = [c.strip() for c in joined.pop("cookie").split(";")]
    if params:
        event["pathParameters"] = params
    if query:
        qs = {}
        for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
            qs[k] = f"{qs[k]},{v}" if k in qs else v
        event["queryStringParameters"] = qs
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
    return event


def response_of(answer):
    """(status, [(header, value)], body bytes) from the function's answer (bytes of JSON)."""
    data = json.loads(answer or b"null")
    if not isinstance(data, dict) or "statusCode" not in data:
        # Format 2.0 reads an answer without statusCode as a 200 JSON body.
        return 200, [("Content-Type", "application/json")], json.dumps(data).encode()
    headers = [(k, str(v)) for k, v in (data.get("headers") or {}).items()]
    for k, values in (data.get("multiValueHeaders") or {}).items():
        headers.extend((k, str(v)) for v in values)
    headers.extend(("Set-Cookie", c) for c in data.get("cookies") or [])
    body = data.get("body") or ""
    if data.get("isBase64Encoded"):
        raw = base64.b64decode(body)
    else:
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return int(data["statusCode"]), headers, raw


class Gateway(ThreadingHTTPServer):
    """The HTTP API on 127.0.0.1:`port`, invoking `functions[route.function]`."""

    daemon_threads = True

    def __init__(self, port, routes, functions, log):
        super().__init__(("127.0.0.1", port), _GatewayHandler)
        self.routes = routes
        self.functions = functions
        self.log = log

    def start(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, headers, body):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in _HOP_BY_HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", formatdate(usegmt=True))
        # As an HTTP API names each request in its answer (and its access log).
        self.send_header("apigw-requestid", uuid.uuid4().hex[:16])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self):
        gw = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        target, _, query = self.path.partition("?")
        path = urllib.parse.unquote(target)
        method = self.command
        for route in gw.routes:
            params = route.match(method, path)
            if params is not None:
                break
        else:
            self._send(404, [("Content-Type", "application/json")], b'{"message":"Not Found"}')
            return
        if not THROTTLE.admit(route.key):
            self._send(429, [("Content-Type", "application/json")], THROTTLED_BODY)
            return
        event = event_for(
            route, params, method, path, query, dict(self.headers.items()), body,
            self.client_address[0],
        )
        try:
            answer = gw.functions[route.function].invoke(event)
            status, headers, raw = response_of(answer)
        except (InvocationError, ValueError) as e:
            gw.log(f"{route.key}: {e}")
            self._send(
                500,
                [("Content-Type", "application/json")],
                b'{"message":"Internal Server Error"}',
            )
            return
        gw.log(f"{method} {target} -> {route.function} {status}")
        self._send(status, headers, raw)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle  # noqa: N815
