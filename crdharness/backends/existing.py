"""The existing backend: a cluster someone else runs, from a kubeconfig. Nothing of it is
the harness's to start, stop or read from etcd."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from crdharness import cluster as capability
from crdharness.backends.base import Backend, Running, Settings
from crdharness.binaries import assets, versions
from crdharness.cluster import Cluster
from crdharness.errors import HarnessError
from crdharness.guardian import Guardian
from crdharness.progress import Reporter
from crdharness.reachability import check_reachable
from crdharness.workspace import Workspace


def _connect_existing(settings: Settings, report: Reporter) -> Running:
    path = os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config")).split(os.pathsep)[0]
    if not Path(path).is_file():
        raise HarnessError(
            f"--cluster=existing needs a kubeconfig, but {path} does not exist: set KUBECONFIG"
        )
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        release = versions.resolve(settings.k8s_version)
        kubectl = str(assets.resolve(release, settings.assets_dir, report).kubectl)
    # Nothing of the cluster's is ours to clean up; only the client's credential files are.
    workspace = Workspace()
    guardian = Guardian()
    guardian.remove(workspace.path)
    cluster = Cluster(
        name="existing",
        backend="existing",
        kubeconfig=Path(path),
        kubectl_path=Path(kubectl),
        capabilities=BACKEND.capabilities,
        etcd_unavailable=(
            "an existing cluster's etcd is not reachable from the harness; storage "
            "assertions need --cluster=local (or kind)"
        ),
        credentials_dir=workspace.path / "client-credentials",
    )
    try:
        check_reachable(cluster.http, cluster.http.base_url, f"--cluster=existing ({path})")
    except HarnessError:
        stop_now = (cluster.close, workspace.remove, guardian.release)
        for step in stop_now:
            step()
        raise
    report(f"using the existing cluster from {path}")

    def stop() -> None:
        cluster.close()
        workspace.remove()
        guardian.release()

    def keep() -> str:
        stop()
        return f"KUBECONFIG={path} kubectl get crd"

    return Running(cluster, stop, keep)


# Its API server may reach this machine's 127.0.0.1 or not; a URL webhook the user gives
# is the user's to make reachable.
BACKEND = Backend("existing", frozenset({capability.HOST_LOOPBACK}), _connect_existing)
