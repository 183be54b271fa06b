"""Binaries only some tests need, built in the background: on a fresh machine the first test
runs as soon as the session's own Kubernetes version is built.

The neighbouring minor's kube-apiserver (the upgrade and rollback scenarios) and
kube-controller-manager (tests with controllers) take minutes each to build from Go modules
the first time. The run's controller (the xdist controller, or the only process) starts one
``python -m crdharness binaries --controller-manager --upgrade-pair`` beside the tests; a
test that needs one waits on the binary's cache lock (``binaries.assets``) and runs when it
is ready. Those tests are collected last, so the others run meanwhile. The build's output
goes to its log; if it is still running when the tests end (no test selected needed it), it
is stopped, and what it finished stays cached.

Waiting for it is never under a test's timeout: the wait happens in the test's setup, with
the timer paused (``crdharness.untimed``), and the test's limit counts from the moment the
binaries are ready. While it runs, the terminal says every minute what is still building;
if it fails, it says so once and the tests that needed it fail with the build's last lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from crdharness.binaries import assets, cache, versions
from crdharness.errors import HarnessError
from crdharness.guardian import Guardian
from crdharness.processes import identity, is_alive, is_same, kill_group_if_same
from crdharness.untimed import untimed

# The fixtures whose tests need what is built in the background.
NEEDS_BACKGROUND_BUILD = ("controllers", "upgrade_pair", "upgradable_cluster")
BUILD = pytest.StashKey["BackgroundBuild"]()
BUILD_NICENESS = 10
NOTICE_SECONDS = 60  # how often the terminal says the background build still runs
POLL_SECONDS = 2.0  # how often a waiting test looks whether its binaries are ready


@dataclass
class BackgroundBuild:
    process: subprocess.Popen
    guardian: Guardian  # stops it if this run dies without stopping it
    what: list[str]
    log: Path
    started: float
    stop_notices: threading.Event


@dataclass(frozen=True)
class BuildHandle:
    """What a worker knows of the controller's build: enough to see it end and read why."""

    pid: int
    created: float
    log: Path

    def running(self) -> bool:
        return is_same(self.pid, self.created) and is_alive(self.pid)


MARKER = "built_in_background"


# What the run will build, decided once by the controller before any worker collects: every
# xdist worker must collect the same order, whatever the cache holds by the time it looks.
MISSING = pytest.StashKey[list[str]]()
WORKER_INPUT = "crdharness_background_build"
HANDLE = pytest.StashKey[BuildHandle]()
HANDLE_INPUT = "crdharness_background_build_handle"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test needs kube-controller-manager or the neighbouring minor's "
        "binaries (built in the background on a fresh machine): it runs last",
    )
    worker = getattr(config, "workerinput", None)
    config.stash[MISSING] = worker[WORKER_INPUT] if worker else _to_build(config)
    if worker and worker.get(HANDLE_INPUT):
        pid, created, log = worker[HANDLE_INPUT]
        config.stash[HANDLE] = BuildHandle(pid, created, Path(log))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller, for each worker: what this run builds in the background."""
    node.workerinput[WORKER_INPUT] = node.config.stash[MISSING]
    handle = node.config.stash.get(HANDLE, None)
    if handle is not None:
        node.workerinput[HANDLE_INPUT] = (handle.pid, handle.created, str(handle.log))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """While something is built in the background, the tests that need it run last (a
    stable sort); otherwise the order is the collection's own."""
    if config.stash[MISSING]:
        items.sort(key=_needs_build)


def _needs_build(item: pytest.Item) -> bool:
    """Whether ``item`` needs what is built in the background: by its fixtures, or marked
    (a fixture of its own that starts controllers, say)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    marked = getattr(item, "get_closest_marker", lambda name: None)(MARKER) is not None
    return marked or bool(set(NEEDS_BACKGROUND_BUILD) & fixtures)


def missing(release: versions.Release) -> list[str]:
    """What the tests that need the background build would have to build for ``release``."""
    from crdharness.backends.upgrade import upgrade_pair

    wanted = []
    if not assets.controller_manager_cached(release):
        wanted.append(f"kube-controller-manager {release.kubernetes}")
    for other in upgrade_pair(release):
        if other != release and assets.from_cache(other) is None:
            wanted.append(f"kube-apiserver, kubectl and etcd {other.kubernetes}")
    return wanted


def _to_build(config: pytest.Config) -> list[str]:
    """What this run would build in the background (nothing off the local backend)."""
    if config.option.collectonly or hasattr(config, "workerinput"):
        return []
    if config.getoption("--cluster") != "local" or config.getoption("--assets-dir"):
        return []  # other clusters bring their own servers; a directory of binaries is fixed
    if os.environ.get(assets.ASSETS_ENV_VAR):
        return []
    try:
        return missing(versions.resolve(config.getoption("--k8s-version")))
    except HarnessError:
        return []  # the cluster fixture says what is wrong, in one line


def pytest_sessionstart(session: pytest.Session) -> None:
    """The xdist controller starts the build before any worker collects: it never sees the
    tests (the workers collect them), so it starts it whenever something is missing."""
    if session.config.pluginmanager.has_plugin("dsession"):
        _start(session.config)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist, the only process starts it if a collected test needs it."""
    config = session.config
    if hasattr(config, "workerinput") or config.pluginmanager.has_plugin("dsession"):
        return
    if any(_needs_build(item) for item in session.items):
        _start(config)


def build_command(release: versions.Release) -> list[str]:
    """The background build: everything ``missing`` names, for ``release``."""
    return [
        *(sys.executable, "-m", "crdharness", "binaries", "--k8s-version", release.minor),
        *("--controller-manager", "--upgrade-pair"),
    ]


def _start(config: pytest.Config) -> None:
    what = config.stash[MISSING]
    if not what:
        return
    release = versions.resolve(config.getoption("--k8s-version"))
    log = cache.cache_root() / "logs" / "background-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        process = subprocess.Popen(
            build_command(release),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its go builds are stopped with it, as a group
        )
    # Below the tests in priority: their waits have deadlines, the build has none.
    os.setpriority(os.PRIO_PROCESS, process.pid, BUILD_NICENESS)
    created = (identity(process.pid) or (process.pid, 0.0))[1]
    guardian = Guardian()
    guardian.watch_group(process.pid, created)
    build = BackgroundBuild(process, guardian, what, log, time.monotonic(), threading.Event())
    config.stash[BUILD] = build
    config.stash[HANDLE] = BuildHandle(process.pid, created, log)
    threading.Thread(
        target=_notices, args=(config, build), name="background-build notices", daemon=True
    ).start()
    _say(
        config,
        f"crdharness: building {'; '.join(what)} in the background (log: {log}); the tests "
        "that need them run last, when they are ready",
    )


def _notices(config: pytest.Config, build: BackgroundBuild) -> None:
    """Every minute while the build runs: how long so far and what it is doing (its log's
    last line), so a run that seems stuck on its last tests says why."""
    while not build.stop_notices.wait(NOTICE_SECONDS):
        if build.process.poll() is not None:
            return
        minutes = (time.monotonic() - build.started) / 60
        _say(
            config,
            f"crdharness: background build of {'; '.join(build.what)} still running after "
            f"{minutes:.0f} min ({last_line(build.log) or 'no output yet'}); the tests that "
            "need it wait for it, their timeouts paused",
        )


def last_line(log: Path, lines: int = 1) -> str:
    """The last ``lines`` non-empty lines of ``log`` (one string), or ''."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs what is building waits for it here, its timeout paused, before its
    fixtures run; if the build failed, the test fails with the build's own last lines."""
    config = item.config
    handle = config.stash.get(HANDLE, None)
    building: list[str] = config.stash[MISSING]
    if handle is None or not building or not _needs_build(item):
        return
    release = versions.resolve(config.getoption("--k8s-version"))
    if not missing(release):
        return
    with untimed(f"the background build of {'; '.join(building)}"):
        # No deadline: the build's own end is the bound (it is stopped with the run).
        while handle.running():
            time.sleep(POLL_SECONDS)
            if not missing(release):
                return
    still = missing(release)
    if still:
        pytest.fail(
            f"crdharness: the background build ended without {'; '.join(still)}; its last "
            f"lines:\n{last_line(handle.log, 20)}\n(log: {handle.log})",
            pytrace=False,
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(BUILD, None)
    if build is None:
        return
    del session.config.stash[BUILD]
    build.stop_notices.set()
    seconds = time.monotonic() - build.started
    code = build.process.poll()
    if code is None:
        created = identity(build.process.pid)
        if created is not None:
            kill_group_if_same(*created)
        build.process.wait(30)
        _say(
            session.config,
            f"crdharness: background build stopped after {seconds:.0f} s: no test needed "
            "more of it (what it finished stays cached)",
        )
    elif code != 0:
        _say(session.config, f"crdharness: background build failed (exit {code}): see {build.log}")
    else:
        _say(session.config, f"crdharness: background build finished in {seconds:.0f} s")
    build.guardian.release()


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)
    else:
        print(line, file=sys.stderr)
