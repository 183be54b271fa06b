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
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from crdharness.binaries import assets, cache, versions
from crdharness.errors import HarnessError
from crdharness.guardian import Guardian
from crdharness.processes import identity, kill_group_if_same

# The fixtures whose tests need what is built in the background.
NEEDS_BACKGROUND_BUILD = ("controllers", "upgrade_pair", "upgradable_cluster")
BUILD = pytest.StashKey["BackgroundBuild"]()
BUILD_NICENESS = 10


@dataclass
class BackgroundBuild:
    process: subprocess.Popen
    guardian: Guardian  # stops it if this run dies without stopping it
    what: list[str]
    log: Path
    started: float


MARKER = "built_in_background"


# What the run will build, decided once by the controller before any worker collects: every
# xdist worker must collect the same order, whatever the cache holds by the time it looks.
MISSING = pytest.StashKey[list[str]]()
WORKER_INPUT = "crdharness_background_build"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test needs kube-controller-manager or the neighbouring minor's "
        "binaries (built in the background on a fresh machine): it runs last",
    )
    worker = getattr(config, "workerinput", None)
    config.stash[MISSING] = worker[WORKER_INPUT] if worker else _to_build(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller, for each worker: what this run builds in the background."""
    node.workerinput[WORKER_INPUT] = node.config.stash[MISSING]


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


def _start(config: pytest.Config) -> None:
    what = config.stash[MISSING]
    if not what:
        return
    release = versions.resolve(config.getoption("--k8s-version"))
    log = cache.cache_root() / "logs" / "background-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "crdharness", "binaries", "--k8s-version", release.minor]
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, "--controller-manager", "--upgrade-pair"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its go builds are stopped with it, as a group
        )
    # Below the tests in priority: their waits have deadlines, the build has none.
    os.setpriority(os.PRIO_PROCESS, process.pid, BUILD_NICENESS)
    guardian = Guardian()
    guardian.watch_group(process.pid, (identity(process.pid) or (process.pid, 0.0))[1])
    config.stash[BUILD] = BackgroundBuild(process, guardian, what, log, time.monotonic())
    _say(
        config,
        f"crdharness: building {'; '.join(what)} in the background (log: {log}); the tests "
        "that need them run last, when they are ready",
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(BUILD, None)
    if build is None:
        return
    del session.config.stash[BUILD]
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
