"""A scale model of AWS around the moto emulator: what a real account enforces and moto does not.

Each part sees every API call before moto does (`Call`, read once in `calls.py`) and either lets
it through (None) or answers it with the error AWS would send (`Refusal`):

- `iam`: each caller's access key is a role of `template.yaml`; a call is allowed or denied as
  IAM would (infra/aws_model/iam.py);
- `faults`: a seeded injector that throttles and fails a share of calls (faults.py);
- `limits`: quotas and partition limits, divided by a scale factor K (limits.py).

Parts are set up over HTTP, so the program that makes the stack (infra/aws_local) configures
the emulators it did not start: `POST /_model/<part>` with the part's JSON settings (`GET`
reads them back, with what the part counted). A part never configured lets everything through:
the store's own tests, which use the emulator directly, see plain moto.
"""

import json
import threading

from .calls import Call, Refusal, read_call  # noqa: F401 (the package's interface)

_PARTS = {}
_PARTS_LOCK = threading.Lock()
# The order calls meet the parts: as on AWS, a call IAM denies is never throttled or failed.
ORDER = ("iam", "faults", "limits")


def register(name, part):
    """Adds `part` under `name`: an object with `configure(settings: dict)`, `state() -> dict`
    and `admit(call: Call) -> Refusal | None`; `after(call, status)` is called, when it exists,
    with the HTTP status moto answered, and may answer a Refusal sent in place of moto's answer
    (the call applied, its answer lost: faults.py)."""
    with _PARTS_LOCK:
        _PARTS[name] = part


def _parts():
    with _PARTS_LOCK:
        return [(n, _PARTS[n]) for n in ORDER if n in _PARTS] + [
            (n, p) for n, p in _PARTS.items() if n not in ORDER
        ]


def _json_answer(start_response, status, value):
    body = json.dumps(value).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))])
    return [body]


def _control(environ, start_response):
    """`/_model/<part>`: POST settings, GET state."""
    name = environ.get("PATH_INFO", "").removeprefix("/_model/").strip("/")
    # `/_model/<part>/<request>` (POST): a question put to the part (`part.request(name, body)`,
    # e.g. iam's `check`), for what the local stack does outside the emulator.
    name, _, sub = name.partition("/")
    part = dict(_parts()).get(name)
    if part is None:
        return _json_answer(start_response, "404 Not Found",
                            {"error": f"no model part {name!r}", "parts": [n for n, _ in _parts()]})
    if sub:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            if not hasattr(part, "request"):
                raise ValueError(f"model part {name!r} takes no requests")
            return _json_answer(start_response, "200 OK", part.request(sub, body))
        except (ValueError, KeyError, TypeError) as e:
            return _json_answer(start_response, "400 Bad Request", {"error": str(e)})
    if environ.get("REQUEST_METHOD") == "POST":
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            settings = json.loads(environ["wsgi.input"].read(length) or b"{}")
            part.configure(settings)
        except (ValueError, KeyError, TypeError) as e:
            return _json_answer(start_response, "400 Bad Request", {"error": str(e)})
    return _json_answer(start_response, "200 OK", part.state())


def modelled(app):
    """`app` (moto's WSGI application) with every call first put to the model's parts."""

    def handle(environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/_model/"):
            return _control(environ, start_response)
        parts = _parts()
        if not parts:
            return app(environ, start_response)
        call = read_call(environ)
        if call is None:
            return app(environ, start_response)
        for _, part in parts:
            refusal = part.admit(call)
            if refusal is not None:
                status, headers, body = refusal.answer(call)
                start_response(status, headers)
                return [body]
        seen = {}
        written = []

        # moto's answer is held until every part's `after` has seen its status: an `after` may
        # answer a Refusal that replaces it (faults: the write applied, its answer lost).
        def recording_start(status, headers, exc_info=None):
            seen["status"] = int(status.split(" ", 1)[0])
            seen["start"] = (status, headers, exc_info)
            return written.append

        answer = list(app(environ, recording_start))
        replaced = None
        for _, part in parts:
            after = getattr(part, "after", None)
            if after is not None:
                instead = after(call, seen.get("status", 200))
                if replaced is None and instead is not None:
                    replaced = instead
        if replaced is not None:
            status, headers, body = replaced.answer(call)
            start_response(status, headers)
            return [body]
        status, headers, exc_info = seen["start"]
        if exc_info:
            start_response(status, headers, exc_info)
        else:
            start_response(status, headers)
        return written + answer

    return handle


def install_parts():
    """Registers every part (iam, faults, limits), each unconfigured: everything passes until
    `POST /_model/<part>` sets it up."""
    from . import faults, iam, limits

    for module in (iam, faults, limits):
        register(module.NAME, module.PART)
