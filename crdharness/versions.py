"""The Kubernetes releases the harness supports, and how users name them.

A release is named by its minor version ("1.37"), its full version ("1.37.1") or with a
leading "v". Each minor maps to one pinned patch release, so that a cache key, a binary's
reported version and a CI matrix entry always mean the same bits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from crdharness.errors import HarnessError

ENV_VAR = "CRDHARNESS_K8S_VERSION"


@dataclass(frozen=True)
class Release:
    kubernetes: str  # "1.37.1", without the "v"
    etcd: str  # an etcd that this kube-apiserver supports (3.5.13+ or 3.6)
    # kind's node image for this minor, pinned by digest as kind's release notes list it.
    # kind publishes one image per minor and kind release, so its patch can lag ours.
    kind_node_image: str = ""

    @property
    def minor(self) -> str:
        return ".".join(self.kubernetes.split(".")[:2])

    @property
    def git_version(self) -> str:
        """What ``kube-apiserver --version`` and ``/version`` report."""
        return f"v{self.kubernetes}"

    @property
    def staging_version(self) -> str:
        """The tag of the staging modules (k8s.io/api, client-go, ...) cut with this release."""
        return "v0." + self.kubernetes.split(".", 1)[1]


# Newest first. Patch versions are the newest that the Go module proxy serves and the Go
# checksum database knows (v1.37.2 has no module zip yet; v1.36.5 is not in sum.golang.org);
# each was built with Go 1.26 on our machines before being listed here.
SUPPORTED: tuple[Release, ...] = (
    Release(
        kubernetes="1.37.1",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.37.0@sha256:"
        "a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",  # kind v0.33.0
    ),
    Release(
        kubernetes="1.36.4",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.36.1@sha256:"
        "3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5",  # kind v0.32.0
    ),
)
DEFAULT = SUPPORTED[0]


def supported_names() -> str:
    return ", ".join(release.minor for release in SUPPORTED)


def resolve(name: str | None = None) -> Release:
    """Return the release for ``name`` (or ``$CRDHARNESS_K8S_VERSION``, or the default)."""
    name = name or os.environ.get(ENV_VAR) or DEFAULT.minor
    wanted = name.strip().removeprefix("v")
    for release in SUPPORTED:
        if wanted in (release.minor, release.kubernetes):
            return release
    raise HarnessError(
        f"Kubernetes version {name!r} is not supported; choose one of: {supported_names()} "
        f"(with --k8s-version or ${ENV_VAR})"
    )
