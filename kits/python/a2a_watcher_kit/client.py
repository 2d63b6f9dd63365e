"""A small client for the watcher's HTTP API (docs/reference/routes.md, docs/openapi.json):
report facts, list lapse tasks, read a subject, retry failed lapse tasks. Standard library only
(`urllib`), synchronous; from async code call it through `asyncio.to_thread`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterable, Iterator, Mapping

from .models import (
    DeliveryState,
    ExpectationRecord,
    Fact,
    FactsOutcome,
    LapsesPage,
    LapseView,
    RetryAnswer,
    RetryRequest,
    SubjectView,
)

__all__ = ["WatcherClient", "WatcherError"]


class WatcherError(Exception):
    """The watcher refused a request, answered something other than the documented JSON, or
    could not be reached.

    `status` is the HTTP status (`None` when nothing was answered); `title` and `detail` are
    the problem+json answer's (RFC 9457), which name the field and the rule. 401: the token is
    unknown; 403: it is a token of another kind (a source's where an operator's is needed).
    """

    def __init__(self, message: str, *, status: int | None = None,
                 title: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.detail = detail


class WatcherClient:
    """The watcher's API at `base_url` (`http://127.0.0.1:8080`, or the AWS deployment's API
    URL), with one bearer `token`: a source's for `report_facts`, an operator's for the rest.

    Every method raises [`WatcherError`] when the watcher refuses, and `ModelError` when its
    answer does not fit the published schema (a watcher of another version).
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 10.0) -> None:
        """`timeout` is in seconds, per request."""
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url {base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- facts (a source's token) --------------------------------------------------------------

    def report_facts(self, facts: Iterable[Fact]) -> FactsOutcome:
        """`POST /v1/facts` with `{"facts": [...]}`: all recorded or none (a refusal records
        nothing). The answer says which expectations each fact satisfied; a fact received before
        (same key, source and `observedAt`) is named in `already_recorded`."""
        body = {"facts": [f.to_dict() for f in facts]}
        if not body["facts"]:
            raise ValueError("no facts to report")
        return FactsOutcome.from_dict(self._call("POST", "/v1/facts", body=body))

    def report_fact(self, fact: Fact) -> FactsOutcome:
        """One fact: [`report_facts`] of `[fact]`."""
        return self.report_facts([fact])

    # -- lapse tasks and subjects (an operator's token) ------------------------------------------

    def lapses(self, *, agent: str | None = None, delivery: DeliveryState | None = None,
               since: str | None = None, limit: int | None = None,
               cursor: str | None = None) -> LapsesPage:
        """`GET /v1/lapses`: one page of lapse tasks in lapse order, filtered by `agent`,
        `delivery` and `since` (lapsed at or after, an RFC 3339 instant). `limit` is 1 to 1,000
        (default 100); pass the previous page's `next_cursor` as `cursor` (see [`iter_lapses`])."""
        query = {"agent": agent, "delivery": delivery, "since": since,
                 "limit": None if limit is None else str(limit), "cursor": cursor}
        return LapsesPage.from_dict(self._call("GET", "/v1/lapses", query=query))

    def iter_lapses(self, *, agent: str | None = None, delivery: DeliveryState | None = None,
                    since: str | None = None, limit: int | None = None) -> Iterator[LapseView]:
        """Every lapse task matching the filters, following `nextCursor` to the last page (a
        filtered page may be empty and still have a next one)."""
        cursor: str | None = None
        while True:
            page = self.lapses(agent=agent, delivery=delivery, since=since, limit=limit,
                               cursor=cursor)
            yield from page.lapses
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def subject(self, subject_type: str, subject_id: str) -> SubjectView:
        """`GET /v1/subjects/{type}/{id}`: the subject's expectations (their records, as JSON:
        see [`expectations_on`] for them typed) and facts. 404 when the watcher knows nothing of
        it."""
        path = f"/v1/subjects/{_seg(subject_type)}/{_seg(subject_id)}"
        return SubjectView.from_dict(self._call("GET", path))

    def expectations_on(self, subject_type: str, subject_id: str) -> list[ExpectationRecord]:
        """The records of every expectation on a subject, in raising order (from [`subject`])."""
        view = self.subject(subject_type, subject_id)
        return [ExpectationRecord.from_dict(e, path=f"SubjectView.expectations[{i}]")
                for i, e in enumerate(view.expectations)]

    def retry(self, agent: str, message_ids: Iterable[str] | None = None) -> RetryAnswer:
        """`POST /v1/lapses/retry`: puts `agent`'s failed lapse tasks back in the queue, those
        named by `message_ids` (1 to 1,000) or, with `None`, every failed one (as many as one call
        re-queues: `more` says when others remain). Those not re-queued are in `skipped`, with
        why (`not found`, or their state)."""
        ids = None if message_ids is None else list(message_ids)
        request = RetryRequest(agent=agent, message_ids=ids)
        return RetryAnswer.from_dict(self._call("POST", "/v1/lapses/retry", body=request.to_dict()))

    # -- the wire ----------------------------------------------------------------------------

    def _call(self, method: str, path: str, *, body: Any = None,
              query: Mapping[str, str | None] | None = None) -> Any:
        url = self.base_url + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as e:
            raise _problem(method, path, e) from None
        except (urllib.error.URLError, OSError) as e:
            raise WatcherError(f"{method} {path}: the watcher at {self.base_url} cannot be "
                               f"reached: {e}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise WatcherError(f"{method} {path}: the answer is not JSON: {raw[:200]!r}") from None


def _seg(text: str) -> str:
    """One path segment, percent-encoded (a subject id may hold `/`)."""
    return urllib.parse.quote(text, safe="")


def _problem(method: str, path: str, e: urllib.error.HTTPError) -> WatcherError:
    """A refusal as a [`WatcherError`], with the problem+json's title and detail when there."""
    raw = e.read()
    title = detail = None
    try:
        problem = json.loads(raw)
        if isinstance(problem, dict):
            title = problem.get("title") if isinstance(problem.get("title"), str) else None
            detail = problem.get("detail") if isinstance(problem.get("detail"), str) else None
    except ValueError:
        pass
    said = detail or title or raw[:200].decode("utf-8", "replace")
    return WatcherError(f"{method} {path}: {e.code} {said}", status=e.code, title=title,
                        detail=detail)

