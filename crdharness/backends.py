"""Turn ``--cluster=local|kind|existing`` into a running ``Cluster`` and a way to end it."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crdharness import assets, sharing, upgrade, versions
from crdharness import cluster as capability
from crdharness.cluster import Cluster
from crdharness.controlplane import ControlPlane, ControlPlaneOptions
from crdharness.errors import HarnessError
from crdharness.etcd import EtcdInspector
from crdharness.guardian import Guardian
from crdharness.progress import Reporter
from crdharness.workspace import Workspace

BACKENDS = ("local", "kind", "existing")


@dataclass
class Settings:
    backend: str = "local"
    k8s_version: str | None = None
    assets_dir: str | None = None
    watch_cache: bool = True
    apiserver_port: int | None = None
    etcd_port: int | None = None
    extra_apiserver_flags: list[str] = field(default_factory=list)  # local backend only
    # Local backend: keep the control plane for the next run and reuse a matching kept one.
    reuse: bool = False
    # Local backend under xdist: share the control plane called ``shared_key`` with the
    # run's other workers through ``shared_dir``; ``owner`` (the run's controller) ends it.
    shared_dir: Path | None = None
    shared_key: str = "session"
    owner: tuple[int, float] | None = None


@dataclass
class Running:
    cluster: Cluster
    stop: Callable[[], None]
    keep: Callable[[], str]  # leave it running; returns how to reach it


def start(settings: Settings, report: Reporter) -> Running:
    if settings.backend == "local":
        return _start_local(settings, report)
    if settings.backend == "existing":
        return _connect_existing(settings, report)
    if settings.backend == "kind":
        return _start_kind(settings, report)
    raise HarnessError(
        f"unknown --cluster={settings.backend!r}; choose one of {', '.join(BACKENDS)}"
    )


def _start_local(settings: Settings, report: Reporter) -> Running:
    release = versions.resolve(settings.k8s_version)
    if settings.reuse or settings.shared_dir is not None:
        binaries = assets.resolve(release, settings.assets_dir, report)
        if settings.reuse:
            plane = sharing.reuse_or_start(binaries, release, _options(settings), report)
        else:
            assert settings.owner is not None, "a shared control plane needs its owner"
            plane = sharing.attach_or_start(
                settings.shared_dir,
                settings.shared_key,
                binaries,
                release,
                _options(settings),
                settings.owner,
                report,
            )
        cluster = local_cluster(plane, settings.assets_dir)
        # Not this process's to stop: the next run reuses it, or the run's controller stops it.
        return Running(cluster, stop=cluster.close, keep=lambda: _kept(cluster, plane))

    plane = start_control_plane(settings, release, report)
    cluster = local_cluster(plane, settings.assets_dir)

    def stop() -> None:
        cluster.close()
        plane.stop()

    def keep() -> str:
        cluster.close()
        return plane.keep()

    return Running(cluster, stop, keep)


def _kept(cluster: Cluster, plane: ControlPlane) -> str:
    cluster.close()
    return (
        f"KUBECONFIG={plane.kubeconfig} kubectl get crd   "
        f"(stop it with: python -m crdharness down {plane.path})"
    )


def _options(settings: Settings) -> ControlPlaneOptions:
    return ControlPlaneOptions(
        watch_cache=settings.watch_cache,
        apiserver_port=settings.apiserver_port,
        etcd_port=settings.etcd_port,
        extra_apiserver_flags=list(settings.extra_apiserver_flags),
    )


def start_control_plane(
    settings: Settings, release: versions.Release, report: Reporter
) -> ControlPlane:
    """A local control plane of ``release``, started and ready."""
    binaries = assets.resolve(release, settings.assets_dir, report)
    return ControlPlane(binaries, release, _options(settings), report).start()


def local_cluster(plane: ControlPlane, assets_dir: str | None = None) -> Cluster:
    """The Cluster of a running local control plane."""

    def start_controllers() -> None:
        plane.start_controller_manager(assets.controller_manager(plane.release, plane.report))
        cluster.details["pids"]["kube-controller-manager"] = plane.controller_manager.pid
        if plane.controller_manager_port not in cluster.details["ports"]:
            cluster.details["ports"].append(plane.controller_manager_port)

    def switch_kubernetes(release: versions.Release) -> float:
        return upgrade.switch(plane, cluster, release, assets_dir)

    cluster = Cluster(
        name="crdharness-local",
        backend="local",
        kubeconfig=plane.kubeconfig,
        kubectl_path=plane.assets.kubectl,
        capabilities=frozenset(
            {capability.ETCD, capability.CONTROL_PLANES, capability.HOST_LOOPBACK}
        ),
        kubernetes=plane.release.kubernetes,
        etcd=EtcdInspector(plane.etcd_url),
        logs=plane.logs,
        credentials_dir=plane.credentials_dir,
        start_controllers=start_controllers,
        switch_kubernetes=switch_kubernetes,
        details={
            "workspace": plane.path,
            "pids": {"etcd": plane.etcd.pid, "kube-apiserver": plane.apiserver.pid},
            "guardian_pid": plane.guardian_pid,
            "ports": [plane.apiserver_port, plane.etcd_port, plane.etcd_peer_port],
            "start_to_ready_seconds": plane.start_to_ready_seconds,
        },
    )
    return cluster


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
        # Its API server may reach this machine's 127.0.0.1 or not; a URL webhook the user
        # gives is the user's to make reachable.
        capabilities=frozenset({capability.HOST_LOOPBACK}),
        etcd_unavailable=(
            "an existing cluster's etcd is not reachable from the harness; storage "
            "assertions need --cluster=local (or kind)"
        ),
        credentials_dir=workspace.path / "client-credentials",
    )
    report(f"using the existing cluster from {path}")

    def stop() -> None:
        cluster.close()
        workspace.remove()
        guardian.release()

    def keep() -> str:
        stop()
        return f"KUBECONFIG={path} kubectl get crd"

    return Running(cluster, stop, keep)


def _start_kind(settings: Settings, report: Reporter) -> Running:
    """A kind cluster, created and deleted by pytest-kind-ng (the one way kind clusters are
    driven here), pinned to the release's node image."""
    import tempfile

    import yaml
    from pytest_kind import KindCluster

    from crdharness import images, kind
    from crdharness.progress import phase

    release = versions.resolve(settings.k8s_version)
    if not release.kind_node_image:
        raise HarnessError(f"no kind node image is pinned for Kubernetes {release.minor}")
    binary = kind.kind_binary()
    images.require_engine()
    kubectl = shutil.which("kubectl") or str(
        assets.resolve(release, settings.assets_dir, report).kubectl
    )
    name = kind.cluster_name()
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    config = workdir / "kind.yaml"
    config.write_text(yaml.safe_dump(kind.cluster_config(release)))
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
        etcd=kind.KindEtcd(f"{name}-control-plane"),
        capabilities=frozenset(
            {capability.ETCD, capability.IMAGE_LOADER, capability.SERVICE_ROUTING}
        ),
        kubernetes=release.kind_node_image.split(":")[1].split("@")[0][1:],
        credentials_dir=workdir / "client-credentials",
        details={"kind_name": name, "kind": binary, "workdir": workdir},
        load_image=lambda image, scratch: kind.load_image(binary, name, image, scratch),
        export_logs=lambda directory: kind.export_logs(binary, name, directory),
    )

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
