"""Upgrade and roll back a local control plane's kube-apiserver in place, on the same etcd.

This is what a cluster operator does one minor at a time: the custom resources already in
etcd stay where they are, and the new API server must read them. The same mechanism serves
the e2e upgrade scenarios and the upgrade gate's "across Kubernetes versions" check.
"""

from __future__ import annotations

import functools
import time

import requests

from crdharness.backends.controlplane import ControlPlane
from crdharness.binaries import assets, versions
from crdharness.binaries.versions import Release
from crdharness.cluster import Cluster
from crdharness.errors import HarnessError
from crdharness.polling import wait_for


def upgrade_pair(release: Release) -> tuple[Release, Release]:
    """The adjacent pair of supported minors (older, newer) that contains ``release``: its
    predecessor and it, or, for the oldest supported minor, it and its successor. Over the
    whole version matrix this covers every adjacent pair."""
    ordered = sorted(versions.SUPPORTED, key=lambda r: r.minor_number)
    if len(ordered) < 2:
        raise HarnessError("an upgrade needs two supported Kubernetes minors")
    at = ordered.index(release)
    return (ordered[at - 1], release) if at > 0 else (release, ordered[1])


def switch(plane: ControlPlane, cluster: Cluster, release: Release, assets_dir=None) -> float:
    """Stop ``plane``'s kube-apiserver and start ``release``'s on the same etcd data; return
    the seconds the API was unavailable. ``cluster`` follows: its kubectl (kubectl's own skew
    policy is one minor), its recorded version and pids."""
    binaries = assets.resolve(release, assets_dir, plane.report)
    controller_manager = None
    if plane.controller_manager is not None:
        controller_manager = assets.controller_manager(release, plane.report)
    began = time.monotonic()
    plane.replace_apiserver(binaries, release, controller_manager)
    cluster.kubectl_path = binaries.kubectl
    cluster.kubernetes = release.kubernetes
    if cluster.processes is not None:
        cluster.processes.pids = plane.pids
    wait_custom_resources_served(cluster, plane.options.ready_timeout)
    return time.monotonic() - began


def wait_custom_resources_served(cluster: Cluster, timeout: float) -> None:
    """Wait until every served version of every CRD answers LIST with something other than
    429: a restarted API server is ready before each resource's storage and watch cache are
    (``429 storage is (re)initializing``), which clients would see as a brief outage."""
    crds = cluster.http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()
    paths = [
        f"/apis/{crd['spec']['group']}/{v['name']}/{crd['spec']['names']['plural']}"
        for crd in crds.get("items", [])
        for v in crd["spec"]["versions"]
        if v.get("served")
    ]

    def served(path: str) -> bool:
        return cluster.http.get(path).status_code != 429

    for path in paths:
        wait_for(
            functools.partial(served, path),
            timeout,
            f"{path} to be served again after the kube-apiserver restart (it answered 429)",
            interval=0.1,
            retry=(requests.RequestException,),
        )
