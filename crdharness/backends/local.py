"""The local backend: etcd and kube-apiserver on loopback (``crdharness.backends.controlplane``),
started for the session, shared by the run's xdist workers, or reused across runs."""

from __future__ import annotations

from crdharness import cluster as capability
from crdharness.backends import sharing, upgrade
from crdharness.backends.base import Backend, Running, Settings
from crdharness.backends.controlplane import ControlPlane, ControlPlaneOptions, controller_manager
from crdharness.binaries import assets, versions
from crdharness.cluster import Cluster, LocalProcesses
from crdharness.etcd import EtcdInspector
from crdharness.progress import Reporter


def _start_local(settings: Settings, report: Reporter) -> Running:
    release = versions.resolve(settings.k8s_version)
    if settings.reuse or settings.shared_dir is not None:
        binaries = assets.resolve(release, settings.assets_dir, report)
        if settings.reuse:
            plane = sharing.reuse_or_start(binaries, release, _options(settings), report)
        else:
            assert settings.owner is not None, "a shared control plane needs its owner"
            assert settings.shared_dir is not None
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

    processes = LocalProcesses(
        pids=plane.pids,
        ports=plane.ports,
        guardian_pid=plane.guardian_pid,
        start_to_ready_seconds=plane.start_to_ready_seconds,
    )

    def start_controllers() -> None:
        controller_manager.start(plane, assets.controller_manager(plane.release, plane.report))
        processes.pids, processes.ports = plane.pids, plane.ports
        cluster.logs.update(plane.logs)  # the failure bundle takes its log too

    def switch_kubernetes(release: versions.Release) -> float:
        return upgrade.switch(plane, cluster, release, assets_dir)

    assert plane.kubeconfig is not None, "start the control plane first"
    cluster = Cluster(
        name="crdharness-local",
        backend="local",
        kubeconfig=plane.kubeconfig,
        kubectl_path=plane.assets.kubectl,
        capabilities=BACKEND.capabilities,
        kubernetes=plane.release.kubernetes,
        etcd=EtcdInspector(plane.etcd_url),
        logs=plane.logs,
        credentials_dir=plane.credentials_dir,
        start_controllers=start_controllers,
        switch_kubernetes=switch_kubernetes,
        workspace=plane.path,
        processes=processes,
    )
    return cluster


BACKEND = Backend(
    "local",
    frozenset({capability.ETCD, capability.CONTROL_PLANES, capability.HOST_LOOPBACK}),
    _start_local,
)
