"""A source cluster that cannot be read stops ``--from-cluster`` in one line (a HarnessError:
the gate exits 3), never a traceback: nothing listening, a CA that does not match, refused
credentials, a GET that fails midway, a context the kubeconfig lacks, none of the gate's
CRDs. Servers on loopback stand for the cluster."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trustme
import yaml

from crdharness.errors import HarnessError
from crdharness.gate import cli as gate_cli
from crdharness.gate.given import cluster_source, source_http

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "from-cluster"


def _kubeconfig(path: Path, server: str, *, ca: Path | None = None, context: str = "prod") -> Path:
    cluster: dict = {"server": server}
    if ca is not None:
        cluster["certificate-authority"] = str(ca)
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "expired-token"}}],
                "contexts": [
                    {"name": name, "context": {"cluster": "c", "user": "u"}}
                    for name in (context, "staging")
                ],
                "current-context": context,
            }
        )
    )
    return path


class _Answering(http.server.BaseHTTPRequestHandler):
    """Answers /version with the server's ``version_status``; anything else with
    ``list_status`` (0: drops the connection, as a server going away midway)."""

    version_status = 200
    list_status = 200

    def do_GET(self):
        status = self.server.version_status if self.path == "/version" else self.server.list_status
        if status == 0:
            self.connection.close()
            return
        body = b'{"gitVersion": "v1.37.0"}' if status == 200 else b'{"kind": "Status"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """A loopback HTTP(S) server answering as asked; stopped after the test."""
    servers = []

    def start(version_status=200, list_status=200, tls: ssl.SSLContext | None = None) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
        server.version_status, server.list_status = version_status, list_status
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _reach(kubeconfig: Path, tmp_path: Path, context: str | None = None) -> str:
    http = source_http.connect(kubeconfig, context, tmp_path / "credentials")
    try:
        return source_http.reach(http)
    finally:
        http.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed on leaving: nothing listens there


def test_nothing_listening_is_one_line(tmp_path):
    server = f"https://127.0.0.1:{_closed_port()}"
    with pytest.raises(HarnessError) as raised:
        _reach(_kubeconfig(tmp_path / "kc", server), tmp_path)
    message = str(raised.value)
    assert message.startswith(f"--from-cluster: nothing answers at {server}"), message
    assert "Connection refused" in message and "\n" not in message


def test_a_ca_that_does_not_match_the_servers_certificate_is_one_line(tmp_path, serve):
    served_by, trusted = trustme.CA(), trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served_by.issue_cert("127.0.0.1").configure_cert(tls)
    server = serve(tls=tls)
    trusted.cert_pem.write_to_path(str(tmp_path / "other-ca.crt"))
    kubeconfig = _kubeconfig(tmp_path / "kc", server, ca=tmp_path / "other-ca.crt")
    with pytest.raises(HarnessError) as raised:
        _reach(kubeconfig, tmp_path)
    message = str(raised.value)
    assert message.startswith(f"--from-cluster: TLS to {server} failed"), message
    assert "certificate-authority does not match" in message and "\n" not in message
    # The right CA: the same server answers.
    served_by.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    assert _reach(_kubeconfig(tmp_path / "kc", server, ca=tmp_path / "ca.crt"), tmp_path) == (
        "v1.37.0"
    )


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (401, "refused the credentials (401): they may have expired"),
        (403, "forbids these credentials (403): the gate needs get on its CRDs"),
    ],
)
def test_refused_credentials_are_one_line_with_the_fix(tmp_path, serve, status, said):
    server = serve(version_status=status)
    with pytest.raises(HarnessError) as raised:
        _reach(_kubeconfig(tmp_path / "kc", server), tmp_path)
    message = str(raised.value)
    assert message.startswith(f"--from-cluster: {server} {said}"), message
    if status == 403:
        assert "--print-rbac" in message


@pytest.mark.parametrize(
    ("list_status", "said"),
    [
        (0, "--from-cluster: GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/"),
        (403, "(403): the gate needs get on its CRDs and get and list on their objects"),
        (500, ": 500 "),
    ],
)
def test_a_read_that_fails_after_version_answered_is_one_line(tmp_path, serve, list_status, said):
    """The server answered /version, then a GET fails: dropped midway, forbidden, broken."""
    server = serve(list_status=list_status)
    http = source_http.connect(_kubeconfig(tmp_path / "kc", server), None, tmp_path / "cred")
    try:
        assert source_http.reach(http) == "v1.37.0"
        with pytest.raises(HarnessError) as raised:
            cluster_source.capture(http, "prod", ["tunnels.example.com"], [])
    finally:
        http.close()
    assert said in str(raised.value) and "\n" not in str(raised.value), str(raised.value)


def test_a_context_the_kubeconfig_does_not_hold_lists_those_it_does(tmp_path):
    kubeconfig = _kubeconfig(tmp_path / "kc", "https://127.0.0.1:1")
    with pytest.raises(HarnessError, match=r"has no context 'prd'; its contexts: prod, staging"):
        source_http.connect(kubeconfig, "prd", tmp_path / "credentials")


def test_the_gate_says_a_wrong_context_in_one_line_and_exits_3(tmp_path):
    kubeconfig = _kubeconfig(tmp_path / "kc", "https://127.0.0.1:1")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "crdharness", "gate", str(EXAMPLE / "gate.yaml")),
            *("--from-cluster", str(kubeconfig), "--context", "prd"),
            *("--artifacts", str(tmp_path / "gate")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    said = (done.stdout + done.stderr).splitlines()
    assert len(said) == 1, said
    assert said[0].endswith(
        f"error: --from-cluster: {kubeconfig} has no context 'prd'; its contexts: prod, "
        "staging (choose one with --context)"
    ), said
    assert "Traceback" not in done.stderr


def test_a_cluster_without_any_of_the_gates_crds_is_one_line_before_anything_starts(
    tmp_path, serve, capsys
):
    server = serve(list_status=404)  # /version answers; the CRD is not there
    kubeconfig = _kubeconfig(tmp_path / "kc", server)
    code = gate_cli.main(
        [
            str(EXAMPLE / "gate.yaml"),
            "--from-cluster",
            str(kubeconfig),
            "--artifacts",
            str(tmp_path),
        ]
    )
    said = capsys.readouterr().out.splitlines()
    assert code == gate_cli.NOT_RUN
    assert said == [
        f"crdharness gate: error: --from-cluster: the cluster (context prod, {server}) has none "
        "of tunnels.network.gate.example.com installed: nothing of it to upgrade (is this the "
        "right context?)"
    ], said
