"""kube-controller-manager for the local backend, with only the controllers that matter here.

The local control plane is kube-apiserver + etcd, like envtest's; some documented behaviour
needs controllers: a namespace's deletion purging its custom resources (the namespace
controller), and the built-in storage version migration (the storage version migrator, which
needs the garbage collector's graph of resources). The controller manager authenticates with
a client certificate of its own (``system:kube-controller-manager``, which the bootstrap RBAC
policy already binds) and gives each controller its own service account, as clusters do.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import requests
from filelock import FileLock

from crdharness import certs, kubeconfig, ports
from crdharness.backends.controlplane.record import read_record, write_record
from crdharness.backends.controlplane.server import wait_until
from crdharness.binaries.versions import Release
from crdharness.processes import AttachedProcess, ManagedProcess

if TYPE_CHECKING:
    from crdharness.backends.controlplane.parts import Plane

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


def start(plane: Plane, binary: Path) -> None:
    """Start kube-controller-manager (namespace, garbage collector, storage version
    migrator) against ``plane``, and wait for its /healthz. Idempotent, also across the
    processes that share the plane."""
    if plane.controller_manager is not None and plane.controller_manager.running():
        return
    with FileLock(str(plane.path / "controller-manager.lock")):
        if adopt(plane, read_record(plane.path)):
            return
        _start(plane, binary)
        write_record(plane)


def adopt(plane: Plane, record: dict) -> bool:
    """Take over the kube-controller-manager another process started in ``plane``'s
    workspace, if it runs."""
    known = record.get("processes", {}).get("kube-controller-manager")
    if not known:
        return False
    pid, created = known
    process = AttachedProcess(
        "kube-controller-manager", pid, created, plane.path / "kube-controller-manager.log"
    )
    if not process.running():
        return False
    plane.controller_manager = process
    plane.controller_manager_port = record.get("controller_manager_port")
    return True


def _start(plane: Plane, binary: Path) -> None:
    ca = plane.ca
    assert ca is not None
    began = time.monotonic()
    port = plane.controller_manager_port = ports.free_port()
    serving = ca.issue_server("controller-manager-serving", *certs.LOOPBACK_NAMES)
    credentials = write_credentials(ca, plane.server_url, plane.path)
    process = ManagedProcess(
        "kube-controller-manager",
        args(binary, plane.release, credentials, serving, port),
        plane.path / "kube-controller-manager.log",
    ).start()
    plane.controller_manager = process
    plane.adopt(process)
    url = f"https://{ports.LOOPBACK}:{port}/healthz?verbose"
    wait_until(
        process,
        lambda: all_started(requests.get(url, verify=str(ca.cert_path), timeout=5)),
        plane.options.ready_timeout,
        "kube-controller-manager /healthz to report each of its controllers ok",
    )
    took = time.monotonic() - began
    plane.report(f"kube-controller-manager {plane.release.git_version} ready in {took:.1f}s")
