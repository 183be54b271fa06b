"""Command-line options and markers, and the backend settings read from them."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import pytest

from crdharness import backends
from crdharness.binaries.versions import ENV_VAR as K8S_VERSION_ENV

KEEP_CHOICES = ("never", "on-failure", "always")

# xdist: where the controller lets its workers share control planes, and who owns them.
SHARED_DIR = "crdharness_shared_dir"
SHARED_OWNER = "crdharness_shared_owner"


def pytest_addhooks(pluginmanager) -> None:
    """pytest-kind(-ng)'s own plugin also defines --keep-cluster and a kind fixture; the
    harness uses only its KindCluster class. Blocked here when this plugin loads first (-p);
    the project's pyproject also disables it for conftest loading (-p no:pytest-kind-ng)."""
    for name in ("pytest-kind", "pytest-kind-ng"):
        if not pluginmanager.has_plugin(name):
            pluginmanager.set_blocked(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crdharness", "CRD versioning harness")
    group.addoption(
        "--cluster",
        choices=backends.BACKENDS,
        default="local",
        help="cluster backend (default: local, a kube-apiserver + etcd on loopback)",
    )
    group.addoption(
        "--k8s-version",
        default=None,
        help=f"Kubernetes version for local/kind, e.g. 1.37 (or ${K8S_VERSION_ENV})",
    )
    group.addoption(
        "--assets-dir",
        default=None,
        help="directory with kube-apiserver, etcd and kubectl (or $KUBEBUILDER_ASSETS)",
    )
    group.addoption(
        "--log-lines",
        type=int,
        default=30,
        help="control-plane log lines shown under a failing test (0: none; the failure "
        "bundle has them all)",
    )
    group.addoption(
        "--keep-cluster",
        nargs="?",
        const="always",
        default="never",
        choices=KEEP_CHOICES,
        help="leave the cluster running: never (default), on-failure, always",
    )
    group.addoption(
        "--no-watch-cache",
        action="store_true",
        help="start kube-apiserver with --watch-cache=false (exact webhook call counts)",
    )
    group.addoption(
        "--webhook",
        choices=("process", "container"),
        default="process",
        help="run the reference webhook as a local process (default) or a container "
        "from the built image (`nox -s image`)",
    )
    group.addoption(
        "--webhook-tests-only",
        action="store_true",
        help="run only the tests that use the reference webhook (the others are deselected, "
        "and said so): with --webhook=container, what a run with the webhook as a process "
        "does not already show",
    )
    group.addoption(
        "--behaviour",
        default=None,
        metavar="IDS",
        help="run only tests covering these catalogue IDs or groups, comma "
        "separated (e.g. SV-03,HS or WT)",
    )
    group.addoption(
        "--reuse-cluster",
        action="store_true",
        help="local backend: reuse a control plane kept by an earlier run when its binaries, "
        "version and flags match (checked), else start one; keep it for the next run "
        "(stop it with: python -m crdharness down)",
    )
    group.addoption(
        "--failure-bundle",
        choices=("full", "logs"),
        default="full",
        help="what a failing run's bundle holds: full (default: logs, CRDs, every object, "
        "webhook records) or logs (the control plane's logs and CRDs only: no object leaves "
        "the run, as `crdharness gate --from-cluster` needs)",
    )
    group.addoption("--apiserver-port", type=int, default=None, help="fixed kube-apiserver port")
    group.addoption("--etcd-port", type=int, default=None, help="fixed etcd client port")


STARTED = pytest.StashKey[float]()  # when the session began: its transcripts are newer


def _sigterm_as_interrupt(signum, frame):
    # pytest tears fixtures down on KeyboardInterrupt but dies on a bare SIGTERM.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STARTED] = time.time()
    config.addinivalue_line("markers", "e2e: needs a running cluster (the `cluster` fixture)")
    config.addinivalue_line("markers", "behaviour(*ids): the behaviour-catalogue IDs a test covers")
    with contextlib.suppress(ValueError):  # not the main thread (embedded use): leave it alone
        previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)

        def restore() -> None:
            signal.signal(signal.SIGTERM, previous)

        config.add_cleanup(restore)


def keep_cluster(config: pytest.Config, failed: bool) -> bool:
    """Whether ``--keep-cluster`` asks to leave the cluster running after this session."""
    keep = config.getoption("--keep-cluster")
    return keep == "always" or (keep == "on-failure" and failed)


def settings(config: pytest.Config, **overrides) -> backends.Settings:
    """The backend settings the command line asks for, with ``overrides``."""
    chosen = backends.Settings(
        backend=config.getoption("--cluster"),
        k8s_version=config.getoption("--k8s-version"),
        assets_dir=config.getoption("--assets-dir"),
        watch_cache=not config.getoption("--no-watch-cache"),
        apiserver_port=config.getoption("--apiserver-port"),
        etcd_port=config.getoption("--etcd-port"),
    )
    for key, value in overrides.items():
        setattr(chosen, key, value)
    return chosen


def session_settings(config: pytest.Config, key: str, **overrides) -> backends.Settings:
    """Settings of a session-wide cluster: reused across runs (``--reuse-cluster``), or
    shared with the run's other xdist workers under ``key``."""
    chosen = settings(config, **overrides)
    worker = getattr(config, "workerinput", {})
    if config.getoption("--reuse-cluster"):
        chosen.reuse = True
    elif SHARED_DIR in worker:
        chosen.shared_dir = Path(worker[SHARED_DIR])
        chosen.shared_key = key
        chosen.owner = tuple(worker[SHARED_OWNER])
    return chosen
