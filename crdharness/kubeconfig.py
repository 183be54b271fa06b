"""Write a kubeconfig that both the Python client and kubectl accept."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from crdharness.certs import KeyPair, write_private

# How a Kubernetes client finds a cluster other than through KUBECONFIG: in-cluster config
# (client-go's rest.InClusterConfig reads these two first). A program the harness starts
# against its own cluster must never fall back to the caller's.
CALLER_CLUSTER_VARIABLES = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def environment_for(kubeconfig: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a program the harness starts against its own cluster (a webhook, a
    migration command, kubectl): the caller's, with ``KUBECONFIG`` always the harness's
    kubeconfig and the in-cluster variables removed, so the caller's own cluster (the one
    their exported ``KUBECONFIG`` or service account points at) is never reached. ``extra``
    (the user's ``env:``) is added first; it cannot choose another cluster."""
    environment = {
        key: value for key, value in os.environ.items() if key not in CALLER_CLUSTER_VARIABLES
    }
    environment.update(extra or {})
    environment["KUBECONFIG"] = str(kubeconfig)
    return environment


def b64_file(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(
    path: Path,
    name: str,
    server: str,
    ca_bundle_b64: str,
    user: KeyPair | None = None,
    token: str | None = None,
) -> Path:
    """A kubeconfig for one cluster and one user, who authenticates with ``user``'s client
    certificate or with a bearer ``token`` (one of them)."""
    if (user is None) == (token is None):
        raise ValueError("a kubeconfig's user has a client certificate or a token")
    credentials: dict[str, str | None] = {"token": token}
    if user is not None:
        credentials = {
            "client-certificate-data": b64_file(user.cert),
            "client-key-data": b64_file(user.key),
        }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": ca_bundle_b64},
            }
        ],
        "users": [
            {
                "name": f"{name}-admin",
                "user": credentials,
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
        "preferences": {},
    }
    # It embeds a private key or a token: owner-only, like the key file itself.
    return write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
