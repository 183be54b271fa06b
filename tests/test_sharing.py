"""Attaching to a running control plane checks it instead of assuming it: a kept control plane
with other flags or stopped processes is refused with the reason."""

from __future__ import annotations

import pytest

from crdharness.backends.controlplane import ControlPlane, ControlPlaneOptions
from crdharness.binaries import assets, versions
from crdharness.errors import HarnessError

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def plane(request):
    release = versions.resolve(request.config.getoption("--k8s-version"))
    started = ControlPlane(assets.resolve(release), release, report=lambda line: None).start()
    yield started
    started.stop()


def test_attach_to_a_matching_control_plane(plane):
    attached = ControlPlane.attach(plane.path, plane.assets, plane.release, plane.options)
    assert attached.server_url == plane.server_url
    assert attached.apiserver.pid == plane.apiserver.pid
    assert attached.etcd.pid == plane.etcd.pid
    # Through the attached side's own reading of the certificates:
    assert attached.apiserver.healthy()


def test_attach_refuses_other_flags(plane):
    with pytest.raises(HarnessError, match="--watch-cache=false"):
        ControlPlane.attach(
            plane.path, plane.assets, plane.release, ControlPlaneOptions(watch_cache=False)
        )


def test_attach_refuses_a_stopped_control_plane(plane):
    plane.apiserver.stop()
    with pytest.raises(HarnessError, match=r"kube-apiserver .* is not running"):
        ControlPlane.attach(plane.path, plane.assets, plane.release, plane.options)
