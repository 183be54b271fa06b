"""The gate's recording proxy is plumbing: a client that hangs up mid-request (the API server
timing out, or closing its connections at teardown) is one line in its error log, never a
traceback on the terminal."""

from __future__ import annotations

import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crdharness import certs
from crdharness.gate.webhook import crash
from crdharness.gate.webhook.proxy import RecordingProxy
from crdharness.polling import wait_for


def test_a_client_hanging_up_mid_request_is_logged_not_printed(tmp_path, capfd):
    ca = certs.CertificateAuthority(tmp_path)
    proxy = RecordingProxy(ca, "https://127.0.0.1:9", None, tmp_path / "exchanges.jsonl")
    try:
        context = ssl.create_default_context(cadata=ca.pem.decode())
        raw = socket.create_connection(("127.0.0.1", proxy.port))
        client = context.wrap_socket(raw, server_hostname="127.0.0.1")
        client.sendall(b"POST /convert HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        # The connection breaks mid-request: bytes that are no TLS record, then gone.
        broken = socket.socket(fileno=client.detach())
        broken.sendall(b"\x00" * 64)
        broken.close()
        errors = tmp_path / "proxy-errors.log"
        logged = wait_for(
            lambda: errors.exists() and errors.read_text(),
            timeout=30,
            what="the proxy to log the client that hung up",
        )
    finally:
        proxy.stop()
    assert "127.0.0.1" in logged
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err + printed.out, printed.err


class _Target(ThreadingHTTPServer):
    """An HTTPS webhook stand-in that answers ``{}``, and drops a connection unanswered from
    its ``drop_from``-th request on (1: every request)."""

    daemon_threads = True

    def __init__(self, ca: certs.CertificateAuthority, drop_from: int):
        drop = drop_from

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            served = 0

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.served += 1
                if self.served >= drop:
                    self.close_connection = True  # gone without a word, as on a stale reuse
                    return
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        serving = ca.issue_server("target", *certs.LOOPBACK_NAMES)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(serving.cert), str(serving.key))
        self.socket = context.wrap_socket(self.socket, server_side=True)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def _forwarded(tmp_path: Path, drop_from: int, reviews: int) -> tuple[list[int], str, list]:
    ca = certs.CertificateAuthority(tmp_path)
    target = _Target(ca, drop_from)
    proxy = RecordingProxy(
        ca, f"https://127.0.0.1:{target.server_address[1]}", ca.cert_path, tmp_path / "x.jsonl"
    )
    try:
        statuses = [proxy._forward("/convert", b"{}", {}, False)[0] for _ in range(reviews)]
    finally:
        proxy.stop()
        target.shutdown()
        target.server_close()
    errors = tmp_path / "proxy-errors.log"
    return statuses, errors.read_text() if errors.exists() else "", proxy.exchanges


def test_a_kept_alive_connection_the_webhook_closed_is_not_called_a_crash(tmp_path):
    # The second review on a connection is dropped (an idle timeout racing its reuse): sent
    # again on a fresh connection, it is answered; nothing is recorded as a crash.
    statuses, logged, exchanges = _forwarded(tmp_path, drop_from=2, reviews=3)
    assert statuses == [200, 200, 200], logged
    assert "sent again on a fresh connection" in logged
    assert not [e for e in exchanges if e.error]


def test_a_webhook_dropping_every_review_is_still_a_crash(tmp_path):
    statuses, _, exchanges = _forwarded(tmp_path, drop_from=1, reviews=2)
    assert statuses == [502, 502]
    assert all("crashed on this review" in e.error for e in exchanges), exchanges


def test_reviews_after_the_webhook_died_name_its_exit_and_first_crash(tmp_path):
    # (The outside trial: kueue panicked on one review and exited; the 4,299 reviews after it
    # said only "Connection refused".)
    ca = certs.CertificateAuthority(tmp_path)
    log = crash.WebhookLog(tmp_path / "webhook.log")
    log.path.write_text(
        "starting\npanic: runtime error: index out of range [1] with length 1\n\n"
        "goroutine 9 [running]:\nsigs.k8s.io/kueue/pkg/util/tas.Assignment()\nmore\n"
    )
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    exit_code: list[int | None] = [None]
    proxy = RecordingProxy(
        ca,
        f"https://127.0.0.1:{port}",
        ca.cert_path,
        tmp_path / "x.jsonl",
        log,
        lambda: exit_code[0],
    )
    try:
        running = proxy._forward("/convert", b"{}", {}, False)
        exit_code[0] = 2
        dead = proxy._forward("/convert", b"{}", {}, False)
    finally:
        proxy.stop()
    assert running[0] == 502 and b"could not be reached" in running[2]  # alive: as before
    said = dead[2].decode()
    assert "the webhook is no longer running (its process exited, exit code 2)" in said, said
    assert "panic: runtime error: index out of range" in said and "tas.Assignment()" in said


def test_a_client_that_never_speaks_tls_neither_holds_other_clients_nor_the_stop(tmp_path):
    # A connection that never sends its TLS hello once held the proxy's accept loop: every
    # review after it waited, and ``stop()`` (the gate's exit on SIGTERM) never returned,
    # leaving its kube-apiserver and etcd behind (a loaded CI run). The handshake is each
    # connection's own now.
    ca = certs.CertificateAuthority(tmp_path)
    proxy = RecordingProxy(ca, "https://127.0.0.1:9", None, tmp_path / "exchanges.jsonl")
    silent = socket.create_connection(("127.0.0.1", proxy.port))
    stopped = threading.Event()
    try:
        # Another client is served beside it (the target is down: the proxy's own 502).
        context = ssl.create_default_context(cadata=ca.pem.decode())
        raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as client:
            client.sendall(b"POST /convert HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            assert client.recv(64).startswith(b"HTTP/1.1 502"), "no answer beside it"
        threading.Thread(target=lambda: (proxy.stop(), stopped.set()), daemon=True).start()
        wait_for(stopped.is_set, 60, "the proxy to stop with a silent client connected")
    finally:
        silent.close()
