"""The official envtest release archives: the fast path for users who can reach them.

controller-tools publishes an index (``envtest-releases.yaml``) that names, for each
Kubernetes version and platform, an archive holding ``kube-apiserver``, ``etcd`` and
``kubectl`` and its SHA-512. An archive whose digest differs is never used.
"""

from __future__ import annotations

import hashlib
import os
import platform
import tarfile
from pathlib import Path

import requests
import yaml

from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.progress import Reporter, phase

INDEX_ENV_VAR = "CRDHARNESS_ENVTEST_INDEX"
DEFAULT_INDEX = (
    "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
)
BINARIES = ("kube-apiserver", "etcd", "kubectl")
_TIMEOUT = (5, 60)  # connect, read: an unreachable host must fail fast and fall back to a build


class ArchiveUnavailable(Exception):
    """The index or the archive cannot be had (no network, no entry for this version)."""


class ChecksumMismatch(HarnessError):
    """The archive downloaded, but its digest is not the one the index promises."""


def _platform() -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}-{arch}"


def archive_name(release: Release) -> str:
    return f"envtest-{release.git_version}-{_platform()}.tar.gz"


def _session() -> requests.Session:
    session = requests.Session()
    # Keep the machine's REQUESTS_CA_BUNDLE/proxy settings: this is a real internet download.
    return session


def _lookup(release: Release, index_url: str) -> tuple[str, str]:
    try:
        response = _session().get(index_url, timeout=_TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise ArchiveUnavailable(f"{index_url} unreachable: {type(exc).__name__}") from exc
    index = yaml.safe_load(response.text) or {}
    entry = (index.get("releases") or {}).get(release.git_version, {}).get(archive_name(release))
    if not entry:
        raise ArchiveUnavailable(f"envtest index has no {archive_name(release)}")
    return entry["selfLink"], entry["hash"]


def fetch(release: Release, into: Path, report: Reporter, index_url: str | None = None) -> None:
    """Download, verify and unpack the envtest archive for ``release`` into ``into``."""
    index_url = index_url or os.environ.get(INDEX_ENV_VAR, DEFAULT_INDEX)
    url, expected = _lookup(release, index_url)
    archive = into / archive_name(release)
    digest = hashlib.sha512()
    with phase(report, f"downloading {url}"):
        try:
            with _session().get(url, stream=True, timeout=_TIMEOUT) as response:
                response.raise_for_status()
                with archive.open("wb") as out:
                    for chunk in response.iter_content(chunk_size=1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        except requests.RequestException as exc:
            raise ArchiveUnavailable(f"download of {url} failed: {type(exc).__name__}") from exc
    if digest.hexdigest() != expected.lower():
        archive.unlink()
        raise ChecksumMismatch(
            f"{url} has SHA-512 {digest.hexdigest()[:16]}… but the envtest index says "
            f"{expected[:16]}…: the download is corrupt or tampered with; not using it"
        )
    _unpack(archive, into)
    archive.unlink()


def _unpack(archive: Path, into: Path) -> None:
    """Extract just the three binaries, by base name, wherever the archive keeps them."""
    found = set()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if member.isfile() and name in BINARIES:
                source = tar.extractfile(member)
                assert source is not None
                target = into / name
                target.write_bytes(source.read())
                target.chmod(0o755)
                found.add(name)
    missing = set(BINARIES) - found
    if missing:
        raise ArchiveUnavailable(f"{archive.name} lacks {', '.join(sorted(missing))}")
