"""The documentation's "Option 1": Kubernetes' own storage version migration.

A ``StorageVersionMigration`` object (API group ``storagemigration.k8s.io``) asks
kube-controller-manager's storage version migrator to rewrite every object of one resource at
the current storage version. Its API moved from v1alpha1 (spec.resource is a
group/version/resource) to v1beta1 and v1 (a group/resource); from 1.36 the controller also
trims the CRD's ``status.storedVersions`` when it succeeds. Compare
``crdharness.scenarios.migrate``, which does Option 2 without any controller.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import requests

from crdharness.binaries.versions import Release
from crdharness.cluster import Cluster
from crdharness.polling import wait_for

GROUP = "storagemigration.k8s.io"


def manifest(release: Release, name: str, group: str, resource: str, version: str) -> dict:
    target = {"group": group, "resource": resource}
    if release.storage_migration_api == "v1alpha1":
        target["version"] = version
    return {
        "apiVersion": f"{GROUP}/{release.storage_migration_api}",
        "kind": "StorageVersionMigration",
        "metadata": {"name": name},
        "spec": {"resource": target},
    }


def updates_stored_versions(release: Release) -> bool:
    """Whether a successful migration trims a CRD's ``status.storedVersions`` by itself: from
    1.36, whose migrator first ships the custom-resource controller that does it."""
    return release.minor_number >= 36


def condition(migration: dict, kind: str, status: str = "True") -> dict | None:
    for found in (migration.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind and found.get("status") == status:
            return found
    return None


def finished_with_crd(migration: dict) -> bool:
    """From 1.36 the migrator marks a migration Succeeded first and only on a later pass
    trims the CRD's storedVersions, then turns its Running condition False: until then the
    CRD still lists the old version."""
    return condition(migration, "Running", status="False") is not None


def waits_for_the_collector(migration: dict) -> bool:
    """The migrator has taken the resource's current resourceVersion and not yet succeeded:
    it rewrites objects only once the garbage collector's watch of the resource has seen that
    version. (From 1.36 the migration is Running before it takes the version.)"""
    status = migration.get("status") or {}
    return bool(status.get("resourceVersion")) and not condition(migration, "Succeeded")


def migrate(
    cluster: Cluster,
    release: Release,
    group: str,
    resource: str,
    storage_version: str,
    timeout: float = 300.0,
    nudge: Callable[[], None] | None = None,
) -> dict:
    """Create a migration for ``resource.group``, wait until it Succeeded (or fail with its
    Failed condition) and, where the migrator updates the CRD, until it has done so; return
    the final object.

    ``nudge``, if given, writes to the resource (say, creates and deletes an object). It is
    called once, when the migrator waits for the garbage collector: on a quiet resource the
    collector's watch moves past the migration's resourceVersion only with the next event or
    watch bookmark, which can take a minute or more; Kubernetes' own integration test of the
    migrator does the same."""
    path = f"/apis/{GROUP}/{release.storage_migration_api}/storageversionmigrations"
    name = f"migrate-{resource}-{uuid.uuid4().hex[:6]}"
    created = cluster.http.post(
        path, json=manifest(release, name, group, resource, storage_version)
    )
    if created.status_code != 201:
        raise AssertionError(
            f"creating StorageVersionMigration {name} answered {created.status_code}: "
            f"{created.text[:300]}"
        )

    nudges = [nudge] if nudge else []

    def finished() -> dict | None:
        current = cluster.http.get(f"{path}/{name}").json()
        if nudges and waits_for_the_collector(current):
            nudges.pop()()
        failed = condition(current, "Failed")
        if failed:
            raise AssertionError(f"StorageVersionMigration {name} failed: {failed}")
        if not condition(current, "Succeeded"):
            return None
        if updates_stored_versions(release) and not finished_with_crd(current):
            return None
        return current

    def last_seen() -> str:
        return str(cluster.http.get(f"{path}/{name}").json().get("status"))

    return wait_for(
        finished,
        timeout,
        f"StorageVersionMigration {name} to succeed"
        + (" and update the CRD" if updates_stored_versions(release) else ""),
        interval=0.2,
        last_seen=last_seen,
        retry=(requests.RequestException, ValueError),  # not created yet, not JSON yet
    )
