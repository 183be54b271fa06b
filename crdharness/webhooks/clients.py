"""The client certificates kube-apiserver presents to webhooks it calls.

kube-apiserver reads them from a kubeconfig named in its admission configuration
(``--admission-control-config-file``): one ``users`` entry per webhook ``host:port`` (or
``*.domain``). In Kubernetes 1.37 only the admission webhooks use it; the conversion webhook
client is built with an empty resolver (``apiextensions-apiserver``, ``webhook_converter.go``),
so a conversion webhook that requires client certificates cannot be reached.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from crdharness.certs import KeyPair, write_private
from crdharness.kubeconfig import b64_file

ADMISSION_PLUGINS = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")


def apiserver_flags(directory: Path, identities: dict[str, KeyPair]) -> list[str]:
    """Flags that make kube-apiserver present ``identities[host_port]`` to admission webhooks
    at ``host_port``. The files land in ``directory``; the kubeconfig embeds the keys, so it is
    written owner-only."""
    kubeconfig = write_private(
        directory / "webhook-clients.kubeconfig",
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [
                    {
                        "name": host_port,
                        "user": {
                            "client-certificate-data": b64_file(pair.cert),
                            "client-key-data": b64_file(pair.key),
                        },
                    }
                    for host_port, pair in identities.items()
                ],
            }
        ).encode(),
    )
    webhook_admission = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(kubeconfig),
    }
    admission = directory / "admission-configuration.yaml"
    admission.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [
                    {"name": name, "configuration": webhook_admission} for name in ADMISSION_PLUGINS
                ],
            }
        )
    )
    return [f"--admission-control-config-file={admission}"]
