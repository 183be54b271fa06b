"""The kind backend: a kind cluster, created and deleted by pytest-kind-ng, pinned to the
release's node image; webhooks run in it behind a Service (helpers in ``kind_cluster``)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import yaml

from crdharness import cluster as capability
from crdharness.backends import kind_cluster
from crdharness.backends.base import Backend, Running, Settings
from crdharness.binaries import assets, versions
from crdharness.cluster import Cluster
from crdharness.errors import HarnessError
from crdharness.progress import Reporter, phase
from crdharness.webhooks import images


def _start_kind(settings: Settings, report: Reporter) -> Running:
    """A kind cluster, created and deleted by pytest-kind-ng (the one way kind clusters are
    driven here), pinned to the release's node image."""
    try:
        from pytest_kind import KindCluster  # imported only when kind is asked for
    except ImportError:
        raise HarnessError(
            "--cluster=kind needs pytest-kind-ng, which is not installed: "
            "pip install 'crdharness[kind]'"
        ) from None

    release = versions.resolve(settings.k8s_version)
    if not release.kind_node_image:
        raise HarnessError(f"no kind node image is pinned for Kubernetes {release.minor}")
    binary = kind_cluster.kind_binary()
    images.require_engine()
    kubectl = shutil.which("kubectl") or str(
        assets.resolve(release, settings.assets_dir, report).kubectl
    )
    name = kind_cluster.cluster_name()
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    config = workdir / "kind.yaml"
    config.write_text(yaml.safe_dump(kind_cluster.cluster_config(release)))
    cluster_handle = KindCluster(
        name,
        kubeconfig=workdir / "kubeconfig",
        image=release.kind_node_image,
        kind_path=Path(binary),
        kubectl_path=Path(kubectl),
    )
    with phase(report, f"kind cluster {name} on {release.kind_node_image.split('@')[0]}"):
        cluster_handle.create(config_file=config)
    cluster = Cluster(
        name=name,
        backend="kind",
        kubeconfig=workdir / "kubeconfig",
        kubectl_path=Path(kubectl),
        etcd=kind_cluster.KindEtcd(f"{name}-control-plane"),
        capabilities=BACKEND.capabilities,
        kubernetes=release.kind_node_image.split(":")[1].split("@")[0][1:],
        credentials_dir=workdir / "client-credentials",
        workspace=workdir,
        load_image=lambda image, scratch: kind_cluster.load_image(binary, name, image, scratch),
        export_logs=lambda directory: kind_cluster.export_logs(binary, name, directory),
    )
    cluster.deploy_webhook = lambda ca, image: kind_cluster.KindWebhook(cluster, ca, image)

    def stop() -> None:
        cluster.close()
        cluster_handle.delete()
        shutil.rmtree(workdir, ignore_errors=True)
        # pytest-kind keeps a directory per cluster under ./.pytest-kind; nothing is left in it.
        shutil.rmtree(cluster_handle.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            cluster_handle.path.parent.rmdir()  # only if no other cluster's is there

    def keep() -> str:
        cluster.close()
        return (
            f"KUBECONFIG={workdir / 'kubeconfig'} kubectl get crd   "
            f"(delete it with: {binary} delete cluster --name={name})"
        )

    return Running(cluster, stop, keep)


BACKEND = Backend(
    "kind",
    frozenset({capability.ETCD, capability.IMAGE_LOADER, capability.SERVICE_ROUTING}),
    _start_kind,
)
