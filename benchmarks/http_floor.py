"""The webhook's HTTP stack's own cost per request: crdconvert's server (asyncio + uvloop +
httptools + TLS), exactly as crdconvert runs it, serving an app that does nothing (reads the
body, answers ``{}``).

    python -m benchmarks.http_floor --tls-cert C --tls-key K --port P

``benchmarks.agnhost_compare --generator wrk`` runs it next to both webhooks: the gap between
this floor and crdconvert is what the conversion code costs; the floor itself is what no
change to that code can go below.
"""

from __future__ import annotations

import argparse

import uvloop
from crdconvert import server, tls, workers
from crdconvert.app import DEFAULT_MAX_BODY, Answer

NOTHING = Answer(200, b"{}", b"application/json")


class NothingApp:
    """The interface crdconvert's server drives (see ``crdconvert.app.ConversionApp``)."""

    max_body = DEFAULT_MAX_BODY

    def head(self, method, path, headers) -> None:
        return None

    def answer(self, method, path, headers, body) -> Answer:
        return NOTHING

    def too_large(self, method, path) -> Answer:
        return Answer(413, b"too large\n", close=True)

    def client_went_away(self, method, path) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls-cert", required=True)
    parser.add_argument("--tls-key", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    context = tls.server_context(tls.TLSFiles(args.tls_cert, args.tls_key))
    sock = workers.bind("127.0.0.1", args.port)
    uvloop.run(server.serve(NothingApp(), sock, context))


if __name__ == "__main__":
    main()
