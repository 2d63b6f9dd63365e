"""What one request to the emulator asks for, read once for every part of the model of AWS
(IAM, limits, faults): the service, the operation, the caller's access key, the region and the
parameters, and how to answer it with an error in that service's own protocol.

Read from the request as AWS reads it: the service and access key from the SigV4
`Authorization` header's credential scope, the operation from `X-Amz-Target` (the JSON
protocols: DynamoDB, SQS, Secrets Manager), from `Action=` (the query protocol: SNS, STS, and SQS
when spoken as query), or from the method and path (the REST protocol of EventBridge Scheduler).
"""

import io
import json
import re
import urllib.parse
from dataclasses import dataclass, field

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")

# EventBridge Scheduler's REST routes: (method, path pattern) -> operation.
_SCHEDULER_ROUTES = (
    ("POST", re.compile(r"^/schedules/(?P<Name>[^/]+)$"), "CreateSchedule"),
    ("PUT", re.compile(r"^/schedules/(?P<Name>[^/]+)$"), "UpdateSchedule"),
    ("DELETE", re.compile(r"^/schedules/(?P<Name>[^/]+)$"), "DeleteSchedule"),
    ("GET", re.compile(r"^/schedules/(?P<Name>[^/]+)$"), "GetSchedule"),
    ("GET", re.compile(r"^/schedules$"), "ListSchedules"),
    ("POST", re.compile(r"^/schedule-groups/(?P<Name>[^/]+)$"), "CreateScheduleGroup"),
    ("DELETE", re.compile(r"^/schedule-groups/(?P<Name>[^/]+)$"), "DeleteScheduleGroup"),
    ("GET", re.compile(r"^/schedule-groups/(?P<Name>[^/]+)$"), "GetScheduleGroup"),
    ("GET", re.compile(r"^/schedule-groups$"), "ListScheduleGroups"),
)


@dataclass
class Call:
    """One request: `service` is the SigV4 signing name (`dynamodb`, `sqs`, `scheduler`,
    `secretsmanager`, `sns`, ...), `operation` the API's name (`TransactWriteItems`,
    `SendMessageBatch`, `CreateSchedule`), `protocol` one of `json`, `query`, `rest-json`,
    `access_key` the caller's access key id (None when unsigned), `params` the request's
    parameters (the JSON body; the query protocol's form fields as a flat dict; for REST the
    JSON body with the path's parameters and the query string added), `path` and `method` as
    sent. `target_prefix` is the `X-Amz-Target` prefix (`DynamoDB_20120810`), when there is
    one."""

    service: str
    operation: str
    protocol: str
    access_key: str | None
    region: str | None
    params: dict = field(default_factory=dict)
    method: str = "POST"
    path: str = "/"
    target_prefix: str | None = None

    @property
    def body_size(self):
        """The request body's length in bytes (0 when unknown)."""
        return self.params.get("__body_size__", 0) if isinstance(self.params, dict) else 0


def read_call(environ):
    """The `Call` of a WSGI request, or None for one that is not an AWS API call (moto's own
    `/moto-api/`, this model's `/_model/`). Reads the body and puts it back, so the
    application reads it unchanged."""
    path = environ.get("PATH_INFO", "/")
    if path.startswith("/moto-api") or path.startswith("/_model"):
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))

    auth = environ.get("HTTP_AUTHORIZATION", "")
    m = _CREDENTIAL.search(auth)
    access_key, region, service = (m.group(1), m.group(2), m.group(3)) if m else (None, None, None)
    method = environ.get("REQUEST_METHOD", "GET")
    query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
    target = environ.get("HTTP_X_AMZ_TARGET")
    content_type = environ.get("CONTENT_TYPE", "")

    if target:
        prefix, _, operation = target.rpartition(".")
        try:
            params = json.loads(body) if body else {}
        except ValueError:
            params = {}
        call = Call(service or _service_of_target(prefix), operation, "json", access_key, region,
                    params if isinstance(params, dict) else {}, method, path, prefix)
    elif "Action" in query or "x-www-form-urlencoded" in content_type:
        form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        form.update(query)
        call = Call(service or "", form.get("Action", ""), "query", access_key, region, form,
                    method, path)
    else:
        try:
            params = json.loads(body) if body else {}
        except ValueError:
            params = {}
        params = params if isinstance(params, dict) else {}
        operation = ""
        if service == "scheduler":
            for route_method, pattern, name in _SCHEDULER_ROUTES:
                found = pattern.match(urllib.parse.unquote(path))
                if route_method == method and found:
                    operation = name
                    params.update(found.groupdict())
                    break
        params.update(query)
        call = Call(service or "", operation, "rest-json", access_key, region, params, method,
                    path)
    if isinstance(call.params, dict):
        call.params["__body_size__"] = len(body)
    return call


def _service_of_target(prefix):
    lowered = prefix.lower()
    if lowered.startswith("dynamodb"):
        return "dynamodb"
    if lowered.startswith("amazonsqs"):
        return "sqs"
    if lowered.startswith("secretsmanager"):
        return "secretsmanager"
    return lowered


@dataclass
class Refusal:
    """An error answer, in the protocol of the call it answers: HTTP `status`, the AWS error
    `code` (`AccessDeniedException`, `ProvisionedThroughputExceededException`, ...), a
    `message`, `sender` (True: the caller's fault, False: the service's) and extra `headers`
    (e.g. `Retry-After`)."""

    status: int
    code: str
    message: str
    sender: bool = True
    headers: dict = field(default_factory=dict)

    def answer(self, call):
        """(status line, headers, body bytes) as the service would send this error to `call`."""
        headers = dict(self.headers)
        if call.protocol == "json":
            prefix = {
                "dynamodb": "com.amazonaws.dynamodb.v20120810#",
                "sqs": "com.amazonaws.sqs#",
            }.get(call.service, "")
            body = json.dumps({"__type": prefix + self.code, "message": self.message}).encode()
            headers["Content-Type"] = "application/x-amz-json-1.0"
            headers["x-amzn-ErrorType"] = self.code
            if call.service == "sqs":
                # The SQS JSON protocol's legacy code, as SQS sends it.
                legacy = _SQS_QUERY_CODES.get(self.code, self.code)
                headers["x-amzn-query-error"] = f"{legacy};{'Sender' if self.sender else 'Receiver'}"
        elif call.protocol == "query":
            kind = "Sender" if self.sender else "Receiver"
            body = (
                "<ErrorResponse><Error>"
                f"<Type>{kind}</Type><Code>{_xml(self.code)}</Code>"
                f"<Message>{_xml(self.message)}</Message>"
                "</Error><RequestId>00000000-0000-0000-0000-000000000000</RequestId>"
                "</ErrorResponse>"
            ).encode()
            headers["Content-Type"] = "text/xml"
        else:
            body = json.dumps({"Message": self.message}).encode()
            headers["Content-Type"] = "application/json"
            headers["x-amzn-ErrorType"] = self.code
        headers["Content-Length"] = str(len(body))
        return f"{self.status} {_REASONS.get(self.status, 'Error')}", list(headers.items()), body


_SQS_QUERY_CODES = {
    "AccessDeniedException": "AccessDenied",
    "KmsAccessDenied": "KMS.AccessDeniedException",
    "ThrottlingException": "Throttling",
    "RequestThrottled": "RequestThrottled",
}

_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _xml(text):
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
