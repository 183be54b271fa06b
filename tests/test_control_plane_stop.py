"""Stopping the control plane goes on past a failure, and reports every failure."""

import pytest

from crdharness.backends.controlplane.plane import ControlPlane
from crdharness.errors import HarnessError


class Part:
    def __init__(self, name: str, fails: bool = False):
        self.name, self.fails, self.stopped = name, fails, False

    def stop(self) -> None:
        self.stopped = True
        if self.fails:
            raise OSError(f"{self.name} would not stop")

    remove = release = discard = stop


def test_a_failing_step_does_not_keep_the_others_from_running():
    plane = ControlPlane(assets=None, release=None)
    parts = [
        Part("kube-controller-manager"),
        Part("kube-apiserver", fails=True),
        Part("etcd"),
        Part("workspace", fails=True),
        Part("guardian"),
    ]
    plane.controller_manager, plane.apiserver, plane.etcd, plane.workspace, plane.guardian = parts
    with pytest.raises(HarnessError) as raised:
        plane.stop()
    assert all(p.stopped for p in parts)
    assert str(raised.value) == (
        "stopping the control plane failed: kube-apiserver: OSError: kube-apiserver would not "
        "stop; the workspace: OSError: workspace would not stop"
    )
    assert plane.guardian is None


@pytest.mark.e2e
def test_a_stopped_control_plane_is_killed_not_shut_down_and_leaves_nothing():
    # Its servers' state goes with the workspace, so they are killed (SIGKILL), not asked to
    # shut down: kube-apiserver's graceful shutdown alone took 1-3 s at the end of every run.
    import signal

    import psutil

    from crdharness.binaries import assets, versions

    release = versions.resolve(None)
    plane = ControlPlane(assets.resolve(release, report=lambda line: None), release).start()
    servers = [plane.apiserver.process, plane.etcd.process]
    workspace = plane.workspace.path
    plane.stop()
    for server in servers:
        assert server.popen.returncode == -signal.SIGKILL, server.name
        assert not psutil.pid_exists(server.popen.pid)
    assert not workspace.exists()
