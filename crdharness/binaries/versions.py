"""The Kubernetes releases the harness supports, and how users name them.

A release is named by its minor version ("1.37"), its full version ("1.37.2") or with a
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
    kubernetes: str  # "1.37.2", without the "v"
    etcd: str  # an etcd that this kube-apiserver supports (3.5.13+ or 3.6)
    # kind's node image for this minor, pinned by digest as the notes of kind v0.33.0 (the
    # KIND_VERSION in kind.py) list it. kind builds one image per minor and kind release, so
    # its patch can differ from ours.
    kind_node_image: str = ""
    # storagemigration.k8s.io (the built-in storage version migration): alpha v1alpha1 up to
    # 1.34, beta v1beta1 (off by default) in 1.35-1.36, GA v1 (on by default) from 1.37.
    storage_migration_api: str = "v1"

    @property
    def minor(self) -> str:
        return ".".join(self.kubernetes.split(".")[:2])

    @property
    def minor_number(self) -> int:
        return int(self.kubernetes.split(".")[1])

    @property
    def git_version(self) -> str:
        """What ``kube-apiserver --version`` and ``/version`` report."""
        return f"v{self.kubernetes}"

    @property
    def storage_migration_feature_gates(self) -> dict[str, bool]:
        """Feature gates that turn the built-in storage version migration on where it is not
        on by default. Before 1.35 the migrator also needs client-go's informer resource
        version (alpha there; kube components take client-go gates in --feature-gates)."""
        if self.storage_migration_api == "v1":
            return {}
        gates = {"StorageVersionMigrator": True}
        if self.storage_migration_api == "v1alpha1":
            gates["InformerResourceVersion"] = True
        return gates

    @property
    def storage_migration_controller_manager_flags(self) -> list[str]:
        gates = self.storage_migration_feature_gates
        if not gates:
            return []
        return ["--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())]

    @property
    def storage_migration_apiserver_flags(self) -> list[str]:
        if self.storage_migration_api == "v1":
            return []
        api = f"storagemigration.k8s.io/{self.storage_migration_api}"
        return ["--feature-gates=StorageVersionMigrator=true", f"--runtime-config={api}=true"]

    @property
    def staging_version(self) -> str:
        """The tag of the staging modules (k8s.io/api, client-go, ...) cut with this release."""
        return "v0." + self.kubernetes.split(".", 1)[1]


# Newest first. Patch versions are the newest that the Go module proxy serves and the Go
# checksum database knows (checked 2026-11-22: v1.37.3, v1.36.6, v1.35.9 and v1.34.13 are
# refused by the proxy; v1.36.5 and v1.34.11 are missing from sum.golang.org); each was
# built with Go 1.26 on our machines before being listed here. One etcd for all of them, so
# that a control-plane upgrade or rollback keeps the same etcd process and data.
SUPPORTED: tuple[Release, ...] = (
    Release(
        kubernetes="1.37.2",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.37.0@sha256:"
        "a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",
    ),
    Release(
        kubernetes="1.36.4",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.36.4@sha256:"
        "099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
        storage_migration_api="v1beta1",
    ),
    Release(
        kubernetes="1.35.8",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.35.8@sha256:"
        "07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0",
        storage_migration_api="v1beta1",
    ),
    Release(
        kubernetes="1.34.10",
        etcd="3.6.16",
        kind_node_image="kindest/node:v1.34.11@sha256:"
        "44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d",
        storage_migration_api="v1alpha1",
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
