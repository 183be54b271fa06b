"""Mutual TLS between kube-apiserver and the webhooks it calls (CC-22, issue 6's security item).

One webhook requires client certificates from a CA of its own. kube-apiserver is given a
certificate from that CA for exactly the webhook's address, the documented way: a kubeconfig
named in ``--admission-control-config-file``. What the API server then does, checked against
the webhook's own records (a request reaches the app only after the TLS layer accepted the
caller's certificate):

- admission webhooks at that address are called with the certificate; at another name of the
  same server they are not (so the certificate comes from that kubeconfig entry);
- a conversion webhook at that same address is called without one: kube-apiserver 1.37 builds
  its conversion webhook client with an empty credential resolver
  (``apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go``), so a
  conversion webhook cannot authenticate the API server by client certificate.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from crdharness import certs, ports
from crdharness.cluster import Cluster
from crdharness.polling import wait_for
from crdharness.scenarios.versioned import (
    HOSTPORT_SCHEMA,
    crontab_manifest,
    version,
    webhook_conversion,
)
from crdharness.webhooks import clients as webhook_clients
from crdharness.webhooks.reference import LocalWebhook


@dataclass
class MutualTLS:
    cluster: Cluster  # its kube-apiserver holds a client certificate for ``address``
    webhook: LocalWebhook  # requires a client certificate from the same CA
    address: str  # host:port the certificate is configured for
    ca_bundle_b64: str  # the webhook's serving CA


@pytest.fixture
def mutual_tls(own_control_plane, tmp_path) -> MutualTLS:
    serving_ca = certs.CertificateAuthority(tmp_path)
    clients_dir = tmp_path / "clients"
    clients_dir.mkdir()
    client_ca = certs.CertificateAuthority(clients_dir)
    webhook = LocalWebhook(serving_ca, tmp_path, client_ca=client_ca.cert_path)
    address = f"{ports.LOOPBACK}:{webhook.port}"
    apiserver_identity = client_ca.issue_client("kube-apiserver", "kube-apiserver")
    flags = webhook_clients.apiserver_flags(clients_dir, {address: apiserver_identity})
    webhook.start(client_cert=client_ca.issue_client("probe", "probe"))
    try:
        yield MutualTLS(own_control_plane(*flags), webhook, address, serving_ca.bundle_b64)
    finally:
        webhook.stop()


def _labelled_namespace(on: Cluster) -> str:
    name = f"mtls-{uuid.uuid4().hex[:8]}"
    on.core.create_namespace({"metadata": {"name": name, "labels": {"crdharness-mtls": name}}})
    return name


def _validating_webhook(on: Cluster, namespace: str, url: str, ca_bundle_b64: str) -> None:
    """Every ConfigMap created in ``namespace`` goes to ``url`` first; failures reject it."""
    client.AdmissionregistrationV1Api(on.api_client).create_validating_webhook_configuration(
        {
            "metadata": {"name": namespace},
            "webhooks": [
                {
                    "name": f"{namespace}.mtls.crdharness.test",
                    "clientConfig": {"url": url, "caBundle": ca_bundle_b64},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"crdharness-mtls": namespace}},
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 5,
                }
            ],
        }
    )


def _create_config_map_until_rejected(on: Cluster, namespace: str) -> str:
    """Create ConfigMaps until the (new) admission webhook is in force and rejects one; return
    the API server's message. Webhook configurations take effect asynchronously."""

    def rejected() -> str | None:
        name = f"cm-{uuid.uuid4().hex[:8]}"
        try:
            on.core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
        except ApiException as exc:
            return json.loads(exc.body)["message"]
        return None

    return wait_for(rejected, 30, f"the admission webhook for {namespace} to be in force")


def _requests_at(webhook: LocalWebhook, path: str) -> list[dict]:
    return [r for r in webhook.records() if r.get("path") == path]


def _await_requests_at(webhook: LocalWebhook, path: str) -> list[dict]:
    # The app writes its record as it answers, so the API server may see the answer first.
    return wait_for(
        lambda: _requests_at(webhook, path),
        10,
        f"a request of the API server's (with its client certificate) to reach {path}",
    )


@pytest.mark.behaviour("CC-22")
def test_api_server_presents_its_client_certificate_to_admission_webhooks(mutual_tls):
    tls = mutual_tls
    by_name = _labelled_namespace(tls.cluster)
    by_address = _labelled_namespace(tls.cluster)

    # The same server under a name the kubeconfig does not list: no certificate is sent, and
    # the webhook turns the caller away in the TLS layer.
    _validating_webhook(
        tls.cluster, by_name, f"https://localhost:{tls.webhook.port}/by-name", tls.ca_bundle_b64
    )
    message = _create_config_map_until_rejected(tls.cluster, by_name)
    assert "failed calling webhook" in message, message
    assert _requests_at(tls.webhook, "/by-name") == [], "reached without a client certificate"

    # At the address the kubeconfig lists, the request passes the client-certificate check and
    # reaches the app (which answers 404: it serves conversions, not admission reviews).
    _validating_webhook(
        tls.cluster, by_address, f"https://{tls.address}/by-address", tls.ca_bundle_b64
    )
    _create_config_map_until_rejected(tls.cluster, by_address)
    reached = _await_requests_at(tls.webhook, "/by-address")
    assert reached[0]["rejected"] == 404


@pytest.mark.behaviour("CC-22")
def test_api_server_presents_no_client_certificate_to_conversion_webhooks(
    mutual_tls, make_crd, group
):
    tls = mutual_tls
    namespace = _labelled_namespace(tls.cluster)
    crd = make_crd(
        crontab_manifest(
            group,
            [version("v1beta1", storage=True, schema=HOSTPORT_SCHEMA), version("v1")],
            webhook_conversion(f"https://{tls.address}/convert", tls.ca_bundle_b64),
        ),
        on=tls.cluster,
    )
    crd.create_object("v1beta1", namespace, "obj", hostPort="h:1")

    with pytest.raises(ApiException) as failed:
        crd.get_object("v1", namespace, "obj")
    assert failed.value.status == 500
    message = json.loads(failed.value.body)["message"]
    assert f"conversion webhook for {group}/v1beta1, Kind=CronTab failed" in message

    # Nothing of the API server's got past TLS: the only reviews are the harness's own
    # readiness probes (no objects) and nothing was turned away by the app.
    reviews = [r for r in tls.webhook.records() if "uid" in r]
    assert all(r["objects"] == [] for r in reviews), "a conversion review got through"
    assert _requests_at(tls.webhook, "/convert") == []

    # The same address, the same kube-apiserver: an admission webhook gets through. So the
    # credential is in place, and conversion calls do not use it.
    _validating_webhook(tls.cluster, namespace, f"https://{tls.address}/probe", tls.ca_bundle_b64)
    _create_config_map_until_rejected(tls.cluster, namespace)
    _await_requests_at(tls.webhook, "/probe")
