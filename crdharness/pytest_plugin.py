"""pytest options and fixtures: one cluster per session, a namespace per test.

Loaded by the project's top-level ``conftest.py``; other projects can load it with
``-p crdharness.pytest_plugin``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from crdharness import backends, certs, ports, sharing
from crdharness.errors import HarnessError
from crdharness.processes import identity
from crdharness.versions import ENV_VAR as K8S_VERSION_ENV
from crdharness.webhook import WebhookServer

KEEP_CHOICES = ("never", "on-failure", "always")


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
    group.addoption("--apiserver-port", type=int, default=None, help="fixed kube-apiserver port")
    group.addoption("--etcd-port", type=int, default=None, help="fixed etcd client port")


def _sigterm_as_interrupt(signum, frame):
    # pytest tears fixtures down on KeyboardInterrupt but dies on a bare SIGTERM.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    config._crdharness_started = time.time()
    config.addinivalue_line("markers", "e2e: needs a running cluster (the `cluster` fixture)")
    with contextlib.suppress(ValueError):  # not the main thread (embedded use): leave it alone
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)


def _report(line: str) -> None:
    print(f"[crdharness] {line}", file=sys.stderr, flush=True)


def _settings(config: pytest.Config, **overrides) -> backends.Settings:
    settings = backends.Settings(
        backend=config.getoption("--cluster"),
        k8s_version=config.getoption("--k8s-version"),
        assets_dir=config.getoption("--assets-dir"),
        watch_cache=not config.getoption("--no-watch-cache"),
        apiserver_port=config.getoption("--apiserver-port"),
        etcd_port=config.getoption("--etcd-port"),
    )
    for key, value in overrides.items():
        setattr(settings, key, value)
    return settings


def _session_settings(config: pytest.Config, key: str, **overrides) -> backends.Settings:
    """Settings of a session-wide cluster: reused across runs (``--reuse-cluster``), or
    shared with the run's other xdist workers under ``key``."""
    settings = _settings(config, **overrides)
    worker = getattr(config, "workerinput", {})
    if config.getoption("--reuse-cluster"):
        settings.reuse = True
    elif SHARED_DIR in worker:
        settings.shared_dir = Path(worker[SHARED_DIR])
        settings.shared_key = key
        settings.owner = tuple(worker[SHARED_OWNER])
    return settings


# xdist: where the controller lets its workers share control planes, and who owns them.
SHARED_DIR = "crdharness_shared_dir"
SHARED_OWNER = "crdharness_shared_owner"


def _shared_dir(config: pytest.Config) -> Path:
    return config._tmp_path_factory.getbasetemp() / "crdharness-shared"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller, for each worker: where the run's shared control planes are."""
    node.workerinput[SHARED_DIR] = str(_shared_dir(node.config))
    node.workerinput[SHARED_OWNER] = list(identity(os.getpid()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """xdist controller, after every worker has finished: stop (or keep) the control planes
    the workers shared."""
    config = session.config
    if hasattr(config, "workerinput") or not hasattr(config, "_tmp_path_factory"):
        return
    directory = _shared_dir(config)
    if not directory.is_dir():
        return
    keep = config.getoption("--keep-cluster")
    if keep == "always" or (keep == "on-failure" and session.testsfailed > 0):
        for path in sharing.keep_shared(directory):
            _report(f"shared cluster kept running: python -m crdharness down {path}")
    else:
        sharing.stop_shared(directory)


def _start(config: pytest.Config, settings: backends.Settings) -> backends.Running:
    capture = config.pluginmanager.getplugin("capturemanager")
    # Builds and start-up print progress; show it live rather than after the fact.
    with capture.global_and_fixture_disabled():
        try:
            return backends.start(settings, _report)
        except HarnessError as exc:
            pytest.fail(f"crdharness: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest):
    """A running cluster (see ``crdharness.cluster.Cluster``), shared by the session."""
    config = request.config
    capture = config.pluginmanager.getplugin("capturemanager")
    running = _start(config, _session_settings(config, "session"))
    yield running.cluster
    keep = config.getoption("--keep-cluster")
    failed = request.session.testsfailed > 0
    with capture.global_and_fixture_disabled():
        if failed:
            _write_failure_bundle(config, running.cluster)
        if keep == "always" or (keep == "on-failure" and failed):
            how = running.keep()
            print(f"\n[crdharness] cluster kept running: {how}", file=sys.stderr, flush=True)
        else:
            running.stop()


def _write_failure_bundle(config: pytest.Config, cluster) -> None:
    from crdharness import bundle

    basetemp = config._tmp_path_factory.getbasetemp()  # webhook logs and review records
    extra = [*basetemp.rglob("webhook-records.jsonl"), *basetemp.rglob("webhook.log")]
    try:
        path = bundle.write(cluster, extra)
    except Exception as exc:
        print(f"[crdharness] could not write the failure bundle: {exc}", file=sys.stderr)
        return
    config._crdharness_bundle = path
    print(f"\n[crdharness] failure bundle: {path}", file=sys.stderr, flush=True)


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
    if cluster.backend != "local":
        pytest.fail(
            "crdharness: exact webhook-call tests need a kube-apiserver without watch cache: "
            "run with --cluster=local, or --no-watch-cache on a cluster started that way",
            pytrace=False,
        )
    running = _start(
        config,
        _session_settings(config, "exact", watch_cache=False, apiserver_port=None, etcd_port=None),
    )
    yield running.cluster
    running.stop()


@pytest.fixture
def own_control_plane(request: pytest.FixtureRequest):
    """Start a control plane of the test's own: ``own_control_plane(*apiserver_flags)`` returns
    its cluster, stopped after the test. For behaviour that needs kube-apiserver flags of its
    own (about 4 s each); local backend only."""
    started = []

    def start(*apiserver_flags: str):
        settings = _settings(
            request.config,
            apiserver_port=None,
            etcd_port=None,
            extra_apiserver_flags=list(apiserver_flags),
        )
        started.append(_start(request.config, settings))
        return started[-1].cluster

    yield start
    for running in started:
        running.stop()


@pytest.fixture(scope="session")
def controllers(cluster, request: pytest.FixtureRequest):
    """The session's cluster with controllers running (namespace, garbage collector, storage
    version migrator). The local backend starts kube-controller-manager on first use (built
    once per version); kind and existing clusters run their own."""
    if cluster.start_controllers is not None:
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            try:
                cluster.start_controllers()
            except HarnessError as exc:
                pytest.fail(f"crdharness: {exc}", pytrace=False)
    return cluster


@pytest.fixture
def upgrade_pair(request: pytest.FixtureRequest):
    """(older, newer): the adjacent supported minors that include the session's version."""
    from crdharness import upgrade, versions

    return upgrade.upgrade_pair(versions.resolve(request.config.getoption("--k8s-version")))


@pytest.fixture
def upgradable_cluster(upgrade_pair, request: pytest.FixtureRequest):
    """A control plane of the test's own, started at the older release of ``upgrade_pair``;
    ``.switch_kubernetes(release)`` upgrades or rolls back its kube-apiserver on the same
    etcd. Local backend only."""
    from crdharness import assets

    settings = _settings(request.config, apiserver_port=None, etcd_port=None)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        try:
            # Both releases' binaries now, so a build shows its progress before the test.
            assets.resolve(upgrade_pair[1], settings.assets_dir, _report)
            plane = backends.start_control_plane(settings, upgrade_pair[0], _report)
        except HarnessError as exc:
            pytest.fail(f"crdharness: {exc}", pytrace=False)
    cluster = backends.local_cluster(plane, settings.assets_dir)
    yield cluster
    cluster.close()
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


LOCAL_ONLY_FIXTURES = (
    "exact_cluster",
    "isolated_webhook",
    "own_control_plane",
    "upgradable_cluster",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect_local_only(config, items)
    _select_behaviours(config, items)


def _deselect_local_only(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that drive the webhook's fault modes or need a second API server without watch
    cache run on the local backend only; elsewhere they are deselected, and said so."""
    if config.getoption("--cluster") == "local":
        return
    local_only = [
        i for i in items if set(LOCAL_ONLY_FIXTURES) & set(getattr(i, "fixturenames", ()))
    ]
    if local_only:
        config.hook.pytest_deselected(items=local_only)
        items[:] = [i for i in items if i not in local_only]
        config._crdharness_local_only = len(local_only)


def pytest_report_collectionfinish(config: pytest.Config):
    count = getattr(config, "_crdharness_local_only", 0)
    if count:
        return (
            f"crdharness: {count} tests deselected: they need --cluster=local "
            "(webhook fault modes, an API server without watch cache)"
        )
    return None


def _select_behaviours(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--behaviour SV-03,HS``: keep the tests naming one of these IDs (or ID prefixes)."""
    wanted = config.getoption("--behaviour")
    if not wanted:
        return
    prefixes = [w.strip().upper() for w in wanted.split(",") if w.strip()]

    def matches(item: pytest.Item) -> bool:
        ids = [i for mark in item.iter_markers("behaviour") for i in mark.args]
        return any(i == p or i.startswith(p + "-") for i in ids for p in prefixes)

    kept = [item for item in items if matches(item)]
    config.hook.pytest_deselected(items=[item for item in items if not matches(item)])
    items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """On a failing cluster test, attach the end of each control-plane log to the report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or "cluster" not in getattr(item, "fixturenames", ()):
        return
    running = getattr(item, "funcargs", {}).get("cluster")
    if running is None:
        return
    for name, path in running.logs.items():
        try:
            lines = path.read_text(errors="replace").splitlines()[-30:]
        except OSError:
            continue
        report.sections.append((f"{name} log (last 30 lines of {path})", "\n".join(lines)))


def _start_webhook(config: pytest.Config, directory, cluster=None):
    from crdharness.webhook import ContainerWebhook, LocalWebhook

    if cluster is not None and cluster.backend == "kind":
        return _start_kind_webhook(cluster, directory)

    form = ContainerWebhook if config.getoption("--webhook") == "container" else LocalWebhook
    try:
        return form(certs.CertificateAuthority(directory), directory).start()
    except HarnessError as exc:
        pytest.fail(f"crdharness: {exc}", pytrace=False)


def _start_kind_webhook(cluster, directory):
    """Build the image, load it into the kind nodes, deploy it behind its Service."""
    from crdharness import images, kind

    try:
        image = images.build_webhook_image(_report)
        kind.load_image(cluster.details["kind"], cluster.details["kind_name"], image, directory)
        return kind.KindWebhook(cluster, certs.CertificateAuthority(directory), image).start()
    except HarnessError as exc:
        pytest.fail(f"crdharness: {exc}", pytrace=False)


# Ports of stopped webhooks, bound (not listening) until the session ends; see ``_retire``.
_RETIRED_PORTS: list[socket.socket] = []


def _retire(server) -> None:
    """Stop a webhook and keep its port taken until the session ends. A CRD may still point at
    it for a while (deleted after the test, its objects' watch events still converted), and
    those calls must be refused, not answered by a webhook another worker started on the port."""
    server.stop()
    if not isinstance(server, WebhookServer):
        return  # on kind, the webhook is a Service in the cluster: no port here
    held = server.held_port
    if held is None:
        with contextlib.suppress(HarnessError):  # taken at once by someone else: nothing to do
            held = ports.hold(server.port)
    if held is not None:
        _RETIRED_PORTS.append(held)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _RETIRED_PORTS:
        _RETIRED_PORTS.pop().close()


@pytest.fixture(scope="session")
def conversion_webhook(cluster, request, tmp_path_factory):
    """The reference webhook on 127.0.0.1 (process or container, see ``--webhook``), shared
    by the session. Tests that switch fault modes must use ``isolated_webhook`` instead."""
    server = _start_webhook(request.config, tmp_path_factory.mktemp("webhook"), cluster)
    yield server
    _retire(server)


@pytest.fixture
def isolated_webhook(cluster, request, tmp_path):
    """A webhook of the test's own, whose fault modes it may switch (``set_faults``)."""
    server = _start_webhook(request.config, tmp_path)
    yield server
    _retire(server)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Show the transcripts of the documented scenarios that ran, and where they were saved;
    last, where the failure bundle is."""
    from crdharness.transcript import written_since

    for path in written_since(config._crdharness_started):
        terminalreporter.section(f"transcript {path.stem}")
        terminalreporter.write_line(path.read_text())
        terminalreporter.write_line(f"(saved to {path})")
    bundle_path = getattr(config, "_crdharness_bundle", None)
    if bundle_path is not None:
        terminalreporter.section("failure bundle")
        terminalreporter.write_line(f"logs, CRDs, objects and stored versions: {bundle_path}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Behaviour IDs as JUnit properties, so CI reports can be read by behaviour."""
    for mark in item.iter_markers("behaviour"):
        for behaviour in mark.args:
            item.user_properties.append(("behaviour", behaviour))
