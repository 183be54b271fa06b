"""The kind backend (``--cluster=kind``): a real cluster in Docker, through pytest-kind-ng.

kind needs privileged containers and a registry for its node image, so it cannot run on the
harness's own CI machines; every command and manifest it uses is built by a function here,
which the unit tests check (``tests/test_kind_backend.py``). Users with Docker and internet
run it with ``nox -s e2e -- --cluster=kind``.

Differences from the local backend:
- the webhook runs in the cluster from the built image (``kind load``), behind the Service
  of ``manifests/webhook-deployment`` and reached through ``clientConfig.service``;
- etcd is read inside the control-plane node: ``docker exec <node> crictl exec <etcd> etcdctl``
  with the node's etcd certificates.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from kubernetes.client.rest import ApiException

from crdharness import certs, manifests_yaml, paths
from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.etcd import EtcdReader, StoredObject, custom_resource_key, parse_range
from crdharness.webhooks.protocol import ConversionWebhook, ReviewRecords, started

KIND_VERSION = "v0.33.0"  # the kind release whose node images versions.SUPPORTED pins
MANIFESTS = paths.MANIFESTS / "webhook-deployment"
WEBHOOK_NAMESPACE = "default"
WEBHOOK_SERVICE = "example-conversion-webhook-server"
ETCD_PKI = "/etc/kubernetes/pki/etcd"


def cluster_name() -> str:
    """Unique per run, so parallel CI jobs on one Docker host never collide."""
    return f"crdharness-{uuid.uuid4().hex[:8]}"


def cluster_config(release: Release) -> dict:
    """One control-plane node; its workloads (the webhook) run on it. Kubernetes' own storage
    version migration is turned on where it is not on by default, as on the local backend."""
    config: dict[str, object] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "nodes": [{"role": "control-plane"}],
    }
    if release.storage_migration_api != "v1":
        config["featureGates"] = release.storage_migration_feature_gates
        api = f"storagemigration.k8s.io/{release.storage_migration_api}"
        config["runtimeConfig"] = {api: "true"}
    return config


def load_commands(kind: str, name: str, image: str, archive: Path) -> list[list[str]]:
    """``kind load docker-image``, then the fallback for Docker image stores it cannot read
    (containerd-backed Docker): save the image to an archive and load that."""
    return [
        [kind, "load", "docker-image", "--name", name, image],
        ["docker", "save", "-o", str(archive), image],
        [kind, "load", "image-archive", "--name", name, str(archive)],
    ]


def export_logs_command(kind: str, name: str, directory: Path) -> list[str]:
    return [kind, "export", "logs", str(directory), "--name", name]


def export_logs(kind: str, name: str, directory: Path, run=subprocess.run) -> None:
    """``kind export logs`` into ``directory`` (for the failure bundle; a failure is noted
    there, not raised: the bundle is written because something else already failed)."""
    result = run(
        export_logs_command(kind, name, directory),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if result.returncode != 0:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "export-logs.error.txt").write_text(result.stderr)


def webhook_manifests(ca: certs.CertificateAuthority, image: str) -> list[dict]:
    """Secret (a serving certificate for the Service's DNS name), Deployment and Service."""
    service_host = f"{WEBHOOK_SERVICE}.{WEBHOOK_NAMESPACE}.svc"
    serving = ca.issue_server("kind-webhook", service_host)
    text = "\n---\n".join(
        (MANIFESTS / name).read_text()
        for name in ("secret.yaml", "deployment.yaml", "service.yaml")
    )
    text = text.replace("TLS_CRT_PLACEHOLDER", base64.b64encode(serving.cert.read_bytes()).decode())
    text = text.replace("TLS_KEY_PLACEHOLDER", base64.b64encode(serving.key.read_bytes()).decode())
    documents = [d for d in manifests_yaml.load_all(text) if d]
    for document in documents:
        if document["kind"] == "Deployment":
            document["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return documents


def service_client_config(ca: certs.CertificateAuthority, path: str = "/crdconvert") -> dict:
    """The documented ``clientConfig.service`` (port 443 by default), with our CA."""
    return {
        "service": {"namespace": WEBHOOK_NAMESPACE, "name": WEBHOOK_SERVICE, "path": path},
        "caBundle": ca.bundle_b64,
    }


def etcdctl_command(node: str, key: str, prefix: bool = False) -> list[str]:
    """etcdctl in the node's etcd container, with the node's etcd client certificates."""
    etcdctl = [
        "etcdctl",
        "--endpoints=https://127.0.0.1:2379",
        f"--cacert={ETCD_PKI}/ca.crt",
        f"--cert={ETCD_PKI}/healthcheck-client.crt",
        f"--key={ETCD_PKI}/healthcheck-client.key",
        "get",
        key,
        "-w",
        "json",
        *(["--prefix"] if prefix else []),
    ]
    script = 'exec crictl exec "$(crictl ps -q --name etcd)" ' + " ".join(
        f"'{arg}'" for arg in etcdctl
    )
    return ["docker", "exec", node, "sh", "-c", script]


class KindEtcd:
    """Reads etcd inside a kind control-plane node; same answers as ``EtcdInspector``."""

    def __init__(self, node: str, run=subprocess.run):
        self.node = node
        self._run = run

    def _range(self, key: str, prefix: bool) -> list[StoredObject]:
        result = self._run(
            etcdctl_command(self.node, key, prefix),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if result.returncode != 0:
            raise HarnessError(f"etcdctl in {self.node} failed: {result.stderr.strip()[-300:]}")
        return parse_range(json.loads(result.stdout))

    def get(self, key: str) -> StoredObject | None:
        found = self._range(key, prefix=False)
        return found[0] if found else None

    def list(self, prefix: str) -> list[StoredObject]:
        return self._range(prefix, prefix=True)

    def custom_resource(self, group, plural, name, namespace=None) -> StoredObject | None:
        return self.get(custom_resource_key(group, plural, name, namespace))


def kind_binary() -> str:
    found = os.environ.get("KIND") or shutil.which("kind")
    if found:
        return found
    raise HarnessError(
        f"--cluster=kind needs the kind binary ({KIND_VERSION}): install it "
        "(https://kind.sigs.k8s.io/docs/user/quick-start/#installation) or set $KIND"
    )


class KindWebhook(ReviewRecords):
    """The reference webhook deployed in the kind cluster, behind its Service.

    Same reading interface as ``webhook.WebhookServer`` (records, client_config); fault modes
    cannot be switched from outside the cluster, so fault-mode tests run on --cluster=local.
    """

    def __init__(self, cluster, ca: certs.CertificateAuthority, image: str):
        self.cluster = cluster
        self.ca = ca
        self.image = image

    def client_config(self) -> dict:
        return service_client_config(self.ca)

    def start(self) -> KindWebhook:
        return started(self)

    def launch(self) -> KindWebhook:
        """Apply the Secret, Deployment and Service; wait for the rollout. Deleted by
        ``stop``, or with the cluster if the run is killed."""
        documents = webhook_manifests(self.ca, self.image)
        self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))
        self.cluster.kubectl(
            "rollout",
            "status",
            f"deployment/{WEBHOOK_SERVICE}",
            "-n",
            WEBHOOK_NAMESPACE,
            "--timeout=180s",
        )
        return self

    def wait_ready(self, timeout: float = 120) -> None:
        """Ready means the API server converted an object through the webhook's Service."""
        from crdharness.polling import wait_for
        from crdharness.scenarios.versioned import (
            OPEN_SCHEMA,
            VersionedCRD,
            crontab_manifest,
            unique_group,
            version,
            webhook_conversion,
        )

        manifest = crontab_manifest(
            unique_group("webhook-ready"),
            [
                version("v1beta1", storage=True, schema=OPEN_SCHEMA),
                version("v1", schema=OPEN_SCHEMA),
            ],
            webhook_conversion(self),
            plural="passthroughs",
            kind="Passthrough",
        )
        probe = VersionedCRD(self.cluster, manifest).create()
        try:
            probe.create_object("v1beta1", WEBHOOK_NAMESPACE, "probe", host="h")
            wait_for(
                lambda: (
                    probe.get_object("v1", WEBHOOK_NAMESPACE, "probe")["apiVersion"]
                    == f"{probe.group}/v1"
                ),
                timeout,
                "a conversion through the webhook's Service to succeed",
                retry=(ApiException,),  # 500 until the Service has an endpoint
            )
        finally:
            probe.delete()

    def _record_lines(self) -> list[str]:
        # Records go to the container's stdout; kubectl logs shows them.
        return self.cluster.kubectl(
            "logs", f"deployment/{WEBHOOK_SERVICE}", "-n", WEBHOOK_NAMESPACE, "--all-containers"
        ).stdout.splitlines()

    def set_faults(self, *faults: str) -> None:
        raise HarnessError("fault modes are switched on the local backend only (--cluster=local)")

    def stop(self) -> None:
        self.cluster.kubectl(
            "delete",
            "deployment,service,secret",
            "-n",
            WEBHOOK_NAMESPACE,
            "-l",
            f"app={WEBHOOK_SERVICE}",
            "--ignore-not-found",
            check=False,
        )


def load_image(kind: str, name: str, image: str, directory: Path, run=subprocess.run) -> str:
    """Load ``image`` into the cluster's nodes; returns the method that worked."""
    direct, save, from_archive = load_commands(kind, name, image, directory / "webhook-image.tar")
    if run(direct, capture_output=True, text=True, check=False).returncode == 0:
        return "docker-image"
    for step in (save, from_archive):
        result = run(step, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise HarnessError(
                f"could not load {image} into kind cluster {name}: `{' '.join(step[:3])}` "
                f"failed: {result.stderr.strip()[-300:]}"
            )
    return "image-archive"


if TYPE_CHECKING:  # mypy checks them against the protocols the harness relies on
    _webhook: type[ConversionWebhook] = KindWebhook
    _etcd: type[EtcdReader] = KindEtcd
