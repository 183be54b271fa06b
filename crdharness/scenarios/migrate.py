"""Storage migration, the documentation's "Option 2": list every object and write it back
unchanged, so the API server persists it at the current storage version.

Unlike kube-storage-version-migrator this needs no controller; like it, a write that loses a
race (HTTP 409) is retried with a fresh read, and an object deleted meanwhile is skipped.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kubernetes import client
from kubernetes.client.rest import ApiException

from crdharness.polling import wait_for
from crdharness.scenarios.crds import error_message

MAX_ATTEMPTS = 10
BUSY_TIMEOUT = 60.0  # seconds a request is repeated while the API server answers 429
# Deliberate bugs, for `python -m crdharness sabotage` to check that the suite notices them.
SABOTAGE_ENV = "CRDHARNESS_SABOTAGE"


def _sabotaged(name: str) -> bool:
    return name in os.environ.get(SABOTAGE_ENV, "").split(",")


@dataclass
class MigrationResult:
    rewritten: list[str] = field(default_factory=list)  # "<namespace>/<name>"
    conflicts: int = 0
    vanished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # key -> why (with keep_going)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def _patiently(call: Callable[[], object], what: str):
    """``call()``, repeated while the API server answers 429. It does while it (re)builds a
    CRD's storage right after the CRD changed, which is exactly when a migration is started;
    client-go, and so kube-storage-version-migrator, retries those too."""

    def attempt():
        try:
            return (call(),)
        except ApiException as exc:
            if exc.status == 429:
                return None
            raise

    return wait_for(
        attempt,
        BUSY_TIMEOUT,
        f"{what} to be answered without 429",
        interval=0.1,
    )[0]


def migrate(
    api_client: client.ApiClient,
    group: str,
    version: str,
    plural: str,
    before_write: Callable[[dict], None] | None = None,
    workers: int = 1,
    keep_going: bool = False,
) -> MigrationResult:
    """Rewrite every ``plural.group`` object through ``version`` (any served version works;
    the storage version avoids a conversion round trip). ``workers`` > 1 rewrites objects
    concurrently; 1 is what kube-storage-version-migrator does. ``before_write`` is a test
    hook."""
    api = client.CustomObjectsApi(api_client)
    result = MigrationResult()
    items = _patiently(
        lambda: api.list_cluster_custom_object(group, version, plural), f"LIST of {plural}"
    )["items"]
    if _sabotaged("migrator-skips-one") and items:
        items = items[:-1]
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as pool:
            list(
                pool.map(
                    lambda item: _rewrite(
                        api, group, version, plural, item, before_write, result, keep_going
                    ),
                    items,
                )
            )
        return result
    for item in items:
        _rewrite(api, group, version, plural, item, before_write, result, keep_going)
    return result


def _rewrite(
    api, group, version, plural, item, before_write, result: MigrationResult, keep_going=False
) -> None:
    """Write one object back unchanged; on a conflict read it again and retry."""
    name, namespace = item["metadata"]["name"], item["metadata"].get("namespace")
    key = f"{namespace or ''}/{name}"

    def write(body):
        if namespace:
            return api.replace_namespaced_custom_object(
                group, version, namespace, plural, name, body
            )
        return api.replace_cluster_custom_object(group, version, plural, name, body)

    def read():
        if namespace:
            return api.get_namespaced_custom_object(group, version, namespace, plural, name)
        return api.get_cluster_custom_object(group, version, plural, name)

    current = item
    for _ in range(MAX_ATTEMPTS):
        if before_write is not None:
            before_write(current)
        try:
            _patiently(functools.partial(write, current), f"the write of {key}")
            result.rewritten.append(key)
            break
        except ApiException as exc:
            if exc.status == 404:
                result.vanished.append(key)
                break
            if exc.status != 409 and keep_going:
                result.failed[key] = f"{exc.status} {error_message(exc)}"
                break
            if exc.status != 409:
                raise
            result.conflicts += 1
            if _sabotaged("migrator-no-retry"):
                break
            try:
                current = _patiently(read, f"the read of {key}")
            except ApiException as gone:
                if gone.status != 404:
                    raise
                result.vanished.append(key)
                break
    else:
        raise RuntimeError(f"gave up rewriting {key} after {MAX_ATTEMPTS} conflicts")


def upgrade_storage(crd, new_version: str, after_each_step: Callable[[], None] = lambda: None):
    """The documented procedure, whole: make ``new_version`` the storage version, rewrite
    every object, then leave only ``new_version`` in status.storedVersions.
    ``after_each_step`` runs after each step (tests check the storage invariant there)."""
    crd.set_storage(new_version)
    after_each_step()
    if _sabotaged("clean-stored-versions-first"):
        crd.patch_stored_versions([new_version])
        after_each_step()
        result = migrate(crd.cluster.api_client, crd.group, new_version, crd.plural)
    else:
        result = migrate(crd.cluster.api_client, crd.group, new_version, crd.plural)
        after_each_step()
        crd.patch_stored_versions([new_version])
    after_each_step()
    return result
