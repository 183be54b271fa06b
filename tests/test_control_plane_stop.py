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

    remove = release = stop


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
