"""Stand-in binaries for unit tests of resolution and caching (never for e2e tests)."""

from __future__ import annotations

from pathlib import Path

SCRIPTS = {
    "kube-apiserver": 'echo "Kubernetes v{k8s}"',
    "kubectl": 'echo \'{{"clientVersion": {{"gitVersion": "v{k8s}"}}}}\'',
    "etcd": 'echo "etcd Version: {etcd}"',
}


def write_binaries(
    directory: Path,
    k8s: str = "1.37.2",
    etcd: str = "3.6.16",
    only: tuple[str, ...] = tuple(SCRIPTS),
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in only:
        path = directory / name
        path.write_text("#!/bin/sh\n" + SCRIPTS[name].format(k8s=k8s, etcd=etcd) + "\n")
        path.chmod(0o755)
    return directory
