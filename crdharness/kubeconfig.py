"""Write a kubeconfig that both the Python client and kubectl accept."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from crdharness.certs import KeyPair, write_private


def b64_file(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(path: Path, name: str, server: str, ca_bundle_b64: str, user: KeyPair) -> Path:
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
                "user": {
                    "client-certificate-data": b64_file(user.cert),
                    "client-key-data": b64_file(user.key),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
        "preferences": {},
    }
    # It embeds a private key: owner-only, like the key file itself.
    return write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
