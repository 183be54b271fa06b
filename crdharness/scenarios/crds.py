"""Helpers around CustomResourceDefinitions: apply, wait until served, delete."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Set as AbstractSet
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from crdharness.polling import wait_for

# Polls read raw JSON (``_preload_content=False``): building the client's model objects for a
# whole CRD, or for discovery of every group, costs more CPU than the request itself.


def _json(response) -> dict:
    return json.loads(response.data)


def established(api: client.ApiextensionsV1Api, name: str) -> bool:
    crd = _json(api.read_custom_resource_definition(name, _preload_content=False))
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def wait_established(api: client.ApiextensionsV1Api, name: str, timeout: float = 60) -> None:
    wait_for(
        lambda: established(api, name),
        timeout,
        f"CRD {name} to be Established",
        retry=(ApiException,),
    )


def served_versions(api_client: client.ApiClient, group: str) -> set[str]:
    """The versions discovery lists for ``group`` right now (empty if the group is absent)."""
    try:
        groups = _json(client.ApisApi(api_client).get_api_versions(_preload_content=False))
    except ApiException:
        return set()
    for api_group in groups.get("groups", []):
        if api_group["name"] == group:
            return {v["version"] for v in api_group["versions"]}
    return set()


def wait_discovery(
    api_client: client.ApiClient, group: str, versions: set[str], timeout: float = 60
) -> None:
    """Wait until discovery lists exactly ``versions`` for ``group``."""
    wait_for(
        lambda: served_versions(api_client, group) == versions,
        timeout,
        f"discovery of {group} to list exactly {sorted(versions)}",
        last_seen=lambda: str(sorted(served_versions(api_client, group))),
    )


def lists_resource(api_client: client.ApiClient, group: str, version: str, plural: str) -> bool:
    """Whether discovery of ``group/version`` lists ``plural`` right now."""
    try:
        found = _json(
            client.CustomObjectsApi(api_client).get_api_resources(
                group, version, _preload_content=False
            )
        )
    except ApiException:
        return False
    return any(r.get("name") == plural for r in found.get("resources") or [])


def wait_resource_discovery(
    api_client: client.ApiClient,
    group: str,
    plural: str,
    served: AbstractSet[str],
    unserved: AbstractSet[str] = frozenset(),
    timeout: float = 60,
) -> None:
    """Wait until discovery lists ``plural`` at every served version and at no unserved one:
    one resource's view, whatever else its group holds (a bundle of CRDs shares a group)."""

    def state() -> dict[str, bool]:
        return {v: lists_resource(api_client, group, v, plural) for v in served | unserved}

    wait_for(
        lambda: all(state()[v] == (v in served) for v in served | unserved),
        timeout,
        f"discovery to list {plural}.{group} at exactly {sorted(served)}",
        last_seen=lambda: str({v: "listed" if on else "absent" for v, on in state().items()}),
    )


def wait_serving(
    api_client: client.ApiClient, group: str, plural: str, versions: set[str], timeout: float = 60
) -> None:
    """Wait until a LIST answers at every version: right after a CRD is created or changed,
    the API server answers 429 while it (re)builds its storage for the CRD."""
    objects = client.CustomObjectsApi(api_client)
    last = {"answer": "none yet"}

    def answers(version: str) -> bool:
        try:
            objects.list_cluster_custom_object(group, version, plural, _preload_content=False)
        except ApiException as exc:
            last["answer"] = f"{exc.status} {error_message(exc)}"
            # Not routed yet (404) or storage still initialising (429): wait. Anything else
            # (a conversion failure a test provoked on purpose) is an answer.
            return exc.status not in (404, 429)
        return True

    for version in sorted(versions):
        wait_for(
            functools.partial(answers, version),
            timeout,
            f"LIST of {plural}.{group} at {version} to answer",
            last_seen=lambda: last["answer"],
        )


def wait_settled(api_client: client.ApiClient, manifest: dict, timeout: float = 60) -> None:
    """Wait until the CRD ``manifest`` describes is Established, discovery lists its resource
    at every served version and at no other, and a LIST answers at each. Per resource: a
    group may hold other CRDs (a project's bundle)."""
    name = manifest["metadata"]["name"]
    wait_established(client.ApiextensionsV1Api(api_client), name, timeout)
    spec = manifest["spec"]
    served = {v["name"] for v in spec["versions"] if v.get("served")}
    unserved = {v["name"] for v in spec["versions"]} - served
    group, plural = spec["group"], spec["names"]["plural"]
    wait_resource_discovery(api_client, group, plural, served, unserved, timeout)
    wait_serving(api_client, group, plural, served, timeout)


def create_and_wait(api_client: client.ApiClient, manifest: dict, timeout: float = 60) -> dict:
    """Create a CRD from a manifest dict, and wait until it has settled (``wait_settled``)."""
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(manifest)
    wait_settled(api_client, manifest, timeout)
    return manifest


def delete_and_wait(api_client: client.ApiClient, name: str, timeout: float = 60) -> None:
    api = client.ApiextensionsV1Api(api_client)
    try:
        api.delete_custom_resource_definition(name)
    except ApiException as exc:
        if exc.status != 404:
            raise

    def gone() -> bool:
        try:
            api.read_custom_resource_definition(name, _preload_content=False)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout, f"CRD {name} to be deleted")


def point_webhook(manifest: dict, client_config: dict) -> dict:
    """A copy of a CRD manifest whose conversion webhook is reached through ``client_config``
    (a webhook's ``client_config()``: URL or Service, with its caBundle)."""
    pointed = copy.deepcopy(manifest)
    pointed["spec"]["conversion"].setdefault("webhook", {})["clientConfig"] = client_config
    return pointed


def with_group(manifest: dict, group: str) -> dict:
    """A copy of a CRD manifest moved to another API group, for a test's isolation."""
    moved = copy.deepcopy(manifest)
    moved["spec"]["group"] = group
    moved["metadata"]["name"] = f"{moved['spec']['names']['plural']}.{group}"
    return moved


def manifest(
    group: str,
    kind: str,
    versions: list[dict],
    scope: str = "Namespaced",
    plural: str | None = None,
) -> dict[str, Any]:
    """A CustomResourceDefinition manifest of ``kind`` in ``group`` (names from the kind, as
    kubebuilder writes them), serving ``versions`` (``version`` builds one)."""
    plural = plural or f"{kind.lower()}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": versions,
        },
    }


def version(name: str, schema: dict, storage: bool = True, served: bool = True) -> dict:
    """One entry of a CRD's ``spec.versions``, with ``schema`` as its openAPIV3Schema."""
    return {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
    }


# A CRD of the harness's own, created and deleted again to prove that an API server can serve
# custom resources (``wait_crds_work``).
READINESS_CRD = manifest(
    "readiness.crdharness.io",
    "Probe",
    [version("v1", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})],
    scope="Cluster",
)


def wait_crds_work(api_client: client.ApiClient, timeout: float = 60) -> None:
    """A CRD can be created, becomes Established, and serves a LIST; then it is removed."""
    create_and_wait(api_client, READINESS_CRD, timeout=timeout)
    wait_for(
        lambda: (
            client.CustomObjectsApi(api_client).list_cluster_custom_object(
                "readiness.crdharness.io", "v1", "probes"
            )
            is not None
        ),
        timeout,
        "the readiness CRD to serve LIST",
        retry=(ApiException,),
    )
    delete_and_wait(api_client, READINESS_CRD["metadata"]["name"])


def error_message(exc: ApiException) -> str:
    """The Status message of an API error (the body as it came if it is not a Status)."""
    try:
        return json.loads(exc.body or "")["message"]
    except (TypeError, ValueError, KeyError):
        return str(exc.body or exc.reason)
