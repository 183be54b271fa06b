"""The recording proxy between the API server and the user's webhook.

The API server does not call the user's webhook directly: it calls ``RecordingProxy``, an
HTTPS server of the harness's own that forwards each request unchanged and keeps the request,
the answer and the time taken. That is how the gate judges the conduct of a webhook it has
never seen (uid, review version, metadata, latency) without any cooperation from it.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from crdharness import certs, ports
from crdharness.gate.webhook import crash

PROBE_HEADER = "X-Crdharness-Probe"
# kube-apiserver gives a conversion call 30 s; the proxy gives up just before, so that what it
# says about a webhook that hung (``crash``) reaches the API server's error, not a bare
# "context deadline exceeded".
FORWARD_TIMEOUT = 29.0
# Headers about the connection, not the request: not forwarded (RFC 9110, 7.6.1).
HOP_BY_HOP = {
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    PROBE_HEADER.lower(),
}


@dataclass
class Exchange:
    """One request the API server made to the webhook, as the proxy saw it."""

    path: str
    request: dict | None
    status: int
    answer: dict | None
    seconds: float
    error: str = ""  # the webhook gave no answer: what it did (``crash``)
    answer_text: str = ""  # the start of an answer that is not JSON

    @property
    def kind(self) -> str:
        return (self.request or {}).get("kind", "")


class RecordingProxy:
    """HTTPS on 127.0.0.1, forwarding every POST to ``target`` and recording the exchange."""

    def __init__(
        self,
        ca: certs.CertificateAuthority,
        target: str,
        target_ca: Path | None,
        log: Path,
        webhook_log: crash.WebhookLog | None = None,
        exit_code: Callable[[], int | None] | None = None,
    ):
        """``target_ca``: the CA the webhook's certificate is checked against (None: the
        machine's trust store, for a URL webhook with a public certificate). ``webhook_log``:
        the webhook's output, quoted when it crashes on a review. ``exit_code``: the webhook
        process's exit code once it has exited (None while it runs)."""
        self.target = target.rstrip("/")
        self.webhook_log = webhook_log
        self.exit_code = exit_code
        self.target_ca = target_ca
        self.log = log
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        serving = ca.issue_server("gate-proxy", *certs.LOOPBACK_NAMES)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(serving.cert), str(serving.key))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are two writes: with Nagle the body waits for the peer's
            # delayed ACK of the headers, 40 ms per review.
            disable_nagle_algorithm = True

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                status, headers, answer = proxy._forward(
                    self.path, body, headers, bool(self.headers.get(PROBE_HEADER))
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format, *args):  # the API server's calls are recorded, not logged
                pass

        self.server = _QuietServer((ports.LOOPBACK, 0), Handler)
        self.server.error_log = log.with_name("proxy-errors.log")
        self.server.daemon_threads = True
        # The handshake is each connection's own (``_QuietServer.finish_request``), not the
        # accept loop's: a client that connects and never speaks TLS held the loop, and with it
        # ``stop()`` and the gate's exit, forever (seen on a loaded CI run).
        self.server.socket = context.wrap_socket(
            self.server.socket, server_side=True, do_handshake_on_connect=False
        )
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="gate-proxy", daemon=True
        )
        self._thread.start()
        self._session = threading.local()

    @property
    def url(self) -> str:
        return f"https://{ports.LOOPBACK}:{self.port}"

    def _http(self) -> requests.Session:
        session = getattr(self._session, "http", None)
        if session is None:
            session = self._session.http = requests.Session()
            session.trust_env = False  # a machine-wide REQUESTS_CA_BUNDLE must not win
        return session

    def _post(self, path: str, body: bytes, headers: dict[str, str]) -> requests.Response:
        return self._http().post(
            self.target + path,
            data=body,
            headers=headers,  # as the API server sent them (webhooks negotiate on Accept)
            verify=str(self.target_ca) if self.target_ca else True,
            timeout=FORWARD_TIMEOUT,
        )

    def _forward(self, path: str, body: bytes, headers: dict[str, str], probe: bool):
        started = time.perf_counter()
        log_offset = self.webhook_log.offset() if self.webhook_log else 0
        try:
            try:
                response = self._post(path, body, headers)
            except requests.ConnectionError as dropped:
                if not self._stale(dropped, log_offset):
                    raise
                # A kept-alive connection the webhook closed as it was reused (an idle
                # timeout racing the next review): the review is sent once more on a fresh
                # connection. A handler that panicked logs it and is not retried; one that
                # drops every review drops this one too.
                self._http().close()
                self._session.http = None
                self._note(f"{path}: {dropped!r}; sent again on a fresh connection")
                response = self._post(path, body, headers)
        except requests.RequestException as exc:
            seconds = time.perf_counter() - started
            log = self.webhook_log
            excerpt = log.excerpt_since(log_offset) if log else []
            happened = crash.what_happened(exc, FORWARD_TIMEOUT)
            code = self.exit_code() if self.exit_code else None
            if code is not None and happened.startswith("could not be reached"):
                # Every review after the one it died on is refused: say it died, and how.
                happened = crash.exited(code)
                excerpt = log.excerpt_since(0) if log else []
            said = crash.message(happened, excerpt, log)
            if not probe:
                error = said.removeprefix("gate proxy: ")
                self._record(Exchange(path, _json(body), 502, None, seconds, error=error))
            return 502, {"Content-Type": "text/plain"}, said.encode()
        seconds = time.perf_counter() - started
        if not probe:
            answer = _json(response.content)
            text = "" if answer is not None else response.content[:200].decode(errors="replace")
            self._record(
                Exchange(path, _json(body), response.status_code, answer, seconds, answer_text=text)
            )
        headers = {"Content-Type": response.headers.get("Content-Type", "application/json")}
        return response.status_code, headers, response.content

    def _stale(self, exc: requests.ConnectionError, log_offset: int) -> bool:
        """Whether ``exc`` is a connection dropped without an answer while the webhook's log
        (when the gate holds it) printed no crash from that moment."""
        if not crash.what_happened(exc, FORWARD_TIMEOUT).startswith("crashed"):
            return False
        return not (self.webhook_log and self.webhook_log.excerpt_since(log_offset))

    def _note(self, line: str) -> None:
        errors = self.server.error_log
        if errors is not None:
            with self._lock, errors.open("a") as out:
                out.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)
            with self.log.open("a") as out:
                out.write(json.dumps(exchange.__dict__) + "\n")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


HANDSHAKE_SECONDS = 60


class _QuietServer(ThreadingHTTPServer):
    """A client hanging up mid-exchange (the API server timing out, or closing its
    connections at teardown: ``SSLEOFError``, ``BrokenPipeError``) is the gate's plumbing, not
    the user's business: one line in ``proxy-errors.log``, never a traceback on the terminal
    (socketserver's default prints one to stderr)."""

    error_log: Path | None = None

    def finish_request(self, request, client_address) -> None:
        """The TLS handshake, on the connection's own thread: a client that never completes
        it is dropped after ``HANDSHAKE_SECONDS`` (past the longest a webhook call may take:
        kube-apiserver's timeoutSeconds is at most 30)."""
        request.settimeout(HANDSHAKE_SECONDS)
        request.do_handshake()
        request.settimeout(None)
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if self.error_log is not None:
            with self.error_log.open("a") as out:
                out.write(f"{time.strftime('%H:%M:%S')} {client_address}: {exc!r}\n")


def review_record(exchange: Exchange) -> dict:
    """One exchange as the reference webhook records a review (``reviews_for`` reads both)."""
    review = exchange.request or {}
    request = review.get("request") or {}
    result = ((exchange.answer or {}).get("response") or {}).get("result") or {}
    objects: list[dict] = []
    for obj in request.get("objects") or []:
        if not isinstance(obj, dict):
            objects.append({"invalid": True})
            continue
        metadata = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
        objects.append({"name": metadata.get("name"), "apiVersion": obj.get("apiVersion")})
    return {
        "path": exchange.path,
        "uid": request.get("uid"),
        "reviewVersion": review.get("apiVersion"),
        "desiredAPIVersion": request.get("desiredAPIVersion"),
        "objects": objects,
        "result": result.get("status"),
        "message": result.get("message") or exchange.error,
        "status": exchange.status,
        "durationMs": round(exchange.seconds * 1000, 3),
    }


def _json(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return None
