"""The Python HTTP stack's own cost per request: uvicorn + uvloop + TLS, exactly as crdconvert
configures them, serving an app that does nothing (reads the body, answers ``{}``).

    python -m benchmarks.http_floor --tls-cert C --tls-key K --port P

``benchmarks.agnhost_compare --generator wrk`` runs it next to both webhooks: the gap between
this floor and crdconvert is what the conversion code costs; the floor itself is what no
change to that code can go below.
"""

from __future__ import annotations

import argparse

import uvicorn
from crdconvert.__main__ import UVICORN_OPTIONS


async def app(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")],
        }
    )
    await send({"type": "http.response.body", "body": b"{}"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls-cert", required=True)
    parser.add_argument("--tls-key", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        ssl_certfile=args.tls_cert,
        ssl_keyfile=args.tls_key,
        lifespan="off",
        loop="uvloop",
        http="httptools",
        **UVICORN_OPTIONS,
    )


if __name__ == "__main__":
    main()
