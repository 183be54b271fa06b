"""Find kube-apiserver, kubectl and etcd for a release.

Resolution order, first hit wins:

1. an explicit directory (``--assets-dir`` or envtest's ``KUBEBUILDER_ASSETS`` layout);
2. the per-user cache, each binary checked by the version it reports;
3. the official envtest archive, when it can be downloaded and its checksum matches;
4. a build from Go modules through the Go module proxy.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crdharness.binaries import cache, envtest_archive, gobuild
from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.progress import Reporter, to_stderr
from crdharness.untimed import untimed

ASSETS_ENV_VAR = "KUBEBUILDER_ASSETS"
MINIMUM_ETCD = (3, 5, 13)


@dataclass(frozen=True)
class Assets:
    kube_apiserver: Path
    kubectl: Path
    etcd: Path
    source: str  # where they came from: "dir", "cache", "envtest", "build"


def reported_version(binary: Path) -> str | None:
    """The version a binary says it is, or None when it does not run properly."""
    args = {
        "kube-apiserver": ["--version"],
        "kube-controller-manager": ["--version"],
        "kubectl": ["version", "--client", "-o", "json"],
        "etcd": ["--version"],
    }[binary.name]
    try:
        result = subprocess.run(
            [str(binary), *args], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    match = re.search(
        r"(?:Kubernetes |gitVersion\"?:\s*\"|etcd Version: )v?(\d+\.\d+\.\d+)", result.stdout
    )
    return match.group(1) if match else None


def _kubernetes_ok(directory: Path, release: Release) -> bool:
    return all(
        reported_version(directory / name) == release.kubernetes
        for name in ("kube-apiserver", "kubectl")
    )


def _etcd_ok(binary: Path, exact: str | None = None) -> bool:
    version = reported_version(binary)
    if version is None:
        return False
    if exact is not None:
        return version == exact
    return tuple(int(p) for p in version.split(".")) >= MINIMUM_ETCD


def from_directory(directory: Path, release: Release) -> Assets:
    """Binaries from a directory the user names; they must match the requested release."""
    paths = {name: directory / name for name in envtest_archive.BINARIES}
    missing = [name for name, path in paths.items() if not os.access(path, os.X_OK)]
    if missing:
        raise HarnessError(
            f"{directory} lacks executable {', '.join(missing)}: point {ASSETS_ENV_VAR} "
            "(or --assets-dir) at a directory with kube-apiserver, etcd and kubectl"
        )
    found = reported_version(paths["kube-apiserver"])
    if found != release.kubernetes:
        raise HarnessError(
            f"{paths['kube-apiserver']} is Kubernetes {found or 'unknown'}, not "
            f"{release.kubernetes}: pass --k8s-version {found or '...'} or another directory"
        )
    return Assets(paths["kube-apiserver"], paths["kubectl"], paths["etcd"], source="dir")


def _kubernetes_entry(release: Release) -> str:
    return f"kubernetes-{release.git_version}"


def _etcd_entry(release: Release) -> str:
    return f"etcd-v{release.etcd}"


def _envtest_entry(release: Release) -> str:
    return f"envtest-{release.git_version}"


def from_cache(release: Release) -> Assets | None:
    kube = cache.entry_dir(_kubernetes_entry(release))
    etcd = cache.entry_dir(_etcd_entry(release)) / "etcd"
    if _kubernetes_ok(kube, release) and _etcd_ok(etcd, release.etcd):
        return Assets(kube / "kube-apiserver", kube / "kubectl", etcd, source="cache")
    envtest = cache.entry_dir(_envtest_entry(release))
    if _kubernetes_ok(envtest, release) and _etcd_ok(envtest / "etcd"):
        return Assets(
            envtest / "kube-apiserver", envtest / "kubectl", envtest / "etcd", source="envtest"
        )
    return None


def _download_envtest(release: Release, report: Reporter) -> bool:
    name = _envtest_entry(release)
    with (
        cache.locked(name, report),
        untimed(f"downloading {name}"),
        cache.staging_dir(name) as scratch,
    ):
        if _kubernetes_ok(cache.entry_dir(name), release):
            return True  # another run installed it while we waited for the lock
        unpacked = scratch / "entry"
        unpacked.mkdir()
        try:
            envtest_archive.fetch(release, unpacked, report)
        except envtest_archive.ArchiveUnavailable as exc:
            report(f"envtest archive not used ({exc}); building from Go modules instead")
            return False
        except envtest_archive.ChecksumMismatch as exc:
            report(f"{exc}; building from Go modules instead")
            return False
        if not (_kubernetes_ok(unpacked, release) and _etcd_ok(unpacked / "etcd")):
            report(f"envtest archive for {release.git_version} holds unusable binaries; building")
            return False
        cache.install(name, unpacked)
        return True


def _build_entry(name: str, ok, build, report: Reporter) -> None:
    """Build cache entry ``name`` unless a good one exists; ``ok(dir)`` checks an entry."""
    with cache.locked(name, report), untimed(f"building {name}"):
        if ok(cache.entry_dir(name)):
            return  # built by a run that held the lock before us
        if cache.entry_dir(name).exists():
            report(f"cached {name} is damaged or reports the wrong version; rebuilding it")
        with cache.staging_dir(name) as scratch:
            out = scratch / "entry"
            out.mkdir()
            build(out, gobuild.build_log(name))
            if not ok(out):
                raise HarnessError(
                    f"the freshly built {name} does not report its expected version; "
                    f"see {cache.cache_root() / 'logs' / f'build-{name}.log'}"
                )
            cache.install(name, out)


def build(release: Release, report: Reporter) -> Assets:
    _build_entry(
        _kubernetes_entry(release),
        lambda d: _kubernetes_ok(d, release),
        lambda out, log: gobuild.build_kubernetes(release, out, report, log),
        report,
    )
    _build_entry(
        _etcd_entry(release),
        lambda d: _etcd_ok(d / "etcd", release.etcd),
        lambda out, log: gobuild.build_etcd(release.etcd, out, report, log),
        report,
    )
    found = from_cache(release)
    assert found is not None, "binaries vanished from the cache right after being installed"
    return found


def resolve(
    release: Release,
    directory: Path | str | None = None,
    report: Reporter = to_stderr,
    download: bool = True,
) -> Assets:
    """Return usable binaries for ``release``, fetching or building them if needed."""
    directory = directory or os.environ.get(ASSETS_ENV_VAR)
    if directory:
        return from_directory(Path(directory), release)
    cached = from_cache(release)
    if cached is not None:
        return cached
    if download and _download_envtest(release, report):
        cached = from_cache(release)
        if cached is not None:
            return cached
    return build(release, report)


def _controller_manager_entry(release: Release) -> str:
    return f"kube-controller-manager-{release.git_version}"


def _controller_manager_ok(directory: Path, release: Release) -> bool:
    return reported_version(directory / "kube-controller-manager") == release.kubernetes


def controller_manager_cached(release: Release) -> bool:
    """Whether ``controller_manager(release)`` would return at once (no build)."""
    entry = cache.entry_dir(_controller_manager_entry(release))
    return _controller_manager_ok(entry, release)


def controller_manager(release: Release, report: Reporter = to_stderr) -> Path:
    """kube-controller-manager for ``release``: its own cache entry, built only when a cluster
    asks for controllers (envtest archives do not carry it)."""
    name = _controller_manager_entry(release)
    _build_entry(
        name,
        lambda directory: _controller_manager_ok(directory, release),
        lambda out, log: gobuild.build_kubernetes(
            release,
            out,
            report,
            log,
            packages={"kube-controller-manager": gobuild.CONTROLLER_MANAGER_PACKAGE},
        ),
        report,
    )
    return cache.entry_dir(name) / "kube-controller-manager"


def agnhost(release: Release, report: Reporter = to_stderr) -> Path:
    """agnhost (the Go reference conversion webhook), built from the same Kubernetes module;
    for the side-by-side benchmark only."""
    name = f"agnhost-{release.git_version}"

    def ok(directory: Path) -> bool:
        binary = directory / "agnhost"
        if not os.access(binary, os.X_OK):
            return False
        probe = subprocess.run(
            [str(binary), "crd-conversion-webhook", "--help"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return probe.returncode == 0

    _build_entry(
        name,
        ok,
        lambda out, log: gobuild.build_kubernetes(
            release, out, report, log, packages={"agnhost": gobuild.AGNHOST_PACKAGE}
        ),
        report,
    )
    return cache.entry_dir(name) / "agnhost"
