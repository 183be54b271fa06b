"""Drive crdconvert's I/O-free application directly, as its server does (``head`` before the
body, then ``answer``), and render the answer with the server's own writer. What only a
socket shows (streaming, keep-alive, pipelining) is tested over TLS in test_webhook_http."""

import json

from crdconvert.server import response_bytes


def call(app, method="POST", path="/crdconvert", body=b"", headers=None):
    """Return (status, headers dict, body bytes)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    headers = {"content-type": "application/json", **(headers or {})}
    raw_headers = {k.lower().encode(): v.encode() for k, v in headers.items() if v is not None}
    answer = app.head(method, path, raw_headers)
    if answer is None:
        answer = app.answer(method, path, raw_headers, body)
    head, payload = response_bytes(answer).split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")[1:]
    rendered = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return answer.status, rendered, payload


def review(app, document, **kwargs):
    status, headers, payload = call(app, body=document, **kwargs)
    assert status == 200, payload
    assert headers["content-type"] == "application/json"
    return json.loads(payload)
