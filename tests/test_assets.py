import os
import threading

import pytest

from crdharness.binaries import assets, cache, versions
from crdharness.errors import HarnessError
from tests.fakes import write_binaries

RELEASE = versions.resolve("1.37")


def quiet(line):
    pass


def fill_cache(k8s="1.37.2", etcd="3.6.16"):
    write_binaries(
        cache.entry_dir("kubernetes-v1.37.2"), k8s=k8s, only=("kube-apiserver", "kubectl")
    )
    write_binaries(cache.entry_dir("etcd-v3.6.16"), etcd=etcd, only=("etcd",))


def test_reported_versions_are_read_from_each_binary(tmp_path):
    write_binaries(tmp_path)
    assert assets.reported_version(tmp_path / "kube-apiserver") == "1.37.2"
    assert assets.reported_version(tmp_path / "kubectl") == "1.37.2"
    assert assets.reported_version(tmp_path / "etcd") == "3.6.16"


def test_a_binary_that_does_not_run_has_no_version(tmp_path):
    broken = tmp_path / "kube-apiserver"
    broken.write_bytes(b"\x7fELF truncated")
    broken.chmod(0o755)
    assert assets.reported_version(broken) is None


def test_explicit_directory_in_envtest_layout_wins(isolated_cache, tmp_path, monkeypatch):
    fill_cache()
    explicit = write_binaries(tmp_path / "assets")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(explicit))
    found = assets.resolve(RELEASE, report=quiet, download=False)
    assert found.source == "dir"
    assert found.kube_apiserver == explicit / "kube-apiserver"


def test_explicit_directory_of_another_version_is_refused(isolated_cache, tmp_path):
    explicit = write_binaries(tmp_path / "assets", k8s="1.36.4")
    with pytest.raises(HarnessError, match=r"is Kubernetes 1\.36\.4, not 1\.37\.2"):
        assets.resolve(RELEASE, explicit, report=quiet)


def test_explicit_directory_missing_a_binary_says_which(isolated_cache, tmp_path):
    explicit = write_binaries(tmp_path / "assets", only=("kube-apiserver", "kubectl"))
    with pytest.raises(HarnessError, match="lacks executable etcd"):
        assets.resolve(RELEASE, explicit, report=quiet)


def test_verified_cache_is_used_without_building(isolated_cache, monkeypatch):
    fill_cache()
    monkeypatch.setattr(assets, "build", lambda *a: pytest.fail("must not build"))
    assert assets.resolve(RELEASE, report=quiet, download=False).source == "cache"


@pytest.mark.parametrize("damage", ["wrong-version", "not-executable", "garbage"])
def test_a_bad_cached_binary_is_rebuilt(isolated_cache, monkeypatch, damage):
    fill_cache()
    apiserver = cache.entry_dir("kubernetes-v1.37.2") / "kube-apiserver"
    if damage == "wrong-version":
        write_binaries(apiserver.parent, k8s="1.37.0", only=("kube-apiserver",))
    elif damage == "not-executable":
        apiserver.chmod(0o644)
    else:
        apiserver.write_bytes(b"\0" * 64)
    builds = []

    def fake_build(release, out, report, log):
        builds.append(release.kubernetes)
        write_binaries(out, only=("kube-apiserver", "kubectl"))

    monkeypatch.setattr(assets.gobuild, "build_kubernetes", fake_build)
    monkeypatch.setattr(assets.gobuild, "build_etcd", lambda *a: pytest.fail("etcd was fine"))
    lines = []
    found = assets.resolve(RELEASE, report=lines.append, download=False)
    assert builds == ["1.37.2"]
    assert found.source == "cache"
    assert assets.reported_version(found.kube_apiserver) == "1.37.2"
    assert any("rebuilding" in line for line in lines)


def test_an_interrupted_build_leaves_nothing_in_the_cache(isolated_cache, monkeypatch):
    def half_build(release, out, report, log):
        (out / "kube-apiserver").write_bytes(b"half a binary")
        raise KeyboardInterrupt

    monkeypatch.setattr(assets.gobuild, "build_kubernetes", half_build)
    with pytest.raises(KeyboardInterrupt):
        assets.resolve(RELEASE, report=quiet, download=False)
    assert not cache.entry_dir("kubernetes-v1.37.2").exists()
    leftovers = [p.name for p in isolated_cache.iterdir() if p.name not in ("locks", "logs")]
    assert leftovers == []


def test_a_build_that_reports_the_wrong_version_is_not_installed(isolated_cache, monkeypatch):
    monkeypatch.setattr(
        assets.gobuild,
        "build_kubernetes",
        lambda release, out, report, log: write_binaries(out, k8s="0.0.0"),
    )
    with pytest.raises(HarnessError, match="does not report its expected version"):
        assets.resolve(RELEASE, report=quiet, download=False)
    assert not cache.entry_dir("kubernetes-v1.37.2").exists()


def test_two_runs_at_once_build_only_once(isolated_cache, monkeypatch):
    builds = []
    entered = threading.Event()

    def slow_build(release, out, report, log):
        builds.append(threading.current_thread().name)
        entered.set()
        write_binaries(out, only=("kube-apiserver", "kubectl"))

    monkeypatch.setattr(assets.gobuild, "build_kubernetes", slow_build)
    monkeypatch.setattr(
        assets.gobuild,
        "build_etcd",
        lambda version, out, report, log: write_binaries(out, only=("etcd",)),
    )
    results, errors = [], []

    def run():
        try:
            results.append(assets.resolve(RELEASE, report=quiet, download=False))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, name=f"run-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(builds) == 1, builds
    assert len(results) == 2
    assert results[0] == results[1]
    assert os.access(results[0].kube_apiserver, os.X_OK)


def test_validator_entries_no_run_used_for_two_weeks_are_pruned(isolated_cache):
    isolated_cache.mkdir()
    old_time = os.path.getmtime(isolated_cache) - (cache.UNUSED_DAYS + 1) * 86400
    for name in ("crdvalidate-v1-old", "crdvalidate-v1-recent", "crdvalidate-v1-current"):
        (isolated_cache / name).mkdir(parents=True)
        (isolated_cache / name / "crdvalidate").write_text("binary")
    (isolated_cache / "kubernetes-v1.0.0").mkdir()  # another kind of entry: never pruned
    for name in ("crdvalidate-v1-old", "crdvalidate-v1-current", "kubernetes-v1.0.0"):
        os.utime(isolated_cache / name, (old_time, old_time))
    cache.mark_used("crdvalidate-v1-recent")  # a run used it: kept
    removed = cache.prune_unused("crdvalidate-", keep="crdvalidate-v1-current")
    assert removed == ["crdvalidate-v1-old"]
    left = sorted(p.name for p in isolated_cache.iterdir())
    assert left == ["crdvalidate-v1-current", "crdvalidate-v1-recent", "kubernetes-v1.0.0"]
