"""The webhook as a real HTTPS server on 127.0.0.1: TLS rules, client certificates, reload."""

import json
import shutil
import socket
import ssl
import warnings

import pytest
import requests
import trustme

from crdharness import certs
from crdharness.polling import wait_for
from crdharness.webhooks.reference import LocalWebhook, probe_review
from tests import webhook_examples as ex

JSON_HEADERS = {"Content-Type": "application/json"}


@pytest.fixture
def ca(tmp_path):
    return certs.CertificateAuthority(tmp_path)


@pytest.fixture
def webhook(ca, tmp_path):
    server = LocalWebhook(ca, tmp_path).start()
    yield server
    server.stop()


def tls_handshake(port: int, context: ssl.SSLContext) -> str:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        return tls.version()


def test_documented_review_over_https(webhook, ca):
    response = requests.post(webhook.url, json=ex.REQUEST_V1, verify=str(ca.cert_path), timeout=10)
    assert response.status_code == 200
    assert response.json() == ex.RESPONSE_V1
    (record,) = [r for r in webhook.records() if r.get("uid") == ex.UID]
    assert record["result"] == "Success"


def test_plain_http_is_refused(webhook):
    with pytest.raises(requests.ConnectionError):
        requests.post(webhook.url.replace("https://", "http://"), json=ex.REQUEST_V1, timeout=10)


def test_tls_below_1_2_is_refused_and_1_2_is_accepted(webhook, ca):
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(ca.cert_path)
    old.set_ciphers("DEFAULT:@SECLEVEL=0")  # let this client offer TLS 1.1 at all
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # deprecated: that is the point
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError) as refused:
        tls_handshake(webhook.port, old)
    # The server hung up on the hello; a client unable to offer TLS 1.1 would fail before that.
    assert "no protocols available" not in str(refused.value).lower()
    modern = ssl.create_default_context(cafile=str(ca.cert_path))
    modern.maximum_version = ssl.TLSVersion.TLSv1_2
    assert tls_handshake(webhook.port, modern) == "TLSv1.2"


def authority(directory):
    directory.mkdir()
    return certs.CertificateAuthority(directory)


def test_client_ca_requires_a_valid_client_certificate(ca, tmp_path):
    client_ca = authority(tmp_path / "clients")
    good = client_ca.issue_client("apiserver-client", "kube-apiserver")
    bad = authority(tmp_path / "strangers").issue_client("stranger", "stranger")
    server = LocalWebhook(ca, tmp_path, client_ca=client_ca.cert_path).start(client_cert=good)
    try:
        for cert in (None, (str(bad.cert), str(bad.key))):
            with pytest.raises((requests.exceptions.SSLError, requests.ConnectionError)):
                requests.post(
                    server.url, json=probe_review(), cert=cert, verify=str(ca.cert_path), timeout=10
                )
        ok = requests.post(
            server.url,
            json=probe_review(),
            cert=(str(good.cert), str(good.key)),
            verify=str(ca.cert_path),
            timeout=10,
        )
        assert ok.status_code == 200
    finally:
        server.stop()


def test_rotated_certificate_is_used_without_restart(webhook, tmp_path):
    new_ca = trustme.CA()
    new_dir = tmp_path / "rotated"
    new_dir.mkdir()
    rotated = certs.CertificateAuthority(new_dir, new_ca).issue_server("webhook")
    pid = webhook.process.pid
    shutil.copy(rotated.key, webhook.serving.key)
    shutil.copy(rotated.cert, webhook.serving.cert)

    def trusted_by_new_ca():
        return (
            requests.post(
                webhook.url, json=probe_review(), verify=str(new_dir / "ca.crt"), timeout=5
            ).status_code
            == 200
        )

    # Until it does, the old certificate fails verification against the new CA (SSLError).
    retry = (requests.RequestException,)
    wait_for(
        trusted_by_new_ca, 20, "the webhook to serve the rotated certificate", 0.2, retry=retry
    )
    assert webhook.process.pid == pid and webhook.process.running()


def test_machine_ca_bundle_does_not_override_the_harness_ca(webhook, monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    webhook.wait_ready(timeout=10)


def test_a_webhook_that_never_becomes_ready_is_stopped(ca, tmp_path):
    from crdharness.polling import WaitTimeout
    from crdharness.processes import is_alive

    broken = LocalWebhook(ca, tmp_path, faults=("wrong-uid",))
    with pytest.raises(WaitTimeout, match="to answer a ConversionReview"):
        broken.start(ready_timeout=2)
    assert broken.process is not None
    wait_for(lambda: not is_alive(broken.process.pid), 10, "the broken webhook to exit")


def test_several_workers_share_the_port_record_every_review_and_stop_together(tmp_path):
    """One worker process per CPU by default: all answer on one port, every review lands in
    the one record file, and they all stop with the webhook — also when it is killed."""
    import psutil

    from crdharness.processes import is_alive

    ca = certs.CertificateAuthority(tmp_path)
    server = LocalWebhook(ca, tmp_path, fault_control=False, workers=3).start()
    try:
        parent = psutil.Process(server.process.pid)
        workers = parent.children()
        assert len(workers) == 3
        uids = []
        with requests.Session() as session:
            session.trust_env = False
            for _ in range(60):
                review = probe_review()
                answer = session.post(server.url, json=review, verify=str(ca.cert_path), timeout=10)
                assert answer.json()["response"]["uid"] == review["request"]["uid"]
                uids.append(review["request"]["uid"])
        recorded = [r["uid"] for r in server.records() if r.get("uid") in set(uids)]
        assert sorted(recorded) == sorted(uids)
        parent.kill()  # no chance to stop its workers itself
        wait_for(
            lambda: not any(is_alive(w.pid) for w in workers),
            10,
            "the workers to die with their parent",
        )
    finally:
        server.stop()


def test_connections_are_spread_evenly_over_the_workers(tmp_path):
    """Four connections made at once (as a load generator or the API server makes them) to two
    workers: two each. Workers that accepted on the shared socket themselves often left one
    idle: the first to wake took every connection waiting."""
    import http.client

    import psutil

    ca = certs.CertificateAuthority(tmp_path)
    server = LocalWebhook(ca, tmp_path, fault_control=False, workers=2).start()
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    waiting = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(4)]
    clients = []
    try:
        for raw in waiting:  # all four are queued before the first is accepted
            client = http.client.HTTPSConnection("127.0.0.1", server.port, context=context)
            client.sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
            clients.append(client)
            client.request("POST", "/crdconvert", json.dumps(probe_review()), JSON_HEADERS)
            assert client.getresponse().read()

        def per_worker() -> list[int]:
            return sorted(
                sum(
                    1
                    for c in worker.net_connections(kind="tcp")
                    if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == server.port
                )
                for worker in psutil.Process(server.process.pid).children()
            )

        assert per_worker() == [2, 2]
    finally:
        for raw in waiting:
            raw.close()
        for client in clients:
            client.close()
        server.stop()


def test_every_form_of_the_reference_webhook_offers_the_same_interface():
    """Tests, fixtures and the gate use ConversionWebhook's methods only, whichever form runs:
    the reference webhook's three, and the user's own webhook in the gate."""
    from crdharness.backends.kind_cluster import KindWebhook
    from crdharness.gate.webhook.kind_webhook import KindUserWebhook
    from crdharness.gate.webhook.user_webhook import UserWebhook
    from crdharness.webhooks.protocol import ConversionWebhook
    from crdharness.webhooks.reference import ContainerWebhook, LocalWebhook

    wanted = {
        name
        for name, value in vars(ConversionWebhook).items()
        if callable(value) and not name.startswith("_")
    }
    assert wanted >= {"client_config", "records", "launch", "wait_ready", "start", "stop"}
    for form in (LocalWebhook, ContainerWebhook, KindWebhook, UserWebhook, KindUserWebhook):
        missing = {name for name in wanted if not callable(getattr(form, name, None))}
        assert not missing, f"{form.__name__} lacks {sorted(missing)}"
        overridden = {
            name
            for name in ("launch", "stop")
            if getattr(form, name) is not getattr(ConversionWebhook, name)
        }
        assert overridden == {"launch", "stop"}, form.__name__


def test_the_users_webhook_records_are_the_proxys_exchanges_in_the_reference_shape(tmp_path):
    from crdharness.errors import HarnessError
    from crdharness.gate.given.config import WebhookSpec
    from crdharness.gate.webhook.proxy import Exchange
    from crdharness.gate.webhook.user_webhook import UserWebhook

    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "u1",
            "desiredAPIVersion": "g.io/v2",
            "objects": [{"apiVersion": "g.io/v1", "metadata": {"name": "a"}}, "not an object"],
        },
    }
    answer = {"response": {"uid": "u1", "result": {"status": "Failed", "message": "no"}}}
    webhook = UserWebhook(
        WebhookSpec(url="https://127.0.0.1:1/convert"), tmp_path, tmp_path, tmp_path
    )
    webhook.proxy = type(
        "Proxy",
        (),
        {
            "exchanges": [
                Exchange("/convert", review, 200, answer, 0.0021),
                Exchange("/validate", {"kind": "AdmissionReview"}, 200, {}, 0.001),
            ]
        },
    )()
    assert webhook.records() == [
        {
            "path": "/convert",
            "uid": "u1",
            "reviewVersion": "apiextensions.k8s.io/v1",
            "desiredAPIVersion": "g.io/v2",
            "objects": [{"name": "a", "apiVersion": "g.io/v1"}, {"invalid": True}],
            "result": "Failed",
            "message": "no",
            "status": 200,
            "durationMs": 2.1,
        }
    ]
    assert len(webhook.reviews_for("a", "g.io/v2")) == 1
    assert webhook.reviews_for("a", "g.io/v1") == []
    with pytest.raises(HarnessError, match="no fault control"):
        webhook.set_faults("fail-500")
