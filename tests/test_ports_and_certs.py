import socket
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from crdharness import certs, etcd, ports
from crdharness.errors import HarnessError


def test_busy_port_is_one_line_naming_port_holder_and_option():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        with pytest.raises(HarnessError) as info:
            ports.claim(busy, "kube-apiserver", "--apiserver-port")
    message = str(info.value)
    assert f"port {busy}" in message
    assert "--apiserver-port" in message
    assert "busy" in message
    assert "\n" not in message


def test_a_free_port_can_be_claimed():
    port = ports.free_port()
    assert ports.claim(port, "etcd", "--etcd-port") == port
    assert ports.claim(None, "etcd", "--etcd-port") > 0


def test_private_keys_are_owner_only(tmp_path):
    ca = certs.CertificateAuthority(tmp_path)
    pair = ca.issue_server("server")
    client = ca.issue_client("admin", "someone", ("system:masters",))
    sa = certs.service_account_keys(tmp_path)
    for key in (pair.key, client.key, sa.key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key


def test_admin_client_certificate_carries_user_and_group(tmp_path):
    ca = certs.CertificateAuthority(tmp_path)
    pair = ca.issue_client("admin", "crdharness-admin", ("system:masters",))
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "crdharness-admin"
    assert (
        cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    )
    # Go refuses a critical SAN extension that is empty.
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert len(san.value) > 0


def test_serving_certificate_is_trusted_for_loopback(tmp_path):
    ca = certs.CertificateAuthority(tmp_path)
    pair = ca.issue_server("server")
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(pair.cert, pair.key)
    assert context.verify_mode == ssl.CERT_REQUIRED
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("team-a", "/registry/example.com/crontabs/team-a/my"),
        (None, "/registry/example.com/crontabs/my"),
    ],
)
def test_custom_resource_keys_follow_scope(namespace, expected):
    assert etcd.custom_resource_key("example.com", "crontabs", "my", namespace) == expected


def test_prefix_range_end_is_the_next_key():
    import base64

    assert base64.b64decode(etcd._prefix_end("/registry/a/")) == b"/registry/a0"


def test_webhook_client_credentials_are_one_user_per_address_and_owner_only(tmp_path):
    import yaml

    from crdharness.webhooks import clients as webhook_clients

    ca = certs.CertificateAuthority(tmp_path)
    identity = ca.issue_client("kube-apiserver", "kube-apiserver")
    flags = webhook_clients.apiserver_flags(tmp_path, {"127.0.0.1:9443": identity})

    (flag,) = flags
    admission = yaml.safe_load(Path(flag.split("=", 1)[1]).read_text())
    assert [p["name"] for p in admission["plugins"]] == [
        "ValidatingAdmissionWebhook",
        "MutatingAdmissionWebhook",
    ]
    kubeconfig = tmp_path / "webhook-clients.kubeconfig"
    assert {p["configuration"]["kubeConfigFile"] for p in admission["plugins"]} == {str(kubeconfig)}
    assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600  # it embeds the private key
    (user,) = yaml.safe_load(kubeconfig.read_text())["users"]
    assert user["name"] == "127.0.0.1:9443"
    assert set(user["user"]) == {"client-certificate-data", "client-key-data"}


@pytest.mark.e2e
def test_a_port_another_process_takes_after_it_was_chosen_is_chosen_again(monkeypatch):
    # The race: a free port is chosen, another program binds it before kube-apiserver does.
    # The harness starts again on new ports instead of failing the run.
    from crdharness.backends.controlplane import ControlPlane
    from crdharness.binaries import assets, versions

    release = versions.DEFAULT
    said: list[str] = []
    taken = socket.socket()
    taken.bind((ports.LOOPBACK, 0))
    taken.listen()
    chosen = iter([taken.getsockname()[1]])
    real_free_port = ports.free_port
    monkeypatch.setattr(ports, "free_port", lambda: next(chosen, None) or real_free_port())
    plane = ControlPlane(assets.resolve(release), release, report=said.append)
    try:
        plane.start()
        assert plane.apiserver_port != taken.getsockname()[1]
        assert any("taken meanwhile; new ports" in line for line in said), said
    finally:
        plane.stop()
        taken.close()
