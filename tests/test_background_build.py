"""The binaries only some tests need are built in the background (``pytest_plugin.builds``):
those tests run last, the build starts only when something is missing, and it never
outlives the run."""

from __future__ import annotations

from types import SimpleNamespace

import psutil
import pytest

from crdharness.binaries import assets, cache, versions
from crdharness.pytest_plugin import builds
from tests.inner_session import run_inner_pytest


def test_while_building_the_tests_that_need_it_are_collected_last_in_their_own_order():
    def item(name: str, *fixtures: str):
        return SimpleNamespace(name=name, fixturenames=["cluster", *fixtures])

    def marked(name: str):
        mark = pytest.mark.built_in_background.mark
        return SimpleNamespace(
            name=name,
            fixturenames=["controller_site"],
            get_closest_marker=lambda wanted: mark if wanted == mark.name else None,
        )

    items = [
        item("upgrade", "upgradable_cluster"),
        item("crontab"),
        marked("namespace-deletion"),
        item("gc", "controllers"),
        item("webhook", "conversion_webhook"),
    ]
    building = SimpleNamespace(stash={builds.MISSING: ["kube-controller-manager 1.37.2"]})
    builds.pytest_collection_modifyitems(building, items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["crontab", "webhook", "upgrade", "namespace-deletion", "gc"]


def test_with_nothing_to_build_the_collection_order_stands():
    items = [SimpleNamespace(name="a", fixturenames=["controllers"]), SimpleNamespace(name="b")]
    built = SimpleNamespace(stash={builds.MISSING: []})
    builds.pytest_collection_modifyitems(built, items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["a", "b"]


def _cache_with_only_the_session_version(tmp_path, monkeypatch) -> versions.Release:
    """A binary cache holding only the default release's kube-apiserver, kubectl and etcd
    (links to the real cache's): the controller manager and the neighbouring minor are
    missing, as on a machine that ran ``crdharness binaries`` and nothing else."""
    release = versions.DEFAULT
    real = assets.resolve(release)  # built by `nox -s tests` before this
    fresh = tmp_path / "cache"
    fresh.mkdir()
    for binary in (real.kube_apiserver, real.etcd):
        (fresh / binary.parent.name).symlink_to(binary.parent)
    monkeypatch.setenv(cache.ENV_VAR, str(fresh))
    return release


def test_missing_names_what_the_background_build_would_make(tmp_path, monkeypatch):
    release = _cache_with_only_the_session_version(tmp_path, monkeypatch)
    missing = builds.missing(release)
    assert missing[0] == f"kube-controller-manager {release.kubernetes}"
    assert len(missing) == 2 and "kube-apiserver, kubectl and etcd 1." in missing[1]


def _builders(cache_dir) -> list[psutil.Process]:
    """Processes building into ``cache_dir`` (the background build and its go commands)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(cache.ENV_VAR) == str(cache_dir):
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
def test_a_build_no_test_waited_for_is_stopped_at_the_end_of_the_run(tmp_path, monkeypatch):
    _cache_with_only_the_session_version(tmp_path, monkeypatch)
    # Under xdist the controller starts the build before any worker collects; the only test
    # needs none of it.
    source = "def test_needs_nothing_built():\n    assert True\n"
    done = run_inner_pytest(tmp_path, source, "-n", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "in the background (log: " in done.stdout, done.stdout
    assert "background build stopped after" in done.stdout, done.stdout
    assert _builders(tmp_path / "cache") == []


def test_nothing_is_built_in_the_background_when_every_binary_is_cached(tmp_path):
    release = versions.DEFAULT
    if builds.missing(release):
        pytest.fail(f"this test needs every binary cached (`nox -s tests` builds them): {release}")
    source = "def test_needs_the_neighbour(upgrade_pair):\n    assert upgrade_pair\n"
    done = run_inner_pytest(tmp_path, source)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "background" not in done.stdout


# The inner session's conftest: its background build is a stand-in that takes BUILD_SECONDS
# (longer than the session's per-test timeout) and then links the real cache's entries in,
# or fails with a line of its own.
SLOW_BUILD_CONFTEST = """
import sys
from crdharness.pytest_plugin import builds

SCRIPT = '''
import os, sys, time
from pathlib import Path
print("compiling kube-controller-manager ...", flush=True)
time.sleep({seconds})  # a slow machine
if {fail}:
    print("go: build failed: no space left on device", flush=True)
    sys.exit(1)
real, fresh = Path({real!r}), Path(os.environ["CRDHARNESS_CACHE"])
for entry in real.iterdir():
    if entry.name not in ("locks", "logs") and not (fresh / entry.name).exists():
        (fresh / entry.name).symlink_to(entry)
'''

def slow_build(release):
    return [sys.executable, "-c", SCRIPT]

builds.build_command = slow_build
"""
NEEDS_THE_BUILD = """
from crdharness.binaries import versions
from crdharness.pytest_plugin import builds

def test_needs_the_neighbour(upgrade_pair):
    assert builds.missing(versions.DEFAULT) == []
"""
PER_TEST_TIMEOUT = 3
BUILD_SECONDS = 3 * PER_TEST_TIMEOUT


def _slow_build_session(tmp_path, monkeypatch, fail: bool, *extra: str):
    real = cache.cache_root()
    _cache_with_only_the_session_version(tmp_path, monkeypatch)
    script = SLOW_BUILD_CONFTEST.replace("{seconds}", str(BUILD_SECONDS))
    script = script.replace("{fail}", str(fail)).replace("{real!r}", repr(str(real)))
    (tmp_path / "conftest.py").write_text(script)
    return run_inner_pytest(tmp_path, NEEDS_THE_BUILD, f"--timeout={PER_TEST_TIMEOUT}", *extra)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_a_build_slower_than_the_per_test_timeout_fails_no_test(tmp_path, monkeypatch, workers):
    done = _slow_build_session(tmp_path, monkeypatch, False, *workers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
    assert "background build finished in" in done.stdout, done.stdout
    assert _builders(tmp_path / "cache") == []


@pytest.mark.slow
def test_a_failed_build_fails_the_tests_that_need_it_with_its_own_lines(tmp_path, monkeypatch):
    done = _slow_build_session(tmp_path, monkeypatch, True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no space left on device" in done.stdout, done.stdout
    assert "the background build ended without kube-controller-manager" in done.stdout
    assert done.stdout.count("background build failed (exit 1)") == 1, done.stdout
    assert "Timeout" not in done.stdout, done.stdout
