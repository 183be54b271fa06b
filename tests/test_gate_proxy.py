"""The gate's recording proxy is plumbing: a client that hangs up mid-request (the API server
timing out, or closing its connections at teardown) is one line in its error log, never a
traceback on the terminal."""

from __future__ import annotations

import socket
import ssl

from crdharness import certs
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
