"""The application: routes, input limits, conversion, faults and records, with no I/O.

A server hands it a request in two steps: ``head`` (method, path, headers) before the body
is read, so a request it will refuse is refused without reading its body; then ``answer``
with the whole body. ``crdconvert.server`` is the HTTP server the webhook runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from crdconvert import json_codec, review
from crdconvert.converters import Registry
from crdconvert.faults import Faults, UnknownFault
from crdconvert.records import RecordSink, object_summary

DEFAULT_PATH = "/crdconvert"
DEFAULT_MAX_BODY = 32 * 1024 * 1024
HEALTH_PATHS = ("/healthz", "/readyz")
CONTROL_PATH = "/control/faults"
JSON = "application/json"

Headers = dict[bytes, bytes]  # lower-case names


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    content_type: bytes = b"text/plain"
    headers: tuple[tuple[bytes, bytes], ...] = ()
    delay: float = 0.0  # seconds to wait before sending it (the ``delay`` fault)
    close: bool = False  # close the connection after it
    # The ``panic-on`` fault: print this, then drop the connection without any answer.
    crash: str = ""


class Reply(Exception):
    """Answer now with ``status`` and a plain-text ``message``.

    Unless the request body was read (``body_read``), the connection is closed after the
    answer: the unread body would otherwise be parsed as the next request, and a keep-alive
    connection the client then drops holds its buffers until the keep-alive timer fires.
    """

    def __init__(self, status: int, message: str, headers: tuple = (), body_read: bool = False):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers
        self.close = not body_read


class ConversionApp:
    def __init__(
        self,
        registry: Registry,
        path: str = DEFAULT_PATH,
        max_body: int = DEFAULT_MAX_BODY,
        faults: Faults | None = None,
        fault_control: bool = False,
        records: RecordSink | None = None,
    ):
        self.registry = registry
        self.path = path
        self.max_body = max_body
        self.faults = faults if faults is not None else Faults.from_env()
        self.fault_control = fault_control
        self.records = records or RecordSink()

    def head(self, method: str, path: str, headers: Headers) -> Answer | None:
        """A refusal decided before the body is read (the connection then closes), or None:
        read the body and call ``answer``."""
        try:
            self._check_head(method, path, headers)
        except Reply as reply:
            return self._refuse(reply, method, path)
        return None

    def answer(self, method: str, path: str, headers: Headers, body: bytes) -> Answer:
        """The answer to a whole request whose ``head`` was accepted."""
        try:
            if path in HEALTH_PATHS:
                return Answer(200, b"ok")
            if path == CONTROL_PATH and self.fault_control:
                return self._control(method, body)
            return self._convert(body)
        except Reply as reply:
            return self._refuse(reply, method, path)

    def too_large(self, method: str, path: str) -> Answer:
        """The answer once a body streams past ``max_body``; the rest is not read."""
        reply = Reply(413, f"body exceeds the limit of {self.max_body} bytes")
        return self._refuse(reply, method, path)

    def client_went_away(self, method: str, path: str) -> Answer:
        """A request whose client disconnected before sending the whole body (recorded; the
        answer goes nowhere)."""
        reply = Reply(400, "the client went away before sending the whole body")
        return self._refuse(reply, method, path)

    def _check_head(self, method: str, path: str, headers: Headers) -> None:
        if path in HEALTH_PATHS:
            if method not in ("GET", "HEAD"):
                raise Reply(405, f"{path} answers GET", ((b"allow", b"GET, HEAD"),))
            return
        if path == CONTROL_PATH and self.fault_control:
            if method not in ("GET", "PUT"):
                raise Reply(405, "PUT or GET", ((b"allow", b"GET, PUT"),))
            return
        if path != self.path:
            raise Reply(404, f"no such path {path}; conversions are served at {self.path}")
        if method != "POST":
            raise Reply(405, f"{self.path} answers POST, not {method}", ((b"allow", b"POST"),))
        content_type = _content_type(headers)
        if content_type != JSON:
            raise Reply(
                415, f"Content-Type must be application/json, not {content_type or 'absent'}"
            )
        declared = headers.get(b"content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > self.max_body:
            raise Reply(413, f"body of {declared} bytes exceeds the limit of {self.max_body}")

    def _refuse(self, reply: Reply, method: str, path: str) -> Answer:
        self.records.write(
            {"rejected": reply.status, "message": reply.message, "path": path, "method": method}
        )
        headers = (*reply.headers, (b"connection", b"close")) if reply.close else reply.headers
        body = reply.message.encode() + b"\n"
        return Answer(reply.status, body, headers=headers, close=reply.close)

    def _convert(self, body: bytes) -> Answer:
        started = time.perf_counter()
        try:
            document = json_codec.loads(body)
        except json_codec.DecodeError as exc:
            raise Reply(400, f"the body is not valid JSON: {exc}", body_read=True) from None
        try:
            parsed = review.parse(document)
        except review.BadReview as exc:
            raise Reply(400, f"not a ConversionReview: {exc}", body_read=True) from None
        faults = self.faults
        crash = faults.panic_for(document["request"]) if faults.panics else ""
        if crash:
            return Answer(500, b"", crash=crash)
        review.convert(parsed, self.registry)
        answer = review.response(parsed)
        active = faults.active
        if active:
            answer = faults.apply(answer, document["request"])
        status = faults.http_status or 200
        result = answer.get("response", {}).get("result", {})
        self.records.write(
            {
                "method": "POST",
                "path": self.path,
                "contentType": JSON,  # ``head`` refused any other
                "uid": parsed.uid,
                "reviewVersion": parsed.api_version,
                "desiredAPIVersion": parsed.desired_api_version,
                "objects": [object_summary(o) for o in parsed.objects],
                "result": result.get("status"),
                "message": result.get("message"),
                "status": status,
                "faults": faults.describe() if active else [],
                # Until the answer leaves, the ``delay`` fault included.
                "durationMs": round((time.perf_counter() - started + faults.delay) * 1e6) / 1000,
            }
        )
        if status != 200:
            return Answer(status, b"internal error (fault mode)\n", delay=faults.delay)
        return Answer(200, json_codec.dumps(answer), b"application/json", delay=faults.delay)

    def _control(self, method: str, body: bytes) -> Answer:
        if method == "PUT":
            try:
                specs = json_codec.loads(body)
                if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
                    raise UnknownFault('send a JSON list of fault names, e.g. ["reorder"]')
                self.faults = Faults.parse(specs)
            except (UnknownFault, json_codec.DecodeError) as exc:
                raise Reply(400, str(exc), body_read=True) from None
        return Answer(200, json_codec.dumps(self.faults.describe()), b"application/json")


def _content_type(headers: Headers) -> str:
    raw = headers.get(b"content-type", b"")
    if raw == b"application/json":  # what the API server sends, every time
        return JSON
    return raw.decode("latin-1").split(";")[0].strip().lower()
