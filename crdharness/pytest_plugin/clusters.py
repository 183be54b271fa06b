"""Cluster fixtures: one cluster per session (shared by the run's xdist workers), the one
without watch cache, controllers, control planes of a test's own, and namespaces."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from crdharness import backends
from crdharness.backends import sharing
from crdharness.cluster import CONTROL_PLANES
from crdharness.processes import identity
from crdharness.progress import to_stderr as report
from crdharness.pytest_plugin.options import (
    SHARED_DIR,
    SHARED_OWNER,
    keep_cluster,
    session_settings,
    settings,
)
from crdharness.pytest_plugin.reporting import write_failure_bundle
from crdharness.pytest_support import basetemp, harness_work


def _shared_dir(config: pytest.Config) -> Path:
    return basetemp(config) / "crdharness-shared"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller, for each worker: where the run's shared control planes are."""
    node.workerinput[SHARED_DIR] = str(_shared_dir(node.config))
    node.workerinput[SHARED_OWNER] = list(identity(os.getpid()) or (os.getpid(), 0.0))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """xdist controller, after every worker has finished: stop (or keep) the control planes
    the workers shared."""
    config = session.config
    if hasattr(config, "workerinput") or not hasattr(config, "_tmp_path_factory"):
        return
    directory = _shared_dir(config)
    if not directory.is_dir():
        return
    if keep_cluster(config, session.testsfailed > 0):
        for path in sharing.keep_shared(directory):
            report(f"shared cluster kept running: python -m crdharness down {path}")
    else:
        sharing.stop_shared(directory)


def start(config: pytest.Config, chosen: backends.Settings) -> backends.Running:
    """Start a cluster, showing build and start-up progress live; a harness error fails the
    test with its one line."""
    with harness_work(config):
        return backends.start(chosen, report)


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest):
    """A running cluster (see ``crdharness.cluster.Cluster``), shared by the session."""
    config = request.config
    capture = config.pluginmanager.getplugin("capturemanager")
    running = start(config, session_settings(config, "session"))
    yield running.cluster
    failed = request.session.testsfailed > 0
    with capture.global_and_fixture_disabled():
        if failed:
            write_failure_bundle(config, running.cluster)
        if keep_cluster(config, failed):
            print(file=sys.stderr)  # off the line of progress dots
            report(f"cluster kept running: {running.keep()}")
        else:
            running.stop()


@pytest.fixture(scope="session")
def exact_cluster(cluster, request: pytest.FixtureRequest):
    """A cluster whose kube-apiserver runs with ``--watch-cache=false``.

    The per-version watch caches convert objects in the background, so "the webhook was (not)
    called" can only be asserted exactly without them. On the local backend this is a second
    control plane (about 4 s); with ``--no-watch-cache`` it is the session's cluster.
    """
    config = request.config
    if config.getoption("--no-watch-cache"):
        yield cluster
        return
    if not cluster.can(CONTROL_PLANES):
        pytest.fail(
            "crdharness: exact webhook-call tests need a kube-apiserver without watch cache: "
            "run with --cluster=local, or --no-watch-cache on a cluster started that way",
            pytrace=False,
        )
    running = start(
        config,
        session_settings(config, "exact", watch_cache=False, apiserver_port=None, etcd_port=None),
    )
    yield running.cluster
    running.stop()


@pytest.fixture
def own_control_plane(request: pytest.FixtureRequest):
    """Start a control plane of the test's own: ``own_control_plane(*apiserver_flags)`` returns
    its cluster, stopped after the test. For behaviour that needs kube-apiserver flags of its
    own (about 4 s each); local backend only."""
    started = []

    def start_own(*apiserver_flags: str):
        chosen = settings(
            request.config,
            apiserver_port=None,
            etcd_port=None,
            extra_apiserver_flags=list(apiserver_flags),
        )
        started.append(start(request.config, chosen))
        return started[-1].cluster

    yield start_own
    for running in started:
        running.stop()


@pytest.fixture(scope="session")
def controllers(cluster, request: pytest.FixtureRequest):
    """The session's cluster with controllers running (namespace, garbage collector, storage
    version migrator). The local backend starts kube-controller-manager on first use (built
    once per version); kind and existing clusters run their own."""
    if cluster.start_controllers is not None:
        with harness_work(request.config):
            cluster.start_controllers()
    return cluster


@pytest.fixture
def upgrade_pair(request: pytest.FixtureRequest):
    """(older, newer): the adjacent supported minors that include the session's version."""
    from crdharness.backends import upgrade
    from crdharness.binaries import versions

    return upgrade.upgrade_pair(versions.resolve(request.config.getoption("--k8s-version")))


@pytest.fixture
def upgradable_cluster(upgrade_pair, request: pytest.FixtureRequest):
    """A control plane of the test's own, started at the older release of ``upgrade_pair``;
    ``.switch_kubernetes(release)`` upgrades or rolls back its kube-apiserver on the same
    etcd. Local backend only."""
    from crdharness.binaries import assets

    chosen = settings(request.config, apiserver_port=None, etcd_port=None)
    with harness_work(request.config):
        # Both releases' binaries now, so a build shows its progress before the test.
        assets.resolve(upgrade_pair[1], chosen.assets_dir, report)
        plane = backends.start_control_plane(chosen, upgrade_pair[0], report)
    upgradable = backends.local_cluster(plane, chosen.assets_dir)
    yield upgradable
    upgradable.close()
    plane.stop()


def _namespace(on, request: pytest.FixtureRequest):
    stem = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:6]}"
    on.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    # Without kube-controller-manager the namespace stays Terminating; the control plane
    # is thrown away at the end of the session anyway.
    with contextlib.suppress(client.ApiException):
        on.core.delete_namespace(name)


@pytest.fixture
def namespace(cluster, request: pytest.FixtureRequest):
    """A namespace of the test's own, so tests can run in any order and in parallel."""
    yield from _namespace(cluster, request)


@pytest.fixture
def exact_namespace(exact_cluster, request: pytest.FixtureRequest):
    """A namespace of the test's own in ``exact_cluster``."""
    yield from _namespace(exact_cluster, request)
