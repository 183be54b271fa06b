"""kube-controller-manager for the local backend, with only the controllers that matter here.

The local control plane is kube-apiserver + etcd, like envtest's; some documented behaviour
needs controllers: a namespace's deletion purging its custom resources (the namespace
controller), and the built-in storage version migration (the storage version migrator, which
needs the garbage collector's graph of resources). The controller manager authenticates with
a client certificate of its own (``system:kube-controller-manager``, which the bootstrap RBAC
policy already binds) and gives each controller its own service account, as clusters do.
"""

from __future__ import annotations

from pathlib import Path

from crdharness import certs, kubeconfig, ports
from crdharness.binaries.versions import Release

USER = "system:kube-controller-manager"
CONTROLLERS = (
    "namespace-controller",
    "garbage-collector-controller",
    "storage-version-migrator-controller",
)


def all_started(healthz) -> bool:
    """``/healthz?verbose`` lists a check per controller once it runs: "[+]<name> ok"."""
    return healthz.status_code == 200 and all(
        f"[+]{name} ok" in healthz.text for name in CONTROLLERS
    )


def write_credentials(ca: certs.CertificateAuthority, server_url: str, directory: Path) -> Path:
    """A kubeconfig for the controller manager's own identity."""
    identity = ca.issue_client("controller-manager-client", USER)
    return kubeconfig.write(
        directory / "controller-manager.kubeconfig",
        "crdharness-local",
        server_url,
        ca.bundle_b64,
        identity,
    )


def args(
    binary: Path,
    release: Release,
    client_kubeconfig: Path,
    serving: certs.KeyPair,
    port: int,
) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={client_kubeconfig}",
        # Delegated authentication for its own /healthz; without it the server logs warnings.
        f"--authentication-kubeconfig={client_kubeconfig}",
        f"--authorization-kubeconfig={client_kubeconfig}",
        f"--bind-address={ports.LOOPBACK}",
        f"--secure-port={port}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        f"--controllers={','.join(CONTROLLERS)}",
        # One service account per controller (tokens from the API server's TokenRequest,
        # signed with the control plane's service-account key), as on a real cluster.
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        "--profiling=false",
        *release.storage_migration_controller_manager_flags,
    ]
