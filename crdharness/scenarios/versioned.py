"""A versioned CRD under test: build it, change it step by step, and look at its objects.

Tests describe CRDs in the documentation's terms (versions, served, storage, conversion) and
check storage facts through etcd. Every CRD lives in a group of the test's own, so tests run
in any order and in parallel against one control plane.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.rest import ApiException

from crdharness.cluster import Cluster
from crdharness.etcd import StoredObject
from crdharness.polling import wait_for
from crdharness.scenarios import crds

HOST_PORT_SCHEMA = {
    "type": "object",
    "properties": {"host": {"type": "string"}, "port": {"type": "string"}},
}
HOSTPORT_SCHEMA = {"type": "object", "properties": {"hostPort": {"type": "string"}}}
OPEN_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def unique_group(label: str) -> str:
    """An API group of a test's own: ``<label>-<random>.example.com``."""
    label = label.removeprefix("test_")
    stem = re.sub(r"[^a-z0-9-]", "-", label.lower()).strip("-")[:30].strip("-") or "t"
    return f"{stem}-{uuid.uuid4().hex[:6]}.example.com"


def version(
    name: str,
    served: bool = True,
    storage: bool = False,
    schema: dict | None = None,
    deprecated: bool | None = None,
    warning: str | None = None,
    subresources: dict | None = None,
) -> dict:
    entry = {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": copy.deepcopy(schema or HOST_PORT_SCHEMA)},
    }
    if deprecated is not None:
        entry["deprecated"] = deprecated
    if warning is not None:
        entry["deprecationWarning"] = warning
    if subresources is not None:
        entry["subresources"] = subresources
    return entry


def crontab_manifest(
    group: str,
    versions: list[dict],
    conversion: dict | None = None,
    scope: str = "Namespaced",
    plural: str = "crontabs",
    kind: str = "CronTab",
) -> dict:
    spec = {
        "group": group,
        "versions": versions,
        "scope": scope,
        "names": {
            "plural": plural,
            "singular": plural.removesuffix("s"),
            "kind": kind,
            "shortNames": ["ct"] if plural == "crontabs" else [],
        },
    }
    if conversion is not None:
        spec["conversion"] = conversion
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": spec,
    }


def webhook_conversion(
    target, ca_bundle_b64: str | None = None, review_versions=("v1", "v1beta1")
) -> dict:
    """``spec.conversion`` for a webhook: ``target`` is a running webhook (its
    ``client_config()``: a URL on the local backend, the Service on kind) or a URL string."""
    if isinstance(target, str):
        client_config = {"url": target}
        if ca_bundle_b64 is not None:
            client_config["caBundle"] = ca_bundle_b64
    else:
        client_config = target.client_config()
    return {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": list(review_versions),
            "clientConfig": client_config,
        },
    }


def expect_invalid(cluster: Cluster, manifest: dict, status: int = 422) -> str:
    """Create ``manifest`` expecting the API server to refuse it; return the refusal text.

    Sent as raw JSON: the official client validates models itself and would refuse some
    invalid CRDs before the API server ever sees them.
    """
    response = cluster.http.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=manifest
    )
    if response.status_code < 300:
        crds.delete_and_wait(cluster.api_client, manifest["metadata"]["name"])
        raise AssertionError(f"the API server accepted {manifest['metadata']['name']}")
    assert response.status_code == status, (
        f"expected {status}, got {response.status_code}: {response.text}"
    )
    return response.json().get("message", response.text)


class VersionedCRD:
    def __init__(self, cluster: Cluster, manifest: dict):
        self.cluster = cluster
        self.manifest = manifest
        spec = manifest["spec"]
        self.name = manifest["metadata"]["name"]
        self.group = spec["group"]
        self.plural = spec["names"]["plural"]
        self.kind = spec["names"]["kind"]
        self.namespaced = spec.get("scope", "Namespaced") == "Namespaced"

    # -- the CRD ---------------------------------------------------------------------------

    @property
    def _api(self) -> client.ApiextensionsV1Api:
        return self.cluster.apiextensions

    def create(self) -> VersionedCRD:
        crds.create_and_wait(self.cluster.api_client, self.manifest)
        return self

    def read(self) -> dict:
        # As the server sent it (also fields the client's models do not know), without the
        # CPU of building and flattening model objects.
        return json.loads(
            self._api.read_custom_resource_definition(self.name, _preload_content=False).data
        )

    def stored_versions(self) -> list[str]:
        return list(self.read()["status"].get("storedVersions") or [])

    def served(self) -> set[str]:
        return {v["name"] for v in self.read()["spec"]["versions"] if v.get("served")}

    def storage_version(self) -> str:
        return next(v["name"] for v in self.read()["spec"]["versions"] if v.get("storage"))

    def update(self, change: Callable[[dict], None], settle: bool = True) -> dict:
        """Apply ``change`` to the CRD (a dict) and replace it, retrying on conflicts; then
        (unless ``settle`` is False) wait until the served versions are in discovery and
        answer a LIST."""

        def attempt():
            current = self.read()
            change(current)
            try:
                return self._api.replace_custom_resource_definition(self.name, current)
            except ApiException as exc:
                if exc.status == 409:
                    return None
                raise

        wait_for(attempt, 30, f"an update of CRD {self.name} without conflict")
        if settle:
            self.wait_settled()
        return self.read()

    def wait_settled(self) -> None:
        """Settled (``crds.wait_settled``), and the group's own discovery lists exactly the
        served versions: the group is this CRD's alone, and tests read that list."""
        crds.wait_settled(self.cluster.api_client, self.read())
        crds.wait_discovery(self.cluster.api_client, self.group, self.served())

    def set_storage(self, name: str) -> dict:
        def change(crd):
            for entry in crd["spec"]["versions"]:
                entry["storage"] = entry["name"] == name

        return self.update(change)

    def set_served(self, name: str, served: bool) -> dict:
        def change(crd):
            for entry in crd["spec"]["versions"]:
                if entry["name"] == name:
                    entry["served"] = served

        return self.update(change)

    def add_version(self, entry: dict, storage: bool = False) -> dict:
        def change(crd):
            if storage:
                for existing in crd["spec"]["versions"]:
                    existing["storage"] = False
            crd["spec"]["versions"].append({**entry, "storage": storage})

        return self.update(change)

    def patch_stored_versions(self, versions: list[str]) -> str:
        """The documented command, verbatim: kubectl patch ... --subresource='status'."""
        result = self.cluster.kubectl(
            "patch",
            "customresourcedefinitions",
            self.name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"storedVersions": versions}}),
        )
        return result.stdout

    def delete(self) -> None:
        crds.delete_and_wait(self.cluster.api_client, self.name)

    # -- its objects -----------------------------------------------------------------------

    def path(self, version: str, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base

    def body(self, version: str, name: str, **fields) -> dict:
        return {
            "apiVersion": f"{self.group}/{version}",
            "kind": self.kind,
            "metadata": {"name": name, **fields.pop("metadata", {})},
            **fields,
        }

    def create_object(self, version: str, namespace: str, name: str, **fields) -> dict:
        return self.cluster.custom_objects.create_namespaced_custom_object(
            self.group, version, namespace, self.plural, self.body(version, name, **fields)
        )

    def touch(self, version: str, namespace: str) -> None:
        """Create and delete one object: a write every watcher of the resource sees (it moves
        a quiet resource's watches past any earlier resourceVersion)."""
        self.create_object(version, namespace, "touch", host="touch", port="1")
        self.delete_object(version, namespace, "touch")

    def get_object(self, version: str, namespace: str, name: str) -> dict:
        return self.cluster.custom_objects.get_namespaced_custom_object(
            self.group, version, namespace, self.plural, name
        )

    def list_objects(self, version: str, namespace: str) -> list[dict]:
        return self.cluster.custom_objects.list_namespaced_custom_object(
            self.group, version, namespace, self.plural
        )["items"]

    def replace_object(self, version: str, namespace: str, obj: dict) -> dict:
        return self.cluster.custom_objects.replace_namespaced_custom_object(
            self.group, version, namespace, self.plural, obj["metadata"]["name"], obj
        )

    def patch_object(self, version: str, namespace: str, name: str, patch: dict) -> dict:
        return self.cluster.custom_objects.patch_namespaced_custom_object(
            self.group, version, namespace, self.plural, name, patch
        )

    def delete_object(self, version: str, namespace: str, name: str) -> dict:
        return self.cluster.custom_objects.delete_namespaced_custom_object(
            self.group, version, namespace, self.plural, name
        )

    # -- storage facts ---------------------------------------------------------------------

    def stored(self, name: str, namespace: str | None = None) -> StoredObject | None:
        return self.cluster.stored(self.group, self.plural, name, namespace)

    def stored_version_of(self, name: str, namespace: str | None = None) -> str:
        stored = self.stored(name, namespace)
        assert stored is not None, f"etcd has no key for {self.plural}/{name}"
        return stored.api_version.split("/", 1)[1]

    def all_stored(self) -> list[StoredObject]:
        assert self.cluster.etcd is not None, self.cluster.etcd_unavailable
        return self.cluster.etcd.list(f"/registry/{self.group}/{self.plural}/")

    def assert_storage_invariant(self) -> None:
        """Every persisted object is at a version listed in status.storedVersions (SV-07)."""
        allowed = set(self.stored_versions())
        for stored in self.all_stored():
            at = stored.api_version.split("/", 1)[1]
            assert at in allowed, f"{stored.key} is stored at {at}, not in storedVersions {allowed}"
