"""The user's webhook image on kind: loaded into the nodes, run by a Deployment, reached by
the API server through a Service, as in production.

The API server runs inside the node container, so it cannot call the gate's recording proxy
on the host's loopback: here the webhook is reached directly, and *webhook-conduct* says it
is not proven. Everything else is judged the same way as on the local backend.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from crdharness import certs
from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookSpec, fill_placeholders
from crdharness.webhooks.protocol import ConversionWebhook, started

NAMESPACE = "crdharness-gate"
NAME = "gate-webhook"
SERVICE_HOST = f"{NAME}.{NAMESPACE}.svc"


def manifests(spec: WebhookSpec, serving: certs.KeyPair, ca_pem: bytes) -> list[dict]:
    """Namespace, Secret (certificates for the Service's DNS name), Deployment, Service."""
    values = {
        "tls_cert": f"{spec.cert_dir}/tls.crt",
        "tls_key": f"{spec.cert_dir}/tls.key",
        "cert_dir": spec.cert_dir,
        "port": str(spec.port),
        "kubeconfig": "",  # in the cluster a pod uses its service account
        "ca": f"{spec.cert_dir}/ca.crt",
        "python": "python3",
    }
    labels = {"app": NAME}
    container = {
        "name": "webhook",
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",  # loaded with `kind load`, not pulled
        "args": [fill_placeholders(a, values) for a in spec.args],
        "env": [{"name": k, "value": fill_placeholders(v, values)} for k, v in spec.env.items()],
        "ports": [{"name": "webhook", "containerPort": spec.port}],
        "volumeMounts": [{"name": "tls", "mountPath": spec.cert_dir, "readOnly": True}],
    }
    secret_data = {
        "tls.crt": serving.cert.read_bytes(),
        "tls.key": serving.key.read_bytes(),
        "ca.crt": ca_pem,
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{NAME}-tls", "namespace": NAMESPACE, "labels": labels},
            "type": "kubernetes.io/tls",
            "data": {k: base64.b64encode(v).decode() for k, v in secret_data.items()},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [container],
                        "volumes": [{"name": "tls", "secret": {"secretName": f"{NAME}-tls"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "selector": labels,
                "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook"}],
            },
        },
    ]


def service_reach(ca_bundle: str) -> Callable[[str], dict]:
    return lambda path: {
        "service": {"namespace": NAMESPACE, "name": NAME, "path": path, "port": 443},
        "caBundle": ca_bundle,
    }


class KindUserWebhook:
    """Same face as ``UserWebhook`` (a ``ConversionWebhook``, and ``reach``), but ``proxy`` is
    None: nothing sits between the API server and the webhook, so there are no records."""

    proxy = None

    def __init__(
        self,
        spec: WebhookSpec,
        directory: Path,
        cluster,
        load_image: Callable,
        ready_path: str | None = None,
        ready_version: str | None = None,
    ):
        if spec.form != "image":
            raise HarnessError(
                f"webhook.{spec.form}: on --cluster=kind the gate deploys a webhook image behind "
                "a Service; give `image:` (the API server there cannot reach this machine)"
            )
        self.spec = spec
        self.directory = directory
        self.cluster = cluster
        self.load_image = load_image  # (image, directory) -> how it was loaded
        self.ca = certs.CertificateAuthority(directory)

    def reach(self, path: str) -> dict:
        return service_reach(self.ca.bundle_b64)(path)

    def client_config(self) -> dict:
        return self.reach(self.spec.path)

    def records(self) -> list[dict]:
        raise HarnessError(
            "on --cluster=kind the API server calls the webhook directly: no reviews are "
            "recorded (run the gate on --cluster=local for them)"
        )

    def reviews_for(self, name: str, desired_api_version: str | None = None) -> list[dict]:
        return self.records()

    def set_faults(self, *faults: str) -> None:
        raise HarnessError("the user's webhook has no fault control; only the reference has")

    def start(self) -> KindUserWebhook:
        return started(self)

    def launch(self) -> KindUserWebhook:
        self.load_image(self.spec.image, self.directory)
        serving = self.ca.issue_server("gate-webhook", SERVICE_HOST)
        documents = manifests(self.spec, serving, self.ca.pem)
        self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))
        return self

    def wait_ready(self) -> None:
        # Ready pods; the first real conversion through the Service is the install check's.
        timeout = int(self.spec.ready_timeout)
        result = self.cluster.kubectl(
            "rollout",
            "status",
            f"deployment/{NAME}",
            "-n",
            NAMESPACE,
            f"--timeout={timeout}s",
            check=False,
        )
        if result.returncode != 0:
            logs = self.cluster.kubectl(
                "logs", f"deployment/{NAME}", "-n", NAMESPACE, "--tail=10", check=False
            )
            raise HarnessError(
                f"the webhook deployment did not become ready in {timeout}s: "
                f"{result.stderr.strip()[-300:]} {logs.stdout.strip()[-500:]}"
            )

    def stop(self) -> None:
        self.cluster.kubectl(
            "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False
        )


if TYPE_CHECKING:  # mypy checks it against the protocol every caller relies on
    _checked: type[ConversionWebhook] = KindUserWebhook
