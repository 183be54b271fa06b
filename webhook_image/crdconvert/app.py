"""The ASGI application: routes, input limits, conversion, faults and records.

Plain ASGI rather than a framework: every cross-version read, list and watch event of the
API server goes through ``_convert``, so the request path stays short.
"""

from __future__ import annotations

import asyncio
import time

from crdconvert import json_codec, review
from crdconvert.converters import Registry
from crdconvert.faults import Faults, UnknownFault
from crdconvert.records import RecordSink, object_summary

DEFAULT_PATH = "/crdconvert"
DEFAULT_MAX_BODY = 32 * 1024 * 1024
HEALTH_PATHS = ("/healthz", "/readyz")
CONTROL_PATH = "/control/faults"


class Reply(Exception):
    """Answer now with ``status`` and a plain-text ``message``.

    Unless the request body was read (``body_read``), the connection is closed after the
    answer: the unread body would otherwise be parsed as the next request, and a keep-alive
    connection the client then drops holds its buffers until the keep-alive timer fires.
    """

    def __init__(self, status: int, message: str, headers: tuple = (), body_read: bool = False):
        super().__init__(message)
        self.status, self.message = status, message
        self.headers = headers if body_read else (*headers, (b"connection", b"close"))


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

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, body, content_type = await self._route(scope, receive)
        except Reply as reply:
            self.records.write(
                {
                    "rejected": reply.status,
                    "message": reply.message,
                    "path": scope["path"],
                    "method": scope["method"],
                }
            )
            await _send(
                send, reply.status, reply.message.encode() + b"\n", b"text/plain", reply.headers
            )
            return
        await _send(send, status, body, content_type)

    async def _route(self, scope, receive) -> tuple[int, bytes, bytes]:
        path, method = scope["path"], scope["method"]
        if path in HEALTH_PATHS:
            if method not in ("GET", "HEAD"):
                raise Reply(405, f"{path} answers GET", ((b"allow", b"GET, HEAD"),))
            return 200, b"ok", b"text/plain"
        if path == CONTROL_PATH and self.fault_control:
            return await self._control(scope, receive)
        if path != self.path:
            raise Reply(404, f"no such path {path}; conversions are served at {self.path}")
        if method != "POST":
            raise Reply(405, f"{self.path} answers POST, not {method}", ((b"allow", b"POST"),))
        content_type = _require_json(scope)
        body = await self._read_body(scope, receive)
        return await self._convert(body, content_type)

    async def _convert(self, body: bytes, content_type: str) -> tuple[int, bytes, bytes]:
        started = time.perf_counter()
        try:
            document = json_codec.loads(body)
        except json_codec.DecodeError as exc:
            raise Reply(400, f"the body is not valid JSON: {exc}", body_read=True) from None
        try:
            parsed = review.parse(document)
        except review.BadReview as exc:
            raise Reply(400, f"not a ConversionReview: {exc}", body_read=True) from None
        review.convert(parsed, self.registry)
        answer = review.response(parsed)
        faults = self.faults
        if faults.active:
            answer = faults.apply(answer, document["request"])
            if faults.delay:
                await asyncio.sleep(faults.delay)
        status = faults.http_status or 200
        result = answer.get("response", {}).get("result", {})
        self.records.write(
            {
                "method": "POST",
                "path": self.path,
                "contentType": content_type,
                "uid": parsed.uid,
                "reviewVersion": parsed.api_version,
                "desiredAPIVersion": parsed.desired_api_version,
                "objects": [object_summary(o) for o in parsed.objects],
                "result": result.get("status"),
                "message": result.get("message"),
                "status": status,
                "faults": faults.describe(),
                "durationMs": round((time.perf_counter() - started) * 1000, 3),
            }
        )
        if status != 200:
            return status, b"internal error (fault mode)\n", b"text/plain"
        return 200, json_codec.dumps(answer), b"application/json"

    async def _read_body(self, scope, receive) -> bytes:
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise Reply(413, f"body of {declared} bytes exceeds the limit of {self.max_body}")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Reply(400, "the client went away before sending the whole body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise Reply(413, f"body exceeds the limit of {self.max_body} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _control(self, scope, receive) -> tuple[int, bytes, bytes]:
        if scope["method"] == "PUT":
            body = await self._read_body(scope, receive)
            try:
                specs = json_codec.loads(body)
                if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
                    raise UnknownFault('send a JSON list of fault names, e.g. ["reorder"]')
                self.faults = Faults.parse(specs)
            except (UnknownFault, json_codec.DecodeError) as exc:
                raise Reply(400, str(exc), body_read=True) from None
        elif scope["method"] != "GET":
            raise Reply(405, "PUT or GET", ((b"allow", b"GET, PUT"),))
        return 200, json_codec.dumps(self.faults.describe()), b"application/json"


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _require_json(scope) -> str:
    content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise Reply(415, f"Content-Type must be application/json, not {content_type or 'absent'}")
    return content_type


async def _send(send, status: int, body: bytes, content_type: bytes, headers=()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
