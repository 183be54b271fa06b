"""The gate's requests (``ApiHttp.exchange``, ``api.call``): the server's status, headers and
JSON as it answered them, TLS and the client certificate as the kubeconfig says, failures as
``requests``' own exceptions, nothing but GET to a source cluster. A loopback HTTPS server
stands for the API server."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import ssl
import threading
from pathlib import Path

import pytest
import requests
import trustme
from kubernetes import client

from crdharness import kubeconfig
from crdharness.cluster import ApiHttp, new_api_client
from crdharness.errors import HarnessError
from crdharness.gate import api
from crdharness.gate.given.source_http import ReadOnlyHttp


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers each request with what it received (method, path, headers, body, the client
    certificate's subject), two Warning headers, and the status in ``?status=``."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        received = self.rfile.read(length).decode() if length else ""
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        status = int(self.path.partition("status=")[2] or 200)
        if "text" in self.path:
            body = b"plain words, not JSON"
        else:
            body = json.dumps(
                {
                    "method": self.command,
                    "path": self.path,
                    "contentType": self.headers.get("Content-Type"),
                    "authorization": self.headers.get("Authorization"),
                    "userAgent": self.headers.get("User-Agent"),
                    "received": received,
                    "clientCert": bool(peer),
                    "clientPort": self.client_address[1],
                }
            ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Warning", '299 - "first warning"')
        self.send_header("Warning", '299 - "second, with a comma"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """An HTTPS server on loopback asking for a client certificate, and a Configuration that
    trusts it and presents one, as a kubeconfig would."""
    ca = trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(tls)
    ca.configure_trust(tls)
    tls.verify_mode = ssl.CERT_OPTIONAL
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    ca_file, cert_file, key_file = tmp_path / "ca.pem", tmp_path / "c.pem", tmp_path / "k.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    issued = ca.issue_cert("gate@example.com")
    issued.cert_chain_pems[0].write_to_path(str(cert_file))
    issued.private_key_pem.write_to_path(str(key_file))
    configuration = client.Configuration()
    configuration.host = f"https://127.0.0.1:{httpd.server_address[1]}"
    configuration.ssl_ca_cert = str(ca_file)
    configuration.cert_file, configuration.key_file = str(cert_file), str(key_file)
    configuration.api_key = {"authorization": "Bearer a-token"}
    yield configuration
    httpd.shutdown()
    httpd.server_close()


def test_an_exchange_sends_the_body_with_the_kubeconfigs_credentials(server):
    http = ApiHttp(server)
    try:
        answer = http.exchange("PUT", "/apis/x?status=201", b'{"a": 1}')
    finally:
        http.close()
    echoed = json.loads(answer.data)
    assert answer.status == 201
    assert echoed["method"] == "PUT" and echoed["path"] == "/apis/x?status=201"
    assert echoed["received"] == '{"a": 1}' and echoed["contentType"] == "application/json"
    assert echoed["authorization"] == "Bearer a-token" and echoed["clientCert"]
    # The API server names an update's field manager after the agent: the gate knows its own
    # writes by it (``upgrade_objects.GATE_MANAGERS``).
    assert echoed["userAgent"].startswith("python-requests/"), echoed
    # Both Warning headers, joined as requests joins them: ``api`` parses each out.
    assert answer.headers.get("Warning") == '299 - "first warning", 299 - "second, with a comma"'


def test_call_answers_the_json_the_warnings_and_the_status(server, monkeypatch):
    http = ApiHttp(server)
    cluster = type("Cluster", (), {"http": http})()
    try:
        refused = api.call(cluster, "POST", "/apis/x?status=422", {"spec": {"size": 2**70}})
        plain = api.call(cluster, "GET", "/apis/text?status=500")
    finally:
        http.close()
    assert refused.status == 422 and not refused.ok
    # An integer beyond 64 bits is sent as JSON all the same (orjson refuses it: json sends it).
    assert json.loads(refused.body["received"]) == {"spec": {"size": 2**70}}
    assert refused.warnings == ["first warning", "second, with a comma"]
    assert plain.body == {} and plain.message == "plain words, not JSON"


def test_a_server_not_there_fails_as_requests_would(server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    server.host = f"https://127.0.0.1:{closed}"
    http = ApiHttp(server)
    with pytest.raises(requests.ConnectionError):
        http.exchange("GET", "/version")


def test_a_ca_that_does_not_match_fails_as_requests_would(server, tmp_path):
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "other.pem"))
    server.ssl_ca_cert = str(tmp_path / "other.pem")
    http = ApiHttp(server)
    with pytest.raises(requests.exceptions.SSLError):
        http.exchange("GET", "/version")


def test_a_source_cluster_is_never_written_to(server):
    http = ReadOnlyHttp(server)
    try:
        assert http.exchange("GET", "/version").status == 200
        with pytest.raises(HarnessError, match="never writes to the source cluster"):
            http.exchange("PUT", "/apis/x", b"{}")
    finally:
        http.close()


def test_a_kubeconfigs_token_is_sent_as_the_official_client_reads_it(server, tmp_path):
    # The local control plane's kubeconfig holds a token (no client certificate): the official
    # loader keeps it as "BearerToken", which the gate's requests must send too (they went
    # out anonymous when only "authorization" was looked for).
    path = kubeconfig.write(
        tmp_path / "kubeconfig",
        "t",
        server.host,
        base64.b64encode(Path(server.ssl_ca_cert).read_bytes()).decode(),
        token="a-local-token",
    )
    http = ApiHttp(new_api_client(path, tmp_path).configuration)
    try:
        echoed = json.loads(http.exchange("GET", "/apis/x").data)
    finally:
        http.close()
    assert echoed["authorization"] == "Bearer a-local-token"
    assert not echoed["clientCert"]


def test_a_connection_made_once_serves_later_requests_from_any_thread(server):
    # The gate's worker threads come and go with each batch: a connection (and its TLS
    # handshake) per thread would be one per batch.
    http = ApiHttp(server)
    ports = []

    def one() -> None:
        ports.append(json.loads(http.exchange("GET", "/apis/x").data)["clientPort"])

    try:
        for _ in range(5):
            thread = threading.Thread(target=one)
            thread.start()
            thread.join()
    finally:
        http.close()
    assert len(ports) == 5 and len(set(ports)) == 1, ports


def test_a_proxy_in_the_environment_is_not_used_for_the_api_server(server, monkeypatch):
    # libcurl reads https_proxy by itself; the API server is reached directly, as before.
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    http = ApiHttp(server)
    try:
        assert http.exchange("GET", "/apis/x").status == 200
    finally:
        http.close()


def test_a_server_that_never_answers_is_a_read_timeout(server):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts the connection, never says a word
        server.host = f"https://127.0.0.1:{silent.getsockname()[1]}"
        server.verify_ssl = False
        http = ApiHttp(server)
        try:
            with pytest.raises((requests.ReadTimeout, requests.ConnectTimeout)):
                http.exchange("GET", "/version", timeout=1)
        finally:
            http.close()
