"""Drive an ASGI app in-process: the unit tests' stand-in for an HTTP client."""

import asyncio
import json

# One loop for every call: a new loop per request would dominate the fuzz tests' time.
_loop = asyncio.new_event_loop()


def call(app, method="POST", path="/crdconvert", body=b"", headers=None, chunk=None):
    """Return (status, headers dict, body bytes)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    headers = {"content-type": "application/json", **(headers or {})}
    raw_headers = [(k.encode(), v.encode()) for k, v in headers.items() if v is not None]
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    pieces = pieces or [b""]
    sent = []

    async def receive():
        piece = pieces.pop(0) if pieces else b""
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": raw_headers}
    _loop.run_until_complete(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, payload


def review(app, document, **kwargs):
    status, headers, payload = call(app, body=document, **kwargs)
    assert status == 200, payload
    assert headers["content-type"] == "application/json"
    return json.loads(payload)
